"""Builds what is shipped to a node: the probe's source (and pynvml's) behind a tiny loader.

Runs on the operator's machine only; it is not itself shipped. Two forms:
- ``ssh_command()`` + ``payload()``: a short ``python3 -c`` loader that reads the compressed
  sources from stdin, then keeps stdin open as the watchdog channel. Nothing touches the
  node's disk.
- ``standalone_script()``: one self-contained file with the sources embedded, for running the
  probe by hand (``python3 -I -S dltui-probe.py``) or on a test GPU machine.
"""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.util
import marshal
import shlex
import zlib
from functools import lru_cache
from pathlib import Path

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
        " def exec_module(s,m):n=m.__name__;exec(compile(zlib.decompress(S[n]),'<'+n+'>','exec'),m.__dict__)\n"
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
    return mods


def compress(mods: dict[str, str]) -> bytes:
    """Module name -> zlib-compressed source, marshalled (format 4: readable by Python 3.4+)."""
    return marshal.dumps({name: zlib.compress(src.encode(), 9) for name, src in mods.items()}, 4)


@lru_cache(maxsize=1)
def _compressed() -> bytes:
    return compress(sources())


@lru_cache(maxsize=1)
def _loader() -> str:
    return loader(packages(sources()), PROBE_ENTRY)


def payload() -> bytes:
    """What to write to the probe's stdin first: a length line, then the compressed sources."""
    data = _compressed()
    return b"%d\n" % len(data) + data


def probe_args(
    interval_s: float,
    watchdog_s: float | None = None,
    units: tuple[str, ...] = (),
    checkpoint: str | None = None,
    sysfs: str = "/sys",
) -> list[str]:
    args = ["--interval", repr(float(interval_s))]
    if watchdog_s:
        args += ["--stdin-watchdog", repr(float(watchdog_s))]
    for unit in units:
        args += ["--unit", unit]
    if checkpoint:
        args += ["--checkpoint", checkpoint]
    if sysfs != "/sys":
        args += ["--sysfs", sysfs]
    return args


def ssh_command(
    interval_s: float,
    watchdog_s: float,
    python: str = "python3",
    units: tuple[str, ...] = (),
    checkpoint: str | None = None,
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
        *probe_args(interval_s, watchdog_s, units, checkpoint, sysfs),
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
