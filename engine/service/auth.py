"""The bearer token of the HTTP API.

A TCP port on loopback is open to every local user, so `memvault serve` on TCP always needs a
token: the one in the variable named by `service.token_env` (`MEMVAULT_TOKEN`) when set, else
the home's own `service.token`, generated on first use (32 random bytes, URL-safe, mode 0600,
like every file of the home). Only `--no-auth` serves TCP without one, with a warning in the
log. A Unix socket keeps file-permission auth (0600): a token there is checked only when the
variable sets one.

The token is compared in constant time, never logged, and printed only by an explicit
`memvault serve --print-config`.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from ..base.errors import InputError

TOKEN_FILE = "service.token"
TOKEN_BYTES = 32


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` for one shared secret (compared in constant time)."""

    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token protects nothing")
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token for the right secret, None (-> 401) for anything else."""
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="static", client_id="memvault-agent", scopes=[])
        return None


def home_token(home: Path, create: bool = True) -> str | None:
    """The home's bearer token from `service.token`, generated (0600) when missing and
    `create`; None when missing and not `create`. A file that is empty or unreadable is an
    error naming it: a wrong token would only show up as 401s later."""
    path = home / TOKEN_FILE
    if not path.exists():
        if not create:
            return None
        return _write_new(path)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the service token {path}: {exc}") from None
    if not token or any(c.isspace() for c in token):
        raise InputError(f"{path} holds no usable token: delete it and a new one is made")
    return token


def _write_new(path: Path) -> str:
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        # O_EXCL: two services starting at once never overwrite each other's token
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return home_token(path.parent, create=False) or token
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    os.chmod(path, 0o600)  # whatever the umask
    return token
