"""`simlab coverage`: what a suite (or a run) leaves untested, on a small project and on the demo.
Each known gap is reported exactly; a suite that covers everything reports nothing missing; the
table says what the JSON says; the HTML report has the run's coverage section."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from simlab.cli.main import main
from simlab.graders.policy import check_names
from simlab.report.coverage import Coverage
from simlab.report.coverage_table import HEADER, row, title, verdict_line
from simlab.runner.store import RunStore
from simlab.specs import load_personas, load_scenarios, scenario_files
from tests.support import write_project

REPO = Path(__file__).resolve().parents[1]
OWNER_CHECK_POLICY = ("owner: {check_refund_policy.order_id: orders.{order_id}.customer, "
                      "principal: signed_in_customer}")


def kv(root: Path, name: str, persona: str, expect: str) -> None:
    (root / "scenarios" / f"{name}.yaml").write_text(
        f"id: {name}\ntitle: {name}\ndomain: tests.support:KV\npersona: {persona}\n"
        f"user:\n  goal: Store {name}=v.\n  opening: Please store {name}=v.\n  success_phrases: [stored]\n"
        f"max_turns: 4\nexpect:\n{expect}")


def kv_project(root: Path, scenarios: dict[str, tuple[str, str]]) -> None:
    """The small project (tests/support.py) with its scenarios replaced and two personas."""
    write_project(root, scenarios=0, trials=2)
    (root / "personas" / "tester.yaml").write_text("id: tester\ndescription: A tester.\ntraits: [careful, terse]\n")
    (root / "personas" / "idle.yaml").write_text("id: idle\ndescription: Idle.\ntraits: [chatty]\n")
    for name, (persona, expect) in scenarios.items():
        kv(root, name, persona, expect)


def cov_json(capsys: Any, *argv: str) -> Coverage:
    capsys.readouterr()
    assert main(["coverage", *argv, "--json"]) == 0
    return Coverage.model_validate_json(capsys.readouterr().out)


def gaps(cov: Coverage) -> dict[str, dict[str, list[str]]]:
    """Area → item → its gaps, for the items that are not covered."""
    return {s.area: {e.name: e.gaps or [e.status] for e in s.entries if e.status != "covered"} for s in cov.sections}


def test_a_small_suite_reports_each_known_gap_exactly(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"gap": ("tester", "  trajectory: {calls: [set_item]}\n  rules:\n"
                                            "    - {before: [get_item, set_item]}\n"
                                            "    - {after_confirmation: transfer_to_human}\n")})
    monkeypatch.chdir(tmp_path)
    cov = cov_json(capsys)
    assert gaps(cov) == {
        "tools": {"get_item": ["never expected"], "transfer_to_human": ["never expected"]},
        "refusal paths": {"set_item": ["no refusal path"], "transfer_to_human": ["no refusal path"]},
        "policy rules": {"after_confirmation: transfer_to_human": ["never at risk"]},
        "persona traits": {"chatty": ["no scenario"]},
    }
    assert cov.missing == 6 and cov.run_id is None and cov.scenarios == ["gap"] and cov.domains == ["kv"]
    rules = {e.name: e for e in cov.sections[2].entries}
    assert rules["before: [get_item, set_item]"].scenarios == ["gap"]
    assert all(e.trials is None for s in cov.sections for e in s.entries)  # scenarios only: no trial figure
    assert [s.area for s in cov.sections] == ["tools", "refusal paths", "policy rules", "persona traits"]


def test_a_suite_that_covers_everything_reports_nothing_missing(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {
        "a": ("tester", "  trajectory: {calls: [get_item, set_item]}\n  rules:\n    - {before: [get_item, set_item]}\n"),
        "b": ("idle", "  trajectory: {calls: [transfer_to_human]}\n  forbidden: [set_item]\n"
                      "  rules:\n    - {after_confirmation: transfer_to_human}\n"),
        "c": ("tester", "  rules:\n    - {max_calls: {transfer_to_human: 0}}\n"),
    })
    monkeypatch.chdir(tmp_path)
    cov = cov_json(capsys)
    assert cov.missing == 0 and all(not v for v in gaps(cov).values())
    refusals = {e.name: e.scenarios for e in cov.sections[1].entries}
    assert refusals == {"set_item": ["b"], "transfer_to_human": ["c"]}  # forbidden; max_calls 0
    assert main(["coverage"]) == 0
    assert "nothing missing (11 items)" in capsys.readouterr().out


def test_a_python_rule_is_unknown_never_covered_nor_missing(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"p": ("tester", "  trajectory: {calls: [get_item, set_item, transfer_to_human]}\n"
                                          "  forbidden: [set_item, transfer_to_human]\n"
                                          "  rules:\n    - {python: 'tests.support:no_rule'}\n")})
    (tmp_path / "personas" / "idle.yaml").unlink()
    monkeypatch.chdir(tmp_path)
    cov = cov_json(capsys)
    (entry,) = cov.sections[2].entries
    assert entry.status == "unknown" and entry.unknown and not entry.gaps
    assert cov.missing == 0


def test_the_demo_suite_names_its_gaps(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    cov = cov_json(capsys, "scenarios")
    assert gaps(cov) == {
        "tools": {"get_customer": ["never expected"], "issue_store_credit": ["never expected"],
                  "send_email": ["never expected"]},
        "refusal paths": {}, "persona traits": {},
        "policy rules": {OWNER_CHECK_POLICY: ["never at risk"]},  # check_refund_policy: not in play there
    }
    assert len(cov.scenarios) == 10


def test_a_suite_of_one_demo_scenario_leaves_write_tools_without_a_refusal_path(tmp_path, monkeypatch, capsys):
    suite = tmp_path / "one.yaml"
    suite.write_text(f"id: one\nscenarios: [{REPO / 'scenarios/retail/refund-damaged-card.yaml'}]\n")
    monkeypatch.chdir(REPO)
    cov = cov_json(capsys, str(suite))
    assert cov.source == f"suite {suite}" and cov.scenarios == ["refund-damaged-card"]
    found = gaps(cov)
    # issue_refund is forbidden with method store_credit, issue_store_credit outright
    assert set(found["refusal paths"]) == {"request_manager_approval", "send_email", "transfer_to_human"}
    assert set(found["persona traits"]) == {"pushy", "manipulative", "persistent", "confused", "friendly",
                                            "hesitant", "careful", "literal", "polite", "patient", "thorough"}
    assert found["policy rules"] == {}  # the limit guards issue_refund, which is expected


def _table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("│").split("│")]
            for line in text.splitlines() if line.startswith("│")]


def test_a_run_adds_what_its_trials_show_and_the_table_equals_the_json(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"s": ("tester", "  trajectory: {calls: [set_item]}\n  forbidden: [transfer_to_human]\n"
                                          "  rules:\n    - {before: [get_item, set_item]}\n"
                                          "    - {max_calls: {get_item: 1}}\n    - {max_calls: {set_item: 1}}\n")})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    cov = cov_json(capsys, "r")
    assert cov.run_id == "r" and cov.source == "run r"
    found = gaps(cov)
    assert found["tools"] == {"get_item": ["never expected", "never called"],
                              "transfer_to_human": ["never expected", "never called"]}
    assert found["policy rules"] == {"max_calls: {get_item: 1}": ["never at risk", "never triggered"]}
    rules = {e.name: e.trials for e in cov.sections[2].entries}
    # before: failed in both trials (no get_item); max_calls set_item: passed, evaluated on a live call
    assert rules == {"before: [get_item, set_item]": 2, "max_calls: {get_item: 1}": 0, "max_calls: {set_item: 1}": 2}
    ended = {e.name: e.trials for e in cov.sections[4].entries}
    assert ended["goal_reached"] == 2 and sum(ended.values()) == 2 and "observed" not in ended
    assert set(found["terminations"]) == set(ended) - {"goal_reached"}
    assert {e.name for e in cov.sections[5].entries} >= {"drift:role_swap", "drift:premature_stop"}
    assert found["refusal paths"] == {"set_item": ["no refusal path"]}
    # the table says what the JSON says, row for row
    monkeypatch.setenv("COLUMNS", "1000")
    assert main(["coverage", "r"]) == 0
    out = capsys.readouterr().out
    assert _table_rows(out) == [row(e, True) for s in cov.sections for e in s.entries]
    words = " ".join(out.split())  # a title wraps at its table's width
    assert all(" ".join(title(s).split()) in words for s in cov.sections) and verdict_line(cov) in out
    assert all(name in out for name in HEADER)


def test_the_policy_check_names_are_those_the_grader_gives(tmp_path, monkeypatch, capsys):
    """``check_names`` (what coverage maps checks to rules by) against every stored trial of a demo run."""
    for name in ("scenarios", "personas", "examples"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "simlab.yaml", tmp_path / "simlab.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "d", "--trials", "1", "--no-progress"]) == 0
    loaded = {s.spec.id: s.spec for s in load_scenarios(scenario_files(["scenarios"]), load_personas(Path("personas")))}
    records = list(RunStore(tmp_path / "transcripts/d").records())
    assert len(records) == 10
    for record in records:
        names = [c.name for c in record.checks if c.kind == "policy"]
        assert names == [n for n, _ in check_names(loaded[record.transcript.scenario_id].expect)]
    cov = cov_json(capsys, "d")
    assert OWNER_CHECK_POLICY in gaps(cov)["policy rules"]
    html = tmp_path / "r.html"
    capsys.readouterr()
    main(["report", "d", "--html", str(html)])
    page = html.read_text()
    section = page[page.index('<h2 id="coverage">'):]
    assert f"{cov.missing} missing of" in section and "get_customer" in section
    assert "never expected; never called" in section


def test_coverage_of_a_run_whose_scenarios_are_gone_is_said_in_the_html(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1, trials=1)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    shutil.rmtree(tmp_path / "scenarios")
    assert main(["coverage", "r"]) == 2
    assert "scenario files of this run are gone" in capsys.readouterr().err
    assert main(["report", "r", "--html", str(tmp_path / "r.html")]) == 0
    assert "<h2 id=\"coverage\">coverage</h2><p class=\"warn\">not computed: scenario files" in (
        tmp_path / "r.html").read_text()


def test_an_unknown_target_is_a_clear_error(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1)
    monkeypatch.chdir(tmp_path)
    assert main(["coverage", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope: no suite, scenario file or folder, and no run of that id in transcripts/" in err
    assert "Traceback" not in err


def test_json_is_the_model(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"x": ("tester", "  trajectory: {calls: [set_item]}\n")})
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["coverage", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema_version"] == 1 and data["missing"] == Coverage.model_validate(data).missing
    assert data["sections"][0]["entries"][0]["status"] in ("covered", "missing", "unknown")


def test_text_from_files_is_printed_inert(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"x": ("tester", "  trajectory: {calls: [set_item]}\n")})
    (tmp_path / "personas" / "idle.yaml").write_text(
        'id: idle\ndescription: Idle.\ntraits: ["evil\\e[2Jx", "[bold]loud[/bold]"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "1000")
    capsys.readouterr()
    assert main(["coverage"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[2J" not in out and "evil\\x1b[2Jx" in out
    assert "[bold]loud[/bold]" in out  # shown as written, never read as markup


def test_a_run_not_finished_says_so(tmp_path, monkeypatch, capsys):
    kv_project(tmp_path, {"x": ("tester", "  trajectory: {calls: [set_item]}\n")})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--run-id", "r", "--no-progress"]) == 0
    trials = tmp_path / "transcripts/r/trials.jsonl"
    trials.write_text(trials.read_text().splitlines(keepends=True)[0])
    (tmp_path / "transcripts/r/heads.jsonl").unlink(missing_ok=True)
    cov = cov_json(capsys, "r")
    assert "1 of the 2 planned trials finished: what the trials show stands for those only" in cov.notes
    assert cov.sections[0].entries[1].trials == 1  # set_item, called in the one trial kept


def test_an_imported_run_has_no_scenario_to_cover(tmp_path, monkeypatch, capsys):
    write_project(tmp_path, scenarios=1)
    monkeypatch.chdir(tmp_path)
    line = {"id": "c1", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    (tmp_path / "prod.jsonl").write_text(json.dumps(line) + "\n")
    assert main(["import", "openai", "prod.jsonl", "--run-id", "prod"]) == 0
    capsys.readouterr()
    assert main(["coverage", "prod"]) == 2
    assert "prod holds imported traces, which have no scenario: coverage needs a run" in capsys.readouterr().err
