"""A node's window from Prometheus: its series found by the Prometheus source's own node rule,
asked for with one range query a family, laid on one time grid, NaN where nothing was there.

Finding the node: dltui's exporter names it (``node``); dcgm-exporter by ``Hostname`` /
``hostname``, node_exporter by ``nodename`` (``node_uname_info``) or the host part of
``instance`` — ``mapping.node_of``, as the source joins them."""

from __future__ import annotations

import asyncio
import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dltui.core.models import (
    CpuSample,
    DriveSample,
    GpuSample,
    IbPortSample,
    MemorySample,
    NetworkSample,
    PressureSample,
    Sample,
    UnitSample,
)
from dltui.node.schema import decode_clock_event_reasons, decode_critical_warning
from dltui.transport.prometheus.client import Client, PrometheusError
from dltui.transport.prometheus.mapping import host_of, node_of

from .plan import DEFAULT_SCRAPE_S, Plan, duration_s, plan
from .queries import DRIVE, FIELD, GPU, HOST, IB, NIC, UNIT, family_query

_NAN = float("nan")
Device = int | str | tuple[str, str]


class NoHistory(Exception):
    """Prometheus answered, and holds nothing of this node: said in plain words."""


@dataclass
class Found:
    """Where a node's series are: a selector a family (None: that family has none of it)."""

    dltui: str | None = None
    dcgm: str | None = None
    host: str | None = None
    instances: set[str] = field(default_factory=set)

    @property
    def any(self) -> bool:
        return bool(self.dltui or self.dcgm or self.host)


@dataclass
class FetchedWindow:
    """One node's window on one grid: ``values[(field, device)]`` a float32 array a point
    (NaN: no data there), ``plan.time(i)`` its times."""

    node: str
    plan: Plan
    source: str  # which families answered, in words
    values: dict[tuple[str, Device], array] = field(default_factory=dict)
    scrape_s: float = DEFAULT_SCRAPE_S

    def nbytes(self) -> int:
        return sum(a.itemsize * len(a) for a in self.values.values())

    def samples(self) -> Iterator[Sample]:
        """One ``Sample`` a point that holds any value (a point with none is a gap: no sample)."""
        by_scope: dict[str, dict[Device, list[tuple[str, array]]]] = {s: {} for s in (GPU, IB, NIC, UNIT, DRIVE, HOST)}
        for (name, device), values in self.values.items():
            by_scope[FIELD[name].scope].setdefault(device, []).append((name, values))
        gpus = sorted(by_scope[GPU].items(), key=lambda kv: kv[0] if isinstance(kv[0], int) else -1)
        ports, nics, units, drives, host = (
            sorted(by_scope[scope].items(), key=lambda kv: str(kv[0])) for scope in (IB, NIC, UNIT, DRIVE, HOST)
        )
        half = self.plan.step_s / 2  # a point reduces the step before it: drawn at its middle
        for i in range(self.plan.points):
            gpu_rows, port_rows, nic_rows, unit_rows, drive_rows, host_rows = (
                [(d, row) for d, row in ((d, _row(cols, i)) for d, cols in scope) if row]
                for scope in (gpus, ports, nics, units, drives, host)
            )
            if not (gpu_rows or port_rows or nic_rows or unit_rows or drive_rows or host_rows):
                continue
            sample = Sample(
                time=self.plan.time(i) - half,
                gpus=[_gpu(int(d), row) for d, row in gpu_rows],  # type: ignore[arg-type]
                ib_ports=[_port(d, row) for d, row in port_rows],  # type: ignore[arg-type]
                networks=[_nic(str(d), row) for d, row in nic_rows],
                units=[_unit(str(d), row) for d, row in unit_rows],
                drives=[_drive(str(d), row) for d, row in drive_rows],
            )
            for _, row in host_rows:
                _host(sample, row)
            yield sample


def _row(cols: list[tuple[str, array]], i: int) -> dict[str, float]:
    out = {}
    for name, values in cols:
        v = values[i]
        if v == v:
            out[name] = v
    return out


def _gpu(index: int, row: dict[str, float]) -> GpuSample:
    mask = row.pop("clock_event_reasons_mask", None)
    m = int(mask) if mask is not None else None
    fields: dict[str, Any] = row  # only GpuSample's float fields: queries.FIELDS names them
    reasons = decode_clock_event_reasons(m)
    return GpuSample(index=index, clock_event_reasons_mask=m, clock_event_reasons=reasons, **fields)


def _unit(name: str, row: dict[str, float]) -> UnitSample:
    failed, active, restarts = row.get("failed"), row.get("active"), row.get("restarts_total")
    state = "failed" if failed else "active" if active else None if active is None else "inactive"
    return UnitSample(
        name, load_state="loaded", active_state=state, restarts_total=None if restarts is None else int(restarts)
    )


def _int(value: float | None) -> int | None:
    return None if value is None else int(round(value))  # float32 of 7 % * 100 may be 6.99…


def _drive(device: str, row: dict[str, float]) -> DriveSample:
    """A drive's SMART as dltui's exporter kept it (model and serial are ``dltui_drive_info``'s
    labels, not fetched: the drive goes by its device)."""
    passed, mask = row.get("smart_passed"), _int(row.get("critical_warning_mask"))
    ints = {
        name: _int(row.get(name))
        for name in (
            "available_spare_percent", "available_spare_threshold_percent", "endurance_used_percent",
            "media_errors_total", "reallocated_sectors_total", "pending_sectors", "offline_uncorrectable_sectors",
        )
    }
    return DriveSample(
        device=device,
        smart_passed=None if passed is None else passed >= 1,
        critical_warning_mask=mask,
        critical_warnings=decode_critical_warning(mask),
        temperature_c=_int(row.get("drive_temperature_c")),
        **ints,  # type: ignore[arg-type]
    )


_HOST_PARTS = {"cpu": CpuSample, "memory": MemorySample, "pressure": PressureSample}


def _host(sample: Sample, row: dict[str, float]) -> None:
    """The host's fields (``memory.available_bytes``…) onto ``sample.cpu`` / ``.memory`` / ``.pressure``."""
    parts: dict[str, dict[str, Any]] = {}
    for name, v in row.items():
        part, attr = name.split(".", 1)
        parts.setdefault(part, {})[attr] = _int(v) if attr.endswith("_bytes") else v
    for part, kw in parts.items():
        setattr(sample, part, _HOST_PARTS[part](**kw))


def _nic(name: str, row: dict[str, float]) -> NetworkSample:
    return NetworkSample(name, rx_bytes_per_s=row.get("rx_bytes_per_s"), tx_bytes_per_s=row.get("tx_bytes_per_s"))


def _port(device: tuple[str, str], row: dict[str, float]) -> IbPortSample:
    up = row.get("up")
    downs = row.get("link_downed_total")
    name, port = device
    return IbPortSample(
        name=f"{name}:{port}",
        device=name,
        port=int(port) if port.isdigit() else None,
        state=None if up is None else ("ACTIVE" if up >= 1 else "DOWN"),
        phys_state=None if up is None else ("LinkUp" if up >= 1 else "Polling"),
        link_downed_total=None if downs is None else int(downs),
    )


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _instance_regex(host: str) -> str:
    """``instance`` values of ``host`` on any port, as a PromQL regex (RE2, anchored)."""
    return re.escape(host).replace("\\", "\\\\").replace('"', '\\"') + "(:[0-9]+)?"


def candidates(name: str, hostname: str | None = None) -> list[str]:
    """The names a node may go by in Prometheus: as dltui names it (an SSH alias, ``user@``
    and ``:port`` aside) and the host name it reported."""
    bare = name.rsplit("@", 1)[-1]
    out = [name, host_of(bare)]
    if hostname:
        out.append(hostname)
    return list(dict.fromkeys(n for n in out if n))


async def find(client: Client, names: list[str], start: float, end: float) -> Found:
    """Where the series of the node called ``names`` are, by the source's rule (``node_of``)."""
    wanted = set(names)
    matches = []
    for n in names:
        q, inst = _quote(n), _instance_regex(n)
        matches += [
            f'dltui_node_up{{node="{q}"}}',
            f'DCGM_FI_DEV_GPU_TEMP{{Hostname="{q}"}}',
            f'DCGM_FI_DEV_GPU_TEMP{{hostname="{q}"}}',
            f'DCGM_FI_DEV_GPU_TEMP{{instance=~"{inst}"}}',
            f'node_uname_info{{nodename="{q}"}}',
            f'node_uname_info{{instance=~"{inst}"}}',
        ]
    label_sets = await client.series(matches, start, end)
    inst_node = {
        ls.get("instance", ""): ls["nodename"]
        for ls in label_sets
        if ls.get("__name__") == "node_uname_info" and ls.get("nodename")
    }
    found = Found()
    dltui_names, hostnames, gpu_instances, host_instances = set(), set(), set(), set()
    for ls in label_sets:
        metric, inst = ls.get("__name__"), ls.get("instance", "")
        if metric == "dltui_node_up":
            if ls.get("node") in wanted:
                dltui_names.add(ls["node"])
                found.instances.add(inst)
        elif metric == "DCGM_FI_DEV_GPU_TEMP":
            hostname = ls.get("Hostname") or ls.get("hostname")
            if node_of(hostname, inst, inst_node) in wanted:
                found.instances.add(inst)
                if hostname:
                    hostnames.add(("Hostname" if ls.get("Hostname") else "hostname", hostname))
                else:
                    gpu_instances.add(inst)
        elif metric == "node_uname_info" and node_of(None, inst, inst_node) in wanted:
            host_instances.add(inst)
    if dltui_names:
        found.dltui = _or_selector("node", sorted(dltui_names))
    if hostnames:
        label, _ = sorted(hostnames)[0]
        found.dcgm = _or_selector(label, sorted(h for lab, h in hostnames if lab == label))
    elif gpu_instances:
        found.dcgm = _or_selector("instance", sorted(gpu_instances))
    if host_instances:
        found.host = _or_selector("instance", sorted(host_instances))
    found.instances |= host_instances
    return found


def _or_selector(label: str, values: list[str]) -> str:
    if len(values) == 1:
        return f'{label}="{_quote(values[0])}"'
    alternatives = "|".join(re.escape(v) for v in values)
    return f'{label}=~"{_quote(alternatives)}"'


async def scrape_interval(client: Client, instances: set[str]) -> float:
    """The longest scrape interval of the node's targets (``DEFAULT_SCRAPE_S`` if none say)."""
    try:
        answer = await client.targets()
    except PrometheusError:  # an old Prometheus, or one that hides its targets: the default
        return DEFAULT_SCRAPE_S
    seen = []
    for t in answer.get("activeTargets", []) if isinstance(answer, dict) else []:
        labels = t.get("labels", {}) if isinstance(t, dict) else {}
        if not instances or labels.get("instance") in instances:
            s = duration_s(str(t.get("scrapeInterval", "")))
            if s:
                seen.append(s)
    return max(seen) if seen else DEFAULT_SCRAPE_S


def no_history_words(names: list[str], url: str) -> str:
    n = names[0]
    return (
        f"no history for {n} in Prometheus at {url} (no series with node, hostname or "
        f"nodename={' / '.join(names)}, nor an instance {names[-1]}:PORT, in that window)"
    )


async def fetch(
    client: Client, name: str, window_s: float, end: float, cells: int, hostname: str | None = None
) -> FetchedWindow:
    """The window of ``window_s`` ending at ``end``, drawn ``cells`` wide (``MAX_POINTS`` for
    the finest). ``NoHistory`` when Prometheus holds nothing of the node, ``PrometheusError``
    when it cannot answer."""
    names = candidates(name, hostname)
    found = await find(client, names, end - window_s, end)
    if not found.any:
        raise NoHistory(no_history_words(names, client.url))
    scrape_s = await scrape_interval(client, found.instances)
    p = plan(window_s, end, cells, scrape_s)
    asks: list[tuple[str, str]] = []  # (family, query)
    if found.dltui:
        asks.append(("dltui", family_query("dltui", found.dltui, p, (GPU, IB, NIC, UNIT, DRIVE, HOST)) or ""))
    if found.dcgm:
        asks.append(("dcgm-exporter", family_query("other", found.dcgm, p, (GPU,)) or ""))
    if found.host:
        asks.append(("node_exporter", family_query("other", found.host, p, (IB, NIC, HOST)) or ""))
    window = FetchedWindow(name, p, "", scrape_s=scrape_s)
    # dltui's own series first: where it and another family both have a point, dltui's stays
    # (each family lays its points on its own arrays, merged in this order once all are in)
    parts = [FetchedWindow(name, p, family, scrape_s=scrape_s) for family, _ in asks]
    landed = await asyncio.gather(*(_ask(client, q, part) for (_, q), part in zip(asks, parts, strict=True)))
    for part in parts:
        for key, values in part.values.items():
            have = window.values.get(key)
            if have is None:
                window.values[key] = values
            else:
                for i, v in enumerate(values):
                    if have[i] != have[i]:
                        have[i] = v
    window.source = " + ".join(part.source for part, ok in zip(parts, landed, strict=True) if ok)
    window.source = window.source or "nothing in this window"
    return window


CHUNK_POINTS = 1000  # points a series per range query: the decoded answer of a fine window stays small


async def _ask(client: Client, query: str, window: FetchedWindow) -> bool:
    """``query`` over the window, ``CHUNK_POINTS`` at a time, laid on ``window`` as each answer
    comes: a week at one point a minute is 10,080 points a series, whose JSON decoded at once
    took ~90 MB at its peak. Whether any point landed."""
    p, landed = window.plan, False
    for first in range(0, p.points, CHUNK_POINTS):
        last = min(p.points, first + CHUNK_POINTS) - 1
        answer = await client.query_range(query, p.time(first), p.time(last), p.step_s)
        landed = _lay(window, answer) or landed
        del answer
    return landed


def _lay(window: FetchedWindow, answer: dict) -> bool:
    """The answer's points onto the window's grid; a point already there (a family asked
    earlier) is kept. Whether any point landed."""
    p, points = window.plan, window.plan.points
    landed = False
    for series in answer.get("result", []):
        labels = series.get("metric", {})
        name = labels.get("dltui_field")
        f = FIELD.get(name or "")
        if f is None:
            continue
        if f.scope == GPU:
            try:
                device: Device = int(labels.get("gpu", ""))
            except ValueError:
                continue
        elif f.scope == IB:
            device = (labels.get("device", "?"), labels.get("port", "1"))
        elif f.scope == UNIT:
            device = labels.get("unit", "?")
        elif f.scope == HOST:
            device = HOST  # one host a node
        else:
            device = labels.get("device", "?")
        key = (f.name, device)
        values = window.values.get(key)
        if values is None:
            values = window.values[key] = array("f", [_NAN]) * points
        for t, text in series.get("values", []):
            i = p.index(float(t))
            if 0 <= i < points and values[i] != values[i]:
                try:
                    x = float(text)
                except ValueError:
                    continue
                if not math.isinf(x):
                    values[i] = x
                    landed = True
    return landed
