"""Dataset-level evaluators (pooled tool precision/recall/F1, a suite's summary functions) and gate
power (the chance a gate fails by noise), checked against the reference text's figures and
against counts made here, independently, from the stored transcripts."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from simlab.cli.main import main
from simlab.results.dataset import prf, run_summary_functions
from simlab.results.power import binom_cdf, gate_fail_chance, rate_at, trials_needed
from simlab.specs.config import Suite

REPO = Path(__file__).resolve().parents[1]


# -- the reference text's figures ------------------------------------------------------------

def test_pooled_f1_of_the_reference_example() -> None:
    precision, recall, f1 = prf(18, 2, 6)
    assert precision == pytest.approx(0.90) and recall == pytest.approx(0.75)
    assert f1 == pytest.approx(2 * 0.90 * 0.75 / 1.65) and round(f1, 2) == 0.82


def test_undefined_figures_are_none_never_zero() -> None:
    assert prf(0, 0, 0) == (None, None, None)
    assert prf(0, 0, 3) == (None, 0.0, None)  # no call made: precision undefined
    assert prf(0, 2, 3) == (0.0, 0.0, 0.0)


def test_binomial_tail_of_the_reference_example() -> None:
    assert round(binom_cdf(15, 20, 0.8), 3) == 0.370
    # "an agent exactly at the threshold fails the CI gate 37% of the time": pass^1 >= 0.8 over 20 trials
    assert round(gate_fail_chance("pass^1", ">=", 0.8, [20], 0.8), 3) == 0.370
    assert round(gate_fail_chance("success", ">=", 0.8, [20], 0.8), 3) == 0.370
    # "a better agent, true p = 0.9, still fails an 'at least 17 of 20' gate 13% of the time"
    assert round(gate_fail_chance("pass^1", ">=", 0.85, [20], 0.9), 2) == 0.13


def _pmf(n: int, p: float) -> list[float]:
    return [math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]


def test_suite_mean_of_pass_k_is_the_exact_distribution() -> None:
    """pass^2 >= 0.5 as the mean over two scenarios of 4 and 5 trials: brute force over outcomes."""
    p = 0.7
    fails = 0.0
    for c1, c2 in itertools.product(range(5), range(6)):
        mean = (math.comb(c1, 2) / math.comb(4, 2) + math.comb(c2, 2) / math.comb(5, 2)) / 2
        if not mean >= 0.5:
            fails += _pmf(4, p)[c1] * _pmf(5, p)[c2]
    assert gate_fail_chance("pass^2", ">=", 0.5, [4, 5], p) == pytest.approx(fails, abs=1e-12)
    # scope each: the gate fails when any scenario fails it
    f4 = sum(_pmf(4, p)[c] for c in range(5) if not math.comb(c, 2) / 6 >= 0.5)
    f5 = sum(_pmf(5, p)[c] for c in range(6) if not math.comb(c, 2) / 10 >= 0.5)
    assert gate_fail_chance("pass^2", ">=", 0.5, [4, 5], p, "each") == pytest.approx(1 - (1 - f4) * (1 - f5))


def test_trials_needed_is_the_first_n_that_is_quiet_enough() -> None:
    n = trials_needed("pass^1", ">=", 0.8, 1, 0.9, alpha=0.05)
    assert n is not None
    assert gate_fail_chance("pass^1", ">=", 0.8, [n], 0.9) <= 0.05
    assert all(gate_fail_chance("pass^1", ">=", 0.8, [m], 0.9) > 0.05 for m in range(1, n))
    assert rate_at("pass^3", 0.512) == pytest.approx(0.8)
    assert gate_fail_chance("pass^1", "<=", 0.8, [20], 0.8) is None  # an upper bound: not a noise question
    assert gate_fail_chance("pass^5", ">=", 0.5, [4], 0.8) is None  # n < k: inconclusive, not failed


# -- summary functions ---------------------------------------------------------------------

def test_summary_function_results_are_checked(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evals.py").write_text(
        "def count(trials):\n    return {'key': 'n_trials', 'score': len(trials)}\n"
        "def pair(trials):\n    return {'results': [{'key': 'a', 'score': True}, {'key': 'b', 'score': None}]}\n"
        "def broken(trials):\n    raise RuntimeError('no luck')\n"
        "def shapeless(trials):\n    return 0.5\n"
        "def nan(trials):\n    return {'key': 'c', 'score': float('nan')}\n")
    out = run_summary_functions(["evals.py:count", "evals.py:pair", "evals.py:broken", "evals.py:shapeless",
                                 "evals.py:nan", "evals.py:missing"], [object()] * 3)
    assert out["n_trials"].score == 3.0 and out["a"].score == 1.0 and out["b"].score is None
    assert out["evals.py:broken"].error == "RuntimeError: no luck" and out["evals.py:broken"].score is None
    assert "return {'key': NAME, 'score': NUMBER}" in out["evals.py:shapeless"].error
    assert "finite number" in out["evals.py:nan"].error
    assert "has no callable 'missing'" in out["evals.py:missing"].error


def test_a_gate_on_an_unknown_metric_needs_summary_functions() -> None:
    with pytest.raises(ValueError, match="gates.0: unknown gate metric 'tool_f2'"):
        Suite.model_validate({"id": "s", "scenarios": ["x"], "gates": ["tool_f2 >= 0.5"]})
    Suite.model_validate({"id": "s", "scenarios": ["x"], "gates": ["tool_f1 >= 0.5"]})
    Suite.model_validate({"id": "s", "scenarios": ["x"], "summary_evaluators": ["evals:f"], "gates": ["mine >= 1"]})
    with pytest.raises(ValueError, match="no value per scenario"):
        Suite.model_validate({"id": "s", "scenarios": ["x"], "gates": [{"gate": "tool_f1 >= 0.5", "scope": "each"}]})
    with pytest.raises(ValueError, match="can never hold"):
        Suite.model_validate({"id": "s", "scenarios": ["x"], "gates": ["tool_f1 >= 90"]})


# -- a real run: pooled counts against counts made here -------------------------------------

@pytest.fixture
def project(demo_project: Path) -> Path:
    (demo_project / "evals.py").write_text(
        "def mean_tool_calls(trials):\n"
        "    calls = [sum(e.type == 'tool_call' for e in t.transcript.events) for t in trials]\n"
        "    return {'key': 'mean_tool_calls', 'score': sum(calls) / len(calls)}\n")
    return demo_project


REFERENCE = ["lookup_order", "check_refund_policy", "issue_refund"]  # both scenarios' trajectory, names only


def _counts_by_hand(trials: Path) -> tuple[int, int, int, int]:
    tp = fp = fn = n = 0
    for line in trials.read_text().splitlines():
        raw = json.loads(line)
        if raw["verdict"] in ("error", "invalid"):
            continue
        events = raw["transcript"]["events"]
        invalid = {e["call_id"] for e in events if e["type"] == "invalid_call"}
        made = Counter(e["name"] for e in events if e["type"] == "tool_call" and e["call_id"] not in invalid)
        bad = sum(1 for e in events if e["type"] == "tool_call" and e["call_id"] in invalid)
        matched = sum((made & Counter(REFERENCE)).values())
        tp, fp, fn, n = tp + matched, fp + sum(made.values()) - matched + bad, fn + len(REFERENCE) - matched, n + 1
    return tp, fp, fn, n


def test_pooled_tool_f1_and_a_summary_function_in_report_and_gates(project: Path, capsys) -> None:
    suite = project / "suites" / "dataset.yaml"
    suite.write_text(
        "id: dataset\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml',"
        " '../scenarios/retail/store-credit-refused.yaml']\n"
        "agent: python:examples.retail_agents:flaky_agent\ntrials: 4\nallow_unjudged: [rubric]\n"
        "summary_evaluators: ['evals:mean_tool_calls']\n"
        "gates:\n  - 'tool_f1 >= 0.999'\n  - 'mean_tool_calls <= 50'\n  - 'pass^1 >= 0.8'\n")
    code = main(["run", "--suite", str(suite), "--run-id", "ds", "--no-progress"])
    out = capsys.readouterr().out
    summary = json.loads((project / "transcripts" / "ds" / "summary.json").read_text())
    tp, fp, fn, n = _counts_by_hand(project / "transcripts" / "ds" / "trials.jsonl")
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall)
    data = summary["dataset"]
    assert data["tool_precision"]["score"] == pytest.approx(precision)
    assert data["tool_recall"]["score"] == pytest.approx(recall)
    assert data["tool_f1"]["score"] == pytest.approx(f1)
    assert data["tool_f1"]["detail"].startswith(f"tp={tp} fp={fp} fn={fn} over {n} trials")
    assert data["mean_tool_calls"]["source"] == "evals:mean_tool_calls"
    assert f"tool calls (pooled over the run): precision {precision:.2f}  recall {recall:.2f}  f1 {f1:.2f}" in out
    assert "summary mean_tool_calls = " in out
    assert f1 < 0.999  # the flaky agent skips the policy check sometimes: the F1 gate fails
    assert f"FAIL         tool_f1 >= 0.999 — tool_f1 = {f1:.4g} violates >= 0.999" in out
    assert "PASS         mean_tool_calls <= 50" in out
    flat = " ".join(out.split())  # the console wraps long lines
    assert "pass^1 >= 0.8 — noise: an agent exactly at pass^1 = 0.8 fails this gate" in flat
    trials = 4  # per scenario, two scenarios: pooled Binomial(8, 0.8); failing means 6 or fewer of 8
    chance = sum(math.comb(8, x) * 0.8**x * 0.2 ** (8 - x) for x in range(7))
    assert f"fails this gate {chance:.1%} of the time (2 scenarios, n={trials} per scenario)" in flat
    assert code == 1
    # the manifest keeps the suite's functions: a later report runs them too
    assert main(["report", "ds", "--format", "markdown"]) == 0
    assert "summary mean\\_tool\\_calls = " in capsys.readouterr().out


def _one_scenario_suite(project: Path, rest: str) -> Path:
    suite = project / "suites" / "dataset.yaml"
    suite.write_text("id: dataset\nscenarios: ['../scenarios/retail/refund-damaged-card.yaml']\n"
                     "agent: python:examples.retail_agents:careful_agent\ntrials: 2\n" + rest)
    return suite


def test_a_gate_on_a_key_no_function_returned_is_inconclusive(project: Path, capsys) -> None:
    suite = _one_scenario_suite(project, "allow_unjudged: [rubric]\nsummary_evaluators: ['evals:mean_tool_calls']\n"
                                         "gates:\n  - 'mean_tool_call >= 1'\n")
    assert main(["run", "--suite", str(suite), "--run-id", "typo", "--no-progress"]) == 3
    assert "no summary function returned 'mean_tool_call'" in " ".join(capsys.readouterr().out.split())


def test_run_list_sizes_a_suite_before_it_runs(project: Path, capsys) -> None:
    """Before anything is played: 4 trials in each of 10 scenarios, 'pass^1 >= 0.5' per scenario."""
    assert main(["run", "--suite", "suites/nightly.yaml", "--list"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    one = sum(math.comb(4, x) * 0.5**4 for x in range(2))  # one scenario scores 0 or 1 of 4
    assert (f"gate pass^1 >= 0.5 (each scenario) — noise: an agent exactly at pass^1 = 0.5 fails this gate "
            f"{1 - (1 - one) ** 10:.1%} of the time (10 scenarios, n=4 per scenario)") in flat
    assert not list((project / "transcripts").glob("*/trials.jsonl"))


def test_a_summary_function_that_does_not_import_stops_the_run_before_it_plays(project: Path, capsys) -> None:
    suite = _one_scenario_suite(project, "summary_evaluators:\n  - 'evals:mean_tool_calls'\n  - 'evals:mean_tool_cals'\n")
    assert main(["run", "--suite", str(suite), "--run-id", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "suites/dataset.yaml:7: summary_evaluators.1: 'evals' has no callable 'mean_tool_cals'" in err
    assert not (project / "transcripts" / "nope" / "trials.jsonl").exists()


def test_validate_names_a_summary_function_that_does_not_import(project: Path, capsys) -> None:
    suite = _one_scenario_suite(project, "summary_evaluators: ['evals:nope']\n")
    assert main(["validate", str(suite)]) == 2
    assert "dataset.yaml:5: summary_evaluators.0: 'evals' has no callable 'nope'" in capsys.readouterr().err
