"""dltui's own log: ``$XDG_STATE_HOME/dltui/dltui.log`` (``~/.local/state/dltui/dltui.log``),
or ``--log-file FILE``; rotated at 1 MiB, three old files kept.

Warnings and errors always go there — a crash's traceback above all, so the terminal gets one
line and the log the rest. ``--debug`` adds dltui's own debug records and asyncssh's
connection steps (at its first debug level: no packets, no key material). The file is created
only when there is something to write; its folder 0700, the files 0600, whatever the umask. It is
appended to across runs when it is the operator's own file (one name, writable by no one else);
a link, another user's file or folder at its path is refused before anything runs
(``dltui.private_files``: ``--log-file`` may name a folder others write into).
Nothing secret is logged: passwords are never asked for, private keys are never read here,
and what nodes send is logged only as the reasons dltui shows anyway.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import Any

from dltui.private_files import UnsafePath, check, open_private
from dltui.state_dir import state_dir

LOG_NAME = "dltui.log"
MAX_BYTES = 1 << 20
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def default_path() -> Path:
    return state_dir() / LOG_NAME


class LogFileError(Exception):
    """The log's path is refused (a link, another user's file or folder); one line."""


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """Opened (and reopened at each rotation) 0600, in a folder made 0700, never through a
    link nor into another user's file (dltui.private_files)."""

    said = False  # whether the one line about a failing log has been written

    def _open(self) -> Any:
        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND)
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)

    def handleError(self, record: logging.LogRecord) -> None:
        """One line, once, instead of logging's traceback per record: the log is a bystander
        (a link planted after ``setup`` looked, a full disk)."""
        if self.said:
            return
        self.said = True
        exc = sys.exc_info()[1]
        why = str(exc) if isinstance(exc, UnsafePath) else f"{self.baseFilename}: {exc}"
        sys.stderr.write(f"dltui: {why}; not logging\n")


_installed: logging.Handler | None = None


def setup(log_file: str | None = None, debug: bool = False) -> Path:
    """Send dltui's (and with ``debug``, asyncssh's) records to the log file; returns its path.
    Called once per process by the command line; calling it again replaces the handler.
    Raises ``LogFileError`` when the path is refused (before anything is written anywhere)."""
    global _installed
    path = Path(log_file).expanduser() if log_file else default_path()
    try:
        check(path)
    except UnsafePath as exc:
        raise LogFileError(str(exc)) from None
    except OSError:
        pass  # unreadable here: the opening says why, when there is something to log
    handler = _PrivateRotatingFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger("dltui")
    ssh = logging.getLogger("asyncssh")
    for logger in (root, ssh):
        if _installed is not None:
            logger.removeHandler(_installed)
        logger.addHandler(handler)
        logger.propagate = False  # nothing of ours on the terminal the dashboard draws on
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    ssh.setLevel(logging.INFO if debug else logging.WARNING)  # asyncssh's debug is packets
    _installed = handler
    return path


def where() -> str:
    """The log file's path, for the one line a crash prints."""
    if isinstance(_installed, logging.FileHandler):
        return _installed.baseFilename
    return str(default_path())
