"""Core logic never imports the UI; the probe never imports anything outside the stdlib."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dltui"
UI_FREE = ("core", "probe", "transport", "export", "burnin")
UI_MODULES = {"textual", "rich", "plotext", "dltui.ui"}


def imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


@pytest.mark.parametrize("area", UI_FREE)
def test_core_probe_and_transport_do_not_import_the_ui(area):
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {mod}"
        for path in (PACKAGE / area).rglob("*.py")
        for mod in imported_modules(path)
        if any(mod == ui or mod.startswith(ui + ".") for ui in UI_MODULES)
    ]
    assert offenders == []
