"""JUnit XML for CI: one testcase per scenario, plus one for the suite-wide gates.

A run that is not whole (``report/completeness.py``) says so first: a ``completeness`` property of
the testsuite, and the suite gates' <error> message starts with it (once: the gates' problems that
repeat it are left out, and so is the system-out line when the error says it). A failed gate is a <failure>
with its reason (and the scenario's infrastructure errors, when it had some too); infrastructure
errors, unjudged trials and a gate a scenario could not be held to (inconclusive) are <error>; a scenario
whose trials were all invalid simulations is <skipped> with the reason. Each scenario's testcase
carries its trials' summed duration as ``time``, and names the trials that did not pass
(``scenario#n``), where their transcripts are (``trials.jsonl:LINE``) and their failing checks'
reasons (``report/digest.py``). pass^k and cost go in properties. Everything transcript-derived
goes through ElementTree, which escapes it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from simlab.report.completeness import RunState, summary_state
from simlab.report.digest import Digest
from simlab.report.fmt import UNKNOWN, safe
from simlab.report.gates import GateReport
from simlab.results.figures import RunSummary, ScenarioFigures


def junit_xml(summary: RunSummary, gates: GateReport, suite_id: str, digest: Digest | None = None) -> str:
    """The JUnit document; control characters (not allowed in XML) are replaced everywhere."""
    root = ET.Element("testsuites", name=f"simlab {suite_id}")
    suite = ET.SubElement(root, "testsuite", name=suite_id)
    state = summary_state(summary)  # first: what the run lacks, when it is not whole
    if state.line:
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="completeness", value=state.line)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total = sum(
        _scenario_case(suite, suite_id, sid, s, gates, digest, counts) for sid, s in summary.scenarios.items()
    )
    _suite_gates_case(suite, suite_id, gates, state, counts)
    for key, value in counts.items():
        suite.set(key, str(value))
    if digest is not None:
        suite.set("time", f"{total:.3f}")
    for element in root.iter():
        element.attrib = {k: safe(v) for k, v in element.attrib.items()}
        if element.text:
            element.text = safe(element.text)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _scenario_case(
    suite: ET.Element,
    suite_id: str,
    sid: str,
    s: ScenarioFigures,
    gates: GateReport,
    digest: Digest | None,
    counts: dict[str, int],
) -> float:
    """One scenario's testcase; its trials' summed known duration (0 without a digest)."""
    case = ET.SubElement(suite, "testcase", classname=f"simlab.{suite_id}", name=sid)
    seconds = digest.seconds.get(sid, 0.0) if digest is not None else 0.0
    if digest is not None:
        case.set("time", f"{seconds:.3f}")
    props = ET.SubElement(case, "properties")
    for k, hat in s.raw.pass_hat_k.items():
        if hat is not None:
            ET.SubElement(props, "property", name=f"pass^{k}", value=f"{hat:.4f}")
    for name, value in (
        ("passes", s.passes),
        ("trials", s.n),
        ("invalid", s.invalid),
        ("errors", s.errors),
        ("unjudged", s.unjudged + s.unjudged_counted_as_pass),
        ("unjudged_counted_as_pass", s.unjudged_counted_as_pass),
        ("cost_usd", s.cost_usd),
    ):
        ET.SubElement(props, "property", name=name, value=UNKNOWN if value is None else str(value))
    if digest is not None and digest.unknown_seconds.get(sid):  # time sums the known durations only
        ET.SubElement(
            props, "property", name="duration_unknown_trials", value=str(digest.unknown_seconds[sid])
        )
    trials = _trials_text(digest, sid)
    ids = _trial_ids(digest, sid)
    failed = [g for g in gates.results if g.scenario == sid and g.status == "fail"]
    undecided = [g for g in gates.results if g.scenario == sid and g.status == "inconclusive"]
    errored = f"{s.errors} of {s.n} trials ended in an infrastructure error" if s.errors else ""
    if failed:  # a failed gate is a failure, as the exit code says (1) on a run that stands for its plan
        also = f"; also: {errored}" if errored else ""
        _add(case, "failure", "; ".join(g.reason for g in failed) + also + ids, counts, trials)
    elif s.errors:
        _add(case, "error", errored + ids, counts, trials)
    elif s.unjudged:
        _add(
            case,
            "error",
            f"{s.unjudged} of {s.n} trials are unjudged: a hard check did not run{ids}",
            counts,
            trials,
        )
    elif undecided:  # a gate the scenario could not be held to: the exit code's 3, never a pass
        _add(
            case,
            "error",
            "; ".join(f"{g.label}: {g.reason} (inconclusive)" for g in undecided) + ids,
            counts,
            trials,
        )
    elif s.n and not s.valid.success.n:
        _add(
            case,
            "skipped",
            f"all {s.n} trials were invalid simulations (the simulated user broke its script)",
            counts,
        )
    if trials:  # failing trials under no failed gate are still named, for whoever reads the log
        ET.SubElement(case, "system-out").text = trials
    counts["tests"] += 1
    return seconds


def _suite_gates_case(
    suite: ET.Element, suite_id: str, gates: GateReport, state: RunState, counts: dict[str, int]
) -> None:
    """The testcase of the suite-wide gates, led by what the run lacks when it is not whole."""
    case = ET.SubElement(suite, "testcase", classname=f"simlab.{suite_id}", name="suite gates")
    suite_results = [g for g in gates.results if g.scenario is None]
    failed = [g for g in suite_results if g.status == "fail"]
    line = state.line or ""
    said = False  # whether the error already says the line
    if not state.judged or gates.problems or any(g.status == "inconclusive" for g in suite_results):
        # the gates' problems start with the line's own phrases (completeness_problems): said once
        reasons = [line] if line else []
        reasons += [p for p in gates.problems if not (line and p in line)]
        reasons += [g.reason for g in suite_results if g.status == "inconclusive"]
        _add(case, "error", "; ".join(reasons), counts)
        said = bool(line)
    elif failed:
        _add(case, "failure", "; ".join(f"{g.label}: {g.reason}" for g in failed), counts)
    out = ET.SubElement(case, "system-out")
    out.text = "\n".join(
        [
            *([line] if line and not said else []),
            *(f"[{g.status}] {g.label}: {g.reason}" for g in suite_results),
        ]
    )
    counts["tests"] += 1


def _trial_ids(digest: Digest | None, sid: str) -> str:
    """'; failing trials: a#2, a#5 (and 3 more)' for a message attribute, or ''."""
    if digest is None or not digest.failed.get(sid):
        return ""
    kept = digest.failed[sid]
    more = digest.more(sid)
    return (
        "; trials that did not pass: "
        + ", ".join(t.unit_id for t in kept)
        + (f" and {more} more" if more else "")
    )


def _trials_text(digest: Digest | None, sid: str) -> str:
    """One paragraph per trial that did not pass: id, verdict, transcript file:line, reasons."""
    if digest is None:
        return ""
    lines = []
    for trial in digest.failed.get(sid, []):
        lines.append(
            f"{trial.unit_id}: {trial.verdict} — transcript {digest.where(trial)}"
        )  # verdicts.py's name
        lines += [f"  - {reason}" for reason in trial.reasons]
    more = digest.more(sid)
    if more > 0:
        lines.append(f"… and {more} more trials that did not pass (simlab view shows them all)")
    return "\n".join(lines)


def _add(case: ET.Element, tag: str, message: str, counts: dict[str, int], text: str = "") -> None:
    element = ET.SubElement(case, tag, message=message)
    element.text = message + ("\n\n" + text if text else "")
    counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[tag]] += 1
