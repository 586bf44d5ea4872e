"""The JSON depth guard (memvault.base.json_depth): exact on any JSON, read in any pieces."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memvault.base.json_depth import MAX_DEPTH, DepthGuard, JsonTooDeep, check_depth

# Strings full of what a depth guard could mistake for structure: brackets, quotes, backslashes.
tricky = st.text(alphabet='[]{}"\\ax\u00e9\n', max_size=12)
values = st.recursive(st.none() | st.integers() | tricky,
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(tricky, inner, max_size=3), max_leaves=30)


def depth_of(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def fed(data: bytes, cuts: list[int], limit: int) -> bool:
    """Whether `data`, fed in pieces cut at `cuts`, stays within `limit`."""
    guard = DepthGuard(limit)
    start = 0
    try:
        for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
            guard.feed(data[start:cut])
            start = max(start, cut)
    except JsonTooDeep:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(values, st.lists(st.integers(min_value=0), max_size=12), st.booleans())
def test_the_guard_knows_the_exact_depth_in_any_pieces(
    value: object, cuts: list[int], ascii_only: bool,
) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    depth = depth_of(value)
    assert fed(data, cuts, depth)
    if depth:
        assert not fed(data, cuts, depth - 1)


def test_check_depth_refuses_past_the_limit_only() -> None:
    check_depth("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with pytest.raises(JsonTooDeep, match=f"more than {MAX_DEPTH} levels"):
        check_depth(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    check_depth(json.dumps({"text": "[" * 1_000 + "\\" + "{" * 1_000}))
