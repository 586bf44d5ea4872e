"""The `memvault` command line: one lazy click group (app.py), a module per noun.

The command line is the composition root: it is the one place that wires the engine and the
vault together (demo, project-vault, watch, serve). `app.COMMANDS` maps each command to the
module defining it; a module is imported only when its command runs (or for --help).
"""

from __future__ import annotations

import sys

from .app import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
