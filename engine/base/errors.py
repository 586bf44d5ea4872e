"""Errors the engine raises on purpose. Each carries a message a person can act on."""

from __future__ import annotations


class MemvaultError(Exception):
    """Base of every deliberate engine error; the CLI shows its message and exits non-zero."""


class ConfigError(MemvaultError):
    """memvault.toml holds a bad key or value."""


class InputError(MemvaultError):
    """A caller handed the engine something it refuses (too long, empty, not UTF-8, bad id)."""


class NotFound(MemvaultError):
    """An id that names nothing in the store."""


class IngestError(MemvaultError):
    """A JSONL line that could not be ingested; `stored` events before it stay stored
    (`skipped`: ids of lines before it whose key was already stored)."""

    def __init__(self, message: str, line: int, stored: list[int],
                 skipped: list[int] | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.stored = stored
        self.skipped = skipped or []


class StoreError(MemvaultError):
    """The database is missing, newer than this code, or unreadable."""


class FieldError(Exception):
    """A correctable validation error in a model's tool call; the message names the field. It
    goes back to the model as a correction (jobs/batch_loop.py), never fails a batch alone."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
