"""The builtin offline model: compact summaries, the deep review, and a run through the engine.

Compact summaries must be strictly shorter than their nodes in chars AND estimated tokens (the
engine refuses otherwise), for tiny, CJK, emoji and head nodes too; deep merges only exact
duplicates and archives only stale done todos.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault import Memory
from memvault.base.tokens import estimate_tokens
from memvault.jobs.modes.compact import CompactionProposal
from memvault.models.builtin import BuiltinProvider, compact, deep
from memvault.objects.proposals import ReviewProposal


@cache
def sample_lines() -> list[str]:
    data = resources.files("memvault") / "data" / "sample_events.jsonl"
    return data.read_text(encoding="utf-8").splitlines()


def raw(node_id: int, text: str, at: str = "2026-10-05T09:43:11+08:00",
        source: str = "user") -> dict[str, Any]:
    return {"id": node_id, "kind": "raw", "level": 0, "from": at, "to": at, "source": source,
            "chars": len(text), "text": text}


def sample_nodes() -> list[dict[str, Any]]:
    """Every sample event as raw fragments of ≤2,000 chars, in timeline order."""
    nodes: list[dict[str, Any]] = []
    for line in sample_lines():
        row = json.loads(line)
        for start in range(0, len(row["text"]), 2_000):
            nodes.append(raw(len(nodes) + 1, row["text"][start:start + 2_000],
                             row["occurred_at"], row["source"]))
    return nodes


def summarise(nodes: list[dict[str, Any]]) -> str:
    """compact.build on `nodes`, checked: every id, strictly shorter in chars and tokens."""
    args = compact.build({"mode": "compact", "nodes": nodes})
    CompactionProposal.model_validate(args)
    assert args["node_ids"] == [n["id"] for n in nodes]
    summary = args["summary"]
    assert len(summary) < sum(n["chars"] for n in nodes), (nodes, summary)
    assert estimate_tokens(summary) < sum(estimate_tokens(n["text"]) for n in nodes)
    return str(summary)


def head(node_id: int, nodes: list[dict[str, Any]], summary: str) -> dict[str, Any]:
    return {"id": node_id, "kind": "head", "level": 1 + max(n["level"] for n in nodes),
            "from": nodes[0]["from"], "to": nodes[-1]["to"], "source": None,
            "chars": len(summary), "text": summary}


# -- compact ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [2, 3, 8])
def test_every_sample_window_is_strictly_shorter(size: int) -> None:
    nodes = sample_nodes()
    for start in range(0, len(nodes), size):
        summarise(nodes[start:start + size])


def test_heads_of_heads_stay_strictly_shorter_up_to_one_node() -> None:
    nodes, next_id, levels = sample_nodes(), 10_000, 0
    while len(nodes) > 1:
        folded = []
        for start in range(0, len(nodes), 8):
            batch = nodes[start:start + 8]
            if len(batch) == 1:
                folded.append(batch[0])
                continue
            next_id += 1
            folded.append(head(next_id, batch, summarise(batch)))
        nodes, levels = folded, levels + 1
    assert levels >= 3 and nodes[0]["kind"] == "head"


def test_one_line_per_node_with_its_time_and_source() -> None:
    nodes = sample_nodes()[1:6]
    summary = summarise(nodes)
    lines = summary.splitlines()
    assert len(lines) == len(nodes)
    assert lines[0].startswith("10-05 09:43 user: ")
    assert all(json.loads(sample_lines()[i])["occurred_at"][11:16] in lines[i - 1]
               for i in range(1, 6))
    assert "我是秦浩宇" not in summary or "秦浩宇" in lines[0]


@pytest.mark.parametrize("texts", [
    ["谢谢", "好"],
    ["好", "嗯"],
    ["ok", "thanks"],
    ["👍", "🎉🎉"],
    ["好，晚安", "谢谢 😀", "👍"],
    ["thanks", "no", "ok", "k", "yes", "sure", "bye", "hi"],
    ["今天上海天气怎么样？", "今天上海多云转晴，18 到 25 度，挺舒服的，适合出门走走。"],
    ["Remember that Haoyu prefers tea over coffee.", "记住：浩宇对花生过敏。"],
])
def test_tiny_cjk_and_emoji_nodes_are_strictly_shorter(texts: list[str]) -> None:
    nodes = [raw(i + 1, t, f"2026-10-05T09:4{i % 10}:00+08:00") for i, t in enumerate(texts)]
    assert summarise(nodes)


TEXT = st.text(alphabet=st.sampled_from(list("ab c.。好的，谢谢晚安👍🎉\n1:") + ["😀", "é"]),
               min_size=1, max_size=300)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, min_size=2, max_size=8))
def test_any_batch_of_two_or_more_nodes_gets_a_strictly_shorter_summary(texts: list[str]
                                                                        ) -> None:
    nodes = [raw(i + 1, t, f"2026-10-05T09:{i:02d}:00+08:00") for i, t in enumerate(texts)]
    summarise(nodes)


def test_heads_keep_their_lines_when_there_is_room() -> None:
    first = sample_nodes()[:8]
    second = sample_nodes()[8:16]
    heads = [head(100, first, summarise(first)), head(101, second, summarise(second))]
    heads.append(raw(102, "Back at work. The Aurora project kicks off today at 2pm — Aurora is "
                          "the redesign of our note-taking app.", "2026-10-08T09:35:00+08:00"))
    summary = summarise(heads)
    assert summary.startswith("10-05 ") and "10-08" in summary


def test_a_refused_summary_is_cut_harder() -> None:
    nodes = [raw(1, "今天上海天气怎么样？"), raw(2, "多云转晴，18 到 25 度。")]
    first = compact.build({"mode": "compact", "nodes": nodes})
    error = ("summary: must be shorter than what it replaces (12 chars, ~10 estimated tokens); "
             f"got {len(first['summary'])} chars")
    again = compact.correct({"mode": "compact", "nodes": nodes}, first, error, 1)
    assert len(again["summary"]) < 12 and estimate_tokens(again["summary"]) < 10
    assert len(again["summary"]) < len(first["summary"])
    wrong = compact.correct({"mode": "compact", "nodes": nodes}, first,
                            "node_ids: must be exactly this batch's nodes [1, 2, 3]", 1)
    assert wrong["node_ids"] == [1, 2, 3]


def test_the_provider_answers_a_correction_from_the_conversation() -> None:
    nodes = sample_nodes()[:3]
    payload = {"mode": "compact", "nodes": nodes}
    first = compact.build(payload)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function",
            "function": {"name": "commit_compaction", "arguments": json.dumps(first)}}]},
        {"role": "tool", "tool_call_id": "a", "content": json.dumps(
            {"error": "summary: must be shorter than what it replaces (60 chars, ~30 estimated "
                      "tokens); got 90 chars", "field": "summary"})},
    ]
    from memvault.models.base import ToolSpec

    reply = BuiltinProvider().complete(messages, [ToolSpec("commit_compaction", "", {})], 1000)
    summary = json.loads(reply.tool_calls[0].arguments)["summary"]
    assert len(summary) < 60 and estimate_tokens(summary) < 30


# -- deep -------------------------------------------------------------------------------------


def profile(object_id: str, name: str, body: str = "", aliases: list[str] | None = None,
            status: str = "active", updated_at: str = "2026-10-20T10:00:00+08:00",
            **extra: Any) -> dict[str, Any]:
    return {"id": object_id, "type": object_id.split(":")[0], "name": name,
            "aliases": aliases or [], "summary": f"{name}.", "body": body, "cues": [name],
            "status": status, "version": 1, "updated_at": updated_at, "links": [], **extra}


def review(batch: list[dict[str, Any]], related: list[dict[str, Any]] | None = None
           ) -> dict[str, Any]:
    args = deep.build({"mode": "deep", "review": batch, "related": related or [],
                       "scope": None})
    ReviewProposal.model_validate(args)
    assert args["reviewed"] == [o["id"] for o in batch] and args["core_files"] == []
    return args


def test_unchanged_objects_are_confirmed_and_not_rewritten() -> None:
    batch = [profile("person:zhang-wei", "张伟", "- 职责：后端"),
             profile("project:aurora", "Aurora", status="candidate"),
             profile("todo:call-the-bank", "call the bank", "- item: call the bank\n- state: open",
                     updated_at="2026-08-01T10:00:00+08:00")]
    args = review(batch)
    assert args["objects"] == [] and args["merges"] == [] and args["relations"] == []


def test_exact_duplicates_merge_into_the_older_one_with_names_folded_in() -> None:
    older = profile("person:zhang-wei", "Zhang Wei", "- role: backend", aliases=["老张"],
                    created_at="2026-10-01T09:00:00+08:00")
    newer = profile("person:张伟-2", "zhang  wei", "- role: backend\n- traits: careful",
                    aliases=["Wei"], created_at="2026-10-09T09:00:00+08:00")
    args = review([newer], related=[older])
    assert args["merges"] == [{"loser": "person:张伟-2", "survivor": "person:zhang-wei"}]
    (survivor,) = args["objects"]
    assert survivor["id"] == "person:zhang-wei" and survivor["name"] == "Zhang Wei"
    assert {"老张", "Wei"} <= set(survivor["aliases"])
    assert "careful" in survivor["body"] and survivor["body"].startswith("- role: backend")


def test_a_name_equal_to_an_alias_is_a_duplicate_longer_body_survives() -> None:
    short = profile("person:lao-zhang", "老张", "- 职责：后端")
    full = profile("person:张伟", "张伟", "- 身份：同事\n- 职责：后端\n- 特点：细心",
                   aliases=["老张"])
    args = review([short, full])
    assert args["merges"] == [{"loser": "person:lao-zhang", "survivor": "person:张伟"}]
    (survivor,) = args["objects"]  # only the loser's cue is new; its body line is not
    assert survivor["body"] == full["body"] and survivor["cues"] == ["张伟", "老张"]


def test_same_name_of_different_types_or_similar_names_are_not_merged() -> None:
    batch = [profile("project:aurora", "Aurora"), profile("knowledge:aurora", "Aurora"),
             profile("person:li-na", "李娜"), profile("person:li-na-2", "李娜娜")]
    assert review(batch)["merges"] == []


def test_stale_done_todos_are_archived_whole_and_nothing_else() -> None:
    stale = profile("todo:renew-the-passport", "renew the passport",
                    "- item: renew the passport\n- condition: before Nov 20\n- state: done",
                    aliases=["passport"], updated_at="2026-09-01T10:00:00+08:00")
    stale_zh = profile("todo:交物业费", "交物业费", "- 事项：交物业费\n- 状态：已完成",
                       updated_at="2026-09-10T10:00:00+08:00")
    recent = profile("todo:call-the-bank", "call the bank", "- item: x\n- state: done",
                     updated_at="2026-10-15T10:00:00+08:00")
    still_open = profile("todo:water", "water the plants", "- item: x\n- state: open",
                         updated_at="2026-08-01T10:00:00+08:00")
    newest = profile("person:x", "X", updated_at="2026-10-20T10:00:00+08:00")
    args = review([stale, stale_zh, recent, still_open], related=[newest])
    written = {o["id"]: o for o in args["objects"]}
    assert set(written) == {"todo:renew-the-passport", "todo:交物业费"}
    archived = written["todo:renew-the-passport"]
    assert archived["status"] == "archived"
    assert {k: archived[k] for k in ("name", "aliases", "summary", "body", "cues")} == {
        k: stale[k] for k in ("name", "aliases", "summary", "body", "cues")}


def test_a_refused_merge_is_dropped_with_its_rewrite() -> None:
    older = profile("person:a", "Ann", "- role: x", created_at="2026-10-01T00:00:00+00:00")
    newer = profile("person:b", "ann", "- role: y", created_at="2026-10-02T00:00:00+00:00")
    payload = {"mode": "deep", "review": [newer], "related": [older], "scope": None}
    first = deep.build(payload)
    assert first["merges"] and first["objects"]
    again = deep.correct(payload, first, "merges.0.loser")
    assert again["merges"] == [] and again["objects"] == [] and again["reviewed"] == ["person:b"]


# -- the whole engine, offline ----------------------------------------------------------------


def run_until_idle(worker: Any, limit: int = 2_000) -> None:
    for _ in range(limit):
        if worker.tick().action in ("idle", "busy", "waiting"):
            return
    raise AssertionError("the worker never went idle")


def test_compact_organize_deep_on_the_sample_through_the_engine(mem: Memory) -> None:
    mem.ingest(sample_lines()[:130])
    worker = mem.worker(BuiltinProvider(), scheduler=False)
    mem.compact()
    run_until_idle(worker)
    mem.organize()
    run_until_idle(worker)
    mem.organize("deep")
    run_until_idle(worker)
    conn = mem.conn
    states = dict(conn.execute("SELECT state, COUNT(*) FROM archive_queue GROUP BY state"))
    assert set(states) <= {"linked", "archive_only"} and sum(states.values()) == 130
    assert conn.execute("SELECT COUNT(*) FROM batches WHERE state != 'committed'"
                        ).fetchone()[0] == 0
    calls = conn.execute("SELECT COUNT(*) FROM model_calls").fetchone()[0]
    batches = conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    assert calls == batches  # no correction was needed
    objects = {r["id"]: r for r in conn.execute("SELECT * FROM objects")}
    for object_id in ("person:秦浩宇", "person:张伟", "project:aurora", "project:lighthouse",
                      "todo:把周报发给李娜", "schedule:team-standup",
                      "credential:deploy-key-for-aurora", "knowledge:浩宇对花生过敏"):
        assert object_id in objects, object_id
    assert objects["project:aurora"]["status"] == "candidate"
    assert "done" in objects["todo:把周报发给李娜"]["body"]  # "周报已经发了" (event 59)
    assert "老张" in json.loads(objects["person:张伟"]["aliases"])


def test_the_builtin_compactor_never_copies_a_secret(mem: Memory) -> None:
    """An extractive summary of a line holding a password would be refused on every retry and
    leave the nodes hot for good: the secret is replaced by a mark instead."""
    from memvault.models.builtin import BuiltinProvider

    filler = " We talked about the garden, the weather and the long walk home for a while." * 12
    for text in ("root 密码 = 19900101。", "The wifi password is correcthorsebatterystaple.",
                 "Deploy key sk_live_4eC39HqLyjWDarjtT1zdp7dc for the shop."):
        mem.append_event(text + filler, source="user")
    mem.compact()
    mem.worker(BuiltinProvider(), scheduler=False).run(burst=True)
    heads = [row[0] for row in
             mem.conn.execute("SELECT summary FROM hot_nodes WHERE kind = 'head'")]
    assert heads and all("19900101" not in h and "sk_live_" not in h
                         and "correcthorse" not in h for h in heads)
    assert sum(h.count("[secret]") for h in heads) >= 2
