"""What the predictable-path tests share: another local user (nobody, uid 65534) who plants
files and links, and a world-writable folder of the test's own with a victim file of root's in
it. The code under test runs as root, as dltui often does; the victim must come out unchanged."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.needs import require

NOBODY = 65534
VICTIM_TEXT = "the operator's file, which must not change\n"


def as_nobody(*argv: str) -> None:
    """Run ``argv`` as uid/gid 65534 with no supplementary groups (setpriv, util-linux)."""
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv], check=True)


@contextmanager
def shared_tmp(prefix: str) -> Iterator[tuple[Path, Path, Path]]:
    """(base, base/tmp, base/victim): a /tmp of its own (1777) beside a victim file of root's,
    outside pytest's own folder, which other users cannot enter; removed afterwards."""
    require(os.geteuid() == 0, "the planted-file tests run as root, as dltui often does")
    require(bool(shutil.which("setpriv")), "setpriv (util-linux) is missing")
    base = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        base.chmod(0o755)
        tmp = base / "tmp"
        tmp.mkdir()
        tmp.chmod(0o1777)
        victim = base / "victim"
        victim.write_text(VICTIM_TEXT)
        yield base, tmp, victim
    finally:
        shutil.rmtree(base)
