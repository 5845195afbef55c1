"""The demo fleet's fabric: eight 400 Gb/s NDR HCA ports per node (ConnectX-7, one port each,
as on an HGX H100 node) and 18 NVLinks at 26.562 GB/s per GPU (NVLink 4, as ``nvidia-smi nvlink
-s`` prints them for an H100 SXM). One node loses a port a minute before the demo opens: its
cable pulled, the port DOWN with the PHY polling, its link-down counter one higher.

A random stream of its own, so the rest of the demo's numbers stay what they were.
"""

from __future__ import annotations

import random

from dltui.core.models import IbPortSample, NvlinkSample

HCAS = 8
PORT_DOWN_NODE = 4  # gpu05 (scenarios.PATTERN repeats every 16 nodes)
PORT_DOWN_HCA = 3  # mlx5_3 ...
PORT_DOWN_AT = 120  # ... from its 120th sample on (the demo opens at sample 170)
LINKS, LINK_GB_S = 18, 26.562


class DemoFabric:
    def __init__(self, name: str, index: int, seed: int, gpus: int, pattern: int) -> None:
        self.rng = random.Random(f"{seed}:{name}:fabric")
        self.loses_a_port = index % pattern == PORT_DOWN_NODE
        self.samples = 0
        self.symbol_errors = [self.rng.randrange(0, 3) for _ in range(HCAS)]  # old, not rising
        up: list[bool | None] = [True] * LINKS
        speeds: list[float | None] = [LINK_GB_S] * LINKS
        # models are immutable: every sample shares these
        self.nvlinks = [NvlinkSample(g, LINKS, LINKS, up, speeds, 0, 0, 0) for g in range(gpus)]

    def ib_ports(self, job_share: float) -> list[IbPortSample]:
        self.samples += 1
        rng = self.rng
        out = []
        for i in range(HCAS):
            down = self.loses_a_port and i == PORT_DOWN_HCA and self.samples >= PORT_DOWN_AT
            rx = 0.0 if down else round(rng.uniform(18e9, 24e9) * job_share)
            tx = 0.0 if down else round(rng.uniform(18e9, 24e9) * job_share)
            out.append(
                IbPortSample(
                    f"mlx5_{i}:1",
                    f"mlx5_{i}",
                    1,
                    "DOWN" if down else "ACTIVE",
                    "Polling" if down else "LinkUp",
                    10.0 if down else 400.0,  # a port that is down reads its lowest rate
                    "4X" if down else "4X NDR",
                    "InfiniBand",
                    "MT4129",
                    f"ibp{i}s0",
                    self.symbol_errors[i],
                    1 if down else 0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    rx,
                    tx,
                )
            )
        return out
