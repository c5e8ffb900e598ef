"""``simlab generate``: scenario drafts written by a model, each checked before it lands in a review
folder (``report/generate.py``), and ``--accept`` to move reviewed drafts into the project.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what the work needs is
imported in ``run``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from simlab.cli.argtypes import count, positive

if TYPE_CHECKING:
    from simlab.report.generate import GenerateSummary

DESCRIPTION = (
    "Ask a model for N scenario drafts of a domain (its tools, policy and seed data; optional seed "
    "scenarios as examples). A draft is kept only when it validates, its expected actions replay on "
    "the domain, lint finds no error, it is no near-duplicate and a reference agent can play it to its "
    "expected end state; a draft that fails a step is asked again, told what failed. Kept drafts land "
    "in the review folder with summary.json (what each adds to coverage, why others were dropped, "
    "what each role cost). --accept moves reviewed drafts into the project. Exit 0 some kept; 1 none "
    "kept; 2 bad input; 3 the model failed."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="the model that writes the drafts (role author; default: simlab.yaml's author), read as "
        "`simlab run --judge` reads a judge (a bare model keeps the endpoint and price of simlab.yaml's "
        "author, else its judge)",
    )
    parser.add_argument(
        "--domain", help="the domain to draft for (default: the one domain of the project's scenarios)"
    )
    parser.add_argument(
        "-n", "--count", type=positive, default=5, metavar="N", help="drafts to ask for (default 5)"
    )
    parser.add_argument(
        "--target",
        choices=("uncovered",),
        help="uncovered: ask for what `simlab coverage` reports missing (tools never expected, WRITE "
        "tools without a refusal path, rules never at risk)",
    )
    parser.add_argument(
        "--seeds", nargs="+", default=[], metavar="FILE", help="scenario files shown to the model as examples"
    )
    parser.add_argument("--out", default="drafts", metavar="DIR", help="the review folder (default drafts)")
    parser.add_argument(
        "--simulator",
        choices=("rules", "scripted", "llm"),
        help="the simulator kind the drafts are linted under (default: simlab.yaml's, else rules)",
    )
    parser.add_argument(
        "--max-attempts",
        type=positive,
        default=3,
        metavar="N",
        help="model calls per round of a draft at most, when its answer is malformed (default 3)",
    )
    parser.add_argument(
        "--repair-rounds",
        type=count,
        default=2,
        metavar="N",
        help="times a draft that failed a step is asked again, told what failed (default 2; 0: never)",
    )
    parser.add_argument(
        "--agent",
        metavar="REF",
        help="the reference agent each draft is played against, read as `simlab run --agent` reads it "
        "(default: simlab.yaml's agent)",
    )
    parser.add_argument(
        "--trials",
        type=count,
        default=1,
        metavar="N",
        help="trials of each draft against the reference agent before it is kept (default 1; 0: "
        "drafts are not played)",
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="answer a model request from the response cache when the same request (same seed and "
        "role) was answered before, as `simlab run --cache` (also simlab.yaml's cache:)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print summary.json on stdout instead of the table"
    )
    parser.add_argument(
        "--accept",
        nargs="*",
        metavar="NAME",
        help="move reviewed drafts (default: all in the review folder) into the scenarios folder, "
        "and their new personas into personas/; never over an existing file",
    )
    parser.add_argument(
        "--into",
        metavar="DIR",
        help="with --accept: the folder the scenarios go to (default: the first folder simlab.yaml's "
        "scenarios names)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio
    import sys
    from pathlib import Path

    from simlab.errors import UsageError
    from simlab.report.generate import SUMMARY_FILE, GenerateRequest, generate
    from simlab.specs import load_config

    config = load_config(Path("simlab.yaml"))
    if args.accept is not None:
        return _accept(args, config)
    if not args.model and config.author is None:
        raise UsageError(
            "simlab generate needs a model that writes the drafts: pass --model MODEL or set 'author' "
            "in simlab.yaml"
        )
    from simlab.runner.factory import build_judge
    from simlab.runner.prepare import judge_flag

    suite, personas, domain = _project(args.domain, config)
    spec, notes = (
        judge_flag(args.model, config.author or config.judge, "--model")
        if args.model
        else (config.author, [])
    )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    how = _how(args, config)
    model = build_judge(spec, role="author", **how)
    assert model is not None  # a model was named
    configured = config.__dict__.get("simulator")
    simulator = args.simulator or (str(configured.kind) if configured is not None else "rules")
    request = GenerateRequest(
        domain=domain,
        suite=suite,
        personas=personas,
        out=Path(args.out),
        count=args.count,
        target=args.target,
        seeds=[Path(p) for p in args.seeds],
        simulator=simulator,
        max_attempts=args.max_attempts,
        repair_rounds=args.repair_rounds,
        reference=_reference(args, config, simulator, how),
    )
    summary = asyncio.run(generate(request, model))
    if args.json:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
    else:
        _show(summary)
    print(f"wrote {Path(args.out) / SUMMARY_FILE}", file=sys.stderr)
    return 0 if summary.kept else 1


def _how(args: argparse.Namespace, config: Any) -> dict[str, Any]:
    """What the author's and the reference agent's models share: timeout, retries, the project's
    per-model caps (model_concurrency, model_rpm), the response cache."""
    settings: dict[str, Any] = {}
    if config.call_timeout_s is not None:
        settings["timeout_s"] = config.call_timeout_s  # a local server writing a whole draft takes time
    if config.max_retries is not None:
        settings["max_retries"] = config.max_retries
    if config.model_concurrency or config.model_rpm:
        from simlab.llm.limits import ModelLimiter

        settings["limiter"] = ModelLimiter(config.model_concurrency, rpm=config.model_rpm)
    if args.cache or config.cache:
        from simlab.llm.cache import ResponseCache
        from simlab.runner.prepare import cache_folder, cache_max_mb

        settings["cache"] = ResponseCache(cache_folder(config), max_mb=cache_max_mb(config.cache or True))
    return settings


def _reference(args: argparse.Namespace, config: Any, kind: str, how: dict[str, Any]) -> Any:
    """The reference agent and the simulated user that play each draft; None with ``--trials 0``.
    The user is the rules simulator (deterministic) unless the drafts are linted for an LLM user:
    then simlab.yaml's LLM simulator plays them."""
    import sys
    import warnings

    from simlab.errors import UsageError
    from simlab.report.draft_play import Reference
    from simlab.runner.factory import build_agent, build_simulator
    from simlab.runner.prepare import agent_spec
    from simlab.specs import SimulatorSpec

    if args.trials == 0:
        return None
    if not args.agent and config.agent is None:
        raise UsageError(
            "simlab generate plays each draft against a reference agent: pass --agent REF, set 'agent' "
            "in simlab.yaml, or pass --trials 0 to keep drafts unplayed"
        )
    notes: list[str] = []
    spec = agent_spec(args.agent, config.agent, notes)
    user = SimulatorSpec()
    if kind == "llm":
        user = config.simulator
        if user is None or user.kind != "llm":
            raise UsageError(
                "drafts linted for an LLM user are played by simlab.yaml's LLM simulator: set "
                "simulator: {model: …} there, or pass --simulator rules"
            )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = build_agent(spec, **how)
        simulator = build_simulator(user, spec, **how)
    for note in [*notes, *(f"warning: {w.message}" for w in caught)]:
        print(f"note: {note}", file=sys.stderr)
    pin = agent.pin()
    return Reference(
        agent=agent,
        simulator=simulator,
        ref=f"{pin.kind}:{pin.ref}" if pin.kind == "python" else pin.ref,
        trials=args.trials,
        seed=config.seed or 0,
        limits=config.limits,
    )


def _project(name: str | None, config: Any) -> tuple[list[Any], dict[str, Any], Any]:
    """The project's scenarios of the domain, its personas, and the domain."""
    from pathlib import Path

    from simlab.env.domain import load_domain
    from simlab.errors import SpecError, UsageError
    from simlab.specs import load_personas, load_scenarios, scenario_files

    personas_dir = Path(config.personas)
    personas = load_personas(personas_dir) if personas_dir.is_dir() else {}
    try:
        files = scenario_files(config.scenarios)
    except SpecError:
        files = []  # a project without scenarios yet
    loaded = load_scenarios(files, personas)
    domains = sorted({s.spec.domain for s in loaded})
    if name is None:
        if len(domains) != 1:
            found = ", ".join(domains) or "none"
            raise UsageError(f"name the domain with --domain (the project's scenarios use: {found})")
        name = domains[0]
    try:
        domain = load_domain(name)
    except (SpecError, ValueError, ImportError) as exc:
        raise UsageError(f"domain {name!r}: {exc}") from None
    return [s for s in loaded if s.spec.domain == name], personas, domain


def _accept(args: argparse.Namespace, config: Any) -> int:
    from pathlib import Path

    from simlab.report.generate import accept

    into = Path(args.into) if args.into else _scenarios_dir(config)
    for source, target in accept(Path(args.out), list(args.accept), into, Path(config.personas)):
        print(f"moved {source} → {target}")
    return 0


def _scenarios_dir(config: Any) -> Any:
    from pathlib import Path

    folders = [Path(p) for p in config.scenarios if Path(p).is_dir()]
    return folders[0] if folders else Path("scenarios")


def _show(summary: GenerateSummary) -> None:
    from rich.table import Table
    from rich.text import Text

    from simlab.inert import one_line
    from simlab.report.generate import cost_lines, outcome_rows
    from simlab.report.terminal import report_console

    console = report_console()
    table = Table(
        title=Text(f"drafts for {one_line(summary.domain)}: {len(summary.kept)} kept of {summary.asked}"),
        title_justify="left",
        show_edge=False,
    )
    for name in ("draft", "id", "outcome", "adds to coverage / why dropped"):
        table.add_column(
            name, justify="right" if name == "draft" else "left", no_wrap=name in ("draft", "outcome")
        )
    for draft, sid, outcome, text in outcome_rows(summary):
        table.add_row(Text(str(draft)), Text(sid), Text(outcome), Text(text))
    console.print(table)
    console.print(
        Text(
            f"coverage gaps of the suite: {summary.missing_before} without the drafts, "
            f"{summary.missing_after} with the {len(summary.kept)} kept"
        )
    )
    for line in cost_lines(summary):
        console.print(Text(line, style="dim"))
