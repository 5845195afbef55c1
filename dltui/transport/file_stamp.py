"""What tells a changed file from the one read before, for the caches of parsed SSH files."""

from __future__ import annotations

import os


def file_stamp(path: str) -> tuple | None:
    """(inode, mtime, size), or None when there is no such file; other errors are raised."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)
