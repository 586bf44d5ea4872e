"""bench/recall.py's MemoryBank hand labels: a label naming a turn the history lacks is refused
with its name (a typo would count as a miss no ranker could fix), and a question labelled none
(no answer in the history) stays out of the counts."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rank_bm25")

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_recall", BENCH / "recall.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_recall", module)
    spec.loader.exec_module(module)
    return module


recall = _load_bench()

HISTORY = {
    "2023-04-28": [
        {"query": "I went to Green Meadow Park and saw a squirrel.", "response": "Lovely!"},
        {"query": "I also read a novel called Silent Separation.", "response": "Sounds moving."},
    ],
    "2023-04-29": [
        {"query": "Today I steamed a sea bass with ginger.", "response": "Healthy and tasty."},
    ],
}


def _labels(tmp_path: Path, questions: list[dict], user: str = "Emily") -> Path:
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"about": "test", "users": {user: questions}}), encoding="utf-8")
    return path


@pytest.mark.parametrize("turn", ["2023-04-28#2", "2023-05-01#0", "2023-04-28", "2023-04-28#x"])
def test_a_label_naming_a_turn_the_history_lacks_is_refused_by_name(
        tmp_path: Path, turn: str) -> None:
    path = _labels(tmp_path, [{"q": 3, "question": "What did I see?", "turns": [turn]}])
    with pytest.raises(ValueError, match=f"Emily q3: turn '{turn}' is not in the history"):
        recall.load_labels(path, {"Emily": HISTORY})


def test_a_label_for_a_user_without_a_history_is_refused(tmp_path: Path) -> None:
    path = _labels(tmp_path, [{"q": 0, "question": "?", "turns": ["2023-04-28#0"]}], "Frank")
    with pytest.raises(ValueError, match="user 'Frank' has no history"):
        recall.load_labels(path, {"Emily": HISTORY})


@pytest.mark.parametrize("question", [
    {"q": 0, "question": "?", "turns": []},
    {"q": 0, "question": "?", "turns": ["2023-04-28#0"], "none": True},
])
def test_a_question_gives_turns_or_none_but_not_both(tmp_path: Path, question: dict) -> None:
    with pytest.raises(ValueError, match="give turns, or none"):
        recall.load_labels(_labels(tmp_path, [question]), {"Emily": HISTORY})


def test_valid_labels_load_in_order(tmp_path: Path) -> None:
    questions = [{"q": 0, "question": "Which park?", "turns": ["2023-04-28#0"]},
                 {"q": 1, "question": "What on May 5th?", "turns": [], "none": True}]
    loaded = recall.load_labels(_labels(tmp_path, questions), {"Emily": HISTORY})
    assert loaded == {"Emily": questions}


def test_a_question_with_no_answer_stays_out_of_the_counts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for code, users in (("en", {" Emily ": HISTORY}), ("cn", {"张曼婷": {"2023-04-28": [
            {"query": "我去了绿禾公园。", "response": "真好！"}]}})):
        (data / f"memory_bank_{code}-dev.json").write_text(json.dumps(
            {u: {"history": h} for u, h in users.items()}, ensure_ascii=False), encoding="utf-8")
    path = _labels(tmp_path, [
        {"q": 0, "question": "Which novel did I read?", "turns": ["2023-04-28#1"]},
        {"q": 1, "question": "What dish did I make on May 5th?", "turns": [], "none": True}])
    splits, rows, pooled = recall.memorybank_recall(data, path, str(tmp_path / "dbs"),
                                                    recall.BANKS["en"])
    # one labelled user: the first half (0 users) tunes, so it validates
    totals = splits["validation"]
    assert totals["questions"] == 1 and [r[1] for r in rows] == [0]
    assert pooled == 2 * 3 + 2  # both languages' turns, a query and a response each
    assert totals["find @3"] == 1 and totals["bm25 @3"] == 1


@pytest.mark.parametrize("code", ["cn", "en"])
def test_the_committed_labels_name_only_turns_of_the_histories(code: str) -> None:
    folder = recall.DATA / "memorybank"
    if not (folder / recall.BANKS[code].history_file()).is_file():
        pytest.skip("the MemoryBank data is not beside this checkout")
    histories = recall.memorybank_histories(folder, recall.BANKS[code])
    assert recall.load_labels(recall.LABELS[code], histories)
