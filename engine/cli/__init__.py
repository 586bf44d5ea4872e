"""The `memvault` command line: one click group (app.py), a module per noun.

The command line is the composition root: it is the one place that wires the engine and the
vault together (demo, project-vault, watch, serve). Importing a command module registers its
commands on `main`.
"""

from __future__ import annotations

import sys

from . import core, demo, ingest, inspect, maintenance, recall, serve, vault, work  # noqa: F401
from .app import main

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
