"""What checking each field's type (``dltui.core.field_types``) adds to decoding a probe line,
per node-sample.

The lines are sanitise_cost.py's: a node of 8 H100s under a training load, 64 cores, 4 disks,
4 NICs, 6 file systems and its training unit, sampled every second, encoded by the probe's own
``node.wire.Encoder`` (a keyframe every 30 lines, else only the fields that changed), decoded
by ``ProbeReader`` as the SSH transport does. Reference, in the same run on the same lines: the
same reader whose decoder has no type table (decoding as it was before the checks). Each line
is decoded several times by each, alternating, and its fastest time kept (the collector
paused): on a shared, busy machine that is the time no other process interrupted.

    python bench/decode_checks.py [--nodes 16] [--seconds 60] [--repeats 7] [--seed 7]

Prints figures only; nothing is asserted.
"""

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sanitise_cost import GPUS, CORES, Null, lines_of  # noqa: E402

from dltui.node.wire import Decoder  # noqa: E402
from dltui.transport import protocol  # noqa: E402


def measure(streams, repeats):
    """(s decoding with the checks, s without), each line's fastest of ``repeats``."""
    checked = reference = 0
    gc.disable()
    try:
        for lines in streams:
            with_checks = protocol.ProbeReader("n", Null())
            without = protocol.ProbeReader("n", Null())
            without.decoder = Decoder()  # no type table
            for line in lines:
                best = [float("inf"), float("inf")]
                for _ in range(repeats):
                    for i, reader in ((0, with_checks), (1, without)):
                        t0 = time.perf_counter_ns()
                        reader.feed(line)
                        best[i] = min(best[i], time.perf_counter_ns() - t0)
                assert with_checks.malformed == 0
                checked += best[0]
                reference += best[1]
    finally:
        gc.enable()
    return checked / 1e9, reference / 1e9


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    per = args.nodes * args.seconds
    streams = lines_of(args.nodes, args.seconds, args.seed, "python3 train.py --config h100.yaml")
    checked, reference = measure(streams, args.repeats)
    print(f"{args.nodes} nodes × {args.seconds} samples ({GPUS} GPUs, {CORES} cores each), "
          f"fastest of {args.repeats} decodes per line")
    print(f"decode {reference / per * 1e6:6.1f} µs  with type checks {checked / per * 1e6:6.1f} µs  "
          f"ratio {checked / reference:5.3f} per node-sample")


if __name__ == "__main__":
    main()
