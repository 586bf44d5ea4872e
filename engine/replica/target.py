"""A replica's URL, as memvault accepts it: file://, sftp:// or s3:// (S3-compatible stores
through Litestream's `endpoint` query), never holding a secret (Litestream reads credentials
from the environment: AWS_ACCESS_KEY_ID, LITESTREAM_SFTP_PASSWORD...)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit

from ..base.errors import InputError

SCHEMES = ("file", "sftp", "s3")
# Query keys that would put a credential in the URL (and so in memvault.toml and the config).
_SECRET_KEYS = ("key", "secret", "password", "token", "credential")


@dataclass(frozen=True)
class ReplicaTarget:
    """A checked replica URL; `path` is the folder of a file:// replica, else None."""

    url: str
    scheme: str
    path: Path | None
    key_path: Path | None = None  # sftp://: the SSH key file (a path, never the key itself)

    @property
    def local(self) -> bool:
        """A file:// replica: memvault can read, mark and empty it itself."""
        return self.path is not None


def parse_target(url: str, key_path: str = "") -> ReplicaTarget:
    """The replica at `url` (an sftp:// one logging in with the SSH key at `key_path`), or
    InputError saying what is wrong with it (nothing is made)."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in SCHEMES:
        raise InputError(f"replica URL {text!r}: use file:///folder, sftp://host/path or "
                         "s3://bucket/path")
    if parts.password is not None:
        raise InputError("replica URL holds a password: leave it out (Litestream reads "
                         "LITESTREAM_SFTP_PASSWORD or the AWS_* variables from the environment)")
    secret = [k for k, _ in parse_qsl(parts.query) if any(s in k.lower() for s in _SECRET_KEYS)]
    if secret:
        raise InputError(f"replica URL holds a credential ({', '.join(secret)}): leave it out "
                         "and set it in the environment, where Litestream reads it")
    if parts.scheme != "file":
        if not parts.netloc or not parts.path.strip("/"):
            raise InputError(f"replica URL {text!r} needs a host (or bucket) and a path")
        key = Path(key_path).expanduser().absolute() if key_path else None
        if key is not None and parts.scheme != "sftp":
            raise InputError("replica.sftp_key_path is for an sftp:// replica")
        return ReplicaTarget(text, parts.scheme, None, key)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise InputError(f"replica URL {text!r}: a file:// replica is an absolute folder, "
                         "file:///mnt/nas/memvault")
    path = Path(unquote(parts.path))
    if path == Path("/"):
        raise InputError("a file:// replica cannot be the root folder")
    return ReplicaTarget(f"file://{path}", "file", path)
