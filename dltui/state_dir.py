"""dltui's state folder on the operator's machine: ``$XDG_STATE_HOME/dltui`` (by default
``~/.local/state/dltui``) holds the audit log, the GPU inventory and the burn-in spools.

It is private whatever the umask: a folder made here is 0700 and a file made here 0600, and
what is planted in it is refused (``dltui.private_files``). The folder must be the operator's
own or root's.
"""

from __future__ import annotations

import os
from pathlib import Path

from dltui.private_files import open_private

__all__ = ["open_private", "state_dir"]  # open_private: the opener of the files kept here


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "dltui"
