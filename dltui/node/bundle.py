"""Builds what is shipped to a node: the probe's source (and pynvml's, amdsmi's) behind a tiny loader.

Runs on the operator's machine only; it is not itself shipped. Two forms:
- ``ssh_command()`` + ``payload()``: a short ``python3 -c`` loader that reads the compressed
  sources from stdin, then keeps stdin open as the watchdog channel. Nothing touches the
  node's disk.
- ``standalone_script()``: one self-contained file with the sources embedded, for running the
  probe by hand (``python3 -I -S dltui-probe.py``) or on a test GPU machine.
"""

from __future__ import annotations

import ast
import base64
import importlib.metadata
import importlib.util
import marshal
import re
import shlex
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Iterator

_NODE = Path(__file__).resolve().parent  # dltui/node
ROOT = "dltui"  # on the node, an empty package: the shipped modules keep their real names
PROBE_ENTRY = "dltui.node.probe.main"
# The operator side's own: this builder, and the reader of pasted `nvidia-smi -q` text (the
# probe never runs `nvidia-smi -q`).
NOT_SHIPPED = {"bundle.py", "probe/smi_text.py"}


# Loader: each module is decompressed and compiled when first imported, so a node without a
# GPU never pays for ``pynvml`` (330 KB of source). ``-I -S`` keeps the node's site-packages
# and PYTHON* variables out of the way (an old `pynvml` shim there must not shadow ours).
# Only cheap imports here: ``importlib.abc``/``util`` alone cost a cold probe ~20 ms of CPU.
def importer(packages: tuple[str, ...]) -> str:
    """Source that makes ``packages`` and their modules importable from a blob ``D``."""
    return (
        "import sys,zlib,marshal\n"
        "from importlib.machinery import ModuleSpec\n"
        "S=marshal.loads(D)\n"
        "class L:\n"
        " def find_spec(s,n,p,t=None):\n"
        "  if n in S:return ModuleSpec(n,s,is_package=n in %(pkgs)r)\n"
        " def create_module(s,spec):return None\n"
        " def exec_module(s,m):\n"
        "  n=m.__name__;d=S[n]\n"
        "  d=zlib.decompress(d) if d[:1]==b'x' else __import__('lzma').decompress(d)\n"
        "  exec(compile(d,'<'+n+'>','exec'),m.__dict__)\n"
        "sys.meta_path.insert(0,L())\n"
    ) % {"pkgs": packages}


def loader(packages: tuple[str, ...], entry: str) -> str:
    """The loader for a blob ``D`` holding ``packages`` and their modules; runs ``entry.main``."""
    return importer(packages) + "from %s import main\nsys.exit(main(sys.argv[1:]))\n" % entry


_STDIN_PRELUDE = "import sys\nB=sys.stdin.buffer\nD=B.read(int(B.readline()))\n"


def node_sources(*subpackages: str) -> dict[str, str]:
    """Module name -> source: ``dltui.node``'s own modules and those of ``subpackages``."""
    mods = {ROOT: ""}
    folders = [_NODE] + [_NODE / sub for sub in subpackages]
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            rel = path.relative_to(_NODE).as_posix()
            if rel in NOT_SHIPPED:
                continue
            parts = ["dltui", "node", *path.relative_to(_NODE).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path.read_text(encoding="utf-8")
    return mods


def packages(mods: dict[str, str]) -> tuple[str, ...]:
    """The names in ``mods`` that are packages (the loader must know them)."""
    return tuple(sorted(n for n in mods if n == ROOT or any(m.startswith(n + ".") for m in mods)))


@lru_cache(maxsize=1)
def sources() -> dict[str, str]:
    """Module name -> source for every module the probe ships."""
    mods = node_sources("probe")
    spec = importlib.util.find_spec("pynvml")
    if spec is not None and spec.origin:
        mods["pynvml"] = Path(spec.origin).read_text(encoding="utf-8")
        try:
            version = importlib.metadata.version("nvidia-ml-py")
        except importlib.metadata.PackageNotFoundError:
            version = None
        # The binding's field ids depend on its version; its metadata does not travel with it.
        mods["dltui.node.probe.binding"] = f"NVML_BINDING_VERSION = {version!r}\n"
    mods.update(amdsmi_sources())
    return mods


def amdsmi_sources() -> dict[str, str]:
    """AMD SMI's Python binding (ctypes over libamd_smi.so, MIT), shipped as pynvml is: a
    package of plain modules, imported on the node only where libamd_smi.so loads."""
    spec = importlib.util.find_spec("amdsmi")
    if spec is None or not spec.submodule_search_locations:
        return {}
    folder = Path(next(iter(spec.submodule_search_locations)))
    mods = {}
    for path in sorted(folder.glob("*.py")):
        if path.stem != "setup":  # its packaging script
            name = "amdsmi" if path.stem == "__init__" else "amdsmi." + path.stem
            mods[name] = _in_rocm(path.name) + without_docstrings(path.read_text(encoding="utf-8"))
    try:
        version = importlib.metadata.version("amdsmi")
    except importlib.metadata.PackageNotFoundError:
        version = None
    # Its structures are generated from one ROCm's headers: the probe checks the node's ROCm
    # against this version before it lets the binding near the library.
    mods["dltui.node.probe.amdsmi_binding"] = f"AMDSMI_BINDING_VERSION = {version!r}\n"
    return mods


def _in_rocm(filename: str) -> str:
    """A ``__file__`` for a shipped binding module (the loader gives none; the wrapper looks
    for the library beside its own file last): where ROCm installs the binding."""
    return (
        "import os as _os\n__file__ = _os.path.join(_os.environ.get('ROCM_HOME') or _os.environ.get('ROCM_PATH')"
        " or '/opt/rocm', 'share', 'amd_smi', 'amdsmi', %r)\n" % filename
    )


# A line holding only a comment. Emptied, not removed, so tracebacks keep their line numbers;
# the compiled code is the same (tests/unit/test_probe_standalone.py compares it per module).
_COMMENT_LINE = re.compile(r"^[ \t]*#[^\n]*$", re.MULTILINE)


def without_comment_lines(src: str) -> str:
    """``src`` with its comment-only lines emptied, but for its leading comment block (a
    licence notice, as pynvml's BSD one, travels with every copy): every node is sent ~7 %
    fewer bytes (pynvml and the amdsmi binding are mostly comment blocks and constants)."""
    lines = src.splitlines(keepends=True)
    head = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), len(lines))
    return "".join(lines[:head]) + _COMMENT_LINE.sub("", "".join(lines[head:]))


def without_docstrings(source: str) -> str:
    """``source`` re-written without its docstrings and comments, its leading comment block
    (the licence notice, which must travel with every copy) kept as a string, ``_LICENCE``,
    so no comment stripping loses it. The binding is sent on every connect; its docstrings
    are a fifth of it."""
    lines = source.splitlines(keepends=True)
    end = next((i for i, x in enumerate(lines) if not x.startswith("#")), 0)
    notice = "".join(line.lstrip("#").strip() + "\n" for line in lines[:end])
    header = "_LICENCE = %r\n" % notice if notice.strip() else ""
    tree = ast.parse(source)
    for node in _statements(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    # ast.unparse is 3.9+: this runs on the operator's side (3.10+); mypy checks dltui/node as 3.8
    unparse = getattr(ast, "unparse")  # noqa: B009
    return header + unparse(tree) + "\n"


# What holds statements: a docstring is the first statement of a body, so the walk that finds
# them never needs to enter an expression (most of a module's nodes; ast.walk visits them all).
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler) + ((ast.match_case,) if hasattr(ast, "match_case") else ())


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """``tree`` and every statement (and except/case clause) in it, at any depth."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(x for x in value if isinstance(x, _HOLDS_STATEMENTS))


def compress(mods: dict[str, str]) -> bytes:
    """Module name -> compressed source (zlib; xz for XZ_PACKAGES), marshalled (format 4:
    readable by Python 3.4+)."""
    return marshal.dumps({name: _pack(name, without_comment_lines(src)) for name, src in mods.items()}, 4)


# xz instead of zlib for these (a zlib stream starts with b"x", an xz one never does): the AMD
# SMI binding is 8 KB smaller, and lzma is imported only on a node that imports the binding.
XZ_PACKAGES = ("amdsmi",)


def _pack(name: str, src: str) -> bytes:
    if name.split(".")[0] in XZ_PACKAGES:
        import lzma

        return lzma.compress(src.encode())  # the default preset: EXTREME saves ~50 bytes for 0.2 s a start
    return zlib.compress(src.encode(), 9)


@lru_cache(maxsize=1)
def _compressed() -> bytes:
    return compress(sources())


@lru_cache(maxsize=1)
def _loader() -> str:
    return loader(packages(sources()), PROBE_ENTRY)


def prepare() -> None:
    """Build (and keep) everything ``payload`` and ``ssh_command`` need: the slow part, for a
    worker thread."""
    _compressed()
    _loader()


def payload() -> bytes:
    """What to write to the probe's stdin first: a length line, then the compressed sources."""
    data = _compressed()
    return b"%d\n" % len(data) + data


def probe_args(
    interval_s: float,
    watchdog_s: float | None = None,
    units: tuple[str, ...] = (),
    checkpoint: str | None = None,
    containers: tuple[str, ...] = (),
    sysfs: str = "/sys",
) -> list[str]:
    args = ["--interval", repr(float(interval_s))]
    if watchdog_s:
        args += ["--stdin-watchdog", repr(float(watchdog_s))]
    for unit in units:
        args += ["--unit", unit]
    if checkpoint:
        args += ["--checkpoint", checkpoint]
    for container in containers:
        args += ["--container", container]
    if sysfs != "/sys":
        args += ["--sysfs", sysfs]
    return args


def ssh_command(
    interval_s: float,
    watchdog_s: float,
    python: str = "python3",
    units: tuple[str, ...] = (),
    checkpoint: str | None = None,
    containers: tuple[str, ...] = (),
    sysfs: str = "/sys",
) -> str:
    """Shell command that runs the probe from stdin; ``exec`` so no shell lingers. Unit names,
    the checkpoint glob and the sysfs path are quoted like every other argument."""
    argv = [
        python,
        "-I",
        "-S",
        "-c",
        _STDIN_PRELUDE + _loader(),
        *probe_args(interval_s, watchdog_s, units, checkpoint, containers, sysfs),
    ]
    return "exec " + " ".join(shlex.quote(a) for a in argv)


def standalone_script() -> str:
    """A single-file probe: ``python3 -I -S FILE [--interval S] [--count N]``."""
    blob = base64.b64encode(_compressed()).decode()
    return (
        "#!/usr/bin/env python3\n# dltui probe (generated)\nimport binascii\nD=binascii.a2b_base64(%r)\n%s"
        % (
            blob,
            _loader(),
        )
    )
