"""What ``--record`` costs on disk: bytes a sample, and what 2 hours of 64 nodes x 8 GPUs take.

    python bench/record_size.py [--nodes 16] [--gpus 8] [--seconds 600]

The seeded demo fleet is recorded through the real ``Recorder`` (plain and ``.gz``) for
``--seconds`` simulated seconds; the reference, in the same run, is the same samples recorded
whole (``Sample.to_dict()``: format 1's sample lines, what ``--record`` wrote before issue 35)
and the probe's own wire lines for them (``dltui.node.wire``: what SSH carries). Then the
figures are scaled to 2 h of 64 x 8. The CPU the recorder spends a sample is printed too.
Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dltui.core.state import FleetState  # noqa: E402
from dltui.node.wire import Encoder  # noqa: E402
from dltui.transport.demo import DemoTransport  # noqa: E402
from dltui.transport.recording.format import encode  # noqa: E402
from dltui.transport.recording.recorder import Recorder  # noqa: E402


class Whole:
    """The reference: each sample line as format 1 wrote it, and the probe's wire line."""

    def __init__(self, inner: Recorder) -> None:
        self.inner = inner
        self.whole = self.wire = self.samples = self.whole_gz = 0
        self._gz = zlib.compressobj(6, zlib.DEFLATED, 31)  # gzip, as ``--record x.gz`` writes
        self.cpu_s = 0.0
        self._encoders: dict[str, Encoder] = {}

    def on_sample(self, name, sample) -> None:
        started = time.process_time()
        self.inner.on_sample(name, sample)
        self.cpu_s += time.process_time() - started
        self.samples += 1
        line = encode({"t": sample.time, "node": name, "kind": "sample", "sample": sample.to_dict()})
        self.whole += len(line)
        self.whole_gz += len(self._gz.compress(line))
        wire = self._encoders.setdefault(name, Encoder()).encode(sample.to_dict())
        self.wire += len(json.dumps(wire, separators=(",", ":"))) + 1

    def on_status(self, *args) -> None:
        self.inner.on_status(*args)

    def on_hello(self, *args) -> None:
        self.inner.on_hello(*args)

    def on_event(self, *args) -> None:
        self.inner.on_event(*args)


def run(nodes: int, gpus: int, seconds: int, path: Path) -> Whole:
    demo = DemoTransport(nodes=nodes, gpus=gpus, seed=7)
    with Recorder.create(FleetState(demo.names, clock=demo.clock), path, demo.names, clock=demo.clock) as rec:
        tee = Whole(rec)
        demo.step_into(tee, seconds)
    return tee


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=600)
    args = parser.parse_args()
    print(
        f"--record of {args.nodes} demo nodes x {args.gpus} GPUs, {args.seconds} simulated s"
        f" [load {os.getloadavg()[0]:.2f}]"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("rec.jsonl", "rec.jsonl.gz"):
            path = Path(tmp) / name
            tee = run(args.nodes, args.gpus, args.seconds, path)
            size = path.stat().st_size
            gz = name.endswith(".gz")  # then the reference compressed the same way
            whole = (tee.whole_gz + len(tee._gz.flush())) if gz else tee.whole
            per = size / tee.samples
            two_hours = per * 7200 * 64  # 2 h of 64 nodes like these
            print(
                f"   {name:>13}: {size / 1e6:7.2f} MB, {per:6.0f} B a sample; whole samples {whole / tee.samples:.0f} B"
                f" ({per / (whole / tee.samples):.2f}x); the probe's wire line {tee.wire / tee.samples:.0f} B"
                f" ({per / (tee.wire / tee.samples):.2f}x); recorder {tee.cpu_s / tee.samples * 1e6:.0f} µs CPU"
                f" a sample; 2 h of 64 such nodes ≈ {two_hours / 1e6:.0f} MB"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
