"""``simlab promote RUN TRIAL``: a scenario YAML draft from a stored trial (an imported production
conversation, or a played one), for the author to correct.

Why a draft with comments rather than a finished scenario: a trace says what happened, not what
should have happened. The draft keeps what can be taken as it was (the user's opening and later
turns as a ``script`` for the scripted simulator, the earlier turns as ``history:`` when asked,
the successful WRITE calls as an ``expected_actions`` draft) and marks with ``# TODO`` what only
the author can say: the goal, the persona, whether each action was right.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from simlab.errors import UsageError

DESCRIPTION = (
    "Turn one trial of a run into a scenario draft that `simlab validate` accepts; # TODO comments say "
    "what to correct."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run id or folder")
    parser.add_argument(
        "trial", help="the trial: its unit id (observed#3) or its number in a one-scenario run"
    )
    parser.add_argument("--domain", help="the domain the scenario plays in (needed for an imported trace)")
    parser.add_argument("--out", help="the file to write (default scenarios/promoted/<id>.yaml)")
    parser.add_argument(
        "--history-turns",
        type=int,
        default=0,
        metavar="N",
        help="start the scenario after the first N turns, given as history: (default 0)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite the file if it exists")


def run(args: argparse.Namespace) -> int:
    from simlab.env.domain import load_domain
    from simlab.report.build import project_run
    from simlab.runner.store import RunStore

    folder = project_run(args.run)
    records = {r.unit_id: r for r in RunStore(folder).records()}
    unit = args.trial if "#" in args.trial else _by_number(records, args.trial, folder)
    record = records.get(unit)
    if record is None:
        shown = ", ".join(list(records)[:5]) + (" …" if len(records) > 5 else "")
        raise UsageError(f"{folder}: no trial {unit!r} (trials: {shown or 'none'})")
    t = record.transcript
    observed = t.observed is not None
    domain_ref = args.domain or (None if observed else _pinned_domain(folder, t))
    if not domain_ref:
        raise UsageError(
            f"{unit} is an imported trace: name the domain it should play in with --domain "
            "(a built-in such as retail, or a module defining DOMAIN)"
        )
    domain = load_domain(domain_ref, source="--domain")
    if args.history_turns < 0:
        raise UsageError("--history-turns: give 0 or more")
    text, scenario_id = draft(t, folder.name, unit, domain, domain_ref, history_turns=args.history_turns)
    out = Path(args.out) if args.out else Path("scenarios") / "promoted" / f"{scenario_id}.yaml"
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists; pass --force to overwrite it or --out another file")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(
        f"wrote {out}: a draft of scenario {scenario_id} from {folder.name} {unit}; correct the # TODO "
        "lines, "
        f"then: simlab validate {out}",
        file=sys.stderr,
    )
    from simlab.traces.conversation import has_content

    if not has_content(t):
        print(
            f"warning: {unit}'s trace carries no message content: the draft has no user script (what the "
            "user "
            "said is unknown); `simlab import` says how to turn content capture on",
            file=sys.stderr,
        )
    return 0


def _by_number(records: dict[str, Any], number: str, folder: Path) -> str:
    scenarios = {unit.rsplit("#", 1)[0] for unit in records}
    if not number.isdigit() or len(scenarios) != 1:
        raise UsageError(
            f"{folder}: name the trial by its unit id (scenario#N), e.g. {next(iter(records), 'x#1')}"
        )
    return f"{scenarios.pop()}#{number}"


def _pinned_domain(folder: Path, t: Any) -> str | None:
    """The domain reference of the scenario file the trial was played from, else its domain's name."""
    from simlab.runner.store import RunStore
    from simlab.specs.yamlio import load_yaml_file

    pinned = ((RunStore(folder).read_manifest() or {}).get("pins") or {}).get("scenarios") or {}
    path = (pinned.get(t.scenario_id) or {}).get("path")
    if path and Path(path).is_file():
        data = load_yaml_file(Path(path))[0] or {}
        if isinstance(data, dict) and isinstance(data.get("domain"), str):
            return str(data["domain"])
    return str(t.domain)


def _flow(value: Any) -> str:
    import yaml  # here, not at the top: main.py imports this module to build the parser

    return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=2**31 - 1).strip()


def _scalar(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML string: quotes and escapes kept


def _note(text: str) -> str:
    """Text from the trace inside a comment: one line, whatever it holds (a newline in a tool's
    name would otherwise start a line of YAML)."""
    from simlab.inert import one_line

    return one_line(text)


DRAFT_KEYS = {"id", "title", "domain", "persona", "user", "max_turns", "history", "expect"}


def _checked(text: str) -> str:
    """The draft, after reading it back: only the keys a draft has, whatever the trace held."""
    import yaml

    data = yaml.safe_load(text)
    extra = set(data) - DRAFT_KEYS if isinstance(data, dict) else {"(not a mapping)"}
    if extra or not set(data.get("expect") or {}) <= {"expected_actions", "rules"}:
        raise RuntimeError(f"the promoted draft does not read back as written: {sorted(extra)}")
    return text


def draft(
    t: Any, run: str, unit: str, domain: Any, domain_ref: str, *, history_turns: int = 0
) -> tuple[str, str]:
    """(the YAML text, the scenario id) of the draft."""
    from simlab.graders.drift import identifiers
    from simlab.transcript import ToolCall, ToolResult, UserMessage

    source = t.observed.conversation_id if t.observed is not None else unit
    scenario_id = (
        "promoted-" + (re.sub(r"[^a-z0-9_.-]+", "-", str(source).lower()).strip("-.") or "trace")[:60]
    )
    # a user message without text (a trace recorded without content) has nothing to script
    users = [e for e in t.events if isinstance(e, UserMessage) and e.turn > history_turns and e.text.strip()]
    results = {e.call_id: e for e in t.events if isinstance(e, ToolResult)}
    lines = [
        "# "
        + _note(
            f"A scenario draft promoted from run {run}, trial {unit}"
            + (f" ({t.observed.source})" if t.observed is not None else "")
            + "."
        ),
        "# Correct every TODO, then run `simlab validate` on this file.",
        f"id: {scenario_id}",
        f"title: {_scalar('TODO: what this case is about (promoted from ' + unit + ')')}",
        f"domain: {_scalar(domain_ref)}",
        'persona: {id: promoted-user, description: "TODO: who the user is and how they write"}',
        "user:",
        '  goal: "TODO: what the user wanted, in their words (the agent never sees it)"',
    ]
    facts = {
        f"id_{i + 1}": token
        for i, token in enumerate(dict.fromkeys(token for u in users for token in identifiers(u.text)))
    }
    lines.append(
        f"  known_facts: {_flow(facts)}"
        + " " * max(1, 28 - len(_flow(facts)))
        + "# the ids the user stated; TODO: name them, add what else they could tell"
    )
    if users:
        lines.append(f"  opening: {_scalar(users[0].text)}")
        lines.append("  script:                      # the recorded user turns, for `--simulator scripted`")
        lines += [f"    - {_scalar(u.text)}" for u in users]
    lines.append(f"max_turns: {max(len(users) + 2, 4)}")
    history = _history(t, history_turns, results)
    if history:
        lines.append(
            "history:                       # the recorded start; its tool calls run on the initial state"
        )
        lines += history
    lines.append("expect:")
    actions, notes = [], []
    for e in t.events:
        if not isinstance(e, ToolCall) or e.turn <= history_turns:
            continue
        tool, result = domain.tool(e.name), results.get(e.call_id)
        if tool is None:
            notes.append("  # " + _note(f"{e.name} (turn {e.turn}) is not a tool of domain {domain.name}"))
        elif tool.access.value != "write":
            continue
        elif result is None or not result.ok:
            notes.append(
                "  # "
                + _note(
                    f"{e.name}({_flow(e.arguments or {})}) at turn {e.turn} failed in the trace: left out"
                )
            )
        else:
            try:
                tool.validate(e.arguments or {})
            except ValueError as exc:
                notes.append(
                    "  # "
                    + _note(
                        f"{e.name} at turn {e.turn}: arguments do not fit the tool "
                        f"({str(exc).splitlines()[0]}): left out"
                    )
                )
                continue
            actions.append(f"    - {{tool: {_scalar(e.name)}, args: {_flow(e.arguments or {})}}}")
    if actions:
        lines.append(
            "  expected_actions:            # TODO: the WRITE calls the trace made; keep only the right ones"
        )
        lines += actions
    lines += notes
    calls = [e.name for e in t.events if isinstance(e, ToolCall)]
    lines.append(
        "  # "
        + _note(f"the trace called: {', '.join(calls) or 'no tool'}; add rules (before, after_confirmation…)")
    )
    lines.append("  # TODO: state assertions on the outcome, rubric items for what code cannot check")
    if not actions:
        lines.append("  rules: []")
    return _checked("\n".join(lines) + "\n"), scenario_id


def _history(t: Any, turns: int, results: dict[str, Any]) -> list[str]:
    from simlab.transcript import AgentMessage, ToolCall, UserMessage

    out = []
    for e in t.events:
        if getattr(e, "turn", 0) > turns or turns == 0:
            continue
        if isinstance(e, UserMessage):
            out.append(f"  - user: {_scalar(e.text)}")
        elif isinstance(e, AgentMessage):
            out.append(f"  - agent: {_scalar(e.text)}")
        elif isinstance(e, ToolCall):
            result = results.get(e.call_id)
            out.append(f"  - tool: {_scalar(e.name)}")
            out.append(f"    args: {_flow(e.arguments or {})}")
            if result is not None and result.ok:
                out.append(f"    result: {_flow(result.result)}")
    return out
