"""AMD Instinct GPUs on a node: the cheapest source there is, decided once per connection.

0. The AMD SMI library in process (``amd_library``: the ``amdsmi`` binding shipped beside the
   probe as pynvml is), where ROCm's ``libamd_smi.so`` is there and of the binding's release.
1. The amdgpu driver's files (``amd_sysfs``): a few reads per GPU, no process at all. Facts
   add ``amd-smi static --json`` once where amd-smi is installed (the vendor's slowdown and
   shutdown limits, the market name) and processes come from ``amd-smi process`` every few
   seconds.
2. ``amd-smi metric --json`` (ROCm 6+), polled in a thread every ``AMD_SMI_EVERY_S`` at most
   (one run costs ~0.3-1 s of CPU on a real node: it loads the library and every GPU's
   metrics table); the sample reports its newest answer.
3. ``rocm-smi -a --json`` (deprecated; older installs), every ``ROCM_SMI_EVERY_S``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable

from . import amd_json
from .amd_fdinfo import FdinfoScanner
from .amd_library import AmdLibrary, open_library
from .amd_sysfs import AmdCard, find_cards
from .gpu_records import Record, error_record
from .problems import Problems

AMD_SMI_EVERY_S = 2.0
ROCM_SMI_EVERY_S = 5.0
PROCESS_EVERY_S = 15.0  # amd-smi process loads the library each run: ~0.3 s CPU on a real node
ONE_SHOT_TIMEOUT_S = 30.0
FIRST_ANSWER_WAIT_S = 10.0


def run_json(argv: list[str], timeout_s: float = ONE_SHOT_TIMEOUT_S) -> tuple:
    """-> (parsed JSON or None, why not in words or None)."""
    from .smi import run_smi  # one runner for every vendor's CLI

    code, output = run_smi(argv, timeout_s)
    if code != 0:
        first = output.strip().splitlines()[0] if output.strip() else "no output"
        how = "exit %s" % code if code is not None else "did not run"
        return None, "%s failed (%s): %s" % (" ".join(argv[:2]), how, first)
    start = min((i for i in (output.find("["), output.find("{")) if i >= 0), default=-1)
    try:
        return json.loads(output[start:] if start >= 0 else output), None  # skip a warning banner
    except ValueError:
        return None, "%s printed no JSON" % " ".join(argv[:2])


class Poller:
    """Runs one JSON command every ``every_s`` in a thread and keeps its newest answer."""

    def __init__(self, argv: list[str], every_s: float, name: str) -> None:
        self.argv = argv
        self.every_s = every_s
        self.doc: Any = None
        self.failure: str | None = None
        self._first = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            doc, failure = run_json(self.argv)
            if doc is not None:
                self.doc = doc
            self.failure = failure
            self._first.set()
            self._stop.wait(self.every_s)

    def latest(self, wait_s: float) -> tuple:
        self._first.wait(wait_s)
        return self.doc, self.failure

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)


class AmdCollector:
    """GPU facts and records from the AMD source chosen at open; never raises."""

    def __init__(self, problems: Problems, source: str, cards: list[AmdCard],
                 amd_smi: str | None, rocm_smi: str | None, interval_s: float, proc: str = "/proc",
                 library: AmdLibrary | None = None, note: str | None = None) -> None:
        self.problems = problems
        self.library = library
        self.note = note  # why the library was not used, where it is there
        self.source = source
        self.interval_s = interval_s
        self.cards = cards
        self.amd_smi = amd_smi
        self.rocm_smi = rocm_smi
        self.metrics: Poller | None = None
        self.processes: Poller | None = None
        if source == "amd-smi" and amd_smi is not None:
            self.metrics = Poller([amd_smi, "metric", "--json"], max(interval_s, AMD_SMI_EVERY_S), "amd-smi-metric")
        elif source == "rocm-smi" and rocm_smi is not None:
            self.metrics = Poller([rocm_smi, "-a", "--json"], max(interval_s, ROCM_SMI_EVERY_S), "rocm-smi")
        self.fdinfo: FdinfoScanner | None = None
        if amd_smi is not None:
            self.processes = Poller([amd_smi, "process", "--json"], PROCESS_EVERY_S, "amd-smi-process")
        elif cards or library is not None:  # the kernel's own per-process DRM stats, where amd-smi is not installed
            self.fdinfo = FdinfoScanner(proc)
        self.gpu_facts: list[Record] = []

    def facts(self) -> dict[str, Any]:
        gpus: list[Record] = []
        driver: str | None = None
        if self.source == "rocm-smi" and self.rocm_smi is not None:
            doc, failure = run_json([self.rocm_smi, "-a", "--json"])
            driver, gpus = amd_json.rocm_smi_facts(doc)
            self._report(failure)
        elif self.library is not None:
            gpus = self.library.facts()
            driver = next((g["driver_version"] for g in gpus if g.get("driver_version")), None)
        else:
            static: list[Record] = []
            if self.amd_smi is not None:
                doc, failure = run_json([self.amd_smi, "static", "--json"])
                static = amd_json.static_facts(doc)
                self._report(failure)
            if self.cards:
                gpus = [card.facts() for card in self.cards]
                merge_static(gpus, static)
            else:
                gpus = static
            driver = next((g["driver_version"] for g in gpus if g.get("driver_version")), None)
        self.gpu_facts = gpus
        return {"amd_driver_version": driver, "gpus": gpus}

    def _report(self, failure: str | None) -> None:
        if failure is None:
            self.problems.clear("amd")
        else:
            self.problems.report("amd", failure)

    def sample(self) -> list[Record]:
        if self.library is not None:
            records = self.library.sample(time.monotonic(), self.gpu_facts)
        elif self.cards:
            now = time.monotonic()
            records = [card.sample(now) for card in self.cards]
        else:
            records = self._polled()
        self._add_facts(records)
        self._add_processes(records)
        return records

    def _polled(self) -> list[Record]:
        assert self.metrics is not None
        doc, failure = self.metrics.latest(FIRST_ANSWER_WAIT_S)
        self._report(failure)
        parse: Callable[[Any], list[Record]] = (
            amd_json.rocm_smi_records if self.source == "rocm-smi" else amd_json.metric_records
        )
        records = parse(doc) if doc is not None else []
        if not records and failure is not None:
            return [
                error_record(g["index"], g.get("uuid"), g.get("name"), failure, amd_json.VENDOR)
                for g in self.gpu_facts
            ]
        return records

    def _add_facts(self, records: list[Record]) -> None:
        """What a sample source lacks and the facts hold (name, uuid, the cap, the totals)."""
        by_index = {g["index"]: g for g in self.gpu_facts}
        for record in records:
            facts = by_index.get(record["index"], {})
            for field, fact in (("name", "name"), ("uuid", "uuid"), ("memory_total_mib", "memory_total_mib"),
                                ("power_limit_w", "power_limit_w"), ("pcie_max_gen", "pcie_max_gen"),
                                ("pcie_max_width", "pcie_max_width")):
                if record.get(field) is None:
                    record[field] = facts.get(fact)
            if record["uuid"] is None:
                record["uuid"] = facts.get("bus_id")

    def _add_processes(self, records: list[Record]) -> None:
        if self.fdinfo is not None:
            bus = {g["index"]: g.get("bus_id") for g in self.gpu_facts}
            for record in records:
                record["processes"] = self.fdinfo.processes(bus.get(record["index"]))
            return
        if self.processes is None:
            return
        doc, _ = self.processes.latest(0)
        by_gpu = amd_json.process_lists(doc) if doc is not None else {}
        for record in records:
            record["processes"] = by_gpu.get(record["index"], [])

    def close(self) -> None:
        for poller in (self.metrics, self.processes, self.fdinfo):
            if poller is not None:
                poller.close()
        for card in self.cards:
            card.close()
        if self.library is not None:
            self.library.close()


def merge_static(gpus: list[Record], static: list[Record]) -> None:
    """``amd-smi static`` facts over the sysfs ones, by position (both in PCI order): the
    vendor's own limits and names win over hwmon's; what static does not say is kept."""
    for gpu, extra in zip(gpus, static):
        for key, value in extra.items():
            if key != "index" and value is not None:
                gpu[key] = value


def open_amd(problems: Problems, interval_s: float, sys_dir: str,
             which: Callable[[str], str | None], proc: str = "/proc") -> AmdCollector | None:
    """The AMD collector with the cheapest source this node has, or None (no AMD GPU)."""
    cards = find_cards(sys_dir)
    amd_smi, rocm_smi = which("amd-smi"), which("rocm-smi")
    notes: list[str] = []
    library = open_library(notes.append)
    note = notes[0] if notes else None
    if library is not None:
        return AmdCollector(problems, "amdsmi", [], amd_smi, None, interval_s, proc, library=library)
    if cards:
        return AmdCollector(problems, "amd-sysfs", cards, amd_smi, None, interval_s, proc, note=note)
    if amd_smi is not None:
        return AmdCollector(problems, "amd-smi", [], amd_smi, None, interval_s)
    if rocm_smi is not None:
        return AmdCollector(problems, "rocm-smi", [], None, rocm_smi, interval_s)
    return None
