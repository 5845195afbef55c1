"""GPU telemetry from ``nvidia-smi`` CSV: the fallback where NVML cannot be loaded.

One long-lived ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N`` runs per
node and a thread keeps its latest row per GPU, so sampling never spawns a process per tick
(every spawn costs 7-25 ms, ~1.5 s with persistence mode off). Facts come from one one-shot
query at connect plus, once, ``-q -x`` for what CSV lacks (temperature thresholds, CUDA
version); processes from ``--query-compute-apps`` every few seconds.

Field names are picked once per node from ``--help-query-gpu``: drivers rename fields
(``clocks_throttle_reasons.*`` became ``clocks_event_reasons.*`` in R535,
``pcie.link.gen.current`` gave way to ``pcie.link.gen.gpucurrent`` in R590) and one unknown
name fails the whole query. The help is not the last word (it may be unreadable, or list a
name the query then refuses): a refused name is dropped for its older spelling, or for
nothing, the query retried and the refusal remembered (``FieldChooser``).
"""

from __future__ import annotations

import collections
import re
import subprocess
import threading
import time
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    NamedTuple,
    Optional,
    Tuple,
)

from ..schema import decode_clock_event_reasons, pci_key
from . import values
from .gpu_records import GPU_LOST, THRESHOLD_FIELDS, error_record, new_gpu_facts, new_gpu_record
from .problems import Problems
from .smi_xml import parse_smi_xml

Row = Dict[str, str]  # one CSV line: {query-gpu name: raw cell}
Record = Dict[str, Any]
# A query table: record field -> (query-gpu names, newest first; parser of the cell)
Query = Tuple[Tuple[str, Tuple[str, ...], Callable[[Optional[str]], Any]], ...]
Chosen = Dict[str, Optional[str]]  # record field -> the name asked, or None

ONE_SHOT_TIMEOUT_S = 30.0
XML_TIMEOUT_S = 60.0  # -q -x takes ~6 s on an 8-GPU server
PROCESS_REFRESH_S = 5.0
FIRST_ROWS_WAIT_S = 5.0  # the first sample waits this long for the loop's first rows
RESTART_DELAYS_S = (1, 2, 4, 8, 16, 32, 60)
HEALTHY_RUN_S = 60.0  # a loop that ran this long restarts from the shortest delay again

# Record field -> (query-gpu names, newest first; parser of the cell).
SAMPLE_QUERY: Query = (
    ("index", ("index",), values.number),
    ("uuid", ("uuid",), values.text),
    ("name", ("name",), values.text),
    ("utilization_percent", ("utilization.gpu",), values.number),
    ("memory_utilization_percent", ("utilization.memory",), values.number),
    ("memory_used_mib", ("memory.used",), values.number),
    ("memory_total_mib", ("memory.total",), values.number),
    ("temperature_c", ("temperature.gpu",), values.number),
    ("memory_temperature_c", ("temperature.memory",), values.number),
    ("temperature_margin_c", ("temperature.gpu.tlimit",), values.number),
    ("power_w", ("power.draw",), values.watts),
    ("power_limit_w", ("enforced.power.limit",), values.watts),
    ("sm_clock_mhz", ("clocks.current.sm", "clocks.sm"), values.number),
    ("memory_clock_mhz", ("clocks.current.memory", "clocks.mem"), values.number),
    ("sm_clock_max_mhz", ("clocks.max.sm",), values.number),
    ("memory_clock_max_mhz", ("clocks.max.memory", "clocks.max.mem"), values.number),
    ("pstate", ("pstate",), values.pstate),
    ("fan_percent", ("fan.speed",), values.number),
    (
        "clock_event_reasons_mask",
        ("clocks_event_reasons.active", "clocks_throttle_reasons.active"),
        values.hex_mask,
    ),
    (
        "clock_event_sw_power_cap_us",
        ("clocks_event_reasons_counters.sw_power_cap",),
        values.number,
    ),
    ("clock_event_sync_boost_us", ("clocks_event_reasons_counters.sync_boost",), values.number),
    (
        "clock_event_sw_thermal_us",
        ("clocks_event_reasons_counters.sw_thermal_slowdown",),
        values.number,
    ),
    (
        "clock_event_hw_thermal_us",
        ("clocks_event_reasons_counters.hw_thermal_slowdown",),
        values.number,
    ),
    (
        "clock_event_hw_power_brake_us",
        ("clocks_event_reasons_counters.hw_power_brake_slowdown",),
        values.number,
    ),
    ("pcie_gen", ("pcie.link.gen.gpucurrent", "pcie.link.gen.current"), values.number),
    ("pcie_width", ("pcie.link.width.current",), values.number),
    ("pcie_max_gen", ("pcie.link.gen.max",), values.number),
    ("pcie_max_width", ("pcie.link.width.max",), values.number),
    ("ecc_corrected_volatile", ("ecc.errors.corrected.volatile.total",), values.number),
    ("ecc_uncorrected_volatile", ("ecc.errors.uncorrected.volatile.total",), values.number),
    ("ecc_corrected_aggregate", ("ecc.errors.corrected.aggregate.total",), values.number),
    ("ecc_uncorrected_aggregate", ("ecc.errors.uncorrected.aggregate.total",), values.number),
    ("remapped_rows_correctable", ("remapped_rows.correctable",), values.number),
    ("remapped_rows_uncorrectable", ("remapped_rows.uncorrectable",), values.number),
    ("remapped_rows_pending", ("remapped_rows.pending",), values.flag),
    ("remapped_rows_failure", ("remapped_rows.failure",), values.flag),
    ("retired_pages_pending", ("retired_pages.pending",), values.flag),
)

# GpuFacts key -> (query-gpu names, parser); driver_version is per node.
FACT_QUERY: Query = (
    ("index", ("index",), values.number),
    ("name", ("name",), values.text),
    ("uuid", ("uuid",), values.text),
    ("bus_id", ("pci.bus_id",), values.text),
    ("serial", ("serial",), values.text),
    ("vbios_version", ("vbios_version",), values.text),
    ("memory_total_mib", ("memory.total",), values.number),
    ("pcie_max_gen", ("pcie.link.gen.max",), values.number),
    ("pcie_max_width", ("pcie.link.width.max",), values.number),
    ("pcie_gpu_max_gen", ("pcie.link.gen.gpumax",), values.number),
    ("pcie_host_max_gen", ("pcie.link.gen.hostmax",), values.number),
    ("persistence_mode", ("persistence_mode",), values.flag),
    ("ecc_enabled", ("ecc.mode.current",), values.flag),
    ("mig_enabled", ("mig.mode.current",), values.flag),
    ("power_limit_w", ("enforced.power.limit",), values.watts),
    ("power_limit_default_w", ("power.default_limit",), values.watts),
    ("power_limit_min_w", ("power.min_limit",), values.watts),
    ("power_limit_max_w", ("power.max_limit",), values.watts),
    ("compute_capability", ("compute_cap",), values.text),
    ("driver_version", ("driver_version",), values.text),
)

# Names are printed unquoted, so process_name goes last and the line is split at most
# len - 1 times: names may hold commas and spaces.
COMPUTE_APPS_FIELDS = ("pid", "used_gpu_memory", "gpu_uuid", "process_name")

class CsvRows(NamedTuple):
    fields: tuple[str, ...]
    rows: list[Row]
    dropped: int

_REFUSED_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')
_HEADER_UNIT = re.compile(r"\s*\[[^\]]*\]$")
_BUS_ID = re.compile(r"([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])")


def header_name(cell: str) -> str:
    """``"power.draw [W]"`` -> ``"power.draw"``: header cells carry the unit in brackets."""
    return _HEADER_UNIT.sub("", cell.strip())


def split_cells(line: str) -> list[str]:
    """Cells are joined by ``", "``; each is stripped (an empty cell stays ``""``)."""
    return [cell.strip() for cell in line.rstrip("\r\n").split(",")]


def _header_and_lines(text: str, fields: Iterable[str] | None) -> tuple[tuple[str, ...], list[str]]:
    """-> (fields, data lines). The header names the fields when ``fields`` is None and is
    skipped when it repeats them; ``noheader`` output has none."""
    lines = [line for line in text.splitlines() if line.strip()]
    if fields is None:
        named = tuple(header_name(cell) for cell in split_cells(lines.pop(0))) if lines else ()
    else:
        named = tuple(fields)
        if lines and tuple(header_name(cell) for cell in split_cells(lines[0])) == named:
            lines.pop(0)
    return named, lines


def parse_query_csv(text: str, fields: Iterable[str] | None = None) -> CsvRows:
    """``--query-gpu`` CSV with or without header, with or without units -> CsvRows.

    ``fields`` is required for ``noheader`` output. Each row is {field: raw cell}. Lines with
    the wrong number of cells (ECC or XID messages interleaved in loop mode) are dropped and
    counted.
    """
    named, lines = _header_and_lines(text, fields)
    rows: list[Row] = []
    dropped = 0
    for line in lines:
        cells = split_cells(line)
        if len(cells) == len(named):
            rows.append(dict(zip(named, cells)))
        else:
            dropped += 1
    return CsvRows(named, rows, dropped)


def parse_compute_apps_csv(text: str, fields: Iterable[str] | None = None) -> CsvRows:
    """``--query-compute-apps`` CSV -> CsvRows. ``process_name`` may hold commas: the cells
    left of it are split from the left, those right of it from the right."""
    named, lines = _header_and_lines(text, fields)
    if "process_name" not in named:
        return CsvRows(named, [], len(lines))
    name_at = named.index("process_name")
    after = len(named) - name_at - 1
    rows: list[Row] = []
    dropped = 0
    for line in lines:
        left = line.rstrip("\r\n").split(",", name_at)
        if len(left) != name_at + 1:
            dropped += 1
            continue
        right = left.pop().rsplit(",", after) if after else [left.pop()]
        if len(right) != after + 1:
            dropped += 1
            continue
        cells = [cell.strip() for cell in left + right]
        rows.append(dict(zip(named, cells)))
    return CsvRows(named, rows, dropped)


def processes_by_uuid(rows: Iterable[Row]) -> dict[str | None, list[Record]]:
    """Compute-apps rows -> {gpu uuid: [{"pid", "name", "gpu_memory_mib"}]}."""
    result: dict[str | None, list[Record]] = {}
    for row in rows:
        pid = values.number(row.get("pid"))
        if not isinstance(pid, int):
            continue
        result.setdefault(row.get("gpu_uuid"), []).append(
            {
                "pid": pid,
                "name": values.text(row.get("process_name")),
                "gpu_memory_mib": values.number(row.get("used_gpu_memory")),
            }
        )
    return result


def parse_help_query_gpu(text: str) -> set[str]:
    """Every field name ``--help-query-gpu`` lists, aliases included.

    Entries look like ``"clocks.current.sm" or "clocks.sm"`` on a line of their own, each
    followed by a line of description.
    """
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith('"'):
            names.update(re.findall(r'"([^"]+)"', line))
    return names


def choose_fields(query: Query, available: set[str] | None) -> Chosen:
    """{record field: the first of its names this nvidia-smi knows, or None}. With
    ``available`` None (help unreadable) the newest names are tried."""
    chosen: Chosen = {}
    for field, names, _ in query:
        if available is None:
            chosen[field] = names[0]
        else:
            chosen[field] = next((name for name in names if name in available), None)
    return chosen


def refused_field(output: str | None) -> str | None:
    """The name in nvidia-smi's ``Field "X" is not a valid field to query.``, or None."""
    match = _REFUSED_FIELD.search(output or "")
    return match.group(1) if match else None


class FieldChooser:
    """The names this node's nvidia-smi accepts, learnt from its help and then from its
    refusals: one chooser per node serves every query, so a name refused once is never asked
    again."""

    def __init__(self, available: set[str] | None) -> None:
        self.available = available  # names from --help-query-gpu, or None when unreadable
        self.refused: set[str] = set()

    def choose(self, query: Query) -> Chosen:
        """{record field: its name from the help, or once that was refused, the next of its
        names not refused yet (the help may not list an older spelling the query takes)}."""
        chosen = choose_fields(query, self.available)
        for field, names, _ in query:
            if any(name in self.refused for name in names):
                untried = [name for name in names if name not in self.refused]
                chosen[field] = untried[0] if untried else None
        return chosen

    def refuse(self, output: str, chosen: Chosen) -> bool:
        """Remember the name ``output`` says was refused -> True when it was one of
        ``chosen``'s (the query is worth retrying without it)."""
        name = refused_field(output)
        if name is None or name not in chosen.values():
            return False
        self.refused.add(name)
        return True


def query_names(chosen: Chosen) -> list[str]:
    """The distinct names to put in ``--query-gpu=``, in table order."""
    names: list[str] = []
    for name in chosen.values():
        if name is not None and name not in names:
            names.append(name)
    return names


def read_row(row: Row, query: Query, chosen: Chosen) -> Record:
    """One CSV row -> {field: typed value} for the fields of ``query``."""
    out: Record = {}
    for field, _, parse in query:
        name = chosen.get(field)
        out[field] = parse(row.get(name)) if name is not None else None
    return out


def gpu_record(row: Row, chosen: Chosen, processes: dict[str | None, list[Record]]) -> Record | None:
    """One ``--query-gpu`` row -> a GPU record (GPU_FIELDS). None without a usable index."""
    typed = read_row(row, SAMPLE_QUERY, chosen)
    if not isinstance(typed["index"], int):
        return None
    record = new_gpu_record(typed["index"])
    record.update(typed)
    record["clock_event_reasons"] = decode_clock_event_reasons(record["clock_event_reasons_mask"])
    record["processes"] = processes.get(record["uuid"], [])
    if any("gpu is lost" in cell.lower() for cell in row.values()):
        record["error"] = GPU_LOST
    return record


def describe_failure(returncode: int | None, output: str | None) -> str:
    """Plain words for a failed nvidia-smi run (exit codes from nvidia-smi(1))."""
    text = (output or "").strip()
    low = text.lower()
    first = text.splitlines()[0].strip() if text else "no output"
    if returncode is None:
        return "nvidia-smi could not run: %s" % first
    if "version mismatch" in low:
        return (
            "NVIDIA driver/library version mismatch (driver updated without a reboot?): "
            "reboot or reload the nvidia kernel modules"
        )
    if returncode == 15 or "gpu is lost" in low:
        bus = lost_bus_id(text)
        where = "GPU %s" % bus if bus else "a GPU"
        return "%s is lost (fell off the bus?): reboot to recover it" % where
    if returncode == 9 or "couldn't communicate with the nvidia driver" in low:
        return "nvidia-smi couldn't communicate with the NVIDIA driver: is the driver loaded?"
    if returncode == 12 or "libnvidia-ml.so" in low:
        return "nvidia-smi couldn't find the NVML library (libnvidia-ml.so): driver install broken?"
    return "nvidia-smi failed (exit %d): %s" % (returncode, first)


def lost_bus_id(text: str | None) -> str | None:
    """The PCI bus id named in a "GPU is lost" message, or None."""
    for line in (text or "").splitlines():
        if "lost" in line.lower():
            match = _BUS_ID.search(line)
            if match:
                return match.group(0)
    return None


def same_bus_id(a: str | None, b: str | None) -> bool:
    """``00000000:3B:00.0`` and ``0000:3b:00.0`` are the same GPU."""
    key = pci_key(a)
    return key is not None and key == pci_key(b)


def run_smi(argv: list[str], timeout_s: float) -> tuple[int | None, str]:
    """Run nvidia-smi once -> (exit code or None when it could not run, stdout + stderr)."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        return None, "%s not found" % argv[0]
    except subprocess.TimeoutExpired:
        return None, "no answer within %d s" % timeout_s
    except OSError as exc:
        return None, str(exc)
    return done.returncode, done.stdout


class SmiLoop:
    """One long-lived ``nvidia-smi ... -lms N`` and a thread keeping its latest row per GPU.

    When the process dies it is restarted with growing delays; meanwhile ``failure`` says why
    in plain words.
    """

    def __init__(
        self,
        argv: list[str],
        fields: Iterable[str],
        relearn: Callable[[str], tuple[list[str], list[str]] | None] | None = None,
        describe: Callable[[int | None, str], str] | None = None,
    ) -> None:
        self.argv = argv
        # why a run stopped, in the tool's words (hl-smi's loop is read by this class too)
        self.describe = describe if describe is not None else describe_failure
        self.fields = tuple(fields)
        # relearn(output) -> (argv, fields) without a name nvidia-smi refused, or None
        self.relearn = relearn
        self.learning = False  # restarted without a refused field; no row since
        self.dropped = 0  # lines that were not rows of this query
        self.failure: str | None = None
        self.lost_bus_id: str | None = None
        self._run_started = time.monotonic()
        self._rows: dict[str | None, tuple[Row, float]] = {}  # index cell -> (row, when)
        self._lock = threading.Lock()
        self._settled = threading.Event()  # first rows arrived or the first run failed
        self._stop = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._thread = threading.Thread(target=self._run, name="%s-loop" % argv[0].rsplit("/", 1)[-1], daemon=True)
        self._thread.start()

    def latest(self, wait_s: float) -> tuple[list[tuple[Row, float]], str | None]:
        """-> ([(row, age in s)], failure). Waits up to ``wait_s`` for the very first rows."""
        self._settled.wait(wait_s)
        now = time.monotonic()
        with self._lock:
            rows = [(row, now - at) for row, at in self._rows.values()]
            return rows, self.failure

    def healthy(self) -> bool:
        """Rows flowing from a process that has run HEALTHY_RUN_S: a loop that dies again
        shortly after each restart is still one failure, not a new one each time."""
        with self._lock:
            running_s = time.monotonic() - self._run_started
            return self.failure is None and running_s >= HEALTHY_RUN_S

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            code, output = self._run_once()
            if self._stop.is_set():
                return
            retry = self.relearn(output) if self.relearn is not None else None
            if retry is not None:  # a refused field: ask again without it, at once
                self.argv, self.fields = retry[0], tuple(retry[1])
                self.learning = True
                continue
            self.learning = False
            if time.monotonic() - self._run_started >= HEALTHY_RUN_S:
                attempt = 0
            with self._lock:
                self.failure = self.describe(code, output)
                self.lost_bus_id = lost_bus_id(output)
            self._settled.set()
            self._stop.wait(RESTART_DELAYS_S[min(attempt, len(RESTART_DELAYS_S) - 1)])
            attempt += 1

    def _run_once(self) -> tuple[int | None, str]:
        """Start the loop and read rows until it exits -> (exit code or None, its other lines)."""
        with self._lock:
            if self._stop.is_set():
                return None, "stopped"
            self._run_started = time.monotonic()
            try:
                self._proc = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    universal_newlines=True,
                    errors="replace",
                )
            except FileNotFoundError:
                return None, "%s not found" % self.argv[0]
            except OSError as exc:
                return None, str(exc)
            proc = self._proc
        other: collections.deque[str] = collections.deque(maxlen=5)  # the last non-row lines: why it stopped
        assert proc.stdout is not None  # opened with stdout=PIPE
        for line in proc.stdout:
            cells = split_cells(line)
            if len(cells) != len(self.fields):
                if line.strip():
                    other.append(line.strip())
                    self.dropped += 1
                continue
            row = dict(zip(self.fields, cells))
            with self._lock:
                self._rows[row.get("index")] = (row, time.monotonic())
                self.failure = None
                self.lost_bus_id = None
                self.learning = False
            self._settled.set()
        proc.stdout.close()
        return proc.wait(), "\n".join(other)

    def close(self) -> None:
        with self._lock:
            self._stop.set()
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._thread.join(timeout=2)


class ProcessPoller:
    """``--query-compute-apps`` every few seconds in a thread: who uses which GPU."""

    def __init__(self, binary: str, refresh_s: float) -> None:
        self.argv = [
            binary,
            "--query-compute-apps=" + ",".join(COMPUTE_APPS_FIELDS),
            "--format=csv,noheader,nounits",
        ]
        self.refresh_s = refresh_s
        self.by_uuid: dict[str | None, list[Record]] = {}
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvidia-smi-apps", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            code, output = run_smi(self.argv, ONE_SHOT_TIMEOUT_S)
            if code == 0:
                table = parse_compute_apps_csv(output, COMPUTE_APPS_FIELDS)
                self.by_uuid, self.failure = processes_by_uuid(table.rows), None
            else:
                self.failure = describe_failure(code, output)
            self._stop.wait(self.refresh_s)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)  # a hung nvidia-smi must not hold up the probe's exit


class SmiCollector:
    """GPU facts and samples from nvidia-smi. Failures become problem reports and GPU
    records with ``error`` set; nothing here raises."""

    def __init__(self, problems: Problems, interval_s: float, binary: str = "nvidia-smi") -> None:
        self.problems = problems
        self.interval_s = interval_s
        self.binary = binary
        code, output = run_smi([binary, "--help-query-gpu"], ONE_SHOT_TIMEOUT_S)
        available = parse_help_query_gpu(output) if code == 0 else None
        self.chooser = FieldChooser(available or None)
        self.sample_fields = self.chooser.choose(SAMPLE_QUERY)
        self.fact_fields = self.chooser.choose(FACT_QUERY)
        self._interval_ms = max(int(interval_s * 1000), 100)
        self._waited = False
        argv, names = self._loop_argv()
        self.loop = SmiLoop(argv, names, self._relearn_loop)
        self.processes = ProcessPoller(binary, PROCESS_REFRESH_S)
        self.gpu_facts: list[Record] = []  # from the last facts(): who the GPUs are when no rows come
        self._xml: dict[str, Any] | None = None  # facts from -q -x, read once

    def _loop_argv(self) -> tuple[list[str], list[str]]:
        names = query_names(self.sample_fields)
        query = "--query-gpu=" + ",".join(names)
        argv = [self.binary, query, "--format=csv,noheader,nounits", "-lms", str(self._interval_ms)]
        return argv, names

    def _relearn_loop(self, output: str) -> tuple[list[str], list[str]] | None:
        """Called by the loop when it stopped: a refused field -> the loop's new argv."""
        if not self.chooser.refuse(output, self.sample_fields):
            return None
        self.sample_fields = self.chooser.choose(SAMPLE_QUERY)  # replaced whole: read by sample()
        return self._loop_argv()

    def facts(self) -> dict[str, Any]:
        while True:
            names = query_names(self.fact_fields)
            code, output = run_smi(
                [self.binary, "--query-gpu=" + ",".join(names), "--format=csv,noheader,nounits"],
                ONE_SHOT_TIMEOUT_S,
            )
            if code == 0 or not self.chooser.refuse(output, self.fact_fields):
                break
            self.fact_fields = self.chooser.choose(FACT_QUERY)
        facts: dict[str, Any] = {"driver_version": None, "cuda_version": None, "nvml_version": None, "gpus": []}
        if code != 0:
            self.problems.report("nvidia-smi", describe_failure(code, output))
            return facts
        gpus: list[Record] = []
        for row in parse_query_csv(output, names).rows:
            typed = read_row(row, FACT_QUERY, self.fact_fields)
            facts["driver_version"] = typed.pop("driver_version")
            if isinstance(typed["index"], int):
                gpu = new_gpu_facts(typed["index"])
                gpu.update(typed)
                gpus.append(gpu)
        if self._xml is None:
            self._xml = self._read_xml()
        facts["cuda_version"] = self._xml.get("cuda_version")
        facts["gpus"] = merge_thresholds(gpus, self._xml.get("gpus", []))
        self.gpu_facts = facts["gpus"]
        return facts

    def _read_xml(self) -> dict[str, Any]:
        """Thresholds and CUDA version from one ``-q -x`` (slow: never per tick). Without it
        those stay unknown, which is not worth a problem report."""
        code, output = run_smi([self.binary, "-q", "-x"], XML_TIMEOUT_S)
        if code != 0:
            return {}
        try:
            return parse_smi_xml(output)[0]
        except ValueError:
            return {}

    def sample(self) -> list[Record]:
        # Only the first sample waits for the loop's first rows: a wedged driver keeps
        # nvidia-smi alive and silent, and must not slow every host sample down with it.
        rows, failure = self.loop.latest(0 if self._waited else FIRST_ROWS_WAIT_S)
        self._waited = True
        if failure is None and not rows and self.loop.learning:  # busy, not hung: no problem
            return self._failed_records(rows, "finding the fields this nvidia-smi accepts")
        if failure is None and not rows:
            failure = "nvidia-smi is running but has printed nothing (a hung driver?)"
        if failure is not None:
            self.problems.report("nvidia-smi", failure)
            return self._failed_records(rows, failure)
        if self.loop.healthy():
            self.problems.clear("nvidia-smi")
        self._report("nvidia-smi processes", self.processes.failure)
        by_uuid = self.processes.by_uuid
        stale_after_s = max(5 * self.interval_s, 5.0)
        records: list[Record] = []
        for row, age_s in rows:
            record = gpu_record(row, self.sample_fields, by_uuid)
            if record is None:
                continue
            if age_s > stale_after_s:
                record = error_record(
                    record["index"],
                    record["uuid"],
                    record["name"],
                    "nvidia-smi has not reported this GPU for %d s" % age_s,
                )
            records.append(record)
        records.sort(key=lambda r: r["index"])
        return records

    def _failed_records(self, rows: list[tuple[Row, float]], failure: str) -> list[Record]:
        """Error records for every GPU known from facts or earlier rows; the one a "GPU is
        lost" message names gets the same words as with NVML."""
        known: dict[int, tuple[str | None, str | None, str | None]] = {}
        for row, _ in rows:
            typed = read_row(row, SAMPLE_QUERY[:3], self.sample_fields)
            if isinstance(typed["index"], int):
                known[typed["index"]] = (typed["uuid"], typed["name"], None)
        for gpu in self.gpu_facts:
            known[gpu["index"]] = (gpu["uuid"], gpu["name"], gpu["bus_id"])
        lost = self.loop.lost_bus_id
        records: list[Record] = []
        for index in sorted(known):
            uuid, name, bus_id = known[index]
            error = GPU_LOST if lost and same_bus_id(bus_id, lost) else failure
            records.append(error_record(index, uuid, name, error))
        return records

    def _report(self, source: str, failure: str | None) -> None:
        if failure is None:
            self.problems.clear(source)
        else:
            self.problems.report(source, failure)

    def close(self) -> None:
        self.loop.close()
        self.processes.close()


def merge_thresholds(gpus: list[Record], xml_gpus: list[Record]) -> list[Record]:
    """Copy temperature thresholds from ``-q -x`` facts onto CSV facts of the same UUID."""
    by_uuid = {gpu.get("uuid"): gpu for gpu in xml_gpus if gpu.get("uuid")}
    for gpu in gpus:
        source = by_uuid.get(gpu.get("uuid"))
        if source is not None:
            for key in THRESHOLD_FIELDS:
                gpu[key] = source.get(key)
    return gpus
