"""The code a run was played with, pinned in its manifest (``pins.code``).

Specs say what a run is; code decides what it does. Two shards or a resume played by another
version of the agent's file or the domain's modules would merge into one run id that no single
version of the code produced. So a run pins a sha256 of every file of a ``python:`` (or framework)
agent's module and of each domain's module (every ``.py``, ``.yaml``, ``.md`` and ``.json`` file of
a domain package: its seed data and policy text too), the simlab version, and the git commit of
the project when it is a git checkout. ``pins.code`` is compared like every other pin
(``prepare.pin_differences``): ``simlab merge`` and a resume refuse a difference, and ``--force``
marks the run as mixing configurations (its gates are inconclusive). A run made before code was
pinned has no ``pins.code``: a resume adds it and says that the earlier trials' code is unknown.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simlab.version import __version__

_DOMAIN_FILES = (".py", ".yaml", ".yml", ".md", ".json")


def code_pins(agent_refs: Iterable[str], domain_modules: Iterable[str], root: Path) -> dict[str, Any]:
    """``{"simlab": version, "git_commit": sha | None, "files": {name: sha256}}``: the agent's module
    files (``module:attr`` or ``path.py:attr``) and the domains' modules (a package: all its files)."""
    files: dict[str, str] = {}
    for ref in agent_refs:
        files.update(_module_files(ref.partition(":")[0], root, package=False))
    for module in domain_modules:
        files.update(_module_files(module.partition(":")[0], root, package=True))
    return {"simlab": __version__, "git_commit": git_commit(root), "files": dict(sorted(files.items()))}


def run_code_pins(agent: Any, domains: Iterable[str], root: Path = Path(".")) -> dict[str, Any]:
    """``code_pins`` of a run's agent spec (``AgentSpec``) and its scenarios' ``domain:`` refs."""
    from simlab.env.domain import BUILTIN_DOMAINS

    refs = [agent.python] if agent.python else [agent.framework[1]] if agent.framework else []
    return code_pins(refs, sorted({BUILTIN_DOMAINS.get(d, d) for d in domains}), root)


def _module_files(module: str, root: Path, *, package: bool) -> dict[str, str]:
    if not module:
        return {}
    if module.endswith(".py"):
        path = (root / module) if not Path(module).is_absolute() else Path(module)
        return {module: _sha(path)}
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return {module: "unknown"}  # not importable from here: a difference still shows
    origin = Path(spec.origin)
    if package and spec.submodule_search_locations:  # a package: every file that makes it up
        base = origin.parent
        return {
            f"{module}/{p.relative_to(base).as_posix()}": _sha(p)
            for p in sorted(base.rglob("*"))
            if p.suffix in _DOMAIN_FILES and p.is_file() and "__pycache__" not in p.parts
        }
    return {module: _sha(origin)}


def _sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root``, or None outside a git checkout or without git. (What is
    not committed is covered by the files' own hashes.)"""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() or None if head.returncode == 0 else None


def mixed_pins(manifest: dict[str, Any] | None) -> list[str]:
    """What a run mixes (pins that differed where a resume or a merge was forced over them): the
    run's trials do not all come from one configuration, and its gates are inconclusive."""
    manifest = manifest or {}
    forced = [
        d for r in manifest.get("resumes") or [] if isinstance(r, dict) for d in r.get("forced_over") or []
    ]
    return forced + [str(d) for d in manifest.get("merge_forced_over") or []]
