"""memvault's vault: a readable Markdown projection of the SQLite store (docs/spec.md section 6).

SQLite is authoritative. The projector (`render_vault`, `project_vault`) renders objects into
`objects/<type>/<hash>.md` in bounded batches, the directory into `objects/README.md` and the
core files AGENTS.md, SOUL.md, USER.md into the vault root. Only those three core files flow
back: the watcher (`VaultWatcher`) imports their hand edits and reports hand edits of object
files, which the next projection restores while keeping the edit beside it as a conflict
copy `<name>.conflict-1.md` (`memvault accept-edit` takes one as a person's correction).

The engine never imports this package; this package imports the engine.
"""

from __future__ import annotations

from .paths import object_hash, object_path
from .projector import (
    ProjectionBusy,
    ProjectionResult,
    project_vault,
    render_vault,
    rerender_objects_citing,
)
from .render import Renderer
from .watcher import VaultWatcher, WatchOutcome

__all__ = [
    "ProjectionBusy",
    "ProjectionResult",
    "Renderer",
    "VaultWatcher",
    "WatchOutcome",
    "object_hash",
    "object_path",
    "project_vault",
    "render_vault",
    "rerender_objects_citing",
]
