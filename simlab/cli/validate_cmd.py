"""``simlab validate``: check every spec and cross-reference; report every problem of every file
in one pass.

Problems (exit 2) go to stderr as ``file:line: field: what is wrong``. So do warnings (exit 0),
for what is valid but almost certainly not meant: a control signal swallowed by a YAML comment, a
scripted line stating an identifier the user was never given. Notes (stdout) say what could not
be checked: a state path into a free-form mapping. Graders a scenario or a suite names
(``module:function``) are imported, and their parameters bound to their factories. With
``--deep``, each scenario that validates is also linted (``cli/lint_cmd.py``): its errors are
problems, its warnings warnings.

Imported to parse its arguments, ``--help`` too (``cli/main.COMMANDS``): the spec machinery is
imported where it is used."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simlab.cli.argtypes import add_paths
from simlab.errors import SpecError

if TYPE_CHECKING:
    from simlab.specs.loader import Loaded


def configure(parser: argparse.ArgumentParser) -> None:
    add_paths(parser, "files or folders (default: the project's scenarios and personas)")
    parser.add_argument(
        "--deep", action="store_true", help="also lint each valid scenario: solvable and sound (simlab lint)"
    )


class _Report:
    """What one validation found (a plain class: ``dataclasses`` would load ``inspect`` for --help)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.notes: list[str] = []


class Collected:
    """Every spec ``paths`` name, read and checked: the report, the scenarios as far as they read,
    the suites with the scenario files each names, the project's config and the count of suite
    and config files."""

    def __init__(
        self,
        report: _Report,
        entries: list[Loaded],
        suites: list[tuple[Loaded, list[Path]]],
        config: Any,
        others: int,
        personas: int,
    ) -> None:
        self.report, self.entries, self.suites = report, entries, suites
        self.config, self.others, self.personas = config, others, personas


def run(args: argparse.Namespace) -> int:
    from simlab.specs.loader import LoadedScenario

    found = collect(args.paths)
    report = found.report
    if getattr(args, "deep", False):
        from simlab.cli.lint_cmd import lint_entries

        deep = [
            f for f in lint_entries(found, None).findings if f.check != "script"
        ]  # validate's own warning
        report.problems.extend(f.text() for f in deep if f.severity == "error")
        report.warnings.extend(f.text() for f in deep if f.severity == "warning")
    for line in sorted(report.problems, key=_by_place):
        print(line, file=sys.stderr)
    for line in sorted(report.warnings, key=_by_place):
        print(f"warning: {line}", file=sys.stderr)
    for line in report.notes:
        print(f"note: {line}")
    if report.problems:
        n = len(report.problems)
        print(f"{n} problem{'s' if n != 1 else ''} found", file=sys.stderr)
        return SpecError.exit_code
    complete = sum(isinstance(e, LoadedScenario) for e in found.entries)
    others = found.others
    extra = f", {others} suite/config file{'s' if others != 1 else ''}" if others else ""
    warned = (
        f", {len(report.warnings)} warning{'s' if len(report.warnings) != 1 else ''}"
        if report.warnings
        else ""
    )
    print(f"ok: {complete} scenarios, {found.personas} personas{extra}{warned}")
    return 0


def collect(paths: list[str]) -> Collected:
    """Read and check every spec of ``paths`` (default: the project's), as ``simlab validate`` does."""
    from simlab.specs import ProjectConfig, Suite, load_config, load_model, load_personas, scenario_files
    from simlab.specs.loader import read_partial, read_scenarios

    report = _Report()
    try:
        config = load_config(Path("simlab.yaml"))
    except SpecError as exc:
        report.problems.extend(exc.problems)
        config = ProjectConfig()
    try:
        personas = load_personas(Path(config.personas))
    except SpecError as exc:
        report.problems.extend(exc.problems)
        personas = {}
    scenario_paths: list[Path] = []
    suites: list[tuple[Loaded, list[Path]]] = []
    others = 0
    try:
        files = scenario_files(paths or config.scenarios)
    except SpecError as exc:
        report.problems.extend(exc.problems)
        files = []
    for path in files:
        kind = _kind(path, Path(config.personas))
        if kind == "persona":
            continue  # already loaded with the personas folder
        if kind in ("suite", "config"):
            others += 1
            model: type[Suite] | type[ProjectConfig] = Suite if kind == "suite" else ProjectConfig
            try:
                loaded: Loaded | None = load_model(path, model)
            except SpecError as exc:
                report.problems.extend(exc.problems)
                loaded = read_partial(path, model)  # its scenarios are still looked for
                if loaded is None or "scenarios" not in loaded.spec.model_fields_set:
                    continue
            if kind == "suite" and loaded is not None:
                from simlab.runner.prepare import summary_function_problems

                _check_graders(loaded, ("graders",), report)
                report.problems.extend(summary_function_problems(loaded))
                named = _suite_files(loaded, report)
                suites.append((loaded, named))
                scenario_paths.extend(named)
            continue
        scenario_paths.append(path)
    unique = {p.resolve(): p for p in reversed(scenario_paths)}  # each file once, as first named
    entries, problems = read_scenarios(list(reversed(unique.values())), personas)
    report.problems.extend(problems)
    for entry in entries:
        _check_entry(entry, report)
    for suite, named in suites:
        _check_tags(suite, named, entries, report)
    return Collected(report, entries, suites, config, others, len(personas))


def _check_entry(entry: Loaded, report: _Report) -> None:
    """Domain, tools and state of one scenario (also of a partial one), and its warnings."""
    from simlab.env.checks import check_against_domain, state_path_notes
    from simlab.specs.yamlio import read_spec_bytes, signal_comments

    spec = entry.spec
    given = spec.model_fields_set
    if "domain" in given:
        domain, problems = check_against_domain(entry)
        report.problems.extend(problems)
        if domain is not None:
            paths = [
                (_at(entry, "expect", "state", i, "path"), a.path) for i, a in enumerate(spec.expect.state)
            ]
            report.notes.extend(state_path_notes(domain, paths))
            report.problems.extend(_grader_tool_problems(entry, domain))
    _check_graders(entry, ("expect", "graders"), report)
    for line, comment in signal_comments(read_spec_bytes(entry.path).decode("utf-8-sig", "replace")):
        report.warnings.append(
            f"{entry.path}:{line}: {comment!r} is a YAML comment, so the control signal is "
            'lost; quote the whole line (- "Thanks. ###STOP###") to send it'
        )
    _script_ids(entry, report)


def _check_graders(entry: Loaded | None, where: tuple[str, ...], report: _Report) -> None:
    """The graders at ``where`` import and take their params (the registry is imported only then)."""
    if entry is None:
        return
    uses: Any = entry.spec
    for part in where:
        uses = getattr(uses, part, None)
    if uses:
        from simlab.graders.registry import use_problems

        report.problems.extend(use_problems(entry, where))


def _grader_tool_problems(entry: Loaded, domain: Any) -> list[str]:
    """The tools a scenario's graders expect the agent to call (ADK's expected tool uses), checked
    against the domain: a name it lacks makes every trial fail that grader, with no other hint."""
    uses = getattr(entry.spec, "expect", None)
    if not uses or not uses.graders:
        return []
    from simlab.env.checks import tool_name_problems
    from simlab.graders.registry import GraderError, resolve

    refs: list[tuple[tuple[Any, ...], str]] = []
    for i, use in enumerate(uses.graders):
        try:
            bound = resolve(use)
        except GraderError:
            continue  # reported by _check_graders
        if bound.info.tools is not None:
            refs += [
                (("expect", "graders", i, "params", *loc), name)
                for loc, name in bound.info.tools(bound.params)
            ]
    return tool_name_problems(entry, domain, refs, what="unknown expected tool")


def _script_ids(entry: Loaded, report: _Report) -> None:
    """Warn about a fixed opening or script line that states an id the user was never given."""
    from simlab.graders.lint import script_identifier_warnings  # no model import: validate stays light

    report.warnings.extend(f"{f.where}: {f.message} ({f.fix})" for f in script_identifier_warnings(entry))


def _suite_files(suite: Loaded, report: _Report) -> list[Path]:
    """The scenario files a suite names; a path or glob that finds none is a problem."""
    from simlab.specs import scenario_files

    found: list[Path] = []
    for i, pattern in enumerate(suite.spec.scenarios):
        try:
            found.extend(scenario_files([pattern], base=suite.path.parent))
        except SpecError as exc:
            why = exc.problems[0].split(": ", 1)[-1]
            report.problems.append(
                f"{_at(suite, 'scenarios', i)}: {pattern!r} (relative to {suite.path.parent}) "
                f"matches no scenario: {why}"
            )
    return found


def _check_tags(suite: Loaded, named: list[Path], entries: list[Loaded], report: _Report) -> None:
    """A suite's tag filter must leave a scenario to run."""
    tags = set(suite.spec.tags)
    mine = {p.resolve() for p in named}
    chosen = [e for e in entries if e.path.resolve() in mine]
    if tags and chosen and not any(tags & set(getattr(e.spec, "tags", [])) for e in chosen):
        report.problems.append(
            f"{_at(suite, 'tags')}: tags {sorted(tags)} select none of the suite's "
            f"{len(chosen)} scenario{'s' if len(chosen) != 1 else ''}"
        )


_PLACE = re.compile(r"^(.*?):(\d+):")


def place_key(line: str) -> tuple[str, int]:
    """File, then line: each file's problems together, in the order they appear in it."""
    match = _PLACE.match(line)
    return (match.group(1), int(match.group(2))) if match else ("", 0)


_by_place = place_key


def _at(entry: Loaded, *loc: Any) -> str:
    from simlab.specs.yamlio import line_for

    return f"{entry.path}:{line_for(entry.lines, loc) or 1}: {'.'.join(map(str, loc))}"


def _kind(path: Path, personas_dir: Path) -> str:
    from simlab.specs.loader import YAML_SUFFIXES

    if path.name in ("simlab.yaml", "simlab.yml"):
        return "config"
    if path.suffix.lower() not in YAML_SUFFIXES:
        return "scenario"
    parents = {p.name for p in path.parents}
    if path.resolve().parent == personas_dir.resolve() or "personas" in parents:
        return "persona"
    if "suites" in parents or _looks_like_suite(path):
        return "suite"
    return "scenario"


def _looks_like_suite(path: Path) -> bool:
    """A suite outside ``suites/``: a mapping with ``scenarios`` (and no scenario fields)."""
    from simlab.specs.yamlio import load_yaml_file

    try:
        data, _ = load_yaml_file(path)
    except SpecError:
        return False  # reported when it is loaded as a scenario
    return isinstance(data, dict) and "scenarios" in data and not {"user", "domain", "persona"} & set(data)
