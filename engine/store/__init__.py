"""The SQLite store: connections, schema migrations and their tables, the job/batch/receipt
queue, the worker lease, the model-usage ledger, backup, integrity check and disk usage.
Knows nothing of timelines, objects or modes; only `base` below it."""
