"""The preflight phase: the node's facts (the first line of samples.jsonl, as the probe's
hello), the baselines read before any load, then samples of the idle node for ``preflight_s``."""

from __future__ import annotations

import time
from typing import Any

from dltui.node.burnin.baseline import Baseline
from dltui.node.burnin.bmc import BmcSel
from dltui.node.burnin.drives import DriveHealth
from dltui.node.burnin.kernel import KernelLog
from dltui.node.schema import PROTOCOL


def baselines() -> list[Baseline]:
    """Every baseline a run takes, in the order they are read (before and after alike)."""
    return [KernelLog(), BmcSel(), DriveHealth()]


def hello(facts: dict[str, Any], interval_s: float) -> dict[str, Any]:
    """samples.jsonl's first record: what the probe's stream starts with."""
    return {
        "type": "hello",
        "protocol": PROTOCOL,
        "time": round(time.time(), 3),
        "interval_s": interval_s,
        "facts": facts,
    }
