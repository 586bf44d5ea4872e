"""Upgrading a database of the original one-phase design into this schema, in place."""
