"""Secret-looking values are masked in everything recall and the read commands return.

Stored text is unchanged; `--reveal-secrets` on the command line shows it and is logged
(without the value); over MCP nothing is revealed (test_mcp_server.py's stubs assert it).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import add_evidence, run_cli
from memvault import Memory, NewEvent
from memvault.store.connection import write
from vault_support import open_memory, put_object

TOKEN = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
PASSWORD = "password: Tr0ub4dor-and-3"


def leaks(value: object) -> bool:
    """Whether an answer shows the token, the password, or a word of either."""
    text = json.dumps(value, ensure_ascii=False).lower()
    return any(part in text for part in (
        "abcdefghijklmnopqrstuvwxyz0123456789", "tr0ub4dor"))


def seed(mem: Memory) -> dict[str, int]:
    start = 7_990  # the token straddles offset 8,000, where the first page ends
    long_text = ("word " * 1_600)[:start] + TOKEN + " and more words after it" * 10
    long_id, short_id = mem.append_events([
        NewEvent(long_text), NewEvent(f"the router {PASSWORD} (do not share)")])
    put_object(mem, "person:alice", "Alice", body=f"Alice keeps the router {PASSWORD}")
    with write(mem.conn):
        add_evidence(mem.conn, "person:alice", long_id, start + 5, start + 30,
                     mem.clock.now())
    return {"long": long_id, "short": short_id, "start": start}


def test_find_masks_snippets_why_and_terms(home: Path) -> None:
    with open_memory(home) as mem:
        seed(mem)
        for query in (TOKEN, "abcdefghijklmnopqrstuvwxyz0123456789", "Tr0ub4dor-and-3",
                      "router"):
            answer = mem.find(query)
            assert answer["hits"], query
            assert not leaks(answer), (query, answer)
        assert "[secret: " in json.dumps(mem.find("router"))
        revealed = mem.find("router", reveal=True)
        assert "Tr0ub4dor-and-3" in json.dumps(revealed)


def test_pages_are_cut_from_raw_text_and_masked_on_both_sides(home: Path) -> None:
    with open_memory(home) as mem:
        ids = seed(mem)
        raw = mem.read(ids["long"], reveal=True)
        first = mem.read(ids["long"])
        assert first["next_offset"] == raw["next_offset"] == 8_000
        second = mem.read(ids["long"], first["next_offset"])
        assert not leaks([first, second])
        assert first["text"].endswith("[secret: a GitHub token]")
        assert second["text"].startswith("[secret: a GitHub token]")
        assert mem.read(ids["long"], 8_000, reveal=True)["text"].startswith(TOKEN[10:])


def test_evidence_and_profiles_are_masked(home: Path) -> None:
    with open_memory(home) as mem:
        ids = seed(mem)
        evidence = mem.evidence("person:alice")
        assert evidence["items"][0]["text"] == "[secret: a GitHub token]"
        assert (evidence["items"][0]["start_char"], evidence["items"][0]["end_char"]) == (
            ids["start"] + 5, ids["start"] + 30)
        profile = mem.read("person:alice")
        assert not leaks([evidence, profile, mem.evidence(ids["short"])])
        assert "[secret: an assigned secret value]" in profile["object"]["body"]
        stored = mem.conn.execute("SELECT body FROM objects WHERE id = 'person:alice'")
        assert PASSWORD in stored.fetchone()[0]  # masked on output only


def test_read_commands_mask_unless_revealed_and_a_reveal_is_logged(
    home: Path, runner: CliRunner,
) -> None:
    with open_memory(home) as mem:
        ids = seed(mem)
    short = str(ids["short"])
    for args in (["event", short], ["events", "2020-01-01T00:00:00+00:00",
                                     "2030-01-01T00:00:00+00:00"],
                 ["timeline"], ["object", "person:alice"], ["find", "router"],
                 ["list", "person"],
                 ["read", short], ["evidence", "person:alice"], ["status"]):
        for fmt in ([], ["--json"]):
            result = run_cli(runner, *args, *fmt)
            assert not leaks(result.stdout), args
    assert not (home / "reveals.log").exists()
    shown = run_cli(runner, "event", short, "--reveal-secrets")
    assert PASSWORD in shown.stdout
    assert f"secrets revealed by event for event:{short}" in shown.stderr
    log = [json.loads(line) for line in (home / "reveals.log").read_text().splitlines()]
    assert log[0]["command"] == "event" and log[0]["records"] == [f"event:{short}"]
    assert not leaks(log) and (home / "reveals.log").stat().st_mode & 0o777 == 0o600
    found = run_cli(runner, "find", "router", "--reveal-secrets", "--json")
    assert "Tr0ub4dor-and-3" in found.stdout and "secrets revealed by find" in found.stderr
    assert [entry["command"] for entry in map(json.loads, (home / "reveals.log").read_text()
                                              .splitlines())] == ["event", "find"]


def test_a_reveal_that_shows_nothing_hidden_is_not_logged(home: Path, runner: CliRunner) -> None:
    """After `memvault forget` (or for any event without a secret) `--reveal-secrets` shows
    the same page as without it: no reveal is logged."""
    with open_memory(home) as mem:
        ids = seed(mem)
        plain = mem.append_event("an ordinary note about lunch")
    shown = run_cli(runner, "event", str(plain), "--reveal-secrets")
    assert "nothing revealed, nothing logged" in shown.stderr
    run_cli(runner, "forget", PASSWORD, "--yes")
    shown = run_cli(runner, "event", str(ids["short"]), "--reveal-secrets")
    assert PASSWORD not in shown.stdout and "nothing revealed" in shown.stderr
    assert not (home / "reveals.log").exists()


def test_status_points_at_events_holding_secrets_without_their_values(home: Path) -> None:
    with open_memory(home) as mem:
        ids = seed(mem)
        mem.append_event("an ordinary note about lunch")
        pointer = mem.status()["secrets"]
    assert pointer["events"] == 2 and pointer["ids"] == [ids["short"], ids["long"]]
    assert "memvault forget" in pointer["hint"] and not leaks(pointer)
    assert pointer["kinds"] == ["a GitHub token", "an assigned secret value"]


def test_a_secret_in_chinese_text_with_full_width_punctuation_is_masked_in_place(
        home: Path) -> None:
    # full-width punctuation reads as ASCII for the detectors; the mask still lands on the
    # value's own chars, and the text around it is shown as it was written
    with open_memory(home) as mem:
        mem.append_event(f"路由器的密码：Tr0ub4dor-and-3，别告诉别人！{TOKEN}（旧的）")
        hit = mem.find("路由器")["hits"][0]
        assert not leaks(hit)
        assert hit["snippet"].startswith("路由器的[secret: ")
        assert "]，别告诉别人！[secret: a GitHub token]（旧的）" in hit["snippet"]


def test_a_secret_in_an_object_field_holding_a_query_term_is_masked_in_why(
        home: Path) -> None:
    # the body is read for secrets because a term of the query is in it (its snippet is the
    # summary): a word of the body's secret that the query also names is masked in `why`
    with open_memory(home) as mem:
        put_object(mem, "person:bob", "Bob", summary="Bob runs the office network",
                   body=f"router {PASSWORD}")
        answer = mem.find("Bob Tr0ub4dor router")
        assert answer["hits"] and not leaks(answer)


def test_ordinary_text_is_not_masked(home: Path) -> None:
    with open_memory(home) as mem:
        event = mem.append_event("I forgot my password yesterday; the PIN pad broke")
        page = mem.read(event)
        assert page["text"] == "I forgot my password yesterday; the PIN pad broke"
        assert mem.status()["secrets"]["events"] == 0


def test_the_mcp_tools_mask_and_cannot_reveal(home: Path) -> None:
    from memvault.service.mcp_server import build_server
    from test_mcp_server import ok, run_calls

    with open_memory(home) as mem:
        ids = seed(mem)
        found, read, evidence, asked = run_calls(
            build_server(mem),
            ("memory_find", {"query": "router"}),
            ("memory_read", {"id": ids["short"]}),
            ("memory_evidence", {"id": "person:alice"}),
            ("memory_read", {"id": ids["short"], "reveal": True}),
        )
        assert not leaks([ok(found), ok(read), ok(evidence)])
        # No reveal over MCP: the argument does not exist there, and asking for it is refused.
        assert asked.is_error and "unknown argument reveal" in asked.content[0].text
        assert "[secret: an assigned secret value]" in ok(read)["text"]


def test_a_key_cut_by_a_hot_fragment_end_is_masked_in_both_fragments(home: Path) -> None:
    text = "x" * 1_989 + "/" + TOKEN + " and more words after it" * 20  # no cut before 2,000
    with open_memory(home) as mem:
        mem.append_event(text)
        nodes = mem.timeline_view(reveal=True)["nodes"]
        assert [n["fragment"] for n in nodes] == ["1/2", "2/2"]
        assert nodes[0]["text"].endswith(TOKEN[:10]) and nodes[1]["text"].startswith(TOKEN[10:])
        masked = mem.timeline_view()["nodes"]
        assert [n["text"].count("[secret: a GitHub token]") for n in masked] == [1, 1]
    for command in (["timeline", "--json"], ["expand", "1", "--json"]):
        shown = run_cli(CliRunner(), "--home", str(home), *command).stdout
        assert not leaks(shown), (command, shown)
    view = json.loads(run_cli(CliRunner(), "--home", str(home), "timeline", "--json").stdout)
    assert [n["text"].count("[secret: a GitHub token]") for n in view["nodes"]] == [1, 1]


def test_a_secret_mark_keeps_each_texts_length_so_two_lists_never_mark_alike() -> None:
    from memvault.recall.masking import clean_mark

    assert clean_mark(["ab", "c"]) != clean_mark(["a", "bc"])
    assert clean_mark(["abc", ""]) != clean_mark(["", "abc"]) != clean_mark(["abc"])
    assert clean_mark(["ab", "c"]) == clean_mark(["ab", "c"])
