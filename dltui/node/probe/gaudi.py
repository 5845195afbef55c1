"""Intel Gaudi (Habana) accelerators from ``hl-smi``: one long-lived query loop, as the
nvidia-smi fallback reads NVIDIA GPUs (a spawn per tick would cost more than the reading).

``hl-smi -Q index,uuid,name,... --format csv,noheader -l N`` prints one line per AIP every N
seconds, values with their units (``131072 MiB``, ``226 W``, ``36 C``, ``0 %``). Facts add
one ``hl-smi -Q module_id,serial,bus_id,driver_version -f csv`` at connect (with a header,
rows in the device order the loop uses). The HLML binding (``pyhlml``) is not read.
"""

from __future__ import annotations

from typing import Any

from . import values
from .gpu_records import Record, error_record, new_gpu_facts, new_gpu_record
from .problems import Problems
from .smi import FIRST_ROWS_WAIT_S, ONE_SHOT_TIMEOUT_S, SmiLoop, parse_query_csv, run_smi

VENDOR = "intel"
LOOP_FIELDS = (
    "index",
    "uuid",
    "name",
    "driver_version",
    "memory.total",
    "memory.used",
    "memory.free",
    "power.draw",
    "power.max",
    "temperature.aip",
    "utilization.aip",
)
IDENTITY_FIELDS = ("module_id", "serial", "bus_id", "driver_version")


def loop_argv(binary: str, interval_s: float) -> list[str]:
    """hl-smi's ``-l`` takes whole seconds (1 at least)."""
    every = max(1, int(round(interval_s)))
    return [binary, "-Q", ",".join(LOOP_FIELDS), "--format", "csv,noheader", "-l", str(every)]


NO_READINGS = "hl-smi reports no readings for this AIP (in reset, or fallen off the bus?)"
_READINGS = ("memory.used", "power.draw", "temperature.aip", "utilization.aip")


def record_from_row(row: dict[str, str]) -> Record | None:
    """One loop line -> a GPU record (GPU_FIELDS); None without a usable index. An AIP whose
    every reading is N/A is listed but unreadable: an error record, not a GPU at 0."""
    index = values.number(row.get("index"))
    if not isinstance(index, int):
        return None
    if all(values.text(row.get(name)) is None for name in _READINGS):
        return error_record(index, values.text(row.get("uuid")), values.text(row.get("name")), NO_READINGS, VENDOR)
    record = new_gpu_record(index, VENDOR)
    record["uuid"] = values.text(row.get("uuid"))
    record["name"] = values.text(row.get("name"))
    record["memory_total_mib"] = _float(values.number(row.get("memory.total")))
    record["memory_used_mib"] = _float(values.number(row.get("memory.used")))
    record["power_w"] = values.watts(row.get("power.draw"))
    record["power_limit_w"] = values.watts(row.get("power.max"))
    record["temperature_c"] = _float(values.number(row.get("temperature.aip")))
    record["utilization_percent"] = _float(values.number(row.get("utilization.aip")))
    return record


def facts_from_rows(rows: list[dict[str, str]], identity: list[dict[str, str]]) -> list[Record]:
    """Loop rows (+ the identity query's rows, same order) -> GPU facts (GPU_FACT_FIELDS)."""
    out = []
    for position, row in enumerate(rows):
        index = values.number(row.get("index"))
        facts = new_gpu_facts(index if isinstance(index, int) else position, VENDOR)
        facts["name"] = values.text(row.get("name"))
        facts["uuid"] = values.text(row.get("uuid"))
        facts["memory_total_mib"] = _float(values.number(row.get("memory.total")))
        facts["power_limit_w"] = values.watts(row.get("power.max"))
        facts["driver_version"] = values.text(row.get("driver_version"))
        if position < len(identity):
            facts["serial"] = values.text(identity[position].get("serial"))
            facts["bus_id"] = values.text(identity[position].get("bus_id"))
        out.append(facts)
    return out


def describe_failure(returncode: int | None, output: str) -> str:
    first = (output or "").strip().splitlines()[0] if (output or "").strip() else "no output"
    if returncode is None:
        return "hl-smi could not run: %s" % first
    return "hl-smi failed (exit %d): %s — is the habanalabs driver loaded?" % (returncode, first)


class GaudiCollector:
    """Gaudi facts and records from one hl-smi loop; never raises."""

    def __init__(self, problems: Problems, interval_s: float, binary: str) -> None:
        self.problems = problems
        self.interval_s = interval_s
        self.binary = binary
        self.loop = SmiLoop(loop_argv(binary, interval_s), LOOP_FIELDS, describe=describe_failure)
        self.gpu_facts: list[Record] = []

    def _rows(self) -> list[dict[str, str]]:
        rows, failure = self.loop.latest(FIRST_ROWS_WAIT_S)
        if failure is None:
            self.problems.clear("hl-smi")
        else:
            self.problems.report("hl-smi", failure)
        ordered = sorted((row for row, _ in rows), key=lambda r: values.number(r.get("index")) or 0)
        return ordered

    def facts(self) -> dict[str, Any]:
        code, output = run_smi([self.binary, "-Q", ",".join(IDENTITY_FIELDS), "-f", "csv"], ONE_SHOT_TIMEOUT_S)
        identity = parse_query_csv(output).rows if code == 0 else []
        self.gpu_facts = facts_from_rows(self._rows(), identity)
        driver = next((g["driver_version"] for g in self.gpu_facts if g["driver_version"]), None)
        return {"habana_driver_version": driver, "gpus": self.gpu_facts}

    def sample(self) -> list[Record]:
        records = [r for r in (record_from_row(row) for row in self._rows()) if r is not None]
        if not records and self.loop.failure is not None:
            return [error_record(g["index"], g["uuid"], g["name"], self.loop.failure, VENDOR) for g in self.gpu_facts]
        return records

    def close(self) -> None:
        self.loop.close()


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
