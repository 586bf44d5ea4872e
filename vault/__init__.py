"""memvault's vault: a readable Markdown projection of the SQLite store (docs/spec.md section 6).

SQLite is authoritative. The projector (`projector.render_vault`, `projector.project_vault`)
renders objects into `objects/<type>/<hash>.md` in bounded batches, the directory into
`objects/README.md` and the core files AGENTS.md, SOUL.md, USER.md into the vault root. Only
those three core files flow back: the watcher (`watcher.VaultWatcher`) imports their hand edits
and reports hand edits of object files, which the next projection restores while keeping the
edit beside it as a conflict copy `<name>.conflict-1.md` (`memvault accept-edit` takes one as
a person's correction).

The vault owns its tables (vault/schema.py, vault/bookkeeping.py) and reads the engine's
objects; the engine's store imports only its schema, for the migration registry.
"""

