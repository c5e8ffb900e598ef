"""``simlab coverage [SUITE|RUN]``: what a suite leaves untested (``report/coverage.py`` defines
each gap). Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): the spec and
storage machinery is imported where it is used."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from simlab.cli.argtypes import add_json
from simlab.errors import SpecError, UsageError

if TYPE_CHECKING:
    from simlab.report.coverage import Coverage

DESCRIPTION = (
    "What a suite leaves untested: tools never expected, WRITE tools without a refusal path, policy rules "
    "never at risk, persona traits no scenario uses; given a run, also tools never called, rules never "
    "triggered, termination and drift kinds never seen. Exit 0 (gaps are reported, not failed); 2 bad input."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="?",
        metavar="TARGET",
        help="a suite file, a scenario file or folder, or a run id or run folder (default: the "
        "scenarios simlab.yaml names)",
    )
    add_json(parser, "print the coverage as JSON on stdout")


def run(args: argparse.Namespace) -> int:
    from simlab.report.coverage_table import print_coverage
    from simlab.report.terminal import report_console

    cov = coverage_of(args.target)
    if args.json:
        sys.stdout.write(cov.model_dump_json(indent=2) + "\n")
    else:
        print_coverage(cov, report_console())
    return 0


def coverage_of(target: str | None) -> Coverage:
    """The coverage of ``target``: a run (id or folder), a suite file, scenario files or folders,
    or (None) the scenarios ``simlab.yaml`` names."""
    from simlab.report.coverage import coverage, run_coverage
    from simlab.specs import load_config, load_personas, load_scenarios, load_suite, scenario_files

    config = load_config(Path("simlab.yaml"))
    personas_dir = Path(config.personas)
    folder = _run_folder(target, Path(config.transcripts))
    if folder is not None:
        return run_coverage(folder, personas_dir)
    personas = load_personas(personas_dir) if personas_dir.is_dir() else {}
    if target is not None and _is_suite(Path(target)):
        suite = load_suite(Path(target)).spec
        loaded = load_scenarios(scenario_files(suite.scenarios, base=Path(target).parent), personas)
        if suite.tags:
            loaded = [s for s in loaded if set(s.spec.tags) & set(suite.tags)]
        return coverage(loaded, personas, source=f"suite {target}")
    paths = [target] if target is not None else list(config.scenarios)
    if target is not None and not Path(target).exists():
        raise UsageError(
            f"{target}: no suite, scenario file or folder, and no run of that id in {config.transcripts}/"
        )
    loaded = load_scenarios(scenario_files(paths), personas)
    return coverage(loaded, personas, source=", ".join(str(p) for p in paths))


def _run_folder(target: str | None, transcripts: Path) -> Path | None:
    if target is None:
        return None
    for candidate in (Path(target), transcripts / target):
        if (candidate / "run.json").exists() or (candidate / "trials.jsonl").exists():
            return candidate
    return None


def _is_suite(path: Path) -> bool:
    """A file that is a mapping with ``scenarios`` and no scenario fields (as ``validate`` reads one)."""
    from simlab.specs.yamlio import load_yaml_file

    if not path.is_file():
        return False
    try:
        data, _ = load_yaml_file(path)
    except SpecError:
        return False  # reported when it is loaded as a scenario
    return isinstance(data, dict) and "scenarios" in data and not {"user", "domain", "persona"} & set(data)
