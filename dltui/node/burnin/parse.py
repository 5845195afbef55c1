"""Readers of the stressors' own output: gpu_burn, dcgmi diag -j, stress-ng, fio, iperf3 and
the PyTorch matmul check. Pure functions from text (and exit codes) to plain results.

Shipped to nodes with the burn-in driver (it writes each GPU's progress into status.json), so:
stdlib only, Python 3.8 syntax. Every reader answers for what it saw and says what it could
not see; none of them ever calls a run good because a tool exited 0 (gpu_burn exits 0 with a
FAULTY GPU; dcgmi's exit code and JSON must agree).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

EVIDENCE_CHARS = 240  # a tool's own words kept as evidence: enough for one message


def shorten(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with "…" where it was cut."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


# --- gpu_burn ------------------------------------------------------------------------------

_PROGRESS = re.compile(r"^\s*(\d+(?:\.\d+)?)%\s+proc'd:")
_PROCD = re.compile(r"(-?\d+)\s*\(\s*(\d+(?:\.\d+)?)\s*Gflop/s\)")
_ERR_ITEM = re.compile(r"(-?\d+)\s*(\((WARNING|DIED)!\))?")
_TEMP = re.compile(r"(-?\d+)\s*C\b")
_POWER = re.compile(r"(\d+(?:\.\d+)?)\s*W\b")
_TESTED = re.compile(r"^Tested (\d+) GPUs:")
_FINAL = re.compile(r"^\s*GPU (\d+): (OK|FAULTY)\b")
_LISTED = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)")


@dataclass
class GpuBurnGpu:
    index: int
    procd: int = 0  # the most iterations seen; -1 when the child died
    gflops: list[float] = field(default_factory=list)  # one per progress line
    errors: int = 0  # summed over summaries (gpu_burn resets the count after each)
    died: bool = False
    warned: bool = False
    final: str | None = None  # "OK" / "FAULTY" from the closing block
    temps_c: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "procd": self.procd,
            "errors": self.errors,
            "died": self.died,
            "final": self.final,
            "gflops_last": self.gflops[-1] if self.gflops else None,
        }


@dataclass
class GpuBurnResult:
    gpus: dict[int, GpuBurnGpu] = field(default_factory=dict)
    percent: float | None = None  # the last progress line's
    tested: int | None = None  # N of "Tested N GPUs:"; None = the run never finished
    listed: dict[int, str] = field(default_factory=dict)  # index -> name, from the header
    messages: list[str] = field(default_factory=list)  # lines that say something went wrong

    def gpu(self, index: int) -> GpuBurnGpu:
        if index not in self.gpus:
            self.gpus[index] = GpuBurnGpu(index)
        return self.gpus[index]

    def problems(self, expected_gpus: int | None = None) -> dict[int | None, list[str]]:
        """Why this run fails, per GPU (None = the whole run). Empty = every GPU did work, had
        no errors, did not die and ended OK, and the closing block was there."""
        out: dict[int | None, list[str]] = {}
        if self.tested is None:
            said = ("; its last words: " + shorten(self.messages[-1])) if self.messages else ""
            out.setdefault(None, []).append(
                "gpu_burn never printed 'Tested N GPUs:' (killed, crashed or timed out)" + said
            )
        elif expected_gpus is not None and self.tested != expected_gpus:
            out.setdefault(None, []).append(
                "gpu_burn tested %d GPUs, %d expected" % (self.tested, expected_gpus)
            )
        for gpu in sorted(self.gpus.values(), key=lambda g: g.index):
            why = []
            if gpu.final == "FAULTY":
                why.append("gpu_burn: FAULTY (results differed from the reference)")
            if gpu.died:
                why.append("gpu_burn: its worker DIED!")
            if gpu.errors:
                why.append("gpu_burn: %d computation errors" % gpu.errors)
            if gpu.procd <= 0 and not gpu.died:
                why.append("gpu_burn: no iterations done (proc'd 0): the worker never started")
            if self.tested is not None and gpu.final is None:
                why.append("gpu_burn: no OK/FAULTY line for this GPU")
            if why:
                out[gpu.index] = why
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "percent": self.percent,
            "tested": self.tested,
            "messages": self.messages[-10:],
            "gpus": [g.to_dict() for g in sorted(self.gpus.values(), key=lambda g: g.index)],
        }


class GpuBurnParser:
    """Incremental: feed chunks as they arrive (progress is rewritten with \\r, not \\n)."""

    def __init__(self) -> None:
        self.result = GpuBurnResult()
        self._partial = ""
        self._since_summary: dict[int, int] = {}  # errors in the current summary period

    def feed(self, text: str) -> None:
        text = self._partial + text
        pieces = re.split(r"[\r\n]", text)
        self._partial = pieces.pop()
        for piece in pieces:
            self._line(piece)

    def finish(self) -> GpuBurnResult:
        if self._partial:
            self._line(self._partial)
            self._partial = ""
        self._close_period()
        return self.result

    def _close_period(self) -> None:
        for index, count in self._since_summary.items():
            self.result.gpu(index).errors += count
        self._since_summary = {}

    def _line(self, line: str) -> None:
        res = self.result
        m = _PROGRESS.match(line)
        if m:
            res.percent = float(m.group(1))
            self._progress(line)
            return
        stripped = line.strip()
        if stripped.startswith("Summary at:"):
            self._close_period()  # gpu_burn resets its error counts after each summary
            return
        m = _TESTED.match(stripped)
        if m:
            res.tested = int(m.group(1))
            return
        m = _FINAL.match(line)
        if m and res.tested is not None:
            res.gpu(int(m.group(1))).final = m.group(2)
            return
        m = _LISTED.match(stripped)
        if m:
            res.listed[int(m.group(1))] = m.group(2)
            res.gpu(int(m.group(1)))
            return
        low = stripped.lower()
        if any(w in low for w in ("error", "fail", "abort", "no clients", "couldn't", "cannot")):
            res.messages.append(stripped[:300])

    def _progress(self, line: str) -> None:
        body = line.split("proc'd:", 1)[1]
        procd_part, _, rest = body.partition("errors:")
        errors_part, _, temps_part = rest.partition("temps:")
        temps_part, _, power_part = temps_part.partition("power:")
        for index, (count, gflops) in enumerate(_PROCD.findall(procd_part)):
            gpu = self.result.gpu(index)
            n = int(count)
            if n < 0:
                gpu.died = True
            gpu.procd = max(gpu.procd, n) if not gpu.died else -1
            gpu.gflops.append(float(gflops))
        items = [s for s in re.split(r"\s+-\s*|-\s+", errors_part) if s.strip()]
        for index, item in enumerate(items):
            m = _ERR_ITEM.search(item)
            if not m:
                continue
            gpu = self.result.gpu(index)
            self._since_summary[index] = max(self._since_summary.get(index, 0), int(m.group(1)))
            if m.group(3) == "DIED":
                gpu.died = True
                gpu.procd = -1
            elif m.group(3) == "WARNING":
                gpu.warned = True
        for index, temp in enumerate(_TEMP.findall(temps_part)):
            self.result.gpu(index).temps_c.append(int(temp))


def parse_gpu_burn(text: str) -> GpuBurnResult:
    parser = GpuBurnParser()
    parser.feed(text)
    return parser.finish()


# --- dcgmi diag -j -------------------------------------------------------------------------

_DCGM_ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")  # 4.x, 3.x


@dataclass
class DcgmResult:
    version: str | None = None
    # {category, name, gpu, status, errors: [{"id", "message"}], info: [str]}: one per result
    tests: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exit_code: int | None = None
    error: str | None = None  # the JSON could not be read, or DCGM's runtime error

    @property
    def verdict(self) -> str:
        """pass / warn / fail / unknown. Any non-zero exit is a failure; exit 0 passes only
        when every test passed or was skipped."""
        if self.error is not None or not self.tests:
            return "fail" if self.exit_code not in (None, 0) else "unknown"
        statuses = {t["status"] for t in self.tests}
        if "fail" in statuses or self.exit_code not in (None, 0):
            return "fail"
        if "warn" in statuses or self.warnings:
            return "warn"
        return "pass"

    def failed(self) -> list[dict[str, Any]]:
        return [t for t in self.tests if t["status"] in ("fail", "warn")]

    def evidence(self, gpu: int | None) -> str:
        """DCGM's own words for what failed or warned on ``gpu`` (and on no GPU in
        particular): ``memory fail: Found 12 faulty memory elements on GPU 2 (DCGM error
        52)``; its info lines only where a test gave no error."""
        parts = []
        for t in self.failed():
            if t["gpu"] is not None and t["gpu"] != gpu:
                continue
            said = ["%s (DCGM error %s)" % (e["message"], e["id"]) if e["id"] is not None
                    else e["message"] for e in t["errors"]] or t["info"][-1:]
            parts.append("%s %s" % (t["name"], t["status"]) + (": " + "; ".join(said) if said else ""))
        return shorten("; ".join(parts))


def parse_dcgm(text: str, exit_code: int | None = None) -> DcgmResult:
    """``dcgmi diag -r N -j`` output of DCGM 3.x or 4.x; unknown keys are ignored. A result's
    errors (4.x ``warnings`` with ``error_id``) and its ``info`` lines are kept apart: an info
    line ("Allocated … bytes") never stands in for an error."""
    res = DcgmResult(exit_code=exit_code)
    try:
        doc = json.loads(text[text.find("{"):] if "{" in text else text)
    except ValueError as exc:
        said = shorten(text.strip()) if text.strip() else ""
        res.error = "dcgmi diag printed no JSON" + (": " + said if said else ": %s" % exc)
        return res
    root = None
    if isinstance(doc, dict):
        for key in _DCGM_ROOTS:
            if isinstance(doc.get(key), dict):
                root = doc[key]
                break
    if root is None:
        res.error = "dcgmi diag JSON without a 'DCGM Diagnostic' root"
        return res
    meta = doc.get("metadata") or root.get("metadata") or {}
    if isinstance(meta, dict):
        res.version = meta.get("version") or meta.get("DCGM Version")
    if root.get("runtime_error"):
        res.error = "dcgmi diag: " + shorten(str(root["runtime_error"]))
    for cat in root.get("test_categories") or []:
        for test in cat.get("tests") or []:
            summary = test.get("test_summary") or {}
            for r in test.get("results") or []:
                res.tests.append(_dcgm_test(cat, test, r, _int(r.get("entity_id", r.get("gpu_id")))))
            if summary.get("status") and not test.get("results"):
                res.tests.append(_dcgm_test(cat, test, summary, None))
            for w in test.get("warnings") or []:
                res.warnings.append(_dcgm_errors([w])[0]["message"])
    return res


def _dcgm_test(cat: dict[str, Any], test: dict[str, Any], r: dict[str, Any], gpu: int | None) -> dict[str, Any]:
    return {
        "category": cat.get("category"),
        "name": test.get("name"),
        "gpu": gpu,
        "status": str(r.get("status", "")).lower(),
        "errors": _dcgm_errors(r.get("warnings") or r.get("errors") or []),
        "info": [shorten(x) for x in _texts(r.get("info"))],
    }


def _dcgm_errors(value: Any) -> list[dict[str, Any]]:
    """DCGM's error entries ({"error_id", "warning"} in 4.x; strings or dicts in 3.x)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for w in items:
        if isinstance(w, dict):
            text = w.get("warning") or w.get("message") or w.get("error") or ""
            out.append({"id": _int(w.get("error_id")), "message": shorten(str(text))})
        elif w:
            out.append({"id": None, "message": shorten(str(w))})
    return out


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(x) for x in value if x]
    return [str(value)] if value else []


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- stress-ng -----------------------------------------------------------------------------

STRESS_NG_EXIT = {
    0: ("pass", "stress-ng passed (with --verify)"),
    1: ("inconclusive", "stress-ng: usage or harness error"),
    2: ("fail", "stress-ng: a stressor failed (verification included): CPU or RAM fault"),
    3: ("inconclusive", "stress-ng: not enough resources to run"),
    4: ("inconclusive", "stress-ng: a stressor is not implemented here"),
    5: ("fail", "stress-ng: killed by an unexpected signal"),
    6: ("fail", "stress-ng: a stressor exited unexpectedly"),
    7: ("inconclusive", "stress-ng: metrics untrustworthy"),
}


def stress_ng_verdict(exit_code: int | None, output: str = "") -> dict[str, str]:
    """{"verdict": pass|fail|inconclusive|unknown, "reason"}: PASS only on exit 0. Not
    passing, the reason ends with stress-ng's own words from ``output`` (its log)."""
    v = _stress_ng_exit(exit_code)
    said = stress_ng_words(output) if v["verdict"] != "pass" else ""
    return dict(v, reason=v["reason"] + (": " + said if said else ""))


def stress_ng_words(output: str) -> str:
    """What stress-ng said went wrong: its ``fail:`` and ``error:`` lines, else its last line
    that is not ``info:``."""
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    bad = [x for x in lines if re.search(r"\b(fail|error):", x)]
    if not bad:
        bad = [x for x in lines if "info:" not in x][-1:]
    return shorten("; ".join(bad))


def _stress_ng_exit(exit_code: int | None) -> dict[str, str]:
    if exit_code is None:
        return {"verdict": "unknown", "reason": "stress-ng did not finish (no exit code)"}
    if exit_code < 0:
        return {"verdict": "fail", "reason": "stress-ng was killed by signal %d" % -exit_code}
    verdict, reason = STRESS_NG_EXIT.get(
        exit_code, ("inconclusive", "stress-ng exited %d (undocumented)" % exit_code)
    )
    return {"verdict": verdict, "reason": reason + " (exit %d)" % exit_code}


# --- fio -----------------------------------------------------------------------------------


def parse_fio(text: str) -> dict[str, Any]:
    """fio --output-format=json -> {"error", "jobs": [{name, error, read/write bw, iops}]}.

    fio may print notes before the JSON; the document starts at the first '{' of a line."""
    start = text.find("\n{") + 1 if not text.lstrip().startswith("{") else text.find("{")
    try:
        doc = json.loads(text[start:])
    except ValueError as exc:
        said = [x.strip() for x in text.splitlines() if x.strip().startswith("fio:")]
        if said:  # fio stopped before its report: its own lines say why
            return {"error": shorten("; ".join(said)), "jobs": []}
        return {"error": "fio printed no JSON: %s" % exc, "jobs": []}
    said = [x.strip() for x in text[:start].splitlines() if x.strip().startswith("fio:")]
    jobs = []
    for job in doc.get("jobs") or []:
        entry = {"name": job.get("jobname"), "error": job.get("error", 0)}
        for side in ("read", "write"):
            part = job.get(side) or {}
            entry[side + "_bytes_per_s"] = part.get("bw_bytes")
            entry[side + "_iops"] = part.get("iops")
            pct = (part.get("clat_ns") or {}).get("percentile") or {}
            entry[side + "_clat_p99_ns"] = pct.get("99.000000")
        jobs.append(entry)
    bad = [j for j in jobs if j["error"]]
    return {
        "error": _fio_error(bad[0], said) if bad else None,
        "version": doc.get("fio version"),
        "jobs": jobs,
    }


def _fio_error(job: dict[str, Any], said: list[str]) -> str:
    """``fio job seqwrite: error 28: fio: io_u error on file …: No space left on device``."""
    head = "fio job %s: error %s" % (job["name"], job["error"])
    words = [x for x in said if "error" in x.lower()][:1]
    if not words and isinstance(job["error"], int) and job["error"] > 0:
        words = [os.strerror(job["error"])]
    return shorten(head + (": " + words[0] if words else ""))


# --- iperf3 --------------------------------------------------------------------------------


def parse_iperf3(text: str) -> dict[str, Any]:
    """iperf3 -J -> {"error", "sent_bits_per_s", "received_bits_per_s", "retransmits"}."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return {"error": "iperf3 printed no JSON: %s" % exc}
    if doc.get("error"):
        return {"error": "iperf3: %s" % doc["error"]}
    end = doc.get("end") or {}
    sent, received = end.get("sum_sent") or {}, end.get("sum_received") or {}
    return {
        "error": None,
        "sent_bits_per_s": sent.get("bits_per_second"),
        "received_bits_per_s": received.get("bits_per_second"),
        "retransmits": sent.get("retransmits"),
    }


# --- the PyTorch matmul check --------------------------------------------------------------


def parse_matmul(lines: list[str]) -> dict[int, dict[str, Any]]:
    """The check's JSON lines -> per GPU {"iters", "tflops": [...], "errors", "result"}."""
    gpus: dict[int, dict[str, Any]] = {}
    for line in lines:
        try:
            msg = json.loads(line)
            index = int(msg["gpu"])
        except (ValueError, KeyError, TypeError):
            continue
        g = gpus.setdefault(index, {"iters": 0, "tflops": [], "errors": 0, "result": None})
        if "result" in msg:
            g["result"] = str(msg["result"])
            continue
        g["iters"] = max(g["iters"], int(msg.get("iters") or 0))
        if msg.get("tflops") is not None:
            g["tflops"].append(float(msg["tflops"]))
        g["errors"] = max(g["errors"], int(msg.get("errors") or 0))
    return gpus


# --- nccl-tests ----------------------------------------------------------------------------

_NCCL_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)", re.MULTILINE)
_NCCL_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", re.MULTILINE)


def parse_nccl(text: str) -> dict[str, Any]:
    """nccl-tests' footer: {"out_of_bounds": int|None, "avg_busbw_gbps": float|None,
    "max_busbw_gbps": the largest out-of-place busbw of the size table, or None}."""
    oob = _NCCL_OOB.search(text)
    avg = _NCCL_AVG.search(text)
    busbw = []
    for line in text.splitlines():
        cols = line.split()
        # size count type redop time algbw busbw error ...: a data row starts with two integers
        if len(cols) >= 8 and cols[0].isdigit() and cols[1].isdigit():
            try:
                busbw.append(float(cols[6]))
            except ValueError:
                pass
    return {
        "out_of_bounds": int(oob.group(1)) if oob else None,
        "avg_busbw_gbps": float(avg.group(1)) if avg else None,
        "max_busbw_gbps": max(busbw) if busbw else None,
    }
