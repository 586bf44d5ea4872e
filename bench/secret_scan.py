"""The secret detector's time and verdicts over everyday text, against another version of it.

The corpus: the bundled sample events, the recall labels (memorybank), and the paragraphs of
the docs, README, sample vault and sources. For each text, find_secret of this checkout and of
the detector at a git revision (default HEAD) are compared: the texts whose verdict differs are
listed (a new false alarm shows here), and the CPU time of each over the corpus (best of N).

    python bench/secret_scan.py [--rev HEAD] [--repeat 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memvault.secrets import detector as current

ROOT = Path(__file__).resolve().parent.parent


def corpus() -> list[str]:
    texts = [json.loads(line)["text"] for line in
             (ROOT / "engine/data/sample_events.jsonl").read_text(encoding="utf-8").splitlines()]

    def walk(node: object) -> None:
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads((ROOT / "bench/recall_labels_memorybank.json").read_text(encoding="utf-8")))
    files = [*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("sample_vault/**/*.md"),
             *ROOT.glob("engine/**/*.py")]
    for path in files:
        texts += [p for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts


def detector_at(rev: str) -> object:
    """engine/secrets/ as of `rev` (the detector and the value rules beside it), loaded as the
    package memvault.secrets_at_rev, so the detector's relative imports reach that revision's
    modules (and memvault's own for the rest)."""
    folder = Path(tempfile.mkdtemp()) / "secrets_at_rev"
    folder.mkdir()
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:engine/secrets"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.split()
    for name in (n for n in names if n.endswith(".py")):
        source = subprocess.run(["git", "show", f"{rev}:engine/secrets/{name}"], cwd=ROOT,
                                check=True, capture_output=True, text=True).stdout
        (folder / name).write_text(source, encoding="utf-8")
    package = "memvault.secrets_at_rev"
    spec = importlib.util.spec_from_file_location(package, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[package] = module
    spec.loader.exec_module(module)
    return importlib.import_module(f"{package}.detector")


def best_time(find: object, texts: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.process_time()
        for text in texts:
            find(text)  # type: ignore[operator]
        best = min(best, time.process_time() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    texts = corpus()
    other = detector_at(args.rev)
    differ = [(other.find_secret(t), current.find_secret(t), t[:160])  # type: ignore[attr-defined]
              for t in texts if other.find_secret(t) != current.find_secret(t)]  # type: ignore[attr-defined]
    print(f"{len(texts):,} texts; {len(differ)} verdicts differ from {args.rev}")
    for was, now, text in differ:
        print(f"  {was!r} -> {now!r}: {text!r}")
    for label, module in ((args.rev, other), ("this checkout", current)):
        seconds = best_time(module.find_secret, texts, args.repeat)  # type: ignore[attr-defined]
        print(f"{label:>14}: {seconds * 1e3:8.1f} ms CPU for the corpus "
              f"({seconds / len(texts) * 1e6:.1f} µs a text, best of {args.repeat})")


if __name__ == "__main__":
    main()
