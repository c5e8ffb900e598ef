"""A suite's own plan (its scenarios and trials per scenario), and how a run's plan falls short of it.

A gate on a suite judges the suite's plan: a run of one of its ten scenarios, or of fewer trials
than it asks for, says nothing about the other nine, so the gate is inconclusive, naming what is
missing (``report/gates.py``). A run played from a suite records the suite's plan in its manifest
(``suite``: id and plan) and whether the user accepted a part of it by name (``partial_ok``,
``simlab run --suite S -k policy --partial-ok``); ``partial_text`` is the one wording of that fact
that every report renders ("partial: 1 of 10 scenarios").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def suite_plan(suite_path: str | Path, root: Path = Path(".")) -> dict[str, int]:
    """Scenario id → trials, as ``simlab run --suite`` plans them with no flag (the suite's tags,
    its ``trials``, each scenario's, then ``simlab.yaml``'s)."""
    return suite_state(suite_path, root)[0]


def suite_state(
    suite_path: str | Path, root: Path = Path(".")
) -> tuple[dict[str, int], dict[str, dict[str, str | None]]]:
    """``suite_plan``, and each planned scenario's files as they are now (``sha256`` and
    ``persona_sha256``, as a run pins them), which ``changed_files`` holds a run to."""
    from simlab.runner.prepare import trials_of  # loads the specs' and domains' modules: only here
    from simlab.specs import load_config, load_personas, load_scenarios, load_suite, scenario_files

    path = Path(suite_path)
    suite = load_suite(path).spec
    config = load_config(root / "simlab.yaml")
    loaded = load_scenarios(
        scenario_files(suite.scenarios, base=path.parent), load_personas(root / config.personas)
    )
    if suite.tags:
        loaded = [s for s in loaded if set(s.spec.tags) & set(suite.tags)]
    plan = {s.spec.id: trials_of(s.spec.trials, None, suite.trials, config.trials)[0] for s in loaded}
    files = {s.spec.id: {"sha256": s.sha256, "persona_sha256": s.persona_sha256} for s in loaded}
    return plan, files


def changed_files(manifest: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The suite's scenarios whose scenario or persona file is not the version the run played (its
    ``pins.scenarios``: the sha256 of each), one phrase each; a run that pins no sha256 of a file
    cannot be held to it either. Scenarios the run did not play are ``plan_shortfall``'s."""
    pinned = ((manifest or {}).get("pins") or {}).get("scenarios")
    if not isinstance(pinned, Mapping):
        return []
    changed: list[str] = []
    for sid, now in files.items():
        pin = pinned.get(sid)
        if not isinstance(pin, Mapping):
            continue
        what = [
            label
            for key, label in (("sha256", "scenario"), ("persona_sha256", "persona"))
            if pin.get(key) != now.get(key)
        ]
        if what:
            changed.append(f"{sid} ({' and '.join(what)} file)")
    return changed


def regraded_files(manifest: Mapping[str, Any] | None, files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The suite's scenarios whose trials the run played with the files as they are now, but were
    re-graded (``simlab grade``) with another version of the scenario or persona file (run.json's
    ``graded_sha256``, ``graded_persona_sha256``): their verdicts are that version's. One phrase
    each; a file changed since the run is ``changed_files``'s."""
    pinned = ((manifest or {}).get("pins") or {}).get("scenarios")
    if not isinstance(pinned, Mapping):
        return []
    out: list[str] = []
    for sid, now in files.items():
        pin = pinned.get(sid)
        if not isinstance(pin, Mapping):
            continue
        what = [
            label
            for key, label in (("sha256", "scenario"), ("persona_sha256", "persona"))
            if pin.get(key) == now.get(key) and pin.get(f"graded_{key}", pin.get(key)) != now.get(key)
        ]
        if what:
            out.append(f"{sid} ({' and '.join(what)} file)")
    return out


def pin_suite(
    manifest: dict[str, Any],
    notes: list[str],
    trials: Mapping[str, int],
    suite_path: Path,
    suite_id: str | None,
    root: Path,
    *,
    partial_ok: bool,
) -> None:
    """Record in a run's manifest the plan of the suite it is played from (``suite``) and whether a
    part of it is accepted (``partial_ok``); a note, before anything is played, when it is a part."""
    whole = suite_plan(suite_path, root)
    manifest["suite"] = {"id": suite_id, "plan": whole}
    manifest["partial_ok"] = partial_ok
    text = partial_text(trials, whole)
    if text:
        notes.append(
            f"{text} of the suite: "
            + (
                "accepted with --partial-ok, every report says so"
                if partial_ok
                else "its gates will be inconclusive (exit 3) unless you accept the part with --partial-ok"
            )
        )


def run_plan(manifest: Mapping[str, Any] | None) -> dict[str, int] | None:
    """Scenario id → trials a run planned (``pins.scenarios``), or None when its manifest does not say."""
    scenarios = ((manifest or {}).get("pins") or {}).get("scenarios")
    if not isinstance(scenarios, Mapping):
        return None
    try:
        return {str(sid): int(pin["trials"]) for sid, pin in scenarios.items()}
    except (KeyError, TypeError, ValueError):
        return None


def recorded_suite(manifest: Mapping[str, Any] | None) -> tuple[str, dict[str, int]] | None:
    """(suite id, its plan) as the run that played it recorded them, or None."""
    suite = (manifest or {}).get("suite")
    if not isinstance(suite, Mapping) or not isinstance(suite.get("plan"), Mapping):
        return None
    try:
        return str(suite.get("id")), {str(k): int(v) for k, v in suite["plan"].items()}
    except (TypeError, ValueError):
        return None


def plan_shortfall(run: Mapping[str, int], suite: Mapping[str, int]) -> list[str]:
    """How a run's plan differs from a suite's, one phrase each; empty when it is the suite's plan."""
    out = []
    missing = [sid for sid in suite if sid not in run]
    if missing:
        out.append(
            f"{len(missing)} of the suite's {len(suite)} scenarios were not played ({_names(missing)})"
        )
    extra = [sid for sid in run if sid not in suite]
    if extra:
        out.append(f"{len(extra)} scenarios played are not the suite's ({_names(extra)})")
    fewer = [f"{sid} {run[sid]} of {suite[sid]}" for sid in suite if sid in run and run[sid] < suite[sid]]
    if fewer:
        out.append(f"fewer trials than the suite plans in {len(fewer)} scenarios ({_names(fewer)})")
    more = [f"{sid} {run[sid]} of {suite[sid]}" for sid in suite if sid in run and run[sid] > suite[sid]]
    if more:
        out.append(f"other trial counts than the suite plans in {len(more)} scenarios ({_names(more)})")
    return out


def partial_text(run: Mapping[str, int], suite: Mapping[str, int]) -> str | None:
    """The one wording of a run that plays a part of its suite: "partial: 1 of 10 scenarios" (and
    the trials, when fewer); None when the run is the suite's whole plan."""
    if not plan_shortfall(run, suite):
        return None
    played = sum(1 for sid in suite if sid in run)
    if played < len(suite):
        return f"partial: {played} of {len(suite)} scenarios"
    planned, asked = sum(min(run.get(sid, 0), n) for sid, n in suite.items()), sum(suite.values())
    if planned < asked:
        return f"partial: {planned} of {asked} trials the suite plans"
    return "not the suite's plan: other scenarios or trial counts"


def manifest_partial(manifest: Mapping[str, Any] | None) -> str | None:
    """``partial_text`` of a run played from a suite, from its manifest alone (what a report shows)."""
    recorded, plan = recorded_suite(manifest), run_plan(manifest)
    if recorded is None or plan is None:
        return None
    return partial_text(plan, recorded[1])


def _names(items: list[str], shown: int = 4) -> str:
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more
