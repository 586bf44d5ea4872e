"""Deep fits its claim into the transfer budget (organize.claim_budget_bytes):
fewer objects a batch first, then bodies cut with a marker. Four objects with 16,000-char CJK
bodies once made a first message of 198,575 bytes against 96,000."""

from __future__ import annotations

import json
from typing import Any

from memvault import Memory
from modes_support import errors_seen, job_state, make_worker, obj, open_memory, put_object
from modes_support import payload as claim_payload
from scripted_provider import call

CJK_BODY = ("项目进度与风险评估记录，负责人每周更新一次。" * 800)[:16_000]


def sent_bytes(messages: list[dict[str, Any]]) -> int:
    """What the batch loop counts against the budget for the first message."""
    return sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in messages)


def review_all(first: list[int], seen: list[dict[str, Any]]):
    def step(messages, tools, max_out):
        first.append(sent_bytes(messages))
        data = claim_payload(messages)
        seen.append(data)
        return call("commit_review", {"reviewed": [o["id"] for o in data["review"]]})
    return step


def test_four_large_cjk_profiles_fit_the_budget(mem: Memory) -> None:
    for i in range(4):
        put_object(mem, f"knowledge:k{i}", f"长文{i}", body=CJK_BODY)
    job = mem.organize(mode="deep")["job_id"]
    first: list[int] = []
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [review_all(first, seen)] * 12)
    while worker.tick().action == "committed":
        pass
    budget = mem.config["organize.claim_budget_bytes"]
    assert max(first) <= budget, first  # was 198,575 bytes in one message
    reviewed = [o["id"] for data in seen for o in data["review"]]
    assert sorted(reviewed) == ["knowledge:k0", "knowledge:k1", "knowledge:k2", "knowledge:k3",
                                "project:daily"]
    assert all("body_cut" not in o for data in seen for o in data["review"])  # whole bodies
    assert job_state(mem.conn, job) == "done"


def small_budget_home(tmp_path, clock) -> Memory:
    """A home with the smallest claim budget and one profile far larger than it."""
    mem = open_memory(tmp_path / "small", clock, "[organize]\nclaim_budget_bytes = 24000\n")
    put_object(mem, "knowledge:huge", "巨大", body=CJK_BODY)  # 48,000 bytes alone
    mem.organize(mode="deep")
    return mem


def test_a_body_larger_than_the_budget_is_cut_with_a_marker(tmp_path, clock) -> None:
    mem = small_budget_home(tmp_path, clock)
    first: list[int] = []
    seen: list[dict[str, Any]] = []
    worker, _ = make_worker(mem, [review_all(first, seen)] * 2)
    assert [worker.tick().action for _ in range(2)] == ["committed", "committed"]
    assert [[o["id"] for o in d["review"]] for d in seen] == [["knowledge:huge"],
                                                               ["project:daily"]]
    item = seen[0]["review"][0]
    assert max(first) <= 24_000, first
    assert item["body"].endswith("read_object for the rest]")
    assert item["body_cut"]["total_chars"] == 16_000
    assert 0 < item["body_cut"]["shown_chars"] < 16_000
    assert item["body"].startswith(CJK_BODY[: item["body_cut"]["shown_chars"]])
    mem.close()


def test_a_cut_profile_is_not_read_and_a_withheld_read_does_not_count(tmp_path, clock) -> None:
    mem = small_budget_home(tmp_path, clock)

    def rewrite(messages, tools, max_out):
        ids = [o["id"] for o in claim_payload(messages)["review"]]
        return call("commit_review", {"reviewed": ids,
                                      "objects": [obj("knowledge:huge", "巨大", body="短")]})

    confirm = call("commit_review", {"reviewed": ["knowledge:huge"]})
    # Rewrite from the cut body: refused. read_object: 48,000 bytes, withheld by the budget.
    # Rewrite again: still refused, the model never saw the whole body. Confirm only.
    worker, provider = make_worker(
        mem, [rewrite, call("read_object", {"id": "knowledge:huge"}), rewrite, confirm])
    result = worker.tick()
    assert result.action == "committed" and result.receipt["objects_changed"] == 0
    errors = [e["error"] for e in errors_seen(provider)]
    assert sum("has not read it" in e for e in errors) == 2, errors
    assert any("transfer budget" in e for e in errors)
    assert mem.read_object("knowledge:huge")["object"]["body"] == CJK_BODY
    mem.close()
