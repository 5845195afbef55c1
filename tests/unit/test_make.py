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


def _locked_pins(python: str) -> dict[str, str]:
    """constraints.txt's pins whose markers hold on ``python`` (e.g. "3.10") on Linux x86_64."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
           "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
           "platform_python_implementation": "CPython"}
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate(env):
                (spec,) = req.specifier
                assert spec.operator == "==", line
                pins[canonicalize_name(req.name)] = spec.version
    return pins


def test_the_lock_pins_every_dependency_within_pyproject_ranges_on_each_tested_python():
    """A dependency added to pyproject.toml without `make lock` would install unpinned (or a
    range tightened past the pin would fail to install): both fail here, by name."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    for python in ("3.10", "3.13"):
        pins = _locked_pins(python)
        env = {"python_version": python, "python_full_version": f"{python}.0", "extra": ""}
        for text in wanted:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            name = canonicalize_name(req.name)
            assert name in pins, f"{req.name} is not in constraints.txt for Python {python}: run make lock"
            assert req.specifier.contains(pins[name], prereleases=True), (python, text, pins[name])
        assert "pip" in pins and "setuptools" in pins  # the installer and the build backend too


def test_every_install_of_make_run_and_make_test_goes_through_the_lock():
    lines = (REPO / "Makefile").read_text().splitlines()
    recipes = [line.strip() for line in lines if line.startswith("\t") and "pip install" in line]
    unlocked = [r for r in recipes if "$(LOCKED)" not in r and ".venv-latest" not in r and ".venv-lock" not in r]
    assert unlocked == []
    assert len(recipes) - len(unlocked) >= 5
