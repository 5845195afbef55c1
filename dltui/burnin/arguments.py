"""The command line of ``dltui burn-in [attach RUN|stop RUN] HOST...``: its parsers and their
checks, apart from the run itself (``cli.py``), so building ``dltui --help`` or a completion
does not load the SSH and report code."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from dltui.config import CommandLine
from dltui.config_schema import default, option
from dltui.node.burnin.plan import RUN_ID

USAGE_ERROR = 3
MODES = ("start", "attach", "stop")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


def duration(text: str) -> int:
    m = _DURATION.match(text.strip().lower())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: give a duration like 30s, 90m, 2h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if seconds < 1:
        raise argparse.ArgumentTypeError("the duration must be at least 1 s")
    return int(seconds)


def _run_id(text: str) -> str:
    if not RUN_ID.match(text):  # it goes into shell lines and paths on the node (ship.check_run_id)
        raise argparse.ArgumentTypeError(f"{text!r} is not a burn-in run id (letters, digits, '.', '_', '-')")
    return text


def add_start_arguments(
    p: argparse.ArgumentParser, common: Callable[[argparse.ArgumentParser], None], host_help: str
) -> None:
    """The arguments of ``dltui burn-in HOST...`` (also shown, and completed, under
    ``dltui burn-in --help``)."""
    p.add_argument("hosts", nargs="+", metavar="HOST", help=host_help)
    p.add_argument("--duration", type=duration, default=7200, help="load phase (default 2h)")
    p.add_argument(
        "--gpu",
        choices=("auto", "dcgm", "gpu-burn", "rvs", "torch", "none"),
        default="auto",
        help="GPU stressor (default auto: gpu_burn, else dcgmi, else AMD's rvs, else torch)",
    )
    p.add_argument("--cpu", action="store_true", help="stress-ng --cpu with --verify")
    p.add_argument("--memory", action="store_true", help="stress-ng --vm with --verify")
    p.add_argument(
        "--disk",
        metavar="PATH",
        help="fio in a fresh scratch directory under PATH "
        "(a directory on a mounted file system; never a device)",
    )
    p.add_argument("--disk-size", default="4G", help="fio file size per job (default 4G)")
    p.add_argument(
        "--net",
        metavar="PEER",
        help="a node of the run that serves iperf3; the other nodes test against it",
    )
    p.add_argument(
        "--net-port",
        type=option(CommandLine, "net_port"),
        default=default(CommandLine, "net_port"),
        help="iperf3 port (default 5201)",
    )
    p.add_argument(
        "--expected-gpus",
        type=option(CommandLine, "expected_gpus"),
        metavar="N",
        help="GPUs each node must have, 1 to 64",
    )
    p.add_argument("--preflight", type=duration, default=10, help="baseline seconds (default 10s)")
    p.add_argument("--post", type=duration, default=10, help="seconds after the load (default 10s)")
    p.add_argument(
        "--launcher",
        choices=("auto", "setsid", "systemd"),
        default="auto",
        help="how the node runs it detached (auto: systemd-run as root on systemd)",
    )
    p.add_argument("--run-id", type=_run_id, help="name of the run (default: the start time and a random part)")
    p.add_argument(
        "--drain-on-fail",
        action="store_true",
        help="drain a node judged FAIL in Slurm, the verdict's one line as the reason (audited)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="load a node even while Slurm runs jobs on it (alloc/mix) or its GPUs hold another user's work",
    )
    _report(p)
    common(p)


def _report(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--report",
        metavar="DIR",
        default=".",
        help="where the report folder goes (default: the current directory)",
    )


EXITS = (
    "Exit 0 pass, 1 warnings, 2 a failure, 3 could not run or judge (also a usage or config "
    "error, and Ctrl-C, which detaches: the run goes on on the nodes)."
)


def build_parser(
    mode: str, common: Callable[[argparse.ArgumentParser], None], host_help: str
) -> argparse.ArgumentParser:
    if mode == "start":
        p = argparse.ArgumentParser(
            prog="dltui burn-in",
            description="Start a burn-in on the nodes (it runs there, "
            "detached), follow it to the end, judge it and write the report. Ctrl-C detaches; "
            "'dltui burn-in attach RUN HOST...' comes back to it; "
            "'dltui burn-in stop RUN HOST...' ends it.",
            epilog=EXITS,
        )
        add_start_arguments(p, common, host_help)
        return p
    verb = {
        "stop": "Stop a running burn-in (its scratch files are deleted)",
        "attach": "Follow a running burn-in from where it is, then judge and report",
    }[mode]
    p = argparse.ArgumentParser(prog=f"dltui burn-in {mode}", description=verb, epilog=EXITS)
    p.add_argument("run_id", metavar="RUN", type=_run_id)
    p.add_argument("hosts", nargs="+", metavar="HOST", help=host_help)
    if mode != "stop":
        _report(p)
    common(p)
    return p


# -- the parsed command line, typed: what the run takes ---------------------------------------


@dataclass(frozen=True)
class StartOptions:
    """``dltui burn-in HOST...``: what to load, how long, where the report goes."""

    mode: ClassVar[str] = "start"  # audited as "burnin-start"

    hosts: tuple[str, ...]
    duration_s: int
    gpu: str
    cpu: bool
    memory: bool
    disk: str | None
    disk_size: str
    net: str | None
    net_port: int
    expected_gpus: int | None
    preflight_s: int
    post_s: int
    launcher: str
    run_id: str | None  # None: a new one is made when it starts
    report: str
    drain_on_fail: bool = False  # a FAIL verdict drains the node in Slurm (scheduler_gate.py)
    force: bool = False  # load a node running someone's work (Slurm alloc/mix, another user's GPU process)


@dataclass(frozen=True)
class AttachOptions:
    """``dltui burn-in attach RUN HOST...``."""

    mode: ClassVar[str] = "attach"

    run_id: str
    hosts: tuple[str, ...]
    report: str


@dataclass(frozen=True)
class StopOptions:
    """``dltui burn-in stop RUN HOST...``."""

    mode: ClassVar[str] = "stop"

    run_id: str
    hosts: tuple[str, ...]


BurnInOptions = StartOptions | AttachOptions | StopOptions


def options_from(mode: str, args: argparse.Namespace) -> BurnInOptions:
    """The parsed ``build_parser(mode)`` line as the run's typed options."""
    hosts = tuple(args.hosts)
    if mode == "stop":
        return StopOptions(args.run_id, hosts)
    if mode == "attach":
        return AttachOptions(args.run_id, hosts, args.report)
    return StartOptions(
        hosts=hosts,
        duration_s=args.duration,
        gpu=args.gpu,
        cpu=args.cpu,
        memory=args.memory,
        disk=args.disk,
        disk_size=args.disk_size,
        net=args.net,
        net_port=args.net_port,
        expected_gpus=args.expected_gpus,
        preflight_s=args.preflight,
        post_s=args.post,
        launcher=args.launcher,
        run_id=args.run_id,
        report=args.report,
        drain_on_fail=args.drain_on_fail,
        force=args.force,
    )
