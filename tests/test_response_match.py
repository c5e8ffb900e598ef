"""expect.response_match: ROUGE-1 of the agent's last reply against a reference, as ADK's
response_match_score computes it; expected scores from rouge-score called here directly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simlab.cli.main import main
from simlab.specs.expect import Expect

REPO = Path(__file__).resolve().parents[1]
REFERENCE = "Done: a refund of 49.90 to your original card has been issued."


@pytest.fixture
def project(demo_project: Path) -> Path:
    return demo_project


def test_the_spec_is_checked() -> None:
    assert Expect.model_validate({"response_match": {"reference": "x"}}).response_match.threshold == 0.8
    with pytest.raises(ValueError, match="less than or equal to 1"):
        Expect.model_validate({"response_match": {"reference": "x", "threshold": 80}})
    with pytest.raises(ValueError, match="at least 1 character"):
        Expect.model_validate({"response_match": {"reference": ""}})


@pytest.mark.parametrize("threshold", [0.3, 0.95])
def test_rouge_of_the_last_reply_decides_the_check(project: Path, capsys, threshold: float) -> None:
    from rouge_score import rouge_scorer

    path = project / "scenarios/retail/refund-damaged-card.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario["expect"]["response_match"] = {"reference": REFERENCE, "threshold": threshold}
    scenario["trials"] = 2
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    main(["run", str(path), "--agent", "python:examples.retail_agents:careful_agent", "--run-id", "rm",
          "--no-progress"])
    capsys.readouterr()
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    for line in (project / "transcripts/rm/trials.jsonl").read_text().splitlines():
        raw = json.loads(line)
        last = [e["text"] for e in raw["transcript"]["events"] if e["type"] == "agent"][-1]
        expected = scorer.score(REFERENCE, last)["rouge1"].fmeasure
        check = next(c for c in raw["checks"] if c["name"] == "response_match")
        assert check["score"] == pytest.approx(expected)
        assert check["status"] == ("pass" if expected >= threshold else "fail")
        assert (raw["verdict"] == "fail") == (expected < threshold) or raw["verdict"] != "pass"


def test_rouge_punishes_a_correct_paraphrase() -> None:
    """The README's caution, measured: a correct paraphrase scores below a wrong answer that reuses the words."""
    from simlab.graders.rouge import rouge1_f

    paraphrase = "I've sent the 49.90 back to the card you paid with; it is on its way."
    wrong = "Done: a refund of 49.90 to your store credit has been issued."
    assert rouge1_f(paraphrase, REFERENCE) < 0.5 < 0.8 < rouge1_f(wrong, REFERENCE)
