"""The burn-in driver: the part of a burn-in that runs on the node, detached from dltui.

Shipped as one self-contained file (``dltui.burnin.ship``) with the probe's collectors and
this package; stdlib only, Python 3.8. Its modes, one module each:

- ``start`` (start.py): checks the plan, takes the node's lock, launches ``run`` detached.
- ``run`` (run.py): preflight (preflight.py: facts, baselines), load (load.py, stressors.py),
  post (post.py: nccl-tests, the smoke test; the baselines read again), a probe sample every
  interval into samples.jsonl, status.json rewritten atomically.
- ``follow --offset N`` (follow.py): samples.jsonl from byte N on, plus status lines, until the
  run has ended and everything was read.
- ``stop`` (stop.py): ends the run (which then stops its stressors and deletes its scratch).

Where runs live and their files: places.py. Exit codes: 0 done, 4 start refused, 1 a stop
that did not stop, 3 the run failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from dltui.node.burnin.follow import cmd_follow
from dltui.node.burnin.places import EXIT_REFUSED, Refused, take_lock
from dltui.node.burnin.plan import RUN_ID, SMOKE_RAMP_S
from dltui.node.burnin.run import Run
from dltui.node.burnin.start import cmd_start
from dltui.node.burnin.stop import cmd_stop

__all__ = ["RUN_ID", "main"]


def cmd_run(args: argparse.Namespace) -> int:
    run = Run(os.path.abspath(args.dir))
    if args.lock_fd is None:  # under systemd: take the lock here
        try:
            take_lock(os.path.dirname(run.dir))
        except Refused as exc:
            run.log(str(exc))
            run.files.write_exit_code(EXIT_REFUSED)
            return EXIT_REFUSED
    return run.main()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dltui-burnin")
    sub = p.add_subparsers(dest="mode")
    s = sub.add_parser("start")
    s.add_argument("--run-id", required=True)
    s.add_argument("--duration", type=int, required=True)
    s.add_argument("--gpu", default="auto")
    s.add_argument("--cpu", action="store_true")
    s.add_argument("--memory", action="store_true")
    s.add_argument("--disk")
    s.add_argument("--disk-size", default="4G")
    s.add_argument("--net")
    s.add_argument("--expected-gpus", type=int)
    s.add_argument("--preflight", type=float, default=10.0)
    s.add_argument("--post", type=float, default=10.0)
    s.add_argument("--interval", type=float, default=1.0)
    s.add_argument("--sysfs", default="/sys", help="where the node's sysfs is mounted")
    s.add_argument("--smoke", help="a loader smoke test command, run after the load")
    s.add_argument("--smoke-s", type=float, default=300.0)
    s.add_argument("--smoke-ramp", type=float, default=SMOKE_RAMP_S)  # shorter in tests
    s.add_argument("--launcher", choices=("auto", "setsid", "systemd"), default="auto")
    s.add_argument("--self-path", help="where this script was written; moved into the run dir")
    r = sub.add_parser("run")
    r.add_argument("--dir", required=True)
    r.add_argument("--lock-fd", type=int)
    f = sub.add_parser("follow")
    f.add_argument("--dir", required=True)
    f.add_argument("--offset", type=int, default=0)
    f.add_argument("--poll", type=float, default=0.25)
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    t.add_argument("--wait", type=float, default=60.0)
    return p


MODES: dict[str, Callable[[argparse.Namespace], int]] = {
    "start": cmd_start,
    "run": cmd_run,
    "follow": cmd_follow,
    "stop": cmd_stop,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    mode = MODES.get(args.mode)
    if mode is None:
        build_parser().print_help()
        return 2
    return mode(args)


if __name__ == "__main__":
    sys.exit(main())
