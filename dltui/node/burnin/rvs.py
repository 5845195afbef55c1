"""AMD's own GPU stressor: the ROCm Validation Suite's ``gst`` module (GEMMs at a GFLOPS
target on every GPU at once), its configuration for the run's duration, and a reader of what
it prints (per GPU: the GFLOPS it reached and whether it met the target; RVS's summary maps
its GPU ids to the amdgpu indexes the probe reports).

Shipped to nodes with the burn-in driver: stdlib only, Python 3.8 syntax. Output format from
ROCm/ROCmValidationSuite ``gst.so/src/gst_worker.cpp`` and ``docs/ug1main.md`` (MIT).
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

RVS_PATHS = ("/opt/rocm/bin/rvs",)  # where the ROCm package installs it, off PATH

# AMD's generic stress action (rvs/conf/gst_stress.conf), all GPUs in parallel; only the
# duration is the run's. Its target (2000 GFLOPS dgemm) is a floor every Instinct GPU reaches,
# so "met: FALSE" means a GPU that cannot hold load, not a slow model.
GST_CONF = """actions:
- name: dltui-gst
  device: all
  module: gst
  parallel: true
  count: 1
  duration: %(duration_ms)d
  ramp_interval: 10000
  log_interval: 5000
  copy_matrix: false
  target_stress: %(target)d
  matrix_size_a: 5760
  matrix_size_b: 5760
  matrix_size_c: 5760
  ops_type: dgemm
  transa: 0
  transb: 1
  alpha: 1
  beta: 1
  lda: 5760
  ldb: 5760
  ldc: 5760
"""
GST_TARGET_GFLOPS = 2000


def rvs_path() -> str | None:
    found = shutil.which("rvs")
    if found:
        return found
    return next((p for p in RVS_PATHS if os.access(p, os.X_OK)), None)


def gst_conf(duration_s: int, target: int = GST_TARGET_GFLOPS) -> str:
    return GST_CONF % {"duration_ms": max(1, duration_s) * 1000, "target": target}


# --- its output ----------------------------------------------------------------------------

_GFLOPS = re.compile(
    r"\[GPU::\s*(\d+)\]\s*GFLOPS:?\s+([\d.]+)"
    r"(?:\s+Target GFLOPS:\s*([\d.]+)\s+met:\s*(TRUE|FALSE))?",
    re.I,
)
_RAMP_EXCEEDED = re.compile(r"\bgst\s+(\d+)\s+ramp time exceeded", re.I)  # older RVS
_NAME_CELL = re.compile(r"^(.+?)\s+-\s+(\d+)$")  # "AMD Instinct MI355X - 42583"
_INDEX_CELL = re.compile(r"^(\d+)\s+-\s+(\d+)\s+-\s+([0-9A-Fa-f:.]+)$")  # "0 - 2 - 0000:05:00.0"


class RvsGpu:
    """One GPU (by RVS's id) as gst reported it."""

    def __init__(self, gpu_id: int) -> None:
        self.gpu_id = gpu_id
        self.gflops: list[float] = []  # every interval's reading, ramp included
        self.final: float | None = None  # the GFLOPS of its final line
        self.target: float | None = None
        self.met: bool | None = None  # None: no final line (cut short, killed, crashed)
        self.problems: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return {"gflops": self.gflops[-1:], "final": self.final, "target": self.target,
                "met": self.met, "problems": self.problems}


class RvsResult:
    def __init__(self) -> None:
        self.gpus: dict[int, RvsGpu] = {}  # by RVS's GPU id (its KFD gpu_id, not an index)
        self.index_of: dict[int, int] = {}  # RVS's id -> the amdgpu index, from its summary
        self.names: dict[int, str] = {}
        self.actions: dict[str, str] = {}  # summary: action name -> PASS / FAIL
        self._partial = ""  # a line not ended yet (the driver reads the log as it grows)
        self._above = ""  # the line before, for the summary's two-line GPU cells

    def feed(self, chunk: str) -> None:
        """More of rvs's output: its complete lines read, the last partial one kept."""
        lines = (self._partial + chunk).replace("\r", "\n").split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line)
            self._above = line

    def _line(self, line: str) -> None:
        m = _GFLOPS.search(line)
        if m is not None:
            g = self.gpu(int(m.group(1)))
            value = float(m.group(2))
            if m.group(4) is None:
                g.gflops.append(value)
            else:
                g.final, g.target = value, float(m.group(3))
                g.met = m.group(4).upper() == "TRUE" and g.met is not False
            return
        m = _RAMP_EXCEEDED.search(line)
        if m is not None:
            g = self.gpu(int(m.group(1)))
            g.met = False
            g.problems.append("did not reach its target within the ramp interval")
        elif line.startswith("|"):
            _summary_row(self, self._above, line)

    def gpu(self, gpu_id: int) -> RvsGpu:
        g = self.gpus.get(gpu_id)
        if g is None:
            g = self.gpus[gpu_id] = RvsGpu(gpu_id)
        return g

    def by_index(self) -> dict[int, RvsGpu]:
        """The GPUs by amdgpu index: RVS's summary when it printed one, else the order RVS
        went through them (it enumerates GPUs as the driver does)."""
        if self.index_of:
            return {self.index_of[i]: g for i, g in self.gpus.items() if i in self.index_of}
        return {n: self.gpus[i] for n, i in enumerate(self.gpus)}

    def failed_actions(self) -> list[str]:
        return [a for a, r in self.actions.items() if r.upper() != "PASS"]


def parse_rvs(text: str) -> RvsResult:
    res = RvsResult()
    res.feed(text + "\n")
    return res


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _summary_row(res: RvsResult, above: str, line: str) -> None:
    """RVS's summary table: a row of "NAME - ID" cells over a row of "INDEX - NODE - BDF"
    cells, and the action rows "ACTION | MODULE | RESULT"."""
    cells = _cells(line)
    if len(cells) == 3 and cells[1].upper() == "GST" and cells[2].upper() in ("PASS", "FAIL"):
        res.actions[cells[0]] = cells[2].upper()
        return
    over = _cells(above) if above.startswith("|") else []
    for cell, low in zip(over, cells):
        name, index = _NAME_CELL.match(cell), _INDEX_CELL.match(low)
        if name is not None and index is not None:
            res.index_of[int(name.group(2))] = int(index.group(1))
            res.names[int(name.group(2))] = name.group(1)
