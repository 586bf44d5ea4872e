"""A remote home over TLS (`serve --tls-cert/--tls-key`; plain HTTP refused off loopback) and a
second device's hook sending to it through its outbox (`hook ... --remote URL`): spooled
while the remote is down, sent once by key when it is back, the host never failed.

The certificate is made by the test (the `cryptography` package) for 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import shutil
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helpers import run_cli
from memvault import Memory
from memvault.home.outbox import Remote, outbox_dir, read_spool, run_remote_hook
from memvault.service.host import Listen, Service, TlsFiles, check_tls_files
from memvault.service.listen import bind_tcp

pytestmark = pytest.mark.timeout(120)
DATA = Path(__file__).parent / "data" / "transcripts"
SESSION = "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"
CLAUDE = DATA / "claude-code" / "-home-ana-projects-move" / f"{SESSION}.jsonl"
CLAUDE_TURNS = 6
TOKEN = "remote-home-token-0123456789abcdef"


def wait_for(what: str, ready: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:.0f} s for {what}")
        time.sleep(0.02)


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    """A self-signed certificate for 127.0.0.1 and localhost, its key 0600."""
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memvault test")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return TlsFiles(cert_path, key_path)


@pytest.fixture
def captured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("memvault.service")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)


def free_port() -> int:
    sock = bind_tcp("127.0.0.1", 0)
    port: int = sock.getsockname()[1]
    sock.close()
    return port


class Running:
    """A TLS service for `home` in a thread, on `port`."""

    def __init__(self, home: Path, port: int, tls: TlsFiles, captured: io.StringIO) -> None:
        self.service = Service(home, Listen(host="127.0.0.1", port=port, tls=tls),
                               bearer_token=TOKEN, shutdown_grace_s=5)
        self.thread = threading.Thread(target=self.service.run)
        self.thread.start()
        wait_for("the service", lambda: "service_ready" in captured.getvalue())

    def stop(self) -> None:
        self.service.stop("test")
        self.thread.join(15)


def test_serve_refuses_plain_http_and_no_auth_off_loopback(runner: CliRunner,
                                                           tls: TlsFiles) -> None:
    plain = run_cli(runner, "serve", "--host", "0.0.0.0", "--port", "0", code=1)
    assert "not loopback" in plain.output and "--tls-cert" in plain.output
    no_auth = run_cli(runner, "serve", "--host", "0.0.0.0", "--port", "0", "--no-auth",
                      "--tls-cert", str(tls.cert), "--tls-key", str(tls.key), code=2)
    assert "--no-auth off loopback" in no_auth.output
    half = run_cli(runner, "serve", "--host", "0.0.0.0", "--tls-cert", str(tls.cert), code=1)
    assert "go together" in half.output
    printed = run_cli(runner, "serve", "--host", "0.0.0.0", "--port", "8443", "--tls-cert",
                      str(tls.cert), "--tls-key", str(tls.key), "--print-config").output
    assert json.loads(printed)["mcpServers"]["memvault"]["url"] == "https://0.0.0.0:8443/mcp"


def test_a_private_key_others_can_read_is_refused(tls: TlsFiles) -> None:
    tls.key.chmod(0o644)
    from memvault.base.errors import InputError

    with pytest.raises(InputError, match="readable by others"):
        check_tls_files(str(tls.cert), str(tls.key))


def test_serve_with_tls_answers_https_and_not_plain_http(home: Path, tls: TlsFiles,
                                                         captured: io.StringIO) -> None:
    port = free_port()
    running = Running(home, port, tls, captured)
    try:
        context = ssl.create_default_context(cafile=str(tls.cert))
        request = urllib.request.Request(f"https://127.0.0.1:{port}/mcp", b"{}", {
            "Content-Type": "application/json"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:  # TLS works; no token: 401
            urllib.request.urlopen(request, timeout=30, context=context)
        assert refused.value.code == 401
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/mcp", timeout=30)
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            urllib.request.urlopen(request, timeout=30)  # an untrusted certificate
    finally:
        running.stop()


def _send(device: Path, transcript: Path, remote: Remote) -> Any:
    raw = json.dumps({"session_id": SESSION, "transcript_path": str(transcript),
                      "hook_event_name": "Stop"}).encode()
    started = time.monotonic()
    return run_remote_hook(device, "claude-code", raw, started, remote,
                           clock=lambda: started)  # the step keeps all its time


def test_a_remote_hook_spools_while_the_remote_is_down_then_sends_each_turn_once(
        tmp_path: Path, home: Path, tls: TlsFiles, captured: io.StringIO) -> None:
    device = tmp_path / "device"
    transcript = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(CLAUDE, transcript)
    port = free_port()
    remote = Remote(f"https://127.0.0.1:{port}/mcp", TOKEN, tls.cert)
    down = _send(device, transcript, remote)
    assert down is not None and down.read == CLAUDE_TURNS and down.sent == 0
    assert down.unreachable and down.waiting == CLAUDE_TURNS
    spool = outbox_dir(device) / "spool.jsonl"
    assert spool.stat().st_mode & 0o777 == 0o600
    assert (outbox_dir(device)).stat().st_mode & 0o777 == 0o700
    assert "wait in the outbox" in (device / "capture.log").read_text()
    again = _send(device, transcript, remote)  # nothing new read: the transcript's offset kept
    assert again.read == 0 and again.waiting == CLAUDE_TURNS
    kept = read_spool(device)
    running = Running(home, port, tls, captured)
    try:
        back = _send(device, transcript, remote)
        assert back.sent == CLAUDE_TURNS and back.waiting == 0 and back.unreachable is None
        assert read_spool(device) == []
        # a kill after the remote answered, before the outbox was rewritten: sent again,
        # stored once by key
        (outbox_dir(device) / "spool.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in kept))
        assert _send(device, transcript, remote).sent == CLAUDE_TURNS
    finally:
        running.stop()
    with Memory.open(home, readonly=True) as mem:
        keys = [row[0] for row in mem.conn.execute("SELECT key FROM events")]
    assert len(keys) == CLAUDE_TURNS and len(set(keys)) == CLAUDE_TURNS


def test_a_remote_hook_exits_0_whatever_happens_and_prints_the_remote_form(
        tmp_path: Path, runner: CliRunner) -> None:
    device = tmp_path / "device"
    result = run_cli(runner, "--home", str(device), "hook", "claude-code", "--remote",
                     "https://127.0.0.1:1/mcp", "--token-env", "MV_TOKEN", input="not json")
    assert result.output == ""
    printed = json.loads(run_cli(runner, "--home", str(device), "hook", "claude-code",
                                 "--remote", "https://home.example:8765/mcp", "--token-env",
                                 "MV_TOKEN", "--ca-cert", "ca.pem", "--print-config").output)
    command = printed["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert "--remote https://home.example:8765/mcp --token-env MV_TOKEN --ca-cert /" in command
    notify = run_cli(runner, "--home", str(device), "hook", "codex", "--remote",
                     "https://home.example:8765/mcp", "--print-config").output
    assert '"--remote", "https://home.example:8765/mcp"' in notify
