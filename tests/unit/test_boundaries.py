"""The layering of dltui, checked for every module (imports anywhere in a file count, lazy
ones included; relative imports are resolved). The layers, as DESIGN.md draws them — each
imports only from its own layer or those below it:

    node, config  <-  core  <-  transport  <-  actions  <-  burnin, export  <-  ui  <-  wiring  <-  cli

so ``core`` never imports a transport, the UI or a command; a transport never imports the
actions, the UI or (but for the recorder itself) the recorder; the burn-in and the exporter
never import the UI, nor each other. Besides:

- ``dltui.node`` (the probe, the burn-in driver, the wire schema) runs on the nodes: standard
  library only (and the ``pynvml`` shipped beside it), Python 3.8 syntax;
- the operator's side imports from ``dltui.node`` only the contract both ends read (``schema``,
  ``wire``, ``xid``) and what it ships (NODE_SHIPPED);
- Textual, Rich and plotext only in the UI; asyncssh never in ``core``;
- no module takes another package's ``_private`` names;
- nothing under ``dltui.ui`` builds a service (actions, audit, runners, SSH) or opens a
  connection: ``dltui.wiring`` builds them and hands them to the app, typed.

A new package must be given a place in LAYERS: the first test fails until it has one.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "dltui"
UI_LIBS = ("textual", "rich", "plotext", "textual_plotext")

# bottom to top; a module imports from its own layer or the ones before it
LAYERS: list[tuple[str, ...]] = [
    ("dltui", "dltui.node", "dltui.config", "dltui.config_schema", "dltui.state_dir", "dltui.stopping",
     "dltui.logs", "dltui.private_files"),
    ("dltui.core",),
    ("dltui.transport", "dltui.history"),  # history: range queries through the Prometheus client
    ("dltui.actions",),
    ("dltui.burnin", "dltui.export", "dltui.snapshot", "dltui.report_text"),
    ("dltui.ui",),
    ("dltui.wiring",),
    ("dltui.cli", "dltui.__main__"),
]
# side by side in one layer, and kept apart
APART = {("dltui.burnin", "dltui.export"), ("dltui.export", "dltui.burnin")}
# what the operator's side may import from dltui.node: the contract both ends read ...
NODE_CONTRACT = ("dltui.node.schema", "dltui.node.wire", "dltui.node.xid")
# ... and, in the modules that ship or run node code, what they ship
NODE_SHIPPED = {
    "dltui.transport.ssh.fleet": ("dltui.node.bundle",),  # the probe, sent over stdin
    "dltui.burnin.ship": ("dltui.node.bundle", "dltui.node.burnin.plan"),  # the driver, RUN_ID
    # the stressors' output readers, shipped with the driver, read the fetched outputs too
    "dltui.burnin.gpu_checks": ("dltui.node.burnin.parse", "dltui.node.burnin.rvs"),
    "dltui.burnin.host_checks": ("dltui.node.burnin.parse",),
    "dltui.burnin.arguments": ("dltui.node.burnin.plan",),  # RUN_ID, checked on the command line
    # fio's reader, and the network file-system types the driver's record is read against
    "dltui.burnin.disk_speed": ("dltui.node.burnin.parse", "dltui.node.burnin.filesystem"),
    "dltui.transport.local": ("dltui.node.probe",),  # this machine: the probe run in process
    "dltui.transport.psutil_collector": ("dltui.node.probe",),
}
RECORDER = "dltui.transport.recording.recorder"
NODE_ALLOWED = ("dltui.node", "pynvml", "amdsmi")  # the bindings shipped beside the probe


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path):
    """Absolute names of every module ``path`` imports (``from a import b`` gives ``a.b`` too:
    b may be a module)."""
    for stem, names in _imports(path, ast.walk(_tree(path))):
        yield stem
        yield from (f"{stem}.{name}" for name in names)


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _imports(path: Path, nodes):
    """(absolute module, names taken from it) for each import statement among ``nodes``."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            yield stem, tuple(alias.name for alias in node.names)


def layer_of(module: str) -> str | None:
    """The longest prefix in LAYERS that ``module`` falls under."""
    matches = [p for layer in LAYERS for p in layer if module == p or module.startswith(p + ".")]
    return max(matches, key=len) if matches else None


def rank(prefix: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if prefix in layer)


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


SOURCES = sorted(PACKAGE.rglob("*.py"))
NODE_MODULES = {module_of(p) for p in (PACKAGE / "node").rglob("*.py")}
MODULES = {module_of(p) for p in SOURCES}
PACKAGES = {module_of(p) for p in SOURCES if p.name == "__init__.py"}
OWN = [(module_of(p), mod) for p in SOURCES for mod in imported_modules(p)]


def test_every_module_has_a_layer():
    assert [module_of(p) for p in SOURCES if layer_of(module_of(p)) is None] == []


def test_each_layer_imports_only_its_own_and_the_layers_below():
    offenders = []
    for module, mod in OWN:
        mine, theirs = layer_of(module), layer_of(mod)
        if theirs is None or mine is None:
            continue
        if rank(theirs) > rank(mine) or (mine, theirs) in APART:
            offenders.append(f"{module} imports {mod}")
    assert offenders == []


def test_only_the_ui_uses_textual_rich_or_plotext_and_core_never_asyncssh():
    offenders = [
        f"{module} imports {mod}"
        for module, mod in OWN
        if (not under(module, "dltui.ui") and any(under(mod, lib) for lib in UI_LIBS))
        or (under(module, "dltui.core") and under(mod, "asyncssh"))
    ]
    assert offenders == []


def test_transports_never_import_the_recorder():
    offenders = [
        f"{module} imports {mod}"
        for module, mod in OWN
        if under(module, "dltui.transport") and module != RECORDER and under(mod, RECORDER)
    ]
    assert offenders == []


def test_the_operator_side_imports_from_node_only_the_contract_and_what_it_ships():
    offenders = [
        f"{module} imports {mod}"
        for module, mod in OWN
        if not under(module, "dltui.node")
        and under(mod, "dltui.node")
        and mod not in PACKAGES  # ``from dltui.node.burnin import parse`` names its package
        and not any(under(mod, allowed) for allowed in NODE_CONTRACT)
        and not any(under(mod, allowed) for allowed in NODE_SHIPPED.get(module, ()))
    ]
    assert offenders == []


def _private_uses(path: Path, module: str):
    """``(module, name)`` for every ``_private`` name ``path`` (read as ``module``) takes from a
    dltui module: imported by name, or read as an attribute of an imported dltui module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update({a.asname or a.name: a.name for a in node.names if a.name in MODULES})
        elif isinstance(node, ast.ImportFrom):
            stem = _stem(node, package)
            for alias in node.names:
                if f"{stem}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{stem}.{alias.name}"
                elif _private(alias.name) and under(stem, "dltui"):
                    yield stem, alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = bound.get(node.value.id)
            if target is not None and _private(node.attr):
                yield target, node.attr


def _stem(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _package_of(module: str) -> str:
    return module if module in PACKAGES else module.rpartition(".")[0]


def test_no_module_takes_another_packages_private_names():
    offenders = [
        f"{module_of(path)} takes {owner}.{name}"
        for path in SOURCES
        for owner, name in _private_uses(path, module_of(path))
        if _package_of(owner) != _package_of(module_of(path))
    ]
    assert offenders == []


def test_the_private_names_check_sees_what_it_must(tmp_path):
    """It flags ``from dltui.x import _y`` and ``module._y`` (a check blind to them passes all)."""
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from dltui.core.rules.engine import _hidden\n"
        "from dltui.core import state\n"
        "state._x\n"
        "from ..core.rules import engine as e\n"
        "e._y\n"
    )
    found = set(_private_uses(fake, "dltui.ui.fake"))
    assert found == {
        ("dltui.core.rules.engine", "_hidden"),
        ("dltui.core.state", "_x"),
        ("dltui.core.rules.engine", "_y"),
    }


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


def test_a_fleet_is_built_in_one_place_the_composition_root():
    """``dltui.wiring`` makes the fleet state and its rule engine (``wiring.fleet_state``) for
    every command; the UI, the other packages and the screenshot script take the one it made
    (``core`` defines them). A second place would build a fleet that misses what the root adds."""
    makers = {"FleetState", "build_engine"}
    where = []
    for path in [*PACKAGE.rglob("*.py"), *(REPO / "scripts").glob("*.py")]:
        module = module_of(path)
        if module == "dltui.wiring" or under(module, "dltui.core"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in makers:
                    where.append(f"{module}:{node.lineno} {name}()")
    assert where == []


def _module_level(body):
    """The statements of ``body`` outside functions: an import inside one runs later, after
    both modules exist. The ``if TYPE_CHECKING:`` blocks count: a loop only the type checker
    follows still ties the two modules to each other."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _module_level(getattr(node, field, None) or [])


def import_graph(inside_functions: bool = False) -> dict[str, set[str]]:
    """dltui module -> the dltui modules it imports at module level (and, with
    ``inside_functions``, anywhere in it). ``from a import b`` is an edge to ``a.b`` where b is
    a module, else to ``a`` (so a package's ``__init__`` that re-exports its modules is not a
    cycle with each of them)."""
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        edges = graph.setdefault(module_of(path), set())
        tree = _tree(path)
        nodes = list(ast.walk(tree)) if inside_functions else _module_level(tree.body)
        for stem, names in _imports(path, nodes):
            targets = [f"{stem}.{n}" if f"{stem}.{n}" in MODULES else stem for n in names] or [stem]
            edges.update(t for t in targets if t in MODULES and t != module_of(path))
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (Tarjan's), each as a path that
    starts and ends on the same module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for nxt in sorted(graph.get(module, ())):
            if nxt not in index:
                visit(nxt)
                low[module] = min(low[module], low[nxt])
            elif nxt in stack:
                low[module] = min(low[module], index[nxt])
        if low[module] == index[module]:
            group = set()
            while module not in group:
                group.add(stack.pop())
            groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    cycles = []
    for group in groups:
        if len(group) < 2:
            continue
        start = min(group)
        path, seen = [start], {start}
        while True:  # walk inside the group until a module repeats: that loop is a cycle
            nxt = min(m for m in graph[path[-1]] if m in group)
            if nxt in seen:
                cycles.append([*path[path.index(nxt):], nxt])
                break
            path.append(nxt)
            seen.add(nxt)
    return cycles


def test_no_import_cycles_anywhere_in_dltui():
    """No two dltui modules import each other, directly or through others, at module level
    (``if TYPE_CHECKING:`` blocks included; imports inside functions are not counted). A cycle
    makes the import order matter and ties the layers in a knot; the node code has its own
    check above."""
    cycles = import_cycles(import_graph())
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_import_cycles_even_through_imports_inside_functions():
    """A function-level import only hides a cycle (``export.metrics`` importing its own
    ``fabric`` and ``drive_metrics`` inside ``_node``, ``snapshot`` importing ``report_text``
    inside ``run`` while each imported it back): the lower module must not know the upper."""
    cycles = import_cycles(import_graph(inside_functions=True))
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle_and_reads_the_imports_it_must():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c", "a"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    real = import_graph()
    assert "dltui.ui.action_flows" in real["dltui.ui.app"]  # from .action_flows import ActionFlows
    assert "dltui.actions.policy" in real["dltui.ui.messages"]  # under if TYPE_CHECKING:
    assert "dltui.ui.screens.chart" not in real["dltui.ui.screens.fleet"]  # inside a method
    assert "dltui.ui.screens.chart" in import_graph(inside_functions=True)["dltui.ui.screens.fleet"]


# What only the composition root (``dltui.wiring``) builds for the dashboard: the action service
# and what it sends through, the audit log, the SSH connections (the fleet's, the session
# runner's, the node-command runners'). The UI is handed them, typed (``dltui.ui.services``).
SERVICE_MAKERS = {
    "ActionService", "FleetRunner", "SessionRunner", "SshFleet", "AuditLog", "MemoryAudit",
    "SshCommands", "FleetCommands", "HostCommands", "LocalRunner", "BurnIn", "BurnInLauncher",
}
CONNECTORS = {"connect", "connect_reverse"}  # asyncssh's: a connection of its own


def _makers_called(path: Path, module: str) -> list[str]:
    """``name()`` for each call of a service maker, or of a connect, in ``path`` (read as
    ``module``), by bare name or as an attribute (``commands.SshCommands(...)``,
    ``asyncssh.connect(...)``)."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name in SERVICE_MAKERS or name in CONNECTORS:
                found.append(f"{module}:{node.lineno} {name}()")
    return found


def test_the_ui_builds_no_service_and_opens_no_connection():
    """``dltui.wiring`` builds what the dashboard acts through (``wiring.dashboard_services``)
    and hands it to the app; a screen or a flow that made its own would act past the root's
    choices: a second SSH pool beside the fleet's, the real audit log for the demo's simulated
    actions, an audit that forgets which browser tab acts."""
    where = [hit for path in sorted((PACKAGE / "ui").rglob("*.py")) for hit in _makers_called(path, module_of(path))]
    where += [f"{module} imports {mod}" for module, mod in OWN if under(module, "dltui.ui") and under(mod, "asyncssh")]
    assert where == []


def test_the_service_check_sees_what_it_must(tmp_path):
    fake = tmp_path / "fake.py"
    fake.write_text(
        "from dltui.transport.ssh import commands\n"
        "import asyncssh\n"
        "FleetRunner([])\n"
        "commands.SshCommands(options)\n"
        "async def f():\n"
        "    await asyncssh.connect('h')\n"
        "launcher.session(['a'], 'r')\n"  # through what the root handed over: allowed
    )
    found = [hit.split(" ")[-1] for hit in _makers_called(fake, "dltui.ui.fake")]
    assert found == ["FleetRunner()", "SshCommands()", "connect()"]
