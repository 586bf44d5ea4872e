"""Import speed: `memvault import chatgpt` against plain `memvault ingest` of the same messages;
and the memory an import takes, of many conversations and of one long one.

    python bench/import_speed.py [--messages 20000] [--per-conversation 20] [--long 100000]
                                 [--rev REV]

Generates a ChatGPT-style `conversations.json` (Chinese, English and mixed turns, a system
message and a regenerated answer per conversation, as real exports have) and the same kept
messages as memvault JSONL, then, in one run and one process, times:
- import: `import_export` (what `memvault import chatgpt FILE` runs): streamed with ijson, one
  transaction per conversation, straight to the archive queue, keys checked, then indexed;
- ingest: `Memory.ingest` (what `memvault ingest FILE` runs) of the same
  messages, with the same keys, then indexed as `memvault ingest` does.
Each gets a fresh home in a temporary folder. Printed: events/s of each and their ratio.

Memory: the same export, and one conversation of `--long` messages (0: not measured), each read
in a process of its own, twice: parsed only (`read_conversations`, every conversation walked
and let go) and imported (`import_export` into a fresh home). Printed: the process's peak RSS
(VmHWM; ru_maxrss where there is no /proc) beside a process that only imported memvault, and
the wall time. `--rev REV` measures the same at an older revision too (its engine/ exported
with `git archive`, as recall_ab.py does), side by side. Nothing here asserts a time or a size.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import Memory  # noqa: E402
from memvault.home.chat_import import ImportReport, import_export  # noqa: E402
from service import turn  # noqa: E402  (the same turns as the service bench)

START = 1_700_000_000.0


def make_export(messages: int, per_conversation: int, seed: int = 7) -> tuple[list, list[str]]:
    """A ChatGPT export of `messages` kept messages, and the same messages as JSONL lines."""
    rng = random.Random(seed)
    conversations, lines = [], []
    number = 0
    while number < messages:
        cid = f"conv-{len(conversations)}"
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"

        node(mapping, f"{cid}-sys", "system", "", START, parent)
        parent = f"{cid}-sys"
        for index in range(min(per_conversation, messages - number)):
            at = START + number * 60
            role = "user" if index % 2 == 0 else "assistant"
            text = turn(rng, number)
            if role == "assistant" and index == 1:  # a regenerated answer: a dropped branch
                node(mapping, f"{cid}-{index}-old", role, "an answer the person regenerated",
                     at, parent)
            node(mapping, f"{cid}-{index}", role, text, at, parent)
            parent = f"{cid}-{index}"
            lines.append(json.dumps({"text": text, "source": role, "occurred_at":
                                     _iso(at), "key": f"chatgpt:{cid}:{cid}-{index}"},
                                    ensure_ascii=False))
            number += 1
        conversations.append({"id": cid, "title": f"conversation {cid}", "create_time": START,
                              "mapping": mapping, "current_node": parent})
    return conversations, lines


def node(mapping: dict, node_id: str, role: str, text: str, at: float, parent: str) -> None:
    """Add one message node under `parent` to a conversation's mapping."""
    mapping[node_id] = {"id": node_id, "parent": parent, "children": [], "message": {
        "id": node_id, "author": {"role": role}, "create_time": at,
        "content": {"content_type": "text", "parts": [text]}}}
    mapping[parent]["children"].append(node_id)


def _iso(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat()


# Run in a child process: imports `memvault` from sys.argv[1] ("" : this checkout), then does
# sys.argv[2] ("parse", "import" or "nothing") to the export sys.argv[3]; prints its peak RSS.
_CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
if sys.argv[1]:
    sys.path.insert(0, sys.argv[1])
from memvault import Memory
from memvault.home.chat_import import import_export
from memvault.timeline.chat_exports import read_conversations
step, path, events = sys.argv[2], sys.argv[3], 0
began = time.perf_counter()
if step == "parse":
    with open(path, "rb") as stream:
        for conversation in read_conversations("chatgpt", stream):
            events += len(conversation.events)
        del conversation
elif step == "import":
    with tempfile.TemporaryDirectory() as tmp, Memory.open(Path(tmp) / "home") as mem:
        with open(path, "rb") as stream:
            events = import_export(mem, "chatgpt", stream, path).events
took = time.perf_counter() - began
try:  # the process's own peak: ru_maxrss keeps the parent's, the one that made the export
    status = Path("/proc/self/status").read_text()
    peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
print(json.dumps({"events": events, "seconds": took, "peak": peak}))
"""


def measure(path: str, step: str, export: Path) -> dict:
    """One child process's peak RSS and time for `step` on `export`."""
    out = subprocess.run([sys.executable, "-c", _CHILD, path, step, str(export)],
                         capture_output=True, text=True, check=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def memory_table(exports: list[tuple[str, Path]], rev: str | None) -> None:
    """Peak RSS and time of parse and import of each export, this checkout (and `rev`)."""
    from recall_ab import export as export_rev

    with tempfile.TemporaryDirectory(prefix="memvault-rev-") as folder:
        sides = [("this checkout", "")]
        if rev:
            sides.append((rev, str(export_rev(rev, Path(folder)))))
        print("\nmemory: peak RSS of a process that reads the export (RSS of one that only "
              "imported memvault beside it)")
        print(f"{'export':<38} {'step':<7} {'side':<16} {'peak MB':>8} {'floor MB':>9} "
              f"{'seconds':>8} {'events':>8}")
        for label, export in exports:
            for step in ("parse", "import"):
                for side, path in sides:
                    floor = measure(path, "nothing", export)["peak"]
                    got = measure(path, step, export)
                    print(f"{label:<38} {step:<7} {side:<16} {got['peak'] / 2**20:>8.0f} "
                          f"{floor / 2**20:>9.0f} {got['seconds']:>8.2f} {got['events']:>8,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--per-conversation", type=int, default=20)
    parser.add_argument("--long", type=int, default=100_000,
                        help="messages of the one long conversation measured (0: none)")
    parser.add_argument("--rev", help="measure memory at this revision too (e.g. HEAD~1)")
    args = parser.parse_args()
    conversations, lines = make_export(args.messages, args.per_conversation)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        export = root / "conversations.json"
        export.write_text(json.dumps(conversations, ensure_ascii=False), "utf-8")
        exports = [(f"{len(conversations):,} conversations, {args.messages:,} messages", export)]
        if args.long:
            long_export = root / "long.json"
            long_export.write_text(json.dumps(make_export(args.long, args.long)[0],
                                              ensure_ascii=False), "utf-8")
            exports.append((f"1 conversation, {args.long:,} messages", long_export))
        jsonl = root / "events.jsonl"
        jsonl.write_text("\n".join(lines) + "\n", "utf-8")
        size = export.stat().st_size

        with Memory.open(root / "import-home") as mem:
            began = time.perf_counter()
            with export.open("rb") as stream:
                report = import_export(mem, "chatgpt", stream, str(export))
            import_s = time.perf_counter() - began
        with Memory.open(root / "ingest-home") as mem:
            began = time.perf_counter()
            with jsonl.open("rb") as stream:
                stored = mem.ingest(stream).new
            mem.sync_recall_index(max_events=None)
            ingest_s = time.perf_counter() - began
        print_speed(len(conversations), size, report, import_s, len(stored), ingest_s)
        memory_table(exports, args.rev)


def print_speed(conversations: int, size: int, report: ImportReport, import_s: float,
                ingested: int, ingest_s: float) -> None:
    """The speed table: import beside plain ingest."""
    import_rate, ingest_rate = report.events / import_s, ingested / ingest_s
    print(f"export: {conversations:,} conversations, {report.events:,} kept messages, "
          f"{size / 1e6:.1f} MB ({report.dropped_branch} regenerated answers dropped, "
          f"{report.skipped_roles} system messages skipped)")
    print(f"import chatgpt: {report.events:,} events in {import_s:.2f} s = "
          f"{import_rate:,.0f} events/s (to the archive queue, indexed)")
    print(f"plain ingest:   {ingested:,} events in {ingest_s:.2f} s = "
          f"{ingest_rate:,.0f} events/s (to the hot timeline, indexed)")
    print(f"import / ingest: {import_rate / ingest_rate:.2f}x")

if __name__ == "__main__":
    main()
