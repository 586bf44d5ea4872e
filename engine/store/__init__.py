"""SQLite plumbing every feature stands on: opening a home's database (WAL, one write
transaction), the one ordered registry of schema migrations (each feature's own migrations,
in the order they were written), statements run inside the caller's transaction, backup and
disk usage. It knows no feature's meaning; each feature owns its tables."""
