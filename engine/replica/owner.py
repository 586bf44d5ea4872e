"""Which home writes a replica: one writer only. Two Litestream processes shipping to one
replica interleave their transactions and corrupt it without a word, so a file:// replica
holds an owner marker naming the home that writes it, and a second home is refused unless it
takes the replica over on purpose (the lost laptop's successor)."""

from __future__ import annotations

import json
import os
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..base.clock import iso
from ..base.errors import InputError
from .litestream import replica_dir
from .target import ReplicaTarget

HOME_ID_FILE = "home-id"
MARKER = "memvault-owner.json"


@dataclass(frozen=True)
class Owner:
    """The home a replica's marker names."""

    home_id: str
    host: str
    home: str
    since: str


def home_id(home: Path) -> str:
    """This home's replication id (made on first use, 0600). A home restored from a replica
    gets a new one: it is another writer until it takes the replica over."""
    path = replica_dir(home) / HOME_ID_FILE
    try:
        return path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        pass
    made = secrets.token_hex(16)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(made + "\n")
    return made


def read_owner(target: ReplicaTarget) -> Owner | None:
    """The owner a file:// replica's marker names; None when it has none (or is remote)."""
    if target.path is None:
        return None
    try:
        data = json.loads((target.path / MARKER).read_text(encoding="utf-8"))
        return Owner(str(data["home_id"]), str(data["host"]), str(data["home"]),
                     str(data["since"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{target.path / MARKER} is not a memvault owner marker: "
                         "look at the replica before replicating into it") from None


def claim(home: Path, target: ReplicaTarget, now: datetime, take_over: bool = False) -> None:
    """Mark a file:// replica as this home's; refuse one another home writes unless
    `take_over` (its older data is then this home's to replace). Remote replicas carry no
    marker (docs/devices.md)."""
    if target.path is None:
        return
    mine = home_id(home)
    owner = read_owner(target)
    if owner is not None and owner.home_id != mine and not take_over:
        raise InputError(
            f"the replica {target.url} is written by another home ({owner.home} on "
            f"{owner.host}, since {owner.since}): two writers would corrupt it. Replicate "
            "this home elsewhere, or pass --take-over if that home is gone for good")
    if owner is not None and owner.home_id == mine:
        return
    _write_marker(target.path, Owner(mine, socket.gethostname(), str(home), iso(now)))


def _write_marker(folder: Path, owner: Owner) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = folder / f".{MARKER}.tmp"
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(owner.__dict__, out)
    os.replace(tmp, folder / MARKER)
