"""``simlab generate``: scenario drafts written by a model, each checked before it lands in a review
folder (``report/generate.py``), and ``--accept`` to move reviewed drafts into the project.
Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): what the work needs is
imported in ``run``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from simlab.cli.argtypes import positive

if TYPE_CHECKING:
    from simlab.report.generate import GenerateSummary

DESCRIPTION = (
    "Ask a model for N scenario drafts of a domain (its tools, policy and seed data; optional seed "
    "scenarios as examples). A draft is kept only when it validates, its expected actions replay on "
    "the domain, lint finds no error and it is no near-duplicate; kept drafts land in the review "
    "folder with summary.json (what each adds to coverage, why others were dropped). --accept moves "
    "reviewed drafts into the project. Exit 0 some kept; 1 none kept; 2 bad input; 3 the model failed."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="the model that writes the drafts, read as `simlab run --judge` reads a judge (a bare "
        "model keeps simlab.yaml's judge endpoint and price)",
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
        help="model calls per draft at most, when its answer is malformed (default 3)",
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
    if not args.model:
        raise UsageError("simlab generate needs --model MODEL (the model that writes the drafts)")
    from simlab.runner.factory import build_judge
    from simlab.runner.prepare import judge_flag

    suite, personas, domain = _project(args.domain, config)
    spec, notes = judge_flag(args.model, config.judge, "--model")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    settings: dict[str, Any] = {}
    if config.call_timeout_s is not None:
        settings["timeout_s"] = config.call_timeout_s  # a local server writing a whole draft takes time
    if config.max_retries is not None:
        settings["max_retries"] = config.max_retries
    model = build_judge(spec, **settings)
    assert model is not None  # a model was named
    configured = config.__dict__.get("simulator")
    request = GenerateRequest(
        domain=domain,
        suite=suite,
        personas=personas,
        out=Path(args.out),
        count=args.count,
        target=args.target,
        seeds=[Path(p) for p in args.seeds],
        simulator=args.simulator or (str(configured.kind) if configured is not None else "rules"),
        max_attempts=args.max_attempts,
    )
    summary = asyncio.run(generate(request, model))
    if args.json:
        sys.stdout.write(summary.model_dump_json(indent=2) + "\n")
    else:
        _show(summary)
    print(f"wrote {Path(args.out) / SUMMARY_FILE}", file=sys.stderr)
    return 0 if summary.kept else 1


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

    from simlab.report.generate import cost_line
    from simlab.report.terminal import report_console

    console = report_console()
    table = Table(
        title=f"drafts for {summary.domain}: {len(summary.kept)} kept of {summary.asked}",
        title_justify="left",
        show_edge=False,
    )
    for name in ("draft", "id", "outcome", "adds to coverage / why dropped"):
        table.add_column(
            name, justify="right" if name == "draft" else "left", no_wrap=name in ("draft", "outcome")
        )
    rows: list[tuple[int, str, str, str]] = [
        (k.draft, k.id, "kept", "; ".join(k.adds) or "nothing coverage counts") for k in summary.kept
    ]
    rows += [(d.draft, d.id or "–", f"dropped: {d.stage}", d.reason) for d in summary.dropped]
    for draft, sid, outcome, text in sorted(rows):
        table.add_row(Text(str(draft)), Text(sid), Text(outcome), Text(text))
    console.print(table)
    console.print(
        Text(
            f"coverage gaps of the suite: {summary.missing_before} without the drafts, "
            f"{summary.missing_after} with the {len(summary.kept)} kept"
        )
    )
    console.print(Text(cost_line(summary), style="dim"))
