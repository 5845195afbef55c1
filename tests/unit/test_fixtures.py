"""The project's tests read only the project's own fixtures: every captured file under
tests/fixtures/ is named in its folder's PROVENANCE.md with a permissive licence (GPL and
undetermined-licence captures stay out), and is byte-exact where a sha256 is recorded."""

import hashlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
PERMISSIVE = ("MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause")
FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


def provenance(path: Path) -> str:
    """The part of the folder's PROVENANCE.md about ``path``: its ``## `name``` section, or
    its table row."""
    text = (path.parent / "PROVENANCE.md").read_text(encoding="utf-8")
    section = re.search(r"^## `%s`\n(.*?)(?=^## |\Z)" % re.escape(path.name), text, re.M | re.S)
    if section:
        return section.group(1)
    row = re.search(r"^\| `%s` \|.*$" % re.escape(path.name), text, re.M)
    return row.group(0) if row else ""


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_has_a_permissive_provenance(path):
    entry = provenance(path)
    assert entry, f"{path.name} is not named in {path.parent.name}/PROVENANCE.md"
    assert any(licence in entry for licence in PERMISSIVE), entry
    assert "GPL" not in entry
    digest = re.search(r"sha256: ([0-9a-f]{64})", entry)
    if digest:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest.group(1)


def test_no_test_reads_outside_the_repository():
    """``../shared`` beside a checkout exists on the developers' machines only: a test reading
    it collects nothing (or fails) on a fresh clone."""
    offenders = [
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("*.py")
        if re.search(r"REPO\.parent|parents\[[3-9]\]|\.\./shared|/work/shared", path.read_text())
        and path.name != "test_fixtures.py"
    ]
    assert offenders == []
