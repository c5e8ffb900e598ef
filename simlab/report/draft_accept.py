"""``simlab generate --accept``: reviewed drafts (and the new personas they use) moved from the
review folder into the project, never over a file."""

from __future__ import annotations

import shutil
from pathlib import Path

from simlab.errors import UsageError
from simlab.report.draft_summary import PERSONAS


def _named(out: Path, names: list[str]) -> list[Path]:
    if not names:
        found = sorted(p for p in out.glob("*.yaml") if p.is_file())
        if not found:
            raise UsageError(f"{out}/ holds no draft to accept (run `simlab generate --model MODEL` first)")
        return found
    paths = []
    for name in names:
        path = out / (Path(name).name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        if not path.is_file():
            raise UsageError(f"{path}: no such draft in {out}/")
        paths.append(path)
    return paths


def _persona_of(path: Path) -> str | None:
    from simlab.specs.yamlio import load_yaml_file

    data, _ = load_yaml_file(path)
    persona = data.get("persona") if isinstance(data, dict) else None
    return persona if isinstance(persona, str) else None


def accept(out: Path, names: list[str], scenarios: Path, personas: Path) -> list[tuple[Path, Path]]:
    """Move the drafts ``names`` (default: every draft in ``out``) into ``scenarios``, and the new
    personas they use into ``personas``. Nothing is moved when any target file exists already
    (a persona file with the same bytes is no clash: it is the same persona)."""
    moves: list[tuple[Path, Path]] = []
    for path in _named(out, names):
        moves.append((path, scenarios / path.name))
        pid = _persona_of(path)
        drafted = out / PERSONAS / f"{pid}.yaml"
        if pid and drafted.is_file() and (drafted, personas / drafted.name) not in moves:
            moves.append((drafted, personas / drafted.name))
    clashes = [
        str(target)
        for source, target in moves
        if target.exists()
        and not (source.parent.name == PERSONAS and target.read_bytes() == source.read_bytes())
    ]
    if clashes:
        raise UsageError(
            f"not accepting: {', '.join(clashes)} exist{'s' if len(clashes) == 1 else ''} already; "
            "rename the draft (its file and id) or remove the file, then accept again"
        )
    done = []
    for source, target in moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():  # the same persona: its draft copy goes
            source.unlink()
            continue
        shutil.move(str(source), str(target))
        done.append((source, target))
    return done
