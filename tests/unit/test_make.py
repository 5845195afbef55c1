"""``make test`` runs the suite on each supported Python end; a missing interpreter is a
warning on a laptop and a failure in CI."""

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def make(*args, ci):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["CI"] = "true" if ci else ""
    return subprocess.run(["make", "-s", *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_a_missing_python_fails_under_ci_and_is_skipped_with_a_warning_outside():
    failed = make("test-3.99", "TEST_PYTHONS=3.99", ci=True)
    assert failed.returncode != 0
    assert "Python 3.99 not found (CI=true: failing)" in failed.stderr
    skipped = make("test-3.99", "TEST_PYTHONS=3.99", ci=False)
    assert skipped.returncode == 0, skipped.stderr
    assert "WARNING: Python 3.99 not found" in skipped.stderr


def test_the_test_target_lints_and_runs_the_oldest_and_newest_python():
    makefile = (REPO / "Makefile").read_text()
    assert "TEST_PYTHONS ?= 3.10 3.13" in makefile
    assert "\ntest: lint system-deps $(TEST_PYTHONS:%=test-%)\n" in makefile
