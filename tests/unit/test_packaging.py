"""Building the package is warning-free (a deprecated form in pyproject.toml, such as a
``project.license`` table instead of an SPDX string, shows up as a build warning), the wheel
declares what the operator side needs (Python 3.10+, tomli where tomllib is missing) and
carries what an installed dltui reads or shows: themes, the man page (in the package and in
share/man/man1, where man(1) and pipx look), the Grafana dashboard; ``python -m build`` then
``twine check`` pass, as a release would run them."""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.oldest_python_only  # an isolated build
def test_the_release_build_is_warning_free_passes_twine_check_and_carries_what_dltui_reads(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(REPO)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    warnings = [
        line.strip()
        for line in (built.stdout + built.stderr).splitlines()
        if re.search(r"warning|deprecat", line, re.I)
        and "is ignored: it is neither a file nor a directory" not in line  # pip's index config
    ]
    assert warnings == []
    dists = sorted((tmp_path / "dist").iterdir(), key=lambda p: p.suffix)
    assert [p.suffix for p in dists] == [".gz", ".whl"]
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    with zipfile.ZipFile(dists[1]) as zf:
        names = set(zf.namelist())
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        dashboard = zf.read(next(n for n in names if n.endswith("share/dltui/grafana/dltui-fleet.json")))
    assert "Requires-Python: >=3.10" in metadata
    assert "License-Expression: MIT" in metadata
    assert re.search(r"Requires-Dist: tomli.*python_version < \"3.11\"", metadata)
    assert "Requires-Dist: argcomplete" in metadata
    assert "Description-Content-Type: text/markdown" in metadata and "# dltui" in metadata
    assert "Classifier: Topic :: System :: Monitoring" in metadata
    themes = {f"dltui/themes/{p.name}" for p in (REPO / "dltui" / "themes").glob("*.toml")}
    assert themes and themes <= names
    data = "dltui-" + metadata.split("\nVersion: ")[1].split("\n")[0] + ".data/data/"
    assert {"dltui/man/dltui.1", data + "share/man/man1/dltui.1"} <= names
    grafana = {data + f"share/dltui/grafana/{p.name}" for p in (REPO / "grafana").glob("*.json")}
    assert {data + "share/dltui/grafana/dltui-fleet.json"} <= grafana <= names  # every dashboard of grafana/
    assert dashboard == (REPO / "grafana" / "dltui-fleet.json").read_bytes()  # this tree's panels


def test_the_man_page_is_the_parsers_own():
    """dltui/man/dltui.1 is generated from the command line's parser; a changed option must
    regenerate it (python scripts/manpage.py)."""
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "manpage.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    page = (REPO / "dltui" / "man" / "dltui.1").read_text()
    assert page.startswith(".TH DLTUI 1") and "\\fB\\-\\-log\\-file\\fR" in page
    man = subprocess.run(["man", "-l", str(REPO / "dltui" / "man" / "dltui.1")], capture_output=True, text=True,
                         env=dict(os.environ, MANWIDTH="100"))
    if man.returncode == 0:  # man-db renders it: the commands and their exit codes are there
        assert "dltui snapshot [options] [HOST ...]" in man.stdout and "Exit 0 ok, 1 warning" in man.stdout
