"""What dltui sends to a node for a burn-in: one self-contained driver script (the probe's
collectors, the stressor readers, the driver) and the shell commands that run its modes.

The run must outlive the SSH session, so unlike the probe the driver lands on the node's disk:
``start`` writes it into a folder of its own made by ``mktemp -d`` (0700, a name no one can
guess), from which the driver copies it into its run directory and then removes the folder.
"""

from __future__ import annotations

import base64
import shlex
from functools import lru_cache

from dltui.node import bundle
from dltui.node.burnin.plan import RUN_ID

DRIVER_ENTRY = "dltui.node.burnin.driver"
DRIVER_NAME = "dltui-burnin"  # the driver as the audit log names it (its argparse prog)


@lru_cache(maxsize=1)
def driver_script() -> str:
    mods = {**bundle.sources(), **bundle.node_sources("burnin")}
    text = base64.b64encode(bundle.compress(mods)).decode()
    return (
        "#!/usr/bin/env python3\n# dltui burn-in driver (generated)\nimport binascii\n"
        f"D=binascii.a2b_base64({text!r})\n"
        + bundle.loader(bundle.packages(mods), DRIVER_ENTRY)
    )


def _q(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def start_command(args: list[str], python: str = "python3") -> str:
    """Reads the driver script from stdin into a private temp folder, then runs ``start``."""
    return (
        'umask 077; t=$(mktemp -d "${TMPDIR:-/tmp}/dltui-burnin.XXXXXX") && f="$t/driver.py" && '
        f'cat >"$f" && exec {shlex.quote(python)} -I -S "$f" start --self-path "$f" {_q(args)}'
    )


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is one this tool makes (letters, digits, ``.``, ``_``, ``-``): it goes
    into shell lines and paths on the node, so anything else is refused here, before sending."""
    if not RUN_ID.match(run_id):
        raise ValueError(f"{run_id!r} is not a burn-in run id (letters, digits, '.', '_', '-')")
    return run_id


def _find(run_id: str) -> str:
    """Shell that sets ``$d`` to the run's directory on the node, or says there is none."""
    check_run_id(run_id)
    return (
        'b=${DLTUI_BURNIN_DIR:-}; if [ -z "$b" ]; then if [ "$(id -u)" = 0 ]; then '
        "b=/var/lib/dltui/burnin; else "
        "b=${XDG_STATE_HOME:-$HOME/.local/state}/dltui/burnin; fi; fi; "
        f'd="$b"/{shlex.quote(run_id)}; '
        '[ -f "$d/driver.py" ] || { echo "{\\"ok\\": false, \\"reason\\": \\"no such burn-in run '
        'on this node\\"}"; exit 5; }; '
    )


def _in_run(run_id: str, mode: str, args: list[str], python: str) -> str:
    """Runs a mode of the driver kept in the run directory."""
    return (
        _find(run_id)
        + f'exec {shlex.quote(python)} -I -S "$d/driver.py" {mode} --dir "$d" {_q(args)}'
    )


def follow_command(run_id: str, offset: int, python: str = "python3") -> str:
    return _in_run(run_id, "follow", ["--offset", str(int(offset))], python)


def stop_command(run_id: str, wait_s: float = 60.0, python: str = "python3") -> str:
    return _in_run(run_id, "stop", ["--wait", repr(float(wait_s))], python)


def fetch_command(run_id: str, names: list[str], file_max: int) -> str:
    """Prints each named file of the run directory as ``<name> <sent> <size>\\n<bytes>``: its
    last ``sent`` bytes, at most ``file_max``, of ``size`` (``-1 -1`` for a missing file)."""
    quoted = " ".join(shlex.quote(n) for n in names)
    body = (
        f'cd "$d" && for n in {quoted}; do if [ -f "$n" ]; then '
        f's=$(($(wc -c <"$n"))); k=$s; [ "$s" -gt {int(file_max)} ] && k={int(file_max)}; '
        'echo "$n $k $s"; tail -c "$k" "$n"; else echo "$n -1 -1"; fi; done'
    )
    return _find(run_id) + body


def put_command(run_id: str, name: str) -> str:
    """Writes stdin to a file of the run directory (the report, kept on the node)."""
    return _find(run_id) + f'cat >"$d"/{shlex.quote(name)}'
