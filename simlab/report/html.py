"""``simlab report --html FILE``: one self-contained HTML file for a CI artifact.

No network: no script, no stylesheet or font from elsewhere; charts are inline SVG drawn by pygal
(``report/charts.py``). It holds the suite figures, the per-scenario table, the pass^k curves,
the failing checks ranked, each trial that did not pass with its transcript folded and its
failing event highlighted, and the cost and latency distributions. Every text that came from a
file or a transcript is escaped (``html.escape``) and has its control characters replaced.
"""

from __future__ import annotations

import html
import json
from functools import cache
from typing import Any
from urllib.parse import quote

from pydantic import TypeAdapter, ValidationError

from simlab.graders.judge_prompt import event_text
from simlab.report import why
from simlab.report.charts import curves_svg, histogram_svg
from simlab.report.completeness import summary_state
from simlab.report.coverage import Coverage
from simlab.report.digest import Digest, FailedTrial
from simlab.report.fmt import (
    DASH,
    IN_ERROR_TRIALS,
    interval,
    money,
    pct,
    per_success,
    safe,
    seconds,
    shown_ks,
    upper_bound,
)
from simlab.report.scenario_table import scenario_table
from simlab.report.trouble import trouble_lines
from simlab.report.why import mode_lines, more_modes
from simlab.results.figures import RunSummary
from simlab.transcript.model import Event
from simlab.transcript.verdicts import unjudged_text, verdict_label

FAILED_CLASS = "failing"  # the class of a failing event; its colour is checked in a browser test
FAILED_COLOUR = "#ffd6d6"
TEXT_CHARS = 2000  # of one event's text shown; the transcript file keeps all of it

STYLE = f"""
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; max-width: 1200px; }}
h1 {{ font-size: 1.4rem; }} h2 {{ font-size: 1.15rem; margin-top: 2rem; }}
table {{ border-collapse: collapse; margin: .5rem 0; }}
th, td {{ border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: right; white-space: nowrap; }}
th:first-child, td:first-child {{ text-align: left; }}
.figures td {{ text-align: left; white-space: normal; }}
.why td:nth-child(n+3), .why th:nth-child(n+3) {{ text-align: left; }}
.text td, .text th {{ text-align: left; white-space: normal; }}
.why td:nth-child(4), .why td:nth-child(6) {{ white-space: normal; }} .nw {{ white-space: nowrap; }}
.wide {{ overflow-x: auto; }}
.warn {{ color: #8a5a00; }} .dim {{ color: #666; font-size: .9rem; }}
.verdict-fail, .verdict-error, .verdict-unjudged, .verdict-invalid {{ color: #b00020; font-weight: bold; }}
.state {{ color: #8a5a00; font-weight: bold; border-left: 4px solid #d9a400; padding-left: .5rem; }}
details {{ margin: .4rem 0; border: 1px solid #ddd; padding: .3rem .6rem; }}
summary {{ cursor: pointer; }}
ol.events {{ font-family: ui-monospace, monospace; font-size: .85rem; white-space: pre-wrap;
  overflow-wrap: anywhere; }}
ol.events li {{ padding: .1rem .3rem; }}
li.{FAILED_CLASS} {{ background: {FAILED_COLOUR}; border-left: 4px solid #d62728; }}
.charts {{ display: flex; flex-wrap: wrap; gap: 1rem; }}
"""


def e(text: Any) -> str:
    """Escaped, control characters replaced: text from a file or a transcript stays text."""
    return html.escape(safe(text))


def html_report(summary: RunSummary, digest: Digest, coverage: Coverage | str | None = None) -> str:
    """The report as one HTML document (``digest`` with the failing trials' records and every
    trial's head: ``digest(folder, records=True, heads=True)``; ``coverage``: the run's, or why it
    could not be computed)."""
    suite = summary.suite
    max_k = max(suite.raw.pass_k, default=1)
    state = summary_state(summary).line  # first: what the figures below do not stand for
    parts = [f'<p class="state">{e(state)}</p>'] if state else []
    parts.append(f"<h1>simlab run <code>{e(summary.run_id)}</code></h1>")
    parts += [f'<p class="warn">warning: {e(w)}</p>' for w in summary.warnings]
    parts.append(_figures(summary, max_k))
    parts.append(_scenarios(summary, max_k))
    curves = {sid: list(s.raw.pass_hat_k.values()) for sid, s in summary.scenarios.items()}
    if max_k > 1:
        parts.append(
            '<h2>pass^k curves</h2><p class="dim">pass^k: the chance that k trials in a row all pass, '
            "per scenario (raw: every trial counts).</p>" + curves_svg(curves)
        )
    parts.append(_why(summary))
    parts.append(_failing_checks(summary))
    parts += [f'<p class="warn">{e(line)}</p>' for line in trouble_lines(summary)]
    parts.append(_distributions(digest))
    parts.append(_failed_trials(summary, digest))
    parts.append(_coverage(coverage))
    body = "\n".join(p for p in parts if p)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>simlab "
        f"{e(summary.run_id)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _figures(summary: RunSummary, max_k: int) -> str:
    suite = summary.suite
    rows = [
        ("trials", f"{summary.trials} graded trials of {summary.scenarios_count} scenarios"),
        (
            "success (raw)",
            f"{interval(suite.raw.success)} of {suite.raw.success.n} trials: every graded trial",
        ),
        (
            "success (valid)",
            f"{interval(suite.valid.success)} of {suite.valid.success.n} trials: invalid "
            "simulations, infrastructure errors and unjudged trials left out",
        ),
        *(
            (
                f"pass^{k}",
                f"{pct(suite.raw.pass_k[k].pass_hat_k)} (mean over "
                f"{suite.raw.pass_k[k].scenarios} scenarios)",
            )
            for k in shown_ks(max_k)
            if k > 1
        ),
        ("invalid simulations", upper_bound(suite.invalid_rate)),
        ("infrastructure errors", upper_bound(suite.error_rate)),
        ("unjudged", unjudged_text(suite.unjudged_rate.c, summary.unjudged.counted_as_pass)),
        ("policy violations", upper_bound(suite.policy_violation_rate)),
        ("loops (one call repeated)", upper_bound(suite.loop_rate)),
        (
            "cost",
            f"{money(suite.cost_usd)} · "
            f"per success {per_success(suite.cost_per_success_usd, suite.raw.success.c)}",
        ),
        (
            "latency",
            f"p50 {seconds(suite.latency_s.p50)} · p95 {seconds(suite.latency_s.p95)}"
            + (
                f" (duration unknown for {suite.latency_s.unknown} trials)" if suite.latency_s.unknown else ""
            ),
        ),
        ("terminations", ", ".join(f"{k} {v}" for k, v in suite.terminations.items()) or DASH),
    ]
    cells = "".join(f"<tr><th>{e(name)}</th><td>{e(value)}</td></tr>" for name, value in rows)
    return f'<h2>suite</h2><table class="figures">{cells}</table>'


def _scenarios(summary: RunSummary, max_k: int) -> str:
    table = scenario_table(summary, shown_ks(max_k), unjudged=True, costs=True)
    head = "".join(f"<th>{e(h)}</th>" for h in table.header)
    rows = ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table.rows]
    box = f'<div class="wide"><table><tr>{head}</tr>{"".join(rows)}</table></div>'  # it scrolls, not the page
    return f"<h2>scenarios</h2>{box}"


def trial_anchor(unit_id: str) -> str:
    """The id of a trial's block in the report (a unit id holds ``#``: quoted)."""
    return "trial-" + quote(unit_id, safe="")


def _why(summary: RunSummary) -> str:
    lines = mode_lines(summary, 20)
    if not lines:
        return ""
    head = "".join(f"<th>{e(h)}</th>" for h in why.header(lines))
    rows = []
    for line in lines:
        cells = [f"<td>{e(c)}</td>" for c in line.cells]
        link = f'<a href="#{trial_anchor(line.mode.representative)}">{e(line.cells[4])}</a>'
        cells[4] = f"<td>{link}</td>"
        phrases = (f'<span class="nw">{e(p)}</span>' for p in line.cells[5].split(" · "))
        cells[5] = f"<td>{' · '.join(phrases)}</td>"  # breaks between phrases, never inside one
        rows.append("<tr>" + "".join(cells) + "</tr>")
    more = more_modes(summary, 20)
    note = f'<p class="dim">{e(why.note(lines))}' + (f" · {e(more)}" if more else "") + "</p>"
    return f'<h2 id="why">{e(why.TITLE)}</h2><table class="why"><tr>{head}</tr>{"".join(rows)}</table>{note}'


def _failing_checks(summary: RunSummary) -> str:
    failing = summary.top_failing_checks[:20]
    if not failing:
        return ""
    infra = any(c.in_error_trials for c in failing)
    rows = "".join(
        f"<tr><td>{e(c.name)}</td><td>{e(c.kind)}</td><td>{c.failures}</td>"
        + (f"<td>{c.in_error_trials or ''}</td>" if infra else "")
        + "</tr>"
        for c in failing
    )
    note = f'<p class="dim">{e(IN_ERROR_TRIALS)}.</p>' if infra else ""
    return (
        '<h2 id="checks">checks that fail most</h2><table><tr><th>check</th><th>kind</th><th>failures</th>'
        + ("<th>in error trials</th>" if infra else "")
        + f"</tr>{rows}</table>{note}"
    )


def _distributions(digest: Digest) -> str:
    costs = digest.costs
    known = [float(c) for c in costs if c is not None]
    durations = digest.durations
    latency = [float(d) for d in durations if d is not None]  # an unknown duration is left out, never 0 s
    charts = []
    if known:
        charts.append(histogram_svg("cost per trial (USD)", known, "$"))
    if latency:
        charts.append(histogram_svg("trial duration", latency, "s"))
    unknown = len(costs) - len(known)
    note = (
        f'<p class="dim">cost unknown for {unknown} of {len(costs)} trials (unpriced models).</p>'
        if unknown
        else ""
    )
    if len(latency) < len(durations):
        note += (
            f'<p class="dim">duration unknown for {len(durations) - len(latency)} of {len(durations)} trials '
            "(imported without times): left out of the chart.</p>"
        )
    if not charts:
        return ""
    return f'<h2 id="distributions">cost and latency</h2>{note}<div class="charts">{"".join(charts)}</div>'


def _failed_trials(summary: RunSummary, digest: Digest) -> str:
    blocks: list[str] = []
    for sid in summary.scenarios:
        for trial in digest.failed.get(sid, []):
            blocks.append(_trial(trial, digest, unfolded=not blocks))  # the first one open
        more = digest.more(sid)
        if more > 0:
            blocks.append(
                f'<p class="dim">{e(sid)}: {more} more trials did not pass (simlab view shows them).</p>'
            )
    if not blocks:
        return '<h2 id="trials">trials that did not pass</h2><p>none</p>'
    return '<h2 id="trials">trials that did not pass</h2>' + "\n".join(blocks)


def _trial(trial: FailedTrial, digest: Digest, unfolded: bool = False) -> str:
    record = trial.record or {}
    checks = record.get("checks") or []
    failing_events = {
        c.get("event") for c in checks if c.get("status") in ("fail", "error") and c.get("hard", True)
    }
    failing_events.add(trial.head.row.first_fault_event)  # the first faulty step (transcript/blame.py)
    events = (record.get("transcript") or {}).get("events") or []
    items = []
    for index, event in enumerate(events):
        mark = f' class="{FAILED_CLASS}"' if index in failing_events else ""
        items.append(f'<li{mark} value="{index}">{e(_event_text(event))}</li>')
    reasons = "".join(f"<li>{e(r)}</li>" for r in trial.reasons)
    return (
        f'<details id="{trial_anchor(trial.unit_id)}"{" open" if unfolded else ""}><summary>'
        f"<code>{e(trial.unit_id)}</code> "
        f'<span class="verdict-{e(trial.verdict)}">{e(verdict_label(trial.verdict))}</span> — '
        f'<span class="dim">{e(digest.where(trial))}</span></summary>'
        f'<ul>{reasons}</ul><ol class="events" start="0">{"".join(items)}</ol></details>'
    )


def _coverage(cov: Coverage | str | None) -> str:
    """What the run leaves untested (``report/coverage.py``): the entries not covered, by area."""
    if cov is None:
        return ""
    title = '<h2 id="coverage">coverage</h2>'
    if isinstance(cov, str):
        return f'{title}<p class="warn">not computed: {e(cov)}</p>'
    total = sum(len(s.entries) for s in cov.sections)
    rows = [(s.area, entry) for s in cov.sections for entry in s.entries if entry.status != "covered"]
    cells = "".join(
        f"<tr><td>{e(area)}</td><td>{e(entry.name)}</td><td>{e(entry.status)}</td>"
        f"<td>{e('; '.join(entry.gaps) or entry.unknown)}</td></tr>"
        for area, entry in rows
    )
    table = (
        f'<table class="text"><tr><th>area</th><th>item</th><th>status</th><th>why</th></tr>{cells}</table>'
        if rows
        else ""
    )
    notes = "".join(f'<p class="warn">note: {e(n)}</p>' for n in cov.notes)
    return (
        f"{title}{notes}<p>{cov.missing} missing of {total} items (tools, refusal paths, policy rules, "
        f"persona traits, terminations, drift); <code>simlab coverage {e(cov.run_id or '')}</code> "
        f"shows what covers each.</p>{table}"
    )


@cache
def _events() -> TypeAdapter[Any]:
    return TypeAdapter(Event)


def _event_text(event: dict[str, Any]) -> str:
    """One stored event as a line of text, as a judge reads it (``judge_prompt.event_text``, with
    model calls), cut at ``TEXT_CHARS``; an event of a kind it does not print is shown as JSON."""
    try:
        typed = _events().validate_python(event)
    except ValidationError:
        typed = None
    text = event_text(typed, max_result_chars=TEXT_CHARS, model_calls=True) if typed is not None else None
    if text is None:
        text = json.dumps(event, ensure_ascii=False)
    return (
        text
        if len(text) <= TEXT_CHARS
        else text[:TEXT_CHARS] + f" … ({len(text) - TEXT_CHARS} more characters)"
    )
