"""``follow --offset N``: what samples.jsonl holds from byte N on (whole lines only), plus a
status line whenever status.json changed, until the run has ended and everything was read.
dltui reattaches with the offset it had; a closed pipe (the operator gone) ends it."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from dltui.node.burnin.places import RunDir, read_json

CHUNK = 1 << 20  # read at most this much per pass; a full chunk means more is waiting


def _write(obj: dict[str, Any]) -> None:
    sys.stdout.buffer.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


def cmd_follow(args: argparse.Namespace) -> int:
    run = RunDir(os.path.abspath(args.dir))
    path = run.path("samples.jsonl")
    offset: int = args.offset
    last_status = None
    try:
        while True:
            ended = run.exists("exit_code")
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read(CHUNK)
            except OSError:
                chunk = b""
            complete = chunk[: chunk.rfind(b"\n") + 1]
            if complete:
                sys.stdout.buffer.write(complete)
                offset += len(complete)
            status = read_json(run.path("status.json"))
            if status is not None and status != last_status:
                last_status = status
                _write({"type": "burnin-status", "offset": offset, "status": status})
            sys.stdout.buffer.flush()
            if len(chunk) == CHUNK:
                continue
            # A driver gone without an exit code (the node rebooted, it was killed, the OOM
            # killer took it) ends the follow too, said so: nothing more will come.
            lost = not ended and not complete and not run.driver_alive()
            if lost and run.exists("exit_code"):
                lost, ended = False, True  # it wrote its exit code just before it ended
            if (ended or lost) and not complete:
                end: dict[str, Any] = {"type": "burnin-end", "offset": offset}
                if lost:
                    end["lost"] = True
                _write(end)
                sys.stdout.buffer.flush()
                return 0
            time.sleep(args.poll)
    except (BrokenPipeError, OSError):
        return 0
