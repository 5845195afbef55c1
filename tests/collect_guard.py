"""Under ``CI=true`` a test module that collects zero tests is a collection error, not a silent
pass: a parametrisation over a folder that is missing on a fresh clone must fail loudly.

(An empty parameter set already fails at collection everywhere: ``empty_parameter_set_mark``
in pyproject.toml.)
"""

import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if (
        in_ci()
        and isinstance(collector, pytest.Module)
        and report.outcome == "passed"
        and not report.result
    ):
        report.outcome = "failed"
        report.longrepr = f"{collector.nodeid}: collected no tests (CI=true: that is a failure)"
