"""Building the package is warning-free (a deprecated form in pyproject.toml, such as a
``project.license`` table instead of an SPDX string, shows up as a build warning), and the
wheel declares what the operator side needs: Python 3.10+ and tomli where tomllib is missing."""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_builds_without_warnings(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stdout + done.stderr
    warnings = [
        line.strip()
        for line in output.splitlines()
        if re.search(r"warning|deprecat", line, re.I)
        and "is ignored: it is neither a file nor a directory" not in line  # pip's index config
    ]
    assert warnings == []
    (wheel,) = tmp_path.glob("dltui-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(name).decode()
    assert "Requires-Python: >=3.10" in metadata
    assert "License-Expression: MIT" in metadata
    assert re.search(r"Requires-Dist: tomli.*python_version < \"3.11\"", metadata)
