"""Continuous replication of a home's memory.db by Litestream, and a new home from a replica.

`target.py` (the replica's URL, checked), `litestream.py` (the binary and the config it reads),
`owner.py` (which home writes a replica), `state.py` (what `memvault replicate` last said),
`supervisor.py` (Litestream run in the foreground), `pause.py` (replication stopped around a
forget), `restore.py` (a new home from a replica).
"""
