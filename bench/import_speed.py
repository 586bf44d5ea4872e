"""Import speed: `memvault import chatgpt` against plain `memvault ingest` of the same messages.

    python bench/import_speed.py [--messages 20000] [--per-conversation 20]

Generates a ChatGPT-style `conversations.json` (Chinese, English and mixed turns, a system
message and a regenerated answer per conversation, as real exports have) and the same kept
messages as memvault JSONL, then, in one run and one process, times:
- import: `import_export` (what `memvault import chatgpt FILE` runs): streamed with ijson, one
  transaction per conversation, straight to the archive queue, keys checked, then indexed;
- ingest: `Memory.ingest` (what `memvault ingest FILE` runs) of the same
  messages, with the same keys, then indexed as `memvault ingest` does.
Each gets a fresh home in a temporary folder. Printed: events/s of each and their ratio.
Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import Memory  # noqa: E402
from memvault.home.chat_import import import_export  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--per-conversation", type=int, default=20)
    args = parser.parse_args()
    conversations, lines = make_export(args.messages, args.per_conversation)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        export = root / "conversations.json"
        export.write_text(json.dumps(conversations, ensure_ascii=False), "utf-8")
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

    import_rate, ingest_rate = report.events / import_s, len(stored) / ingest_s
    print(f"export: {len(conversations):,} conversations, {report.events:,} kept messages, "
          f"{size / 1e6:.1f} MB ({report.dropped_branch} regenerated answers dropped, "
          f"{report.skipped_roles} system messages skipped)")
    print(f"import chatgpt: {report.events:,} events in {import_s:.2f} s = "
          f"{import_rate:,.0f} events/s (to the archive queue, indexed)")
    print(f"plain ingest:   {len(stored):,} events in {ingest_s:.2f} s = "
          f"{ingest_rate:,.0f} events/s (to the hot timeline, indexed)")
    print(f"import / ingest: {import_rate / ingest_rate:.2f}x")


if __name__ == "__main__":
    main()
