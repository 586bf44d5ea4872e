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
from collections.abc import Mapping, Sequence
from pathlib import Path

from mcp.server.auth.provider import AccessToken

from ..base.errors import InputError
from ..base.spaces import check_space

TOKEN_FILE = "service.token"
TOKEN_BYTES = 32


SPACE_SCOPE = "space:"  # an access token's scope naming the space its client is bound to


class StaticTokenVerifier:
    """The SDK's `TokenVerifier` for one shared secret, and for more, each bound to a space
    (`space_tokens`: token -> space; `memvault serve --token-env NAME=SPACE`). Every secret is
    compared in constant time, all of them on every request."""

    def __init__(self, token: str | None, space_tokens: Mapping[str, str] | None = None
                 ) -> None:
        tokens: dict[str, str | None] = dict(space_tokens or {})
        if token:
            tokens[token] = None
        if not tokens or not all(tokens):
            raise ValueError("an empty bearer token protects nothing")
        self._tokens = [(secret.encode(), space) for secret, space in tokens.items()]

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token for a right secret (scoped to its space, when bound to one), None
        (-> 401) for anything else."""
        given = token.encode()
        found: list[str | None] = []
        for secret, space in self._tokens:  # no early exit: the time tells nothing
            if hmac.compare_digest(given, secret):
                found.append(space)
        if not found:
            return None
        scopes = [SPACE_SCOPE + found[0]] if found[0] else []
        return AccessToken(token="static", client_id="memvault-agent", scopes=scopes)


def space_tokens_from_env(pairs: Sequence[str], environ: Mapping[str, str]) -> dict[str, str]:
    """token -> space from `NAME=SPACE` pairs, each token read from the variable NAME. A bad
    pair, an unset or empty variable, or one token given twice is an InputError naming the
    variable (never the token)."""
    tokens: dict[str, str] = {}
    for pair in pairs:
        name, sep, space = pair.partition("=")
        if not sep or not name:
            raise InputError(f"--token-env wants NAME=SPACE (a variable and a space), got "
                             f"{pair[:80]!r}")
        check_space(space)
        secret = environ.get(name, "").strip()
        if not secret or any(c.isspace() for c in secret):
            raise InputError(f"${name} holds no usable token (--token-env {name}={space})")
        if secret in tokens:
            raise InputError(f"${name} holds a token another --token-env already names: each "
                             "space needs its own")
        tokens[secret] = space
    return tokens


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
