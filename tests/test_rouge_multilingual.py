"""simlab's ROUGE-1 against google-adk 2.13's own figures on a multilingual table (issue 26, item 1).

The figures were computed by google-adk itself (``tests/fixtures/adk/generate.py``, run by hand with
the ``fixtures-adk`` extra); this test does not import google-adk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simlab.graders.rouge import rouge1_f, rouge_tokens

FIGURES = json.loads((Path(__file__).parent / "fixtures" / "adk" / "generated" / "figures.json").read_text("utf-8"))
TABLE = FIGURES["rouge1"]


def test_the_table_covers_many_scripts() -> None:
    assert FIGURES["google_adk"] == "2.13.0"
    assert len(TABLE) >= 14
    assert len({row["script"] for row in TABLE}) >= 7


@pytest.mark.parametrize("row", TABLE, ids=[f"{r['language']}-{i}" for i, r in enumerate(TABLE)])
def test_rouge1_equals_google_adk(row: dict) -> None:
    assert rouge_tokens(row["candidate"]) == row["candidate_tokens"]
    assert rouge_tokens(row["reference"]) == row["reference_tokens"]
    assert rouge1_f(row["candidate"], row["reference"]) == pytest.approx(row["rouge1_f"], abs=1e-12)


def test_the_issue_repros() -> None:
    assert rouge1_f("Привет, я выключил устройство.", "Устройство выключено.") == pytest.approx(1 / 3)
    chinese = rouge1_f("我已经关闭了卧室里的设备2。", "设备2已关闭。")
    assert chinese == pytest.approx(0.632, abs=1e-3)  # not 1.0 on the lone "2"
    assert rouge_tokens("Größe") == ["größe"]  # umlauts kept
    assert rouge_tokens("refunds processed") == ["refund", "process"]  # ASCII stemmed, as ADK stems


def test_response_match_scores_non_english_replies() -> None:
    assert rouge1_f("ฉันได้ปิดอุปกรณ์แล้ว", "ปิดอุปกรณ์เรียบร้อยแล้ว") > 0.5
    assert rouge1_f("Заказ отменён.", "Order cancelled.") == 0.0
