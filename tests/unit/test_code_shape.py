"""Small units, as the house rules say: no Python file of the project (the product, its tests,
scripts and benchmarks) over 700 lines, no class over 300. A unit that grows past them is
split by what it does, not trimmed to fit."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILE_LINES_MAX = 700
CLASS_LINES_MAX = 300
NOT_OURS = REPO / "bench" / "results"  # what `make bench` installs and writes (glances' venv): ignored by git
SOURCES = sorted(
    p
    for folder in ("dltui", "tests", "scripts", "bench")
    for p in (REPO / folder).rglob("*.py")
    if not p.is_relative_to(NOT_OURS)
)


def test_no_file_over_700_lines():
    long = {
        str(p.relative_to(REPO)): n
        for p in SOURCES
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > FILE_LINES_MAX
    }
    assert long == {}


def test_no_class_over_300_lines():
    big = {
        f"{p.relative_to(REPO)}:{node.name}": size
        for p in SOURCES
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"), str(p)))
        if isinstance(node, ast.ClassDef)
        and (size := (node.end_lineno or node.lineno) - node.lineno + 1) > CLASS_LINES_MAX
    }
    assert big == {}


def test_the_checks_measure_what_they_say(tmp_path):
    """A class of 301 lines is seen as one (a check that cannot fail passes anything)."""
    body = "\n".join(f"    x{i} = {i}" for i in range(300))
    tree = ast.parse(f"class Big:\n{body}\n")
    (big,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert big.end_lineno - big.lineno + 1 == 301 > CLASS_LINES_MAX
