"""Runs whose files were put together by hand: every reader gives the same answer.

A corpus of hostile runs (duplicated, torn in the middle, manifest-less, mixed pins, head-only,
trials of another plan), each read by report, gate, compare, grade, view, merge and a resume. Each
gives a clear error (the same one) or the right figure, never a silent wrong one. Plus
``simlab merge``: N shards merged are exactly the unsharded run; an overlap or a torn shard is
refused.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from simlab.cli.main import main
from simlab.runner.plan import derive_seed
from simlab.tui.data import RunIndex, RunInfo
from tests.fixtures.hostile.helpers import comparable, read_lines
from tests.support import write_project

PLANNED = 12  # 3 scenarios × 4 trials


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one full run and its three shards, played once for the module."""
    root = tmp_path_factory.mktemp("hostile-runs")
    write_project(root, scenarios=3, trials=4)
    (root / "suite.yaml").write_text("id: s\nscenarios: ['scenarios/*.yaml']\ngates: ['pass^1 >= 0.5']\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        assert main(["run", "--run-id", "full", "--no-progress"]) == 0
        for i in (1, 2, 3):
            assert main(["run", "--run-id", f"shard{i}", "--shard", f"{i}/3", "--no-progress"]) == 0
    return root


@pytest.fixture
def project(base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(base, root)
    monkeypatch.chdir(root)
    return root


def trials(root: Path, run: str) -> Path:
    return root / "transcripts" / run / "trials.jsonl"


def plan_lines(root: Path) -> list[str]:
    """The full run's lines in plan order: trials finish, and are stored, in any order, and the
    corpus's expected texts name the unit on line 1 (kv-0#1)."""
    lines = trials(root, "full").read_text().splitlines(keepends=True)
    rows = [json.loads(line)["head"]["row"] for line in lines]
    return [line for _, line in sorted(zip([(r["scenario_id"], r["trial"]) for r in rows], lines))]


def new_run(root: Path, name: str, text: str | bytes, manifest_from: str | None = "full") -> str:
    folder = root / "transcripts" / name
    folder.mkdir()
    if manifest_from:
        manifest = json.loads((root / "transcripts" / manifest_from / "run.json").read_text())
        # the run id stays the source's: its trials name it (a folder copied under another name)
        (folder / "run.json").write_text(json.dumps(manifest))
    (folder / "trials.jsonl").write_bytes(text if isinstance(text, bytes) else text.encode())
    return name


# -- the corpus: each case makes a run and says what every reader must answer -----------------


def clean(root: Path) -> str:
    return "full"


def duplicated_identically(root: Path) -> str:  # one shard's file concatenated twice, say
    text = trials(root, "full").read_text()
    return new_run(root, "dup-same", text + text)


def duplicated_differently(root: Path) -> str:  # overlapping shards that played a unit differently
    lines = plan_lines(root)
    other = json.loads(lines[0])
    other["verdict"] = "fail" if other["verdict"] == "pass" else "pass"
    return new_run(root, "dup-diff", "".join(lines) + json.dumps(other) + "\n")


def torn_in_the_middle(root: Path) -> str:  # a killed shard concatenated before another
    one = trials(root, "shard1").read_text()
    two = trials(root, "shard2").read_text().replace('"run_id":"shard2"', '"run_id":"shard1"')
    return new_run(root, "torn", one[: len(one) - 300] + two, manifest_from="shard1")


def manifest_less(root: Path) -> str:  # 5 of 12 trials and no run.json
    lines = trials(root, "full").read_text().replace('"run_id":"full"', '"run_id":"no-manifest"')
    return new_run(root, "no-manifest", "".join(lines.splitlines(keepends=True)[:5]), manifest_from=None)


def mixed_pins(root: Path) -> str:  # resumed with --force over other pins
    assert main(["run", "--run-id", "mixed", "--trials", "2", "--no-progress"]) == 0
    assert main(["run", "--run-id", "mixed", "--force", "--no-progress"]) == 0
    return "mixed"


def head_only(root: Path) -> str:  # lines stripped down to their heads
    heads = []
    for line in plan_lines(root):
        raw = json.loads(line)
        heads.append(json.dumps({"schema_version": raw["schema_version"], "unit_id": raw["unit_id"],
                                 "head": raw["head"]}, separators=(",", ":")))
    return new_run(root, "heads", "\n".join(heads) + "\n")


def another_plan(root: Path) -> str:  # a trial of another run's plan mixed in
    lines = plan_lines(root)
    first = json.loads(lines[0])
    foreign = lines[0].replace('"kv-0#1"', '"kv-0#9"').replace('"trial":1,', '"trial":9,') \
        .replace(f'"seed":{first["transcript"]["seed"]},', f'"seed":{derive_seed(0, "kv-0", 9)},')
    return new_run(root, "foreign", "".join(lines) + foreign)


def another_run(root: Path) -> str:  # every trial played by another run (and another seed)
    text = trials(root, "full").read_text()
    other = new_run(root, "other", text.replace('"run_id":"full"', '"run_id":"elsewhere"'))
    return other


def one_line_everywhere(root: Path) -> str:  # one trial's line copied under every unit id
    first = json.loads(plan_lines(root)[0])
    out = []
    for line in plan_lines(root):
        unit = json.loads(line)["unit_id"]
        copy = json.loads(json.dumps(first))
        copy["unit_id"] = copy["head"]["row"]["unit_id"] = unit
        out.append(json.dumps(copy, separators=(",", ":")))
    return new_run(root, "cloned", "\n".join(out) + "\n")


def another_seed(root: Path) -> str:  # the same run id and agent, another seed
    text = trials(root, "full").read_text()
    first = json.loads(text.splitlines()[0])
    seed = first["transcript"]["seed"]
    return new_run(root, "seeded", text.replace(f'"seed":{seed},', f'"seed":{seed + 1},'))


ERROR, FIGURE = "error", "figure"
CORPUS: dict[str, tuple[Callable[[Path], str], str, Any]] = {
    # case: (maker, kind, error text shared by every reader | the trials every figure counts)
    "clean": (clean, FIGURE, PLANNED),
    "duplicated identically": (duplicated_identically, FIGURE, PLANNED),
    "duplicated differently": (duplicated_differently, ERROR, "unit 'kv-0#1' is stored twice, on lines 1 and 13"),
    "torn in the middle": (torn_in_the_middle, ERROR, "not valid JSON (a line cut short, or two lines run together)"),
    "manifest-less": (manifest_less, FIGURE, 5),
    "mixed pins": (mixed_pins, FIGURE, PLANNED),
    "head-only": (head_only, ERROR, "trial 'kv-0#1' has no transcript"),
    "another plan": (another_plan, FIGURE, PLANNED),
    "another run": (another_run, ERROR, "field run_id is 'elsewhere', but"),
    "one line everywhere": (one_line_everywhere, ERROR, "field unit_id: its transcript is trial 1 of scenario"),
    "another seed": (another_seed, ERROR, "field seed is"),
}
# what a gate says of the runs that do have figures: only a complete run of one plan may pass
GATE = {"clean": 0, "duplicated identically": 0, "manifest-less": 3, "mixed pins": 3, "another plan": 3}
# which of them merge can take as a shard (it needs a manifest, one configuration, one plan)
MERGEABLE = {"clean", "duplicated identically"}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", list(CORPUS))
def test_every_reader_gives_the_same_answer(case: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make, kind, expected = CORPUS[case]
    run = make(project)
    folder = project / "transcripts" / run
    answers: dict[str, Any] = {}

    code, out, err = cli(capsys, "report", run, "--json")
    answers["report"] = (code, json.loads(out)["trials"] if out else err)  # written even when exit 3
    code, out, err = cli(capsys, "gate", run, "--suite", "suite.yaml")
    answers["gate"] = (code, out + err)
    code, out, err = cli(capsys, "compare", "full", run, "--json")
    answers["compare"] = (code, json.loads(out)["pooled"]["candidate"]["n"] if code == 0 else err)
    index = RunIndex(RunInfo.load(folder))
    rows = index.read_all()
    answers["view"] = (3 if index.problem else 0, index.problem or len(rows))
    code, out, err = cli(capsys, "merge", f"merged-{run}", run)
    answers["merge"] = (code, out + err)
    code, out, err = cli(capsys, "run", "--run-id", run, "--no-progress")
    answers["resume"] = (code, out + err)
    code, out, err = cli(capsys, "grade", run, "--json")  # last: it rewrites the file
    answers["grade"] = (code, out + err)

    assert "internal error" not in json.dumps(answers)
    if kind == ERROR:  # the same error, naming file and line, from every reader (exit 3)
        for reader, (code, text) in answers.items():
            assert code == 3, f"{reader}: {code} {text}"
            assert expected in text and "trials.jsonl:" in text, f"{reader}: {text}"
        return
    assert answers["report"] == (GATE[case], expected), answers["report"]  # not whole: inconclusive, as a gate
    assert answers["view"] == (0, expected)
    assert answers["gate"][0] == GATE[case], answers["gate"]
    if case in ("manifest-less", "mixed pins"):  # pins unknown or mixed: not comparable, and said so
        assert answers["compare"][0] == 2 and "not comparable" in answers["compare"][1]
    else:
        assert answers["compare"] == (0, expected)
    if case in MERGEABLE:
        assert answers["merge"][0] == 0 and f"merged {expected} of {PLANNED}" in answers["merge"][1]
    else:
        assert answers["merge"][0] == 2, answers["merge"]
    if case == "manifest-less":  # resume refuses to mix unknown pins in; grade needs the run's scenarios
        assert answers["resume"][0] == 2 and "has trials but no run.json" in answers["resume"][1]
        assert answers["grade"][0] == 2 and "no run.json" in answers["grade"][1]
    else:
        assert answers["resume"][0] == 0 and "12 graded trials" in answers["resume"][1], answers["resume"]
        assert answers["grade"][0] == 0, answers["grade"]


def test_what_a_report_leaves_out_it_says(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for make, warning in [(duplicated_identically, "stored twice, identically (lines 1 and 13): counted once"),
                          (manifest_less, "no run.json"),
                          (another_plan, "1 stored trials are not in this run's plan (run.json)")]:
        run = make(project)
        code, out, err = cli(capsys, "report", run)
        assert code == (0 if make is duplicated_identically else 3) and warning in " ".join(out.split()), out
        assert any(warning in w for w in json.loads((project / "transcripts" / run / "summary.json").read_text())
                   ["warnings"])
        index = RunIndex(RunInfo.load(project / "transcripts" / run))
        index.read_all()
        assert any(warning in w for w in index.warnings())


def test_a_resume_without_run_json_refuses_and_with_force_marks_the_run_mixed(project: Path, capsys) -> None:
    run = manifest_less(project)
    code, _, err = cli(capsys, "run", "--run-id", run, "--no-progress")
    assert code == 2 and "has trials but no run.json" in err and "--force" in err
    assert not (project / "transcripts" / run / "run.json").exists()
    code, _, _ = cli(capsys, "run", "--run-id", run, "--no-progress", "--force")
    summary = json.loads((project / "transcripts" / run / "summary.json").read_text())
    assert summary["trials"] == PLANNED and "run.json was missing" in summary["mixed_pins"][0]
    code, out, _ = cli(capsys, "gate", run, "--suite", "suite.yaml")
    assert code == 3 and "mixes configurations" in out


# -- simlab merge ---------------------------------------------------------------------------


def test_n_shards_merged_are_exactly_the_unsharded_run(project: Path, capsys) -> None:
    code, _, err = cli(capsys, "merge", "merged", "shard1", "shard2", "transcripts/shard3")
    assert code == 0, err
    assert f"merged {PLANNED} of {PLANNED} planned trials from 3 shards" in err
    merged = project / "transcripts" / "merged"
    merged_lines = read_lines(merged / "trials.jsonl")
    assert len(merged_lines) == PLANNED and comparable(merged_lines) == comparable(read_lines(trials(project, "full")))
    manifest = json.loads((merged / "run.json").read_text())
    assert [m["run_id"] for m in manifest["merged_from"]] == ["shard1", "shard2", "shard3"]
    assert sum(m["trials"] for m in manifest["merged_from"]) == PLANNED and manifest["run_id"] == "merged"
    assert manifest["pins"] == json.loads((project / "transcripts/full/run.json").read_text())["pins"]
    _, out, _ = cli(capsys, "report", "merged", "--json")
    _, full, _ = cli(capsys, "report", "full", "--json")
    merged_summary, full_summary = json.loads(out), json.loads(full)
    untimed = [{k: v for k, v in s["suite"].items() if k != "latency_s"} for s in (merged_summary, full_summary)]
    assert untimed[0] == untimed[1] and merged_summary["warnings"] == []
    assert merged_summary["scenarios"] == full_summary["scenarios"]
    assert cli(capsys, "gate", "merged", "--suite", "suite.yaml")[0] == 0
    code, _, err = cli(capsys, "merge", "merged", "shard1")
    assert code == 2 and "already holds a run" in err


def test_merge_refuses_overlapping_torn_or_foreign_shards(project: Path, capsys) -> None:
    code, _, err = cli(capsys, "merge", "m1", "shard1", "shard2", "shard1")
    assert code == 2 and "named twice" in err
    shutil.copytree(project / "transcripts/shard1", project / "transcripts/copy1")
    code, _, err = cli(capsys, "merge", "m2", "shard1", "copy1")
    assert code == 2 and "is also in" in err and "the shards overlap" in err
    assert not (project / "transcripts/m2/trials.jsonl").exists()  # nothing half-merged is left
    path = trials(project, "shard2")
    path.write_bytes(path.read_bytes()[:-200])  # killed mid-write
    code, _, err = cli(capsys, "merge", "m3", "shard1", "shard2", "shard3")
    assert code == 2 and "ends in a torn line" in err
    assert main(["run", "--run-id", "seed1", "--seed", "1", "--shard", "2/3", "--no-progress"]) == 0
    code, _, err = cli(capsys, "merge", "m4", "shard1", "seed1")
    assert code == 2 and "pins or plan differ" in err and "seed: stored 0, now 1" in err
