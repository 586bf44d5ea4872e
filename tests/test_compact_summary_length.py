"""A compaction summary must be shorter than the nodes it replaces in estimated tokens AND in
chars: Chinese is one token a char and English four chars a token, so each measure alone lets a
longer summary through. Before these tests only the fuzz file (tests/fuzz_strategies.py) sent
such summaries.

What breaks this test (each mutation made in engine/jobs/modes/compact.py, the test run and seen to
fail, the code restored):
- `len(summary) >= chars or new_tokens >= tokens`: the token half removed ->
  test_a_summary_with_fewer_chars_but_as_many_tokens_is_refused;
- the same with `new_tokens >= tokens` changed to `>` -> the same test;
- the char half removed -> test_a_summary_with_fewer_tokens_but_more_chars_is_refused.
"""

from __future__ import annotations

from helpers import count
from memvault import Memory
from modes_support import compact_step, errors_seen, make_worker


def hot_size(mem: Memory) -> tuple[int, int]:
    """Chars and estimated tokens of the active hot nodes (what one compaction covers here)."""
    chars, tokens = mem.conn.execute(
        "SELECT SUM(chars), SUM(est_tokens) FROM hot_nodes WHERE active = 1").fetchone()
    return chars, tokens


def compact_with(mem: Memory, *summaries: str) -> list[dict]:
    """Compact the whole timeline, the model offering `summaries` in turn; return the
    corrections it got."""
    mem.compact()
    worker, provider = make_worker(mem, [compact_step(s) for s in summaries])
    result = worker.tick()
    assert result.action == "committed", result.error
    return errors_seen(provider)


def test_a_summary_with_fewer_chars_but_as_many_tokens_is_refused(mem: Memory) -> None:
    mem.append_event("message one: the team agreed on the launch date for Friday")
    mem.append_event("message two: Haoyu books the large room and sends the invite")
    chars, tokens = hot_size(mem)
    as_many = "定" * tokens  # a quarter of the chars, one token each
    assert len(as_many) < chars
    (error,) = compact_with(mem, as_many, "定" * (tokens - 1))
    assert error["field"] == "summary" and f"~{tokens} estimated tokens" in error["error"]
    (head,) = mem.conn.execute("SELECT summary, est_tokens FROM hot_nodes WHERE kind = 'head'")
    assert (head["summary"], head["est_tokens"]) == ("定" * (tokens - 1), tokens - 1)


def test_a_summary_with_fewer_tokens_but_more_chars_is_refused(mem: Memory) -> None:
    mem.append_event("团队同意周五发布")
    mem.append_event("浩宇预订大会议室")
    chars, tokens = hot_size(mem)
    more_chars = "x" * (chars + 4)  # a quarter of the tokens
    assert len(more_chars) // 4 < tokens
    (error,) = compact_with(mem, more_chars, "周五发布")
    assert error["field"] == "summary" and f"({chars} chars" in error["error"]
    assert count(mem.conn, "hot_nodes", "kind = 'head'") == 1
