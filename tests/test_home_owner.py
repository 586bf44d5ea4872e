"""A home another user owns is refused by every command that writes or calls a model (its owner
controls the settings that pick the model server and the key sent to it); `check` reports it;
`--allow-other-owner` lets an administrator through. memvault.toml is read only when it is a
regular file: a FIFO or /dev/zero is one clear error, never a hang."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import run_cli
from memvault import Memory
from memvault.base import home_trust
from memvault.base.config import load_config
from memvault.base.errors import ConfigError

from tests.fake_openai import FakeOpenAI

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="giving a home to another user (chown) needs root")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user named nobody")
    return entry.pw_uid, entry.pw_gid


def give_away(path: Path) -> None:
    uid, gid = nobody()
    os.chown(path, uid, gid, follow_symlinks=False)


@pytest.fixture
def made(home: Path) -> Path:
    """A home with one event, made by the current user."""
    with Memory.open(home) as mem:
        mem.append_event("the Aurora beta ships on Friday")
    return home


@pytest.fixture
def other_user(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run as if the effective user were someone else (no root needed): every file the test
    made now belongs to 'another user'."""
    me = os.geteuid()
    monkeypatch.setattr(home_trust.os, "geteuid", lambda: me + 4242)
    yield


# -- refused, whoever runs it -----------------------------------------------------------------

def test_a_home_of_another_user_is_refused_by_writing_opens(made: Path, other_user: None) -> None:
    with pytest.raises(ConfigError, match=r"is not yours .* is owned by .*--allow-other-owner"):
        Memory.open(made)
    with Memory.open(made, readonly=True) as mem:  # reading changes nothing: allowed
        assert mem.status()["events"]["total"] == 1


def test_an_administrator_may_allow_another_owner(made: Path, other_user: None,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  runner: CliRunner) -> None:
    # The flag sets the variable for the whole process: set through monkeypatch first (to a
    # no), so it is restored after this test.
    monkeypatch.setenv(home_trust.ALLOW_OTHER_OWNER_ENV, "0")
    with Memory.open(made, allow_other_owner=True) as mem:
        mem.append_event("the admin's note")
    run_cli(runner, "--allow-other-owner", "core", "set", "USER.md", "-", input="# me\n")
    monkeypatch.delenv(home_trust.ALLOW_OTHER_OWNER_ENV, raising=False)
    run_cli(runner, "core", "set", "USER.md", "-", input="# me again\n", code=1)
    monkeypatch.setenv(home_trust.ALLOW_OTHER_OWNER_ENV, "1")
    run_cli(runner, "core", "set", "USER.md", "-", input="# me again\n")


def test_check_names_each_part_another_user_owns(made: Path, other_user: None) -> None:
    from memvault.home.check import check_memory

    with Memory.open(made, readonly=True) as mem:
        report = check_memory(mem.conn, home=made)
    [finding] = [p for p in report["problems"] if p["kind"] == "owner"]
    assert finding["severity"] == "error" and not report["ok"]
    assert "memory.db is owned by" in finding["detail"]
    assert "memvault.toml is owned by" in finding["detail"]
    assert str(made / "memory.db") in finding["ids"]


# -- refused: a real other owner (root only) ----------------------------------------------------

@needs_root
@pytest.mark.parametrize("part", ["", "memvault.toml", "memory.db", "vault"])
def test_every_writing_command_refuses_a_part_owned_by_another_user(
        made: Path, runner: CliRunner, part: str, tmp_path: Path) -> None:
    (made / "vault").mkdir(mode=0o700, exist_ok=True)
    give_away(made / part if part else made)
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"text": "private words"}\n', encoding="utf-8")
    for args in (["ingest", str(jsonl)], ["compact", "--wait"], ["organize", "--wait"],
                 ["core", "set", "USER.md", "-"], ["migrate"]):
        result = run_cli(runner, *args, code=1, input="# me\n")
        assert "is owned by nobody (uid" in result.output
        assert "--allow-other-owner" in result.output
    with Memory.open(made, readonly=True) as mem:
        assert mem.status()["events"]["total"] == 1  # nothing stored
    run_cli(runner, "status")  # reading is fine


@needs_root
def test_check_reports_a_home_another_user_owns(made: Path, runner: CliRunner) -> None:
    give_away(made / "memory.db")
    result = run_cli(runner, "check", "--json", code=1)
    assert '"kind": "owner"' in result.output
    assert "memory.db is owned by nobody" in result.output


@needs_root
def test_a_planted_settings_file_never_sends_a_key_or_text(tmp_path: Path, runner: CliRunner,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    with FakeOpenAI() as attacker:
        planted = tmp_path / "shared"
        planted.mkdir()
        (planted / "memvault.toml").write_text(
            f'[model]\nprovider = "openai"\nname = "m"\nbase_url = "{attacker.base_url}"\n'
            'api_key_env = "VICTIM_SECRET"\n', encoding="utf-8")
        give_away(planted / "memvault.toml")
        give_away(planted)
        os.chmod(planted, 0o700)  # the victim narrowed it, but nobody still owns it
        monkeypatch.setenv("VICTIM_SECRET", "sk-victim-" + "v" * 30)
        monkeypatch.setenv("MEMVAULT_HOME", str(planted))
        jsonl = tmp_path / "private.jsonl"
        jsonl.write_text('{"text": "my private diary"}\n', encoding="utf-8")
        run_cli(runner, "ingest", str(jsonl), code=1)
        run_cli(runner, "compact", "--wait", code=1)
        assert attacker.requests == []
    assert not (planted / "memory.db").exists()


@needs_root
def test_root_running_its_own_home_is_fine(made: Path, runner: CliRunner) -> None:
    assert os.stat(made).st_uid == 0
    run_cli(runner, "core", "set", "USER.md", "-", input="# root\n")
    assert '"kind": "owner"' not in run_cli(runner, "check", "--json").output


# -- memvault.toml must be a regular file -------------------------------------------------------

def memvault_status(timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """`memvault status` in a child, bounded: a regression here would hang, not fail."""
    return subprocess.run(
        [sys.executable, "-c", "from memvault.cli import main; main(['status'])"],
        capture_output=True, text=True, timeout=timeout, env=os.environ.copy())


@needs_fifo
def test_a_fifo_as_the_settings_file_is_refused_at_once(made: Path) -> None:
    (made / "memvault.toml").unlink()
    os.mkfifo(made / "memvault.toml")
    result = memvault_status()
    assert result.returncode == 1
    assert "memvault.toml is a FIFO, not a regular file" in result.stderr
    assert "Traceback" not in result.stderr
    assert stat.S_ISFIFO(os.lstat(made / "memvault.toml").st_mode)  # left alone


def test_a_settings_file_linked_to_dev_zero_is_refused_at_once(made: Path) -> None:
    (made / "memvault.toml").unlink()
    (made / "memvault.toml").symlink_to("/dev/zero")
    result = memvault_status()
    assert result.returncode == 1
    assert "memvault.toml is a symbolic link" in result.stderr


@needs_root
def test_a_device_as_the_settings_file_is_refused_at_once(made: Path) -> None:
    (made / "memvault.toml").unlink()
    try:
        os.mknod(made / "memvault.toml", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero
    except OSError as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    with pytest.raises(ConfigError, match="memvault.toml is a device, not a regular file"):
        load_config(made)


def test_an_oversized_settings_file_is_refused(made: Path) -> None:
    (made / "memvault.toml").write_text("# x\n" * 300_000, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"memvault.toml is over 1,048,576 bytes"):
        load_config(made)


def test_a_settings_file_that_is_not_utf8_is_one_clear_error(made: Path) -> None:
    (made / "memvault.toml").write_bytes(b"[model]\nname = \"\xff\"\n")
    with pytest.raises(ConfigError, match=r"not valid TOML: not UTF-8 \(bad byte at offset 16\)"):
        load_config(made)
