"""The process that holds the home for an agent keeps its vault rendered: `memvault mcp` over
stdio, without `--background` and without `memvault serve`, renders objects another process
made, batch by batch (the projector heartbeat), while the agent's session is open."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import write_config
from memvault import Memory
from memvault.home.runs import run_to_end
from memvault.vault.paths import object_path


def test_plain_mcp_renders_what_a_worker_elsewhere_organized(home: Path, tmp_path: Path) -> None:
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from memvault.service.mcp_server import tool_payload

    write_config(home, "[service]\nprojector_interval_s = 1.0\n")
    errlog = (tmp_path / "mcp-stderr.log").open("w+", encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from memvault.cli import main; sys.exit(main())",
              "--home", str(home), "mcp"],
        env={"MEMVAULT_HOME": str(home)})

    async def session() -> list[str]:
        with anyio.fail_after(90):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.call_tool("memory_append", {
                    "text": "Remind me to renew the passport before December."})
                # A worker elsewhere (here: this test's) organizes it; nothing here renders.
                with Memory.open(home) as mem:
                    receipt = mem.organize()
                    worker = mem.worker(scheduler=False)
                    run_to_end(mem, worker, receipt["compact_job_id"], 1, "compact")
                    run_to_end(mem, worker, receipt["job_id"], 1, "organize")
                    ids = [row["id"] for row in mem.list_objects("todo")]
                assert ids
                files = [home / "vault" / object_path(i) for i in ids]
                while not all(f.is_file() for f in files):  # bounded by fail_after
                    await anyio.sleep(0.2)
                status = tool_payload(await client.call_tool("memory_status", {}))
                assert status["vault"]["pending_objects"] == 0
                return ids

    ids = anyio.run(session)
    errlog.close()
    text = (home / "vault" / object_path(ids[0])).read_text(encoding="utf-8")
    assert "passport" in text
