"""The guard against tests that silently collect nothing (tests/collect_guard.py), run on a
throwaway test folder in a pytest subprocess."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

EMPTY_MODULE = "def helper():\n    return 1\n"
EMPTY_PARAMETRISATION = (
    "import pathlib\nimport pytest\n\n"
    "@pytest.mark.parametrize('path', sorted(pathlib.Path('missing').glob('*.csv')))\n"
    "def test_each(path):\n    assert path\n"
)


def run_pytest(tmp_path, source, ci):
    (tmp_path / "test_sample.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=str(REPO), CI="true" if ci else "")
    args = [sys.executable, "-m", "pytest", "-q", "-p", "tests.collect_guard", "-p", "no:cacheprovider"]
    args += ["-o", "empty_parameter_set_mark=fail_at_collect", "--rootdir", str(tmp_path), str(tmp_path)]
    return subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.parametrize("source", [EMPTY_MODULE, EMPTY_PARAMETRISATION], ids=["module", "params"])
def test_zero_collected_tests_fail_under_ci(tmp_path, source):
    done = run_pytest(tmp_path, source, ci=True)
    assert done.returncode not in (0, 5), done.stdout  # 5: "no tests ran", which CI may ignore
    assert "test_sample.py" in done.stdout


def test_a_module_without_tests_is_fine_outside_ci(tmp_path):
    done = run_pytest(tmp_path, EMPTY_MODULE, ci=False)
    assert done.returncode == 5, done.stdout  # nothing collected, nothing failed
