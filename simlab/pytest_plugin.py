"""The pytest plugin: scenario files as test items (``pytest scenarios/ --simlab-agent REF``).

Registered as a pytest11 entry point, so it is loaded wherever simlab is installed (``-p
simlab.pytest_plugin`` loads it by hand); it collects nothing unless ``--simlab-agent`` (or the
``simlab_agent`` ini option) is given, and imports simlab's machinery only then. One item per
scenario file, named after the scenario's id and marked with its tags (``-m refund``, ``-k``);
each plays its scenario's trials in a run of its own and fails, naming the gates, the checks
and the transcripts, when the scenario's figures do not hold the gates (the suite's, or
``--simlab-gate``; default every trial passes). JUnit comes from pytest (``--junitxml``).

A regression and an infrastructure error stay apart, as CI needs them: the run is played in the
item's setup and the gates are checked in its call, so a scenario that could not be judged
(``simlab.testing``: an infrastructure error, an incomplete run, n < k; or simlab refused to run
it) is a pytest *error* (JUnit ``<error>``), and only a gate that failed is a *failure*
(``<failure>``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

STAMP = pytest.StashKey[str]()
SUITE_GATES = pytest.StashKey[dict[str, list[str]]]()  # suite file → its per-scenario gates


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("simlab", "simlab scenarios as tests")
    group.addoption(
        "--simlab-agent",
        help="the agent under test (as simlab run --agent); turns scenario files into test items",
    )
    group.addoption(
        "--simlab-trials", type=int, help="trials per scenario (default: the scenario's, simlab.yaml's)"
    )
    group.addoption(
        "--simlab-suite", help="a suite whose settings and gates apply (its gates read per scenario)"
    )
    group.addoption(
        "--simlab-gate",
        action="append",
        default=[],
        help="a gate each scenario must hold, e.g. 'pass^3 >= 0.8' (repeatable; default pass^1 >= 1.0)",
    )
    group.addoption(
        "--simlab-project", help="the folder with simlab.yaml (default: the nearest above each file)"
    )
    parser.addini("simlab_agent", "the agent under test, as --simlab-agent", default="")


def _agent(config: Any) -> str | None:
    return config.getoption("--simlab-agent") or config.getini("simlab_agent") or None


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "simlab: a simlab scenario")
    config.stash[STAMP] = time.strftime("%Y%m%d-%H%M%S")  # one run id prefix per session


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    if _agent(parent.config) is None or file_path.suffix not in (".yaml", ".yml"):
        return None
    from simlab.specs.yamlio import load_yaml_file

    try:
        value, _ = load_yaml_file(file_path)
    except Exception:  # not ours to report: simlab validate says what is wrong with a file
        return None
    if not isinstance(value, dict) or not {"id", "domain", "user"} <= set(value):
        return None  # a suite, a persona, a config, or any other YAML
    return ScenarioFile.from_parent(parent, path=file_path, scenario=value)


class ScenarioFile(pytest.File):
    def __init__(self, *, scenario: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def collect(self) -> Any:
        item = ScenarioItem.from_parent(self, name=str(self.scenario["id"]))
        item.add_marker("simlab")
        for tag in self.scenario.get("tags") or []:
            if isinstance(tag, str) and tag.isidentifier():
                self.config.addinivalue_line("markers", f"{tag}: simlab scenarios tagged {tag}")
                item.add_marker(tag)
        yield item


class ScenarioFailed(Exception):
    pass


def _project(path: Path, given: str | None) -> Path:
    if given:
        return Path(given).resolve()
    for folder in path.resolve().parents:
        if (folder / "simlab.yaml").exists():
            return folder
    return Path.cwd()


def suite_gates(config: Any, suite: str) -> list[str]:
    """The gates of ``--simlab-suite`` that one scenario can hold, read from the file once per
    session (not once per item: a suite file does not change while pytest runs)."""
    from simlab.specs import load_suite
    from simlab.testing import per_scenario

    cache = config.stash.setdefault(SUITE_GATES, {})
    key = str(Path(suite).resolve())
    if key not in cache:
        cache[key] = [
            g.gate
            for g in load_suite(Path(suite)).spec.gates
            if g.gate and g.view == "valid" and per_scenario(g.gate)
        ]
    return list(cache[key])


class ScenarioItem(pytest.Item):
    result: Any = None  # the scenario against its gates (``simlab.testing.ScenarioResult``), after setup

    def setup(self) -> None:
        """Play the scenario's run and judge it: what cannot be judged is an error of this phase."""
        import simlab
        from simlab.errors import SimlabError
        from simlab.testing import DEFAULT_GATES, scenario_result

        config = self.config
        project = _project(self.path, config.getoption("--simlab-project"))
        suite = config.getoption("--simlab-suite")
        try:
            gates = list(config.getoption("--simlab-gate")) or (suite_gates(config, suite) if suite else [])
            run = simlab.run(
                [str(self.path.resolve())],
                agent=_agent(config),
                trials=config.getoption("--simlab-trials"),
                suite=str(Path(suite).resolve()) if suite else None,
                project=project,
                run_id=f"pytest-{config.stash[STAMP]}-{self.name}",
            )
        except SimlabError as exc:  # bad input (exit 2) or infrastructure (exit 3): never a regression
            pytest.fail(f"scenario {self.name}: not run (exit {exc.exit_code}): {exc}", pytrace=False)
        self.result = scenario_result(run, self.name, gates or DEFAULT_GATES)
        if self.result.inconclusive:
            pytest.fail(self.result.message(), pytrace=False)

    def runtest(self) -> None:
        if not self.result.passed:
            raise ScenarioFailed(self.result.message())

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"simlab scenario {self.name}"
