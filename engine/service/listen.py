"""Where `memvault serve` listens: a Unix socket (0600: file permissions are its auth), a
loopback TCP port (bearer token: memvault.service.auth), or stdin/stdout. Never anything but
loopback: the API carries the agent's whole memory."""

from __future__ import annotations

import ipaddress
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import InputError
from .mcp_server import MCP_PATH

SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes on Linux, 104 on macOS; keep a margin


@dataclass(frozen=True)
class TlsFiles:
    """The certificate chain and private key `serve --tls-cert/--tls-key` serves HTTPS with."""

    cert: Path
    key: Path


@dataclass
class Listen:
    """Where the API listens: a Unix socket, a TCP port (loopback, or any address with TLS or
    an explicit plain-HTTP flag), or stdin/stdout."""

    socket: Path | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    stdio: bool = False
    tls: TlsFiles | None = None
    off_loopback: bool = False  # a non-loopback host, checked by `check_host`

    def describe(self) -> dict[str, Any]:
        if self.stdio:
            return {"transport": "stdio"}
        if self.socket is not None:
            return {"transport": "streamable-http", "socket": str(self.socket),
                    "url": "http://localhost" + MCP_PATH}
        return {"transport": "streamable-http", "host": self.host, "port": self.port,
                "url": self.url}

    @property
    def url(self) -> str:
        """The MCP endpoint a host puts in its config (TCP; over a socket, its path part)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{MCP_PATH}"


def check_loopback(host: str) -> str:
    """Only loopback addresses: the API carries the agent's whole memory."""
    name = host.strip("[]")
    if name == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(name).is_loopback:
            return name
    except ValueError:
        pass
    raise InputError(f"--host {host}: memvault serves only on a loopback address "
                     "(127.0.0.1, ::1) or a Unix socket")


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address (or localhost)."""
    try:
        check_loopback(host)
    except InputError:
        return False
    return True


def check_host(host: str, tls: TlsFiles | None, plain_http: bool) -> str:
    """The address `serve` may listen on: loopback always; any other only with TLS, or with
    `plain_http` (the person's explicit choice: a reverse proxy terminating TLS in front)."""
    try:
        return check_loopback(host)
    except InputError:
        if tls is None and not plain_http:
            raise InputError(f"--host {host} is not loopback: serve it over TLS (--tls-cert F "
                             "--tls-key F), or behind a reverse proxy that does TLS with "
                             "--plain-http-off-loopback") from None
    name = host.strip("[]")
    if name in ("", "0.0.0.0", "::"):
        return name or "0.0.0.0"
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        raise InputError(f"--host {host}: give an IP address to listen on") from None


def check_tls_files(cert: str | None, key: str | None) -> TlsFiles | None:
    """Both TLS files or neither; each a readable regular file (never a link's target
    silently: a link is refused as elsewhere in memvault)."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise InputError("--tls-cert and --tls-key go together")
    files = TlsFiles(Path(cert).expanduser().absolute(), Path(key).expanduser().absolute())
    for path in (files.cert, files.key):
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from None
        if not stat.S_ISREG(mode):
            raise InputError(f"{path} is not a regular file")
    if os.stat(files.key).st_mode & 0o077:
        raise InputError(f"{files.key}: the private key is readable by others: chmod 600 it")
    return files


def bind_unix(path: Path) -> socket.socket:
    """A listening Unix socket at `path`, readable and writable by this user only (0600).

    A stale socket file (nobody accepting) is replaced; a live one is an error."""
    raw = os.fsencode(path)
    if len(raw) > SOCKET_PATH_MAX:
        raise InputError(f"socket path {path} is {len(raw)} bytes; Unix sockets allow about "
                         f"{SOCKET_PATH_MAX}: pass a shorter --socket")
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise InputError(f"{path} exists and is not a socket; not replacing it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            path.unlink(missing_ok=True)  # left by a service that died
        else:
            raise InputError(f"another service is listening on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {path}: {exc}") from None
    sock.setblocking(False)
    return sock


def bind_tcp(host: str, port: int, off_loopback: bool = False) -> socket.socket:
    """A listening TCP socket on `host` (port 0: any free port): loopback unless
    `off_loopback` (the caller checked it with `check_host`)."""
    host = host if off_loopback else check_loopback(host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY on an accepted connection only
    # when its socket says proto == IPPROTO_TCP, and socket.socket(family, SOCK_STREAM) says 0.
    # Without it, Nagle held back the second write of every answer until the client's delayed
    # ACK (~40 ms): a flat ~48 ms per call over loopback HTTP against 2-4 ms over stdio.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited on accept
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc}") from None
    sock.setblocking(False)
    return sock
