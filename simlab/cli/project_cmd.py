"""Everyday commands around a project: ``simlab init`` (a runnable starter project), ``simlab runs``
(the runs on disk, one line each) and ``simlab tools DOMAIN`` (a domain's tools, schemas and seed
data)."""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.errors import SpecError, UsageError
from simlab.inert import one_line

if TYPE_CHECKING:
    from simlab.results.figures import RunSummary


def init_command(args: argparse.Namespace) -> int:
    """Write the starter project into ``args.folder`` (refusing to overwrite a file) and its schemas."""
    target = Path(args.folder)
    source = resources.files("simlab.starter") / "files"
    files = sorted(_walk(source))
    clashes = [rel for rel, _ in files if (target / rel).exists()]
    if clashes and not args.force:
        raise UsageError(f"{target}: {', '.join(clashes[:5])} already exist(s); simlab init writes a new project "
                         "(use an empty folder, or --force to overwrite those files)")
    for rel, entry in files:
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry.read_bytes())
    from simlab.specs.schema import write_schemas

    write_schemas(target / "schemas")
    print(f"wrote a starter project in {target}: simlab.yaml, library_domain.py, library_agent.py, personas/, "
          "scenarios/, suites/, schemas/")
    where = "" if target.resolve() == Path.cwd().resolve() else f"cd {target} && "
    print(f"next: {where}simlab run      (then: simlab view, simlab run --suite suites/smoke.yaml)")
    return 0


def _walk(folder: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for entry in folder.iterdir():
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            if entry.name != "__pycache__":
                out.extend(_walk(entry, rel + "/"))
        elif not entry.name.endswith((".pyc", ".pyo")):
            out.append((rel, entry))
    return out


def runs_command(args: argparse.Namespace) -> int:
    """One line per run, newest first: id, date, agent, trials done of planned, pass^1, pass^k."""
    from simlab.report.build import runs_by_age
    from simlab.report.fmt import pct
    from simlab.runner.store import RunStore
    from simlab.specs import load_config

    transcripts = Path(load_config(Path("simlab.yaml")).transcripts)
    folders = list(reversed(runs_by_age(transcripts)))
    if not folders:
        print(f"no runs in {transcripts}/ yet: start one with `simlab run`")
        return 0
    k = args.k
    print(f"{'run':<24} {'created':<20} {'trials':>13} {'pass^1':>7} {f'pass^{k}':>7}  agent")
    missing = False
    for folder in folders[: args.last]:
        store = RunStore(folder)
        try:
            manifest = store.read_manifest() or {}
            done = len(store.finished_unit_ids())
        except Exception as exc:  # noqa: BLE001 - one unreadable run must not hide the others
            print(f"{one_line(folder.name):<24} cannot be read: {one_line(exc)}")
            continue
        planned = manifest.get("units")
        state = f"{done}/{planned}" if planned else f"{done}/?"
        figures = _fresh_summary(folder)
        missing = missing or figures is None
        pass_1, pass_k = pct(_point(figures, 1)), pct(_point(figures, k))
        agent = (manifest.get("pins") or {}).get("agent") or {}
        ref = agent.get("model") or (f"python:{agent['python']}" if agent.get("python") else "?")
        created = str(manifest.get("created_at", ""))[:19].replace("T", " ")
        mark = "" if planned and done >= planned else " (incomplete)"
        print(f"{one_line(folder.name):<24} {created:<20} {state + mark:>13} {pass_1:>7} {pass_k:>7}  {one_line(ref)}")
    if missing:
        print("–: no summary.json newer than its trials; `simlab report RUN` writes it")
    return 0


def _fresh_summary(folder: Path) -> RunSummary | None:
    """summary.json (the typed summary) when it is newer than the trials (a report of 100,000
    trials costs seconds: the list never recomputes it); None when missing, stale or unreadable."""
    from pydantic import ValidationError

    from simlab.results.figures import RunSummary

    summary, trials = folder / "summary.json", folder / "trials.jsonl"
    if not summary.exists() or (trials.exists() and trials.stat().st_mtime > summary.stat().st_mtime):
        return None
    try:
        return RunSummary.model_validate_json(summary.read_bytes())
    except (OSError, ValidationError):
        return None


def _point(figures: RunSummary | None, k: int) -> float | None:
    entry = None if figures is None else figures.suite.view("valid").pass_k.get(k)
    return None if entry is None else entry.pass_hat_k


def tools_command(args: argparse.Namespace) -> int:
    """A domain's tools (READ or WRITE, description, arguments with types) and its seed data."""
    from simlab.env.domain import load_domain

    try:
        domain = load_domain(args.domain)
    except (SpecError, ValueError, ImportError) as exc:
        raise UsageError(f"domain {args.domain!r}: {exc}") from None
    print(f"domain {domain.name}: {len(domain.tools)} tools")
    for tool in domain.tools:
        schema = tool.json_schema()["function"]
        params = schema.get("parameters", {})
        required = set(params.get("required", []))
        print(f"\n  {tool.name}  [{tool.access.value.upper()}]  {one_line(schema.get('description', ''))}")
        for name, spec in (params.get("properties") or {}).items():
            kind = spec.get("type") or "/".join(s.get("type", "?") for s in spec.get("anyOf", [])) or "any"
            need = "" if name in required else " (optional)"
            print(f"      {name}: {kind}{need}  {one_line(spec.get('description', ''))}")
    if args.policy and domain.policy:
        print(f"\npolicy:\n{domain.policy}")
    if args.state:
        print("\nseed data (a scenario's initial_state is merged over it):")
        print(json.dumps(domain.build_state({}).model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print("\n(--state shows the seed data, --policy the policy text)")
    return 0

