"""Write the burn-in report of a simulated run (no node needed) into OUTDIR, for the report's
screenshot: 2 nodes x 8 GPUs, 2 h of 1 Hz samples, GPU 2 of gpu02 failing (thermal and SM
clock) with its evidence, the charts, nccl-tests and BMC items.

    python scripts/burnin_report_demo.py OUTDIR     # writes report.html, report.md, report.json

The data is ``dltui.burnin.demo``'s, the same seeded run the burn-in screen's snapshot draws.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dltui.burnin import demo  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for kind, path in demo.write_report(Path(argv[0])).items():
        print(f"{kind}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
