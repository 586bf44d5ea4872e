"""A bound client's status tells nothing of another space's activity.

Work polls `memory_status` (and its person `memvault status --space work`) while home is
written: events of several lengths, organized (jobs, batches, model calls, objects, evidence,
relations, the graph revision), compacted and projected into the vault. Work's whole status,
as the library, the command line and the MCP tool give it, must read the same before and
after: every section is of the spaces work sees, or is left out of a bound status.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from click.testing import CliRunner
from helpers import run_cli
from mcp.client import Client
from memvault import Memory, NewEvent
from memvault.base.spaces import Spaces
from memvault.objects.records import ObjectRecord, add_evidence_items, add_relation, save_object
from memvault.service.mcp_server import build_server
from memvault.store.connection import write


def bound(mem: Memory, space: str) -> Memory:
    return Memory(mem.config, mem.conn, mem.clock, Spaces(space))


def _work_status(mem: Memory, runner: CliRunner) -> dict[str, Any]:
    """Work's status four ways: the library's, the CLI's JSON and text, the MCP tool's."""
    work = bound(mem, "work")
    cli = json.loads(run_cli(runner, "status", "--space", "work", "--json").stdout)
    text = run_cli(runner, "status", "--space", "work").stdout

    async def over_mcp() -> Any:
        async with Client(build_server(work)) as client:
            return (await client.call_tool("memory_status", {})).structured_content

    library = json.loads(json.dumps(work.status(), default=str))
    return {"library": library, "cli": cli, "mcp": anyio.run(over_mcp), "text": {"text": text}}


def _seed_work(mem: Memory) -> None:
    """Work's own memory, organized, with one event left unfinished and one holding a key."""
    work = bound(mem, "work")
    work.append_events([NewEvent("记住：浩宇对花生过敏"),
                        NewEvent("the payments design review is on Friday " * 20)])
    mem.organize(wait=True)
    work.append_events([NewEvent("password: Tr0ub4dor-and-3 for the staging box")])


def _home_activity(mem: Memory, runner: CliRunner) -> None:
    """Everything home does: appends, an organize run, a compaction of its own nodes, a
    hand-made object with a relation and evidence, and the vault projected."""
    home = bound(mem, "home")
    first = mem.conn.execute("SELECT COALESCE(MAX(id), 0) FROM hot_nodes").fetchone()[0]
    ids = home.append_events([NewEvent(f"home turn {i}: " + "the garden needs water " * (i + 1))
                              for i in range(8)])
    home.append_events([NewEvent("记住：小明对猫过敏")])
    mem.compact(node_range=(first + 1, first + 100), wait=True)
    mem.organize(wait=True, compact_first=False)
    with write(mem.conn):
        now = mem.clock.now()
        save_object(mem.conn, ObjectRecord(id="person:nina-home", type="person", name="Nina",
                                           summary="the neighbour", space="home"), now)
        add_relation(mem.conn, "person:nina-home", "knows", "project:daily", now)
        add_evidence_items(mem.conn, [("person:nina-home", ids[0], 0, 9)], now)
    run_cli(runner, "project-vault")


def test_nothing_of_home_reaches_a_work_bound_status(mem: Memory, runner: CliRunner) -> None:
    _seed_work(mem)
    before = _work_status(mem, runner)
    assert before["library"]["events"]["total"] == 3
    _home_activity(mem, runner)
    assert mem.conn.execute("SELECT COUNT(*) FROM events WHERE space = 'home'").fetchone()[0]
    after = _work_status(mem, runner)
    for way in ("library", "cli", "mcp", "text"):
        changed = {key for key in set(before[way]) | set(after[way])
                   if before[way].get(key) != after[way].get(key)}
        assert changed == set(), (way, {k: (before[way].get(k), after[way].get(k))
                                        for k in changed})


def test_the_owner_still_sees_the_whole_home(mem: Memory, runner: CliRunner) -> None:
    _seed_work(mem)
    before = mem.status()
    _home_activity(mem, runner)
    after = mem.status()
    assert after["events"]["total"] > before["events"]["total"]
    assert after["graph_revision"] > before["graph_revision"]
    assert after["timeline"] != before["timeline"] and after["vault"]["files"]
    assert after["disk"]["raw_text"]["chars"] > before["disk"]["raw_text"]["chars"]


def test_a_bound_status_counts_links_whose_both_ends_it_sees(mem: Memory) -> None:
    """A relation to another space's object is not counted, nor evidence whose cited event
    `space move` took into another space."""
    work = bound(mem, "work")
    cited = work.append_events([NewEvent("Lee reviews the design"), NewEvent("Lee again")])
    with write(mem.conn):
        now = mem.clock.now()
        for space in ("work", "home"):
            save_object(mem.conn, ObjectRecord(id=f"person:lee-{space}", type="person",
                                               name="Lee", space=space), now)
        add_relation(mem.conn, "person:lee-work", "knows", "person:lee-home", now)
        add_relation(mem.conn, "person:lee-work", "member_of", "project:daily", now)
        add_evidence_items(mem.conn, [("person:lee-work", event, 0, 3) for event in cited], now)
    assert (work.status()["relations"], work.status()["evidence"]) == (1, 2)
    mem.move_space(cited[1], "home")
    assert work.status()["evidence"] == 1
    assert (mem.status()["relations"], mem.status()["evidence"]) == (2, 2)
