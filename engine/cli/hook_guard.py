"""The guard `memvault ... hook ...` runs under (app.MemvaultGroup.main sends it here): an agent
host runs a hook, and click's usage errors exit 2, which Claude Code takes for a blocking error
(a Stop hook then keeps the agent from stopping and hands it the message). So a hook's own
command line, wrong as it may be, exits 0 too, and says why in capture.log. Kept apart from
hooks.py, which imports app.py: app.py imports this module."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from ..base.config import resolve_home
from ..base.errors import MemvaultError
from ..home.capture import log_hook_failure
from ..timeline.transcripts import HOSTS


def run_guarded(group: click.Group, argv: list[str], after_hook: list[str],
                prog_name: str | None) -> NoReturn:
    """Run the command line `argv` (`after_hook`: what follows its `hook`) and exit 0 whatever
    went wrong, click's usage errors included (a bad --home or $MEMVAULT_HOME, a bad --space,
    an extra argument, an unknown host): what went wrong is one line in the home's
    capture.log, or on stderr when no home can take it. A person's command (printing a
    config, or `hook` alone: its help) shows its errors and exits as click does."""
    named = [arg for arg in after_hook if not arg.startswith("-")]
    host = named[0] if named and named[0] in HOSTS else "hook"
    by_person = not named or any(arg in ("--print-config", "--print-hooks-config")
                                 for arg in after_hook)
    try:
        code = group.main(argv, prog_name, standalone_mode=False)
    except click.ClickException as exc:
        if by_person:
            exc.show()
            sys.exit(exc.exit_code)
        why = exc.format_message()
        _log_failure(argv, host,
                     f"command line: {why}" if isinstance(exc, click.UsageError) else why)
        sys.exit(0)
    except click.Abort:
        if by_person:
            sys.exit(1)
        _log_failure(argv, host, "interrupted")
        sys.exit(0)
    except Exception as exc:
        if by_person:
            raise
        _log_failure(argv, host, f"{type(exc).__name__}: {exc}")
        sys.exit(0)
    sys.exit(code if by_person and isinstance(code, int) else 0)


def _log_failure(argv: list[str], host: str, detail: str) -> None:
    """Log a hook command line's failure into the home it names (the last --home, else
    $MEMVAULT_HOME, else ~/.memvault); stderr when it names none."""
    named = [arg.partition("=")[2] if arg.startswith("--home=") else after
             for arg, after in zip(argv, [*argv[1:], None], strict=True)
             if arg == "--home" or arg.startswith("--home=")]
    home: Path | None = None
    if not named or named[-1] is not None:  # not a `--home` left without its value
        try:
            home = resolve_home(named[-1] if named else None).absolute()
        except MemvaultError:
            pass
    log_hook_failure(home, host, detail)
