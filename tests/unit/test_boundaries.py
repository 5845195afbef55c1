"""The layering of dltui, checked for every module (imports anywhere in a file count, lazy
ones included; relative imports are resolved):

- ``dltui.node`` (the probe, the burn-in driver, the wire schema) runs on the nodes: standard
  library only (and the ``pynvml`` shipped beside it), Python 3.8 syntax;
- ``core`` (models, state, rules) never imports the UI, the transports or the entry points;
- ``transport``, ``actions``, ``burnin``, ``export`` and the report modules never import the UI;
- nothing but the entry point imports ``cli``.

A new package must be given a line in LAYERS: the first test fails until it has one.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "dltui"
UI_LIBS = ("textual", "rich", "plotext", "textual_plotext")
ENTRY = ("dltui.cli", "dltui.__main__")
NOT_UI = ("dltui.ui", *UI_LIBS, *ENTRY)

# module prefix -> prefixes it must not import (the longest matching prefix applies)
LAYERS: dict[str, tuple[str, ...]] = {
    "dltui.node": (),  # checked apart: stdlib only
    "dltui.core": (*NOT_UI, "dltui.transport", "dltui.snapshot", "dltui.report_text", "asyncssh"),
    "dltui.config": (*NOT_UI, "dltui.core", "dltui.transport"),
    "dltui.config_schema": (*NOT_UI, "dltui.core", "dltui.transport", "dltui.config"),
    "dltui.transport": NOT_UI,
    "dltui.actions": NOT_UI,
    "dltui.burnin": NOT_UI,
    "dltui.export": NOT_UI,
    "dltui.snapshot": NOT_UI,
    "dltui.report_text": NOT_UI,
    "dltui.ui": ENTRY,
    "dltui.cli": (),
    "dltui.__main__": (),
    "dltui": ENTRY,  # dltui/__init__.py
}
NODE_ALLOWED = ("dltui.node", "pynvml")


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path):
    """Absolute names of every module ``path`` imports (``from a import b`` gives ``a.b`` too:
    b may be a module)."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            yield stem
            yield from (f"{stem}.{alias.name}" for alias in node.names)


def layer_of(module: str):
    matches = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


SOURCES = sorted(PACKAGE.rglob("*.py"))
NODE_MODULES = {module_of(p) for p in (PACKAGE / "node").rglob("*.py")}


def test_every_module_has_a_layer():
    assert [module_of(p) for p in SOURCES if layer_of(module_of(p)) is None] == []


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_no_layer_imports_what_it_must_not(layer):
    offenders = [
        f"{module_of(path)} imports {mod}"
        for path in SOURCES
        if layer_of(module_of(path)) == layer
        for mod in imported_modules(path)
        if any(under(mod, banned) for banned in LAYERS[layer])
    ]
    assert offenders == []


def test_node_code_imports_only_the_standard_library_and_itself():
    offenders = [
        f"{module_of(path)} imports {mod}"
        for path in (PACKAGE / "node").rglob("*.py")
        for mod in imported_modules(path)
        if mod.split(".")[0] not in sys.stdlib_module_names
        and not any(under(mod, allowed) for allowed in NODE_ALLOWED)
    ]
    assert offenders == []


def test_node_code_is_python_3_8_syntax():
    """Parsed as 3.8 here; compiled by a real Python 3.8 when there is one (there must be one
    in CI: ``make test`` runs on machines with pyenv's 3.8)."""
    sources = sorted((PACKAGE / "node").rglob("*.py"))
    for path in sources:
        ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=(3, 8))
    found = subprocess.run([str(REPO / "scripts" / "find-python"), "3.8"], capture_output=True, text=True)
    if found.returncode != 0:
        if __import__("os").environ.get("CI") == "true":
            pytest.fail("no Python 3.8 to compile the node code with (CI=true)")
        pytest.skip("no Python 3.8 here: parsed with feature_version=(3, 8) only")
    code = "import sys\nfor p in sys.argv[1:]:\n    compile(open(p, encoding='utf-8').read(), p, 'exec')\n"
    done = subprocess.run(
        [found.stdout.strip(), "-c", code, *map(str, sources)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_the_checks_see_relative_imports(tmp_path):
    """The import reader resolves ``from ..ui import x`` (a check blind to it passes anything)."""
    engine = PACKAGE / "core" / "rules" / "engine.py"
    assert "dltui.core.timeline" in set(imported_modules(engine))
    assert "dltui.core.format" in set(imported_modules(engine))  # from .. import format


def test_node_code_has_no_import_cycles():
    """Record shapes live in a leaf (``gpu_records``): the module that picks a GPU source and
    the sources do not import each other."""
    graph = {
        module_of(path): {
            mod
            for mod in imported_modules(path)
            if under(mod, "dltui.node") and mod in NODE_MODULES
        }
        - {module_of(path)}
        for path in (PACKAGE / "node").rglob("*.py")
    }

    def reaches(start, goal, seen):
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and not seen.add(nxt) and reaches(nxt, goal, seen)):
                return True
        return False

    assert sorted(m for m in graph if reaches(m, m, set())) == []
