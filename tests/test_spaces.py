"""Spaces hold on every read: a client bound to one space sees it and `shared`, never another.

The home holds two spaces, work and home, whose events and objects say the same words (a
dentist appointment with Lee on Thursday); only a marker word tells them apart. Every MCP tool
and every CLI reader is walked bound to work, with every id of both spaces and queries naming
the shared words and the home marker: nothing of home may come back. The recall index, the
tail of unindexed events, evidence, relations (a project's members too) and memory_context's
directory and timeline are all in the walk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.client import Client
from memvault import Memory, NewEvent
from memvault.base.clock import ManualClock
from memvault.base.errors import InputError, NotFound
from memvault.base.spaces import SEVERAL, Spaces, check_space
from memvault.cli import main
from memvault.objects.records import ObjectRecord, add_evidence_items, add_relation, save_object
from memvault.recall import rank
from memvault.service.mcp_server import TOOL_NAMES, build_server
from memvault.store.connection import write
from test_mcp_masking import texts_of

WORK, HOME = "wkmarkerseven", "hmmarkernine"  # the one word each space's texts do not share
WORDS = "dentist appointment with Lee on Thursday"


def _space_items(mem: Memory, space: str, marker: str) -> dict[str, list[Any]]:
    """Events, objects, evidence and relations of one space, all saying WORDS."""
    bound = Memory(mem.config, mem.conn, mem.clock, Spaces(space))
    events = bound.append_events([
        NewEvent(f"{WORDS} {marker}"),
        NewEvent(f"Lee moved the dentist appointment to 2027-01-21, {marker}"),
        NewEvent(f"remember: Lee's dentist is on Thursday {marker} " + "filler words " * 400),
    ])
    person, project = f"person:lee-{space}", f"project:dentist-{space}"
    with write(mem.conn):
        now = mem.clock.now()
        for record in (
            ObjectRecord(id=person, type="person", name="Lee", aliases=[f"Lee {marker}"],
                         summary=f"{WORDS} {marker}", body=f"Lee, the dentist {marker}",
                         cues=["dentist", marker], space=space),
            ObjectRecord(id=project, type="project", name=f"Dentist {space}",
                         summary=f"the dentist appointment {marker}", space=space),
        ):
            save_object(mem.conn, record, now)
        add_relation(mem.conn, person, "member_of", project, now)
        add_evidence_items(mem.conn, [(person, events[0], 0, 20)], now)
    return {"events": events, "objects": [person, project]}


def seed(mem: Memory) -> dict[str, dict[str, list[Any]]]:
    """Both spaces, organized (heads and objects of the model too), then a few raw turns and
    unindexed events on top; a relation across the two spaces, as a bad write might leave."""
    seeded = {space: _space_items(mem, space, marker)
              for space, marker in (("work", WORK), ("home", HOME))}
    mem.organize(wait=True)
    for space, marker in (("work", WORK), ("home", HOME)):
        bound = Memory(mem.config, mem.conn, mem.clock, Spaces(space))
        seeded[space]["events"] += bound.append_events(
            [NewEvent(f"later: {WORDS} {marker}")], index=False)
    with write(mem.conn):
        add_relation(mem.conn, "person:lee-work", "knows", "person:lee-home", mem.clock.now())
    home_ids = [r[0] for r in mem.conn.execute("SELECT id FROM objects WHERE space = 'home'")]
    seeded["home"]["objects"] = sorted(set(seeded["home"]["objects"]) | set(home_ids))
    return seeded


def unechoed(text: str, args: list[str]) -> str:
    """`text` without the caller's own arguments: an answer may repeat what it was asked
    ("no object person:lee-home", a query's terms); that tells nothing."""
    for arg in sorted(args, key=len, reverse=True):
        text = text.replace(arg, "").replace(json.dumps(arg)[1:-1], "")
        for word in arg.lower().split():  # the query's terms, folded
            text = text.replace(f'"{word}"', "")
    return text


def leaks(texts: list[str], seeded: dict[str, dict[str, list[Any]]]) -> list[str]:
    """What of home a text shows: its marker or one of its object ids."""
    found = {HOME for text in texts if HOME in text}
    found |= {oid for oid in seeded["home"]["objects"] for text in texts if oid in text}
    return sorted(found)


def mcp_plan(seeded: dict[str, dict[str, list[Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Each tool's calls: every id of both spaces, queries of the shared words and markers."""
    ids = [*seeded["work"]["events"], *seeded["home"]["events"],
           *seeded["work"]["objects"], *seeded["home"]["objects"]]
    queries = [WORDS, "dentist", "Lee", HOME, f"Lee {HOME}", "Thursday", "2027-01-21",
               "dentist appointment? and where is Lee?", "filler words"]
    return {
        "memory_append": [{"text": "a work note"}],
        "memory_context": [{}],
        "memory_find": [{"query": q} for q in queries]
        + [{"query": "dentist", "types": ["event"]}, {"query": "Lee", "types": ["person"]},
           {"query": "dentist", "project": "project:dentist-work"},
           {"query": "dentist", "project": "project:dentist-home"}],
        "memory_read": [{"id": i} for i in ids] + [{"id": "Lee"}, {"id": f"Lee {HOME}"}],
        "memory_evidence": [{"id": i} for i in ids],
        "memory_organize": [{"scope": HOME}],
        "memory_status": [{}],
        "memory_project_approve": [{"id": "project:dentist-home"}],
        "memory_busy": [{"busy": True}, {"busy": False}],
    }


def test_no_mcp_tool_bound_to_a_space_returns_another_spaces_item(
        mem: Memory, home: Path, clock: ManualClock) -> None:
    seeded = seed(mem)
    work = Memory.open(home, clock=clock, space="work")
    server = build_server(work)
    plan = mcp_plan(seeded)
    registered = {tool.name for tool in server._tool_manager.list_tools()}
    assert registered == set(TOOL_NAMES) == set(plan), (
        "every registered MCP tool needs its calls in mcp_plan")

    async def walk() -> dict[str, list[Any]]:
        async with Client(server) as client:
            return {name: [await client.call_tool(name, args) for args in calls]
                    for name, calls in plan.items()}

    results = anyio.run(walk)
    answers = {name: [unechoed(t, [str(v) for v in args.values()])
                      for r, args in zip(rs, plan[name], strict=True) for t in texts_of(r)]
               for name, rs in results.items()}
    assert {name: leaks(texts, seeded) for name, texts in answers.items()
            if leaks(texts, seeded)} == {}
    # the walk saw work (not merely empty answers): its marker came back from each reader
    for name in ("memory_context", "memory_find", "memory_read", "memory_evidence"):
        assert any(WORK in text for text in answers[name]), name
    context = results["memory_context"][0].structured_content
    assert context["timeline"]["nodes"] and context["directory"]["entries"]
    assert set(results["memory_status"][0].structured_content["spaces"]) <= {"work", "shared"}
    work.close()


READERS = [
    ["find", WORDS], ["find", HOME], ["find", "dentist", "--type", "event"],
    ["find", "Lee", "--json"], ["list", "--json"], ["status", "--json"],
    ["timeline", "--json"], ["events", "2000-01-01", "2100-01-01", "--json"],
]


def test_no_cli_reader_with_space_returns_another_spaces_item(
        mem: Memory, runner: CliRunner) -> None:
    seeded = seed(mem)
    calls = [*READERS]
    for oid in [*seeded["home"]["objects"], *seeded["work"]["objects"]]:
        calls += [["read", oid], ["evidence", oid], ["object", oid]]
    for event_id in [*seeded["home"]["events"], *seeded["work"]["events"]]:
        calls += [["read", str(event_id)], ["evidence", str(event_id)], ["event", str(event_id)]]
    for (node,) in mem.conn.execute("SELECT id FROM hot_nodes WHERE kind = 'head'"):
        calls.append(["expand", str(node), "--json"])
    outputs = [unechoed(runner.invoke(main, [*call[:1], "--space", "work", *call[1:]]).output,
                        call[1:]) for call in calls]
    assert leaks(outputs, seeded) == []
    assert any(WORK in out for out in outputs)
    # the owner, bound to nothing, sees both
    both = runner.invoke(main, ["find", WORDS, "--json"]).output
    assert HOME in both and WORK in both


def test_a_bound_read_of_another_spaces_item_is_not_found_as_a_missing_one(
        mem: Memory, home: Path, clock: ManualClock) -> None:
    seeded = seed(mem)
    with Memory.open(home, clock=clock, space="work") as work:
        for event_id in seeded["home"]["events"]:
            with pytest.raises(NotFound, match=f"no event {event_id}"):
                work.read_event(event_id)
        with pytest.raises(NotFound, match="no object person:lee-home"):
            work.read("person:lee-home")
        assert [h["id"] for h in work.find(HOME)["hits"]] == []
        assert work.read("person:lee-work")["object"]["space"] == "work"


def test_appends_are_stamped_with_the_bound_space_and_no_argument_widens_it(
        mem: Memory, home: Path, clock: ManualClock) -> None:
    with Memory.open(home, clock=clock, space="research") as research:
        event_id = research.append_event("a paper on sleep")
        assert research.spaces.visible == ("research", "shared")
    row = mem.conn.execute("SELECT space FROM events WHERE id = ?", (event_id,)).fetchone()
    assert row[0] == "research"
    assert mem.append_event("unbound owner") and mem.conn.execute(
        "SELECT space FROM events ORDER BY id DESC LIMIT 1").fetchone()[0] == "shared"
    with Memory.open(home, clock=clock, space="work") as work:
        with pytest.raises(NotFound):
            work.read_event(event_id)


def test_existing_rows_are_shared_after_the_migration(mem: Memory) -> None:
    assert mem.conn.execute("SELECT space FROM objects WHERE id = 'project:daily'"
                            ).fetchone()[0] == "shared"
    event_id = mem.append_event("hello")
    assert mem.conn.execute("SELECT space FROM events WHERE id = ?", (event_id,)
                            ).fetchone()[0] == "shared"


@pytest.mark.parametrize("bad", ["", "Work", "a b", "x" * 33, "-lead", "wörk", "../etc"])
def test_a_bad_space_name_is_refused_clearly(bad: str, home: Path, runner: CliRunner) -> None:
    with pytest.raises(InputError, match="space name"):
        check_space(bad)
    result = runner.invoke(main, ["find", "x", "--space", bad])
    assert result.exit_code == 2 and "space name" in result.output


def test_compaction_never_folds_two_spaces_under_one_head(mem: Memory) -> None:
    for space in ("work", "home", "work"):
        bound = Memory(mem.config, mem.conn, mem.clock, Spaces(space))
        bound.append_events([NewEvent(f"{space} turn {i}: " + "words " * 60) for i in range(6)])
    mem.compact(wait=True)
    heads = mem.conn.execute("SELECT id, space FROM hot_nodes WHERE kind = 'head'").fetchall()
    assert heads
    for head_id, space in heads:
        children = {r[0] for r in mem.conn.execute(
            "SELECT space FROM hot_nodes WHERE parent_id = ?", (head_id,))}
        assert children == {space}


def test_organize_files_an_event_only_into_objects_of_its_space(mem: Memory) -> None:
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    work.append_event("记住：浩宇对花生过敏")
    mem.organize(wait=True)
    spaces = {r[0] for r in mem.conn.execute(
        "SELECT o.space FROM evidence v JOIN objects o ON o.id = v.object_id")}
    assert spaces <= {"work"}
    linked = mem.conn.execute(
        "SELECT count(*) FROM evidence v JOIN events e ON e.id = v.event_id"
        " JOIN objects o ON o.id = v.object_id WHERE o.space != e.space").fetchone()[0]
    assert linked == 0


def test_status_counts_per_space(mem: Memory) -> None:
    Memory(mem.config, mem.conn, mem.clock, Spaces("work")).append_event("a work note")
    mem.append_event("a shared note")
    counts = mem.status()["spaces"]
    assert counts["work"]["events"] == 1 and counts["shared"]["events"] == 1
    assert counts["shared"]["objects"] >= 1  # project:daily
    work_view = Memory(mem.config, mem.conn, mem.clock, Spaces("home")).status()["spaces"]
    assert "work" not in work_view
    assert json.dumps(work_view)


def test_status_shows_the_spaces_as_one_table_not_again_as_json(
        mem: Memory, runner: CliRunner) -> None:
    Memory(mem.config, mem.conn, mem.clock, Spaces("work")).append_event("a work note")
    lines = runner.invoke(main, ["status"]).output.splitlines()
    assert "spaces" in lines and any("work" in line and "1" in line for line in lines)
    assert not any(line.startswith("spaces:") for line in lines)


def test_space_move_replaces_an_object_and_an_event_by_hand(
        mem: Memory, home: Path, clock: ManualClock, runner: CliRunner) -> None:
    seeded = seed(mem)
    moved = json.loads(runner.invoke(
        main, ["space", "move", "person:lee-home", "work", "--json"]).output)
    assert moved["moved"] == ["person:lee-home"] and moved["was"] == "home"
    origin = mem.conn.execute("SELECT origin FROM object_versions WHERE object_id = ?"
                              " ORDER BY version DESC LIMIT 1", ("person:lee-home",)).fetchone()
    assert origin[0] == "person"
    event_id = seeded["home"]["events"][0]
    result = runner.invoke(main, ["space", "move", f"event:{event_id}", "work"])
    assert result.exit_code == 0, result.output
    with Memory.open(home, clock=clock, space="work") as work:
        assert work.read("person:lee-home")["object"]["space"] == "work"
        assert HOME in work.read_event(event_id)["text"]
        with pytest.raises(InputError, match="bound to a space"):
            work.move_space("person:lee-work", "home")
    text = mem.conn.execute("SELECT text FROM events WHERE id = ?", (event_id,)).fetchone()[0]
    assert HOME in text  # the text itself stays immutable
    with pytest.raises(Exception, match="immutable"), write(mem.conn):
        mem.conn.execute("UPDATE events SET text = 'x' WHERE id = ?", (event_id,))


def test_an_events_moves_are_kept_and_only_the_owner_reads_them(
        mem: Memory, home: Path, clock: ManualClock, runner: CliRunner) -> None:
    event_id = seed(mem)["home"]["events"][0]
    for target in ("work", "work", "research"):  # the second is no move: it is there already
        assert runner.invoke(main, ["space", "move", str(event_id), target]).exit_code == 0
    moves = json.loads(runner.invoke(main, ["event", str(event_id), "--json"]).output)["moves"]
    assert [(m["from_space"], m["to_space"], m["origin"]) for m in moves] == [
        ("home", "work", "person"), ("work", "research", "person")]
    shown = runner.invoke(main, ["event", str(event_id)]).output
    assert "moved from space home to work at " in shown
    bound = runner.invoke(main, ["event", str(event_id), "--space", "research", "--json"])
    assert "moves" not in json.loads(bound.output)  # a bound reader sees the event, not its past
    with Memory.open(home, clock=clock, space="research") as research, pytest.raises(
            InputError, match="bound to a space"):
        research.event_moves(event_id)


def test_export_and_restore_keep_spaces(mem: Memory, runner: CliRunner, tmp_path: Path) -> None:
    seed(mem)
    before = mem.conn.execute("SELECT id, space FROM events ORDER BY id").fetchall()
    objects_before = mem.conn.execute("SELECT id, space FROM objects ORDER BY id").fetchall()
    out = tmp_path / "export"
    assert runner.invoke(main, ["export", str(out)]).exit_code == 0
    target = tmp_path / "restored"
    result = runner.invoke(main, ["--home", str(target), "restore", str(out)])
    assert result.exit_code == 0, result.output
    with Memory.open(target) as restored:
        assert [tuple(r) for r in restored.conn.execute(
            "SELECT id, space FROM events ORDER BY id")] == [tuple(r) for r in before]
        assert [tuple(r) for r in restored.conn.execute(
            "SELECT id, space FROM objects ORDER BY id")] == [tuple(r) for r in objects_before]


def test_the_vault_shows_each_objects_space_in_front_matter_tags_and_the_index(
        mem: Memory, runner: CliRunner, home: Path) -> None:
    seed(mem)
    assert runner.invoke(main, ["project-vault"]).exit_code == 0
    vault = home / "vault" / "objects"
    page = next(p for p in (vault / "person").glob("*.md")
                if "person:lee-work" in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    assert "space: work" in text and "memvault/space/work" in text
    index = (vault / "README.md").read_text(encoding="utf-8")
    assert "| work |" in index and "| home |" in index and "tag:#memvault/space/home" in index


def _http_call(client: Any, token: str, name: str, arguments: dict[str, Any]) -> str:
    headers = {"Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {token}"}
    started = client.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})
    assert started.status_code == 200, started.text
    headers["mcp-session-id"] = started.headers["mcp-session-id"]
    client.post("/mcp", headers=headers,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = client.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    assert answer.status_code == 200, answer.text
    return str(answer.text)


def test_each_service_token_binds_its_calls_to_its_space(
        mem: Memory, home: Path, clock: ManualClock) -> None:
    from memvault.service.mcp_server import MemoryPool, http_app
    from starlette.testclient import TestClient

    seed(mem)
    pool = MemoryPool.for_home(home, 2, clock)
    server = build_server(pool, bearer_token="owner-token",
                          space_tokens={"work-token": "work", "home-token": "home"})
    with TestClient(http_app(server), base_url="http://127.0.0.1:8765") as client:
        work = _http_call(client, "work-token", "memory_find", {"query": WORDS})
        assert WORK in work and HOME not in work
        homes = _http_call(client, "home-token", "memory_find", {"query": WORDS})
        assert HOME in homes and WORK not in homes
        owner = _http_call(client, "owner-token", "memory_find", {"query": WORDS})
        assert HOME in owner and WORK in owner
        appended = _http_call(client, "work-token", "memory_append", {"text": "from work"})
        assert "event_id" in appended
        refused = client.post("/mcp", headers={"Authorization": "Bearer nope"}, json={})
        assert refused.status_code == 401
    server.pools.close()
    pool.close()
    row = mem.conn.execute("SELECT space FROM events WHERE text = 'from work'").fetchone()
    assert row[0] == "work"


def test_a_token_env_that_is_unset_or_repeated_is_refused_by_name() -> None:
    from memvault.service.auth import space_tokens_from_env

    assert space_tokens_from_env(["A=work", "B=home"], {"A": "t1", "B": "t2"}) == {
        "t1": "work", "t2": "home"}
    with pytest.raises(InputError, match=r"\$B holds no usable token"):
        space_tokens_from_env(["A=work", "B=home"], {"A": "t1"})
    with pytest.raises(InputError, match="another --token-env"):
        space_tokens_from_env(["A=work", "B=home"], {"A": "t1", "B": "t1"})
    with pytest.raises(InputError, match="space name"):
        space_tokens_from_env(["A=Work"], {"A": "t1"})
    with pytest.raises(InputError, match="NAME=SPACE"):
        space_tokens_from_env(["A"], {"A": "t1"})


def test_a_bound_client_cannot_approve_another_spaces_project(
        mem: Memory, home: Path, clock: ManualClock) -> None:
    with write(mem.conn):
        save_object(mem.conn, ObjectRecord(id="project:garden", type="project", name="Garden",
                                           status="candidate", space="home"), mem.clock.now())
    with Memory.open(home, clock=clock, space="work") as work:
        with pytest.raises(NotFound, match="no object project:garden"):
            work.approve_project("project:garden")
    assert mem.conn.execute("SELECT status FROM objects WHERE id = 'project:garden'"
                            ).fetchone()[0] == "candidate"


def test_organize_files_a_second_spaces_same_fact_as_a_separate_object(mem: Memory) -> None:
    for space in ("work", "home"):
        Memory(mem.config, mem.conn, mem.clock, Spaces(space)).append_event(
            "记住：浩宇对花生过敏")
    mem.organize(wait=True)
    states = {tuple(r) for r in mem.conn.execute(
        "SELECT e.space, q.state FROM archive_queue q JOIN events e ON e.id = q.event_id")}
    assert states == {("work", "linked"), ("home", "linked")}
    spaces = {r[0]: r[1] for r in mem.conn.execute("SELECT id, space FROM objects")}
    home_ids = [i for i, s in spaces.items() if s == "home"]
    assert home_ids and all(i.endswith("-home") for i in home_ids)
    assert mem.conn.execute(
        "SELECT count(*) FROM evidence v JOIN events e ON e.id = v.event_id"
        " JOIN objects o ON o.id = v.object_id WHERE o.space != e.space").fetchone()[0] == 0


def test_a_bound_find_of_only_common_words_reaches_past_other_spaces_newer_postings(
        mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Words in more than CAP events are read newest first; when the newest belong to another
    space, the bound client still finds its own older events holding them."""
    monkeypatch.setattr(rank, "CAP", 20)
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    home = Memory(mem.config, mem.conn, mem.clock, Spaces("home"))
    mine = work.append_events([NewEvent(f"weekly dentist report number {i}") for i in range(5)])
    home.append_events([NewEvent(f"weekly dentist report copy {i}") for i in range(60)])
    found = work.find("weekly dentist report", types=["event"])
    ids = {hit["id"] for hit in found["hits"]}
    assert ids == set(mine)


def test_a_key_another_space_holds_stores_the_clients_own_event_and_names_nothing(
        mem: Memory) -> None:
    """Keys are the client's message ids, compared within its space: a key the home space
    holds is new to work (same text or not), and work learns nothing of the home event."""
    home = Memory(mem.config, mem.conn, mem.clock, Spaces("home"))
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    [held] = home.append_events([NewEvent(f"{WORDS} {HOME}", key="msg-1")])
    same = work.append_events([NewEvent(f"{WORDS} {HOME}", key="msg-1")])
    other = work.append_events([NewEvent("a different text", key="msg-2")])
    home.append_events([NewEvent("home's own msg-2", key="msg-2")])
    assert held not in same + other
    assert [r[0] for r in mem.conn.execute(
        "SELECT space FROM events WHERE key = 'msg-1' ORDER BY id")] == ["home", "work"]
    assert work.append_events([NewEvent(f"{WORDS} {HOME}", key="msg-1")]) == same  # a repeat


def test_moving_an_event_into_a_space_holding_its_key_is_refused_and_moves_nothing(
        mem: Memory) -> None:
    home = Memory(mem.config, mem.conn, mem.clock, Spaces("home"))
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    [held] = home.append_events([NewEvent("the home copy", key="msg-1")])
    [mine] = work.append_events([NewEvent("the work copy", key="msg-1")])
    with pytest.raises(InputError, match=f"same client key as event {held}"):
        mem.move_space(mine, "home")
    assert mem.conn.execute("SELECT space FROM events WHERE id = ?", (mine,)).fetchone()[0] \
        == "work"


def test_an_organize_batch_browses_only_its_events_space_and_shared(mem: Memory) -> None:
    """The model filing a work event cannot read, search or list a home object or event with
    its tools: nothing of home can reach what it writes."""
    from modes_support import archive, commit_organize, make_worker, put_object, tool_results
    from scripted_provider import call

    put_object(mem, "person:lee-home", "Lee", body=f"my neighbour {HOME}", space="home")
    [home_event] = Memory(mem.config, mem.conn, mem.clock, Spaces("home")).append_events(
        [NewEvent(f"Lee borrowed the ladder {HOME}")])
    [work_event] = Memory(mem.config, mem.conn, mem.clock, Spaces("work")).append_events(
        [NewEvent(f"Lee reviews the payments design {WORK}")])
    archive(mem, [work_event])
    mem.organize(compact_first=False)
    answers: list[Any] = []

    def ask(tool: str, args: dict[str, Any]) -> Any:
        def step(messages: Any, tools: Any, max_out: int) -> Any:
            if tool_results(messages):
                answers.append(tool_results(messages)[-1])
            return call(tool, args) if tool else commit_organize(work_event, "archive_only",
                                                                 reason="nothing to keep")
        return step

    worker, _ = make_worker(mem, [
        ask("read_object", {"id": "person:lee-home"}),
        ask("search_objects", {"query": "Lee"}),
        ask("read_evidence", {"id_or_event": f"event:{home_event}"}),
        ask("list_directory", {"type": "person"}),
        ask("", {}),
    ])
    result = worker.tick()
    assert result.action == "committed", (result, answers)
    read, found, evidence, listed = answers
    assert "no object person:lee-home" in read["error"]
    assert found == [] and f"no event {home_event}" in evidence["error"]
    assert listed["objects"] == []


def test_a_head_whose_turns_a_move_split_between_spaces_is_shown_to_no_bound_client(
        mem: Memory) -> None:
    """Its summary speaks of both spaces' turns: neither agent reads it (the owner does); a
    head whose turns all moved goes with them."""
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    ids = work.append_events([NewEvent(f"work turn {i}: " + "words " * 60) for i in range(12)])
    mem.compact(wait=True)
    head_of = dict(mem.conn.execute(
        "SELECT n.event_id, h.id FROM hot_nodes n JOIN hot_nodes h ON h.id = n.parent_id"
        " WHERE n.kind = 'raw'").fetchall())
    first_head = head_of[ids[0]]
    together = [e for e in ids if head_of.get(e) == first_head]
    assert len(together) >= 2
    mem.move_space(together[0], "home")
    space = mem.conn.execute("SELECT space FROM hot_nodes WHERE id = ?",
                             (first_head,)).fetchone()[0]
    assert space == SEVERAL
    for bound in (work, Memory(mem.config, mem.conn, mem.clock, Spaces("home"))):
        shown = json.dumps(bound.timeline_view(), default=str)
        assert f'"id": {first_head},' not in shown and f"node {first_head}" not in shown
        with pytest.raises(NotFound):
            bound.expand(first_head)
    for event_id in together[1:]:
        mem.move_space(event_id, "home")
    assert mem.conn.execute("SELECT space FROM hot_nodes WHERE id = ?",
                            (first_head,)).fetchone()[0] == "home"


def test_a_bound_person_creates_in_their_space_and_corrects_only_what_they_see(
        mem: Memory) -> None:
    from memvault.objects.corrections import Correction, ProfileEdit

    seed(mem)
    work = Memory(mem.config, mem.conn, mem.clock, Spaces("work"))
    made = work.correct(Correction("create", ["person", "Ada"], ProfileEdit(summary="new")))
    assert made["objects"] == ["person:ada"]
    assert mem.conn.execute("SELECT space FROM objects WHERE id = 'person:ada'").fetchone()[0] \
        == "work"
    home = Memory(mem.config, mem.conn, mem.clock, Spaces("home"))
    again = home.correct(Correction("create", ["person", "Ada"], ProfileEdit(summary="mine")))
    assert again["objects"] == ["person:ada-home"]  # work's Ada is none of home's business
    with pytest.raises(NotFound, match="no object person:lee-home"):
        work.correct(Correction("edit", ["person:lee-home"], ProfileEdit(summary="x")))
    with pytest.raises(NotFound):
        work.correct(Correction("merge", ["person:lee-home", "person:lee-work"]))
