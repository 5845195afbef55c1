"""Instant queries over HTTP: stdlib urllib in a worker thread (the loop never waits),
gzip-compressed answers, Prometheus's own words when it refuses a query.

Labels are whatever a scraped target wrote (a GPU model, a mount point, a host name): an
answer whose text may hold a control character or a bidi override has every label value and
its error text cleaned here (``dltui.core.text``), before the mapping reads it."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import gzip
import json
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from dltui.core.text import clean, json_may_need_cleaning

QUERY_TIMEOUT_S = 10.0

_gc_lock = threading.Lock()
_gc_pausers = [0, False]  # how many hold the pause; whether the collector was on before it


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while a large answer is decoded and delivered.

    A 2,000-node answer decodes into millions of acyclic containers; the collector's passes
    over them (each one scanning the whole young heap again) took 60 % of the decode time and
    half of the first delivery. Nested and thread-safe: the last holder restores it."""
    with _gc_lock:
        if _gc_pausers[0] == 0:
            _gc_pausers[1] = gc.isenabled()
            gc.disable()
        _gc_pausers[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers[0] -= 1
            if _gc_pausers[0] == 0 and _gc_pausers[1]:
                gc.enable()


def freeze_long_lived() -> None:
    """Move every object alive now out of the cyclic collector's passes (``gc.freeze``, O(1)),
    at the end of a refresh, while the collector is still paused.

    What a refresh leaves behind (a sample for every node and GPU) lives on in the fleet state;
    left to the collector, the first 2,000-node fleet cost a 0.45 s collection just before the
    first full screen, and every later refresh one of 0.1-0.3 s. The dashboard freezes the
    heap for the same reason on every redraw (dltui/ui/heap.py) and thaws it for one full
    collection once the frozen heap has doubled, which reclaims any reference
    cycle frozen here that died since; a frozen object is otherwise freed as usual when its
    last reference goes."""
    with _gc_lock:
        gc.freeze()


class PrometheusError(Exception):
    """Prometheus could not answer: said in plain words."""


class Client:
    """Instant queries over HTTP (stdlib urllib in a worker thread: the loop never waits)."""

    def __init__(self, url: str, timeout_s: float = QUERY_TIMEOUT_S):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.queries = 0

    async def query(self, promql: str) -> dict[str, Any]:
        self.queries += 1
        return await asyncio.to_thread(self._query, promql)

    async def query_range(self, promql: str, start: float, end: float, step_s: float) -> dict[str, Any]:
        """A range query (``matrix`` answer): one point every ``step_s`` in [start, end]."""
        self.queries += 1
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
        return await asyncio.to_thread(self._api, "query_range", params)

    async def series(self, matches: list[str], start: float, end: float) -> list[dict[str, str]]:
        """The label sets of the series ``matches`` selects that have points in [start, end]."""
        self.queries += 1
        params = [("match[]", m) for m in matches] + [("start", f"{start:.3f}"), ("end", f"{end:.3f}")]
        answer = await asyncio.to_thread(self._api, "series", params, list)
        return [labels for labels in answer if isinstance(labels, dict)]

    async def targets(self) -> dict[str, Any]:
        """``/api/v1/targets``: each active target's scrape interval among its facts."""
        self.queries += 1
        return await asyncio.to_thread(self._api, "targets", {"state": "active"}, dict, "GET")

    def _query(self, promql: str) -> dict[str, Any]:
        return self._api("query", {"query": promql})

    def _api(self, path: str, params: Any, shape: type = dict, method: str = "POST") -> Any:
        form = urllib.parse.urlencode(params)
        # gzip: a 2,000-node answer is tens of MB of JSON, a few MB compressed
        request = urllib.request.Request(
            f"{self.url}/api/v1/{path}" + (f"?{form}" if method == "GET" else ""),
            data=form.encode() if method == "POST" else None,
            method=method,
            headers={"Accept-Encoding": "gzip"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                body = _decode(r.read(), r.headers.get("Content-Encoding"))
        except urllib.error.HTTPError as exc:  # a refused query: Prometheus says why in JSON
            try:
                body = _decode(exc.read(), exc.headers.get("Content-Encoding"))
            except (OSError, ValueError):
                raise PrometheusError(
                    f"Prometheus at {self.url} answered HTTP {exc.code}"
                ) from None
        except urllib.error.URLError as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {exc.reason}") from None
        except (OSError, ValueError) as exc:
            raise PrometheusError(f"Prometheus at {self.url}: {exc}") from None
        if body.get("status") != "success":
            raise PrometheusError(
                f"Prometheus at {self.url} refused a query: {body.get('error', body)}"
            )
        answer = body.get("data")
        if not isinstance(answer, shape):
            raise PrometheusError(f"Prometheus at {self.url} answered a query without its data")
        return answer


# One answer decoded at a time: the queries' threads all decoding at once left the event
# loop queueing for the interpreter lock behind them (stalls of 0.2 s); waiting on this lock,
# they leave it to the loop and the one decoding. Decoding is CPU-bound: no time is lost.
_decode_lock = threading.Lock()


def _decode(raw: bytes, encoding: str | None) -> dict[str, Any]:
    """The answer as JSON; ValueError (said as the server's fault) for anything that is not
    one: nested thousands deep, cut short, or shaped otherwise. Whoever answers at the URL may
    be hostile, and a RecursionError or an IndexError here must not reach the caller."""
    with _decode_lock, gc_paused():
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        text = raw.decode()
        try:
            body = loads_in_pieces(text)
        except RecursionError:
            raise ValueError("the answer is nested too deep to be Prometheus's") from None
        except (IndexError, KeyError, TypeError, AttributeError):
            raise ValueError("the answer is not a Prometheus API answer (cut short?)") from None
    if not isinstance(body, dict):
        raise ValueError("not a Prometheus API answer")
    if json_may_need_cleaning(text):
        _clean_answer(body)
    return body


def _clean_answer(body: dict[str, Any]) -> None:
    """Every label value and the error text of an answer cleaned, in place. A loop in Python
    (not one long C call): the event loop gets its turns while a large answer is walked."""
    if isinstance(body.get("error"), str):
        body["error"] = clean(body["error"])
    data = body.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if isinstance(data, list):  # /api/v1/series: the label sets themselves
        result = [{"metric": labels} for labels in data]
    for series in result if isinstance(result, list) else ():
        labels = series.get("metric") if isinstance(series, dict) else None
        if not isinstance(labels, dict):
            continue
        for name, value in labels.items():
            if isinstance(value, str) and not value.isprintable():
                labels[name] = clean(value)


PIECE_CHARS = 1 << 18  # ~1,500 series: a few milliseconds of decoding
_RESULT = re.compile(r'"result"\s*:\s*\[')
_SPACE = re.compile(r"\s*")
_NEXT = re.compile(r',\s*\{\s*"metric"\s*:')


def loads_in_pieces(text: str) -> Any:
    """``json.loads`` of an answer, its result list a piece at a time.

    json.loads holds the interpreter lock for the whole text: 0.2 s for a 2,000-node GPU
    answer, during which the event loop (keys, frames) cannot run. Decoded a piece at a
    time, this thread lets it in between pieces. The pieces are cut where a new series
    starts: ``,{"metric":`` (spaces allowed) outside a string is structure, and inside one
    its quotes would have been escaped, so a cut never falls inside a value."""
    found = _RESULT.search(text) if len(text) >= 2 * PIECE_CHARS else None
    if found is None:
        return json.loads(text)
    start = found.end()
    series: list[Any] = []
    pos = start
    while True:
        cut = _NEXT.search(text, pos + PIECE_CHARS)
        if cut is None:
            break
        series += json.loads(f"[{text[pos : cut.start()]}]")
        pos = cut.start() + 1
    decoder = json.JSONDecoder()
    end = pos
    while True:  # the last piece, series by series, to find where the list ends
        end = _SPACE.match(text, end).end()  # type: ignore[union-attr]  # \s* always matches
        if text[end] == "]":
            break
        item, end = decoder.raw_decode(text, end)
        series.append(item)
        end = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[end] == ",":
            end += 1
    body = json.loads(text[:start] + text[end:])  # the answer around an empty list
    body["data"]["result"] = series
    return body
