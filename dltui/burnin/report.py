"""The burn-in report: JSON (for tools), Markdown (for the ticket) and one self-contained HTML
page with a chart per GPU (inline SVG drawn here: no script, no network).

Pure: verdicts and the runs' samples in, text out.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from dltui.config_schema import as_dict
from dltui.core.format import value_span
from dltui.core.past_alerts import PastAlert
from dltui.history.past import alert_line

from .verdict import (
    FAIL,
    NOT_RUN,
    PASS,
    WARN,
    NodeRun,
    NodeVerdict,
    Thresholds,
    VerdictStatus,
    exit_code,
    settings,
)

MAX_POINTS = 600  # per chart line: more than a 700-px chart can show
CHARTS = (  # (title, [(field, label, colour)], unit)
    (
        "Temperature",
        [("temperature_c", "core", "#d62728"), ("memory_temperature_c", "HBM", "#ff7f0e")],
        "°C",
    ),
    ("Power", [("power_w", "power", "#1f77b4"), ("power_limit_w", "limit", "#7f7f7f")], "W"),
    (
        "SM clock",
        [("sm_clock_mhz", "SM", "#2ca02c"), ("sm_clock_max_mhz", "max", "#7f7f7f")],
        "MHz",
    ),
    ("Utilisation", [("utilization_percent", "util", "#9467bd")], "%"),
)
_MARK = {PASS: "PASS", WARN: "WARN", FAIL: "FAIL", NOT_RUN: "NOT RUN"}
_COLOUR = {PASS: "#2ca02c", WARN: "#e6a700", FAIL: "#d62728", NOT_RUN: "#7f7f7f"}


def document(
    run_id: str,
    runs: Sequence[NodeRun],
    verdicts: Sequence[NodeVerdict],
    thresholds: Thresholds,
    before: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON report: plan, phases, tools, verdicts, exit code; with ``before`` (node -> its
    past alerts from Prometheus, ``history.past.NodePast.to_dict``), "before the run" too."""
    nodes = []
    for run, v in zip(runs, verdicts, strict=True):
        nodes.append(
            {
                **v.to_dict(),
                "plan": run.plan,
                "phases": run.result.get("phases"),
                "tools": {
                    k: run.result.get(k)
                    for k in ("gpu", "cpu", "disk", "net", "nccl", "bmc", "smoke", "drives")
                },
                "samples": run.sample_count,
                "hostname": run.facts.hostname if run.facts else None,
                "gpus_facts": [
                    {
                        "index": g.index,
                        "name": g.name,
                        "uuid": g.uuid,
                        "serial": g.serial,
                        "bus_id": g.bus_id,
                    }
                    for g in (run.facts.gpus if run.facts else [])
                ],
                "before_the_run": (before or {}).get(run.node),
            }
        )
    return {
        "dltui_burnin_report": 1,
        "run_id": run_id,
        "generated": time.time(),
        "exit_code": exit_code(list(verdicts)),
        "settings": as_dict(settings(thresholds)),
        "nodes": nodes,
    }


def markdown(doc: dict[str, Any]) -> str:
    """The report for a ticket. Every value in it is escaped (``md``): a node's words cannot
    break a table row, open an HTML tag or become a link."""
    out = [
        f"# Burn-in {md(doc['run_id'])}",
        "",
        f"Overall: **{_overall(doc)}** (exit {doc['exit_code']})",
        "",
        "| node | verdict | what failed or warned |",
        "|---|---|---|",
    ]
    for node in doc["nodes"]:
        failed = "<br>".join(md(_where(i) + _item_md(i)) for i in _failed(node)) or "nothing"
        out.append(f"| {md(node['node'])} | {_MARK[node['status']]}{md(_skipped(node))} | {failed} |")
    out.append("")
    for node in doc["nodes"]:
        plan = node["plan"]
        tool = (node["tools"].get("gpu") or {}).get("tool") or "none"
        out += [
            f"## {md(node['node'])}: {_MARK[node['status']]}{md(_skipped(node))}",
            "",
            f"- duration {md(plan.get('duration_s'))} s; GPU stressor: {md(tool)}; "
            f"samples: {md(node['samples'])}",
        ]
        for gpu in node["gpus_facts"]:
            out.append(
                f"- GPU {md(gpu['index'])}: {md(gpu['name'] or '?')} serial "
                f"{md(gpu['serial'] or '?')} bus {md(gpu['bus_id'] or '?')}"
            )
        out += ["", "| GPU | verdict | problems |", "|---|---|---|"]
        for g in node["gpus"]:
            bad = [i for i in g["items"] if i["status"] != PASS]
            out.append(
                f"| {md(g['index'])} | {_MARK[g['status']]} | "
                + "<br>".join(md(_item_md(i)) for i in bad)
                + " |"
            )
        node_items = [i for i in node["items"] if i["status"] != PASS]
        if node_items:
            out += ["", "Node checks:", ""] + [
                f"- {_MARK[i['status']]} {md(_item_md(i))}" for i in node_items
            ]
        passed = [i for i in node["items"] if i["status"] == PASS]
        if passed:
            out += ["", "Passed: " + "; ".join(md(f"{i['check']} ({i['evidence']})") for i in passed)]
        out += _before_md(node.get("before_the_run"))
        out.append("")
    return "\n".join(out)


def _before(past: dict[str, Any]) -> tuple[str, list[str]]:
    """"Before the run": the alerts the rules found in the node's week before it, from
    Prometheus (what it went through in production), or why there is nothing to say; plain
    text, escaped by the caller."""
    days = (past["until"] - past["since"]) / 86400
    heading = f"Before the run (the {days:g} days before it, from Prometheus):"
    if past.get("error"):
        return heading, [past["error"]]
    if not past["alerts"]:
        return heading, [f"no alert ({past.get('source')})"]
    return heading, [alert_line(PastAlert(**a)) for a in past["alerts"]]


def _before_md(past: dict[str, Any] | None) -> list[str]:
    if past is None:
        return []
    heading, lines = _before(past)
    return ["", heading, ""] + [f"- {md(line)}" for line in lines]


def _before_html(past: dict[str, Any] | None) -> str:
    if past is None:
        return ""
    heading, lines = _before(past)
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return f"<h3>{html.escape(heading)}</h3><ul>{items}</ul>"


# What changes a Markdown document's structure or makes live content (GFM): a table cell's
# "|", a line break, HTML and entities, links and images, code spans, and the escape itself.
# Emphasis (* and _) is left: gpu_burn stays readable in the raw file, and at worst it styles.
_MD_SPECIAL = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\n": " ",
        "\r": " ",
    }
)


def md(value: object) -> str:
    """``value`` as text for a Markdown line or table cell, nothing in it read as Markdown."""
    return str(value).translate(_MD_SPECIAL)


def _failed(node: dict[str, Any]) -> list[dict[str, Any]]:
    """A node's failed and warned items, node-wide first, then per GPU."""
    every = node["items"] + [i for g in node["gpus"] for i in g["items"]]
    return [i for i in every if i["status"] in (FAIL, WARN)]


def _where(item: dict[str, Any]) -> str:
    return f"GPU {item['gpu']} " if item.get("gpu") is not None else ""


def _skipped(node: dict[str, Any]) -> str:
    """" (not run: smoke, bmc)": the optional checks a node's status leaves out."""
    names = [
        i["check"]
        for i in node["items"]
        if i["status"] == NOT_RUN and i["check"] in node.get("optional", ())
    ]
    return f" (not run: {', '.join(names)})" if names else ""


def _item_md(item: dict[str, Any]) -> str:
    text = f"{item['check']}: {item['evidence']}"
    return text + (f" → {item['next_step']}" if item["next_step"] else "")


def _overall(doc: dict[str, Any]) -> str:
    return {0: "PASS", 1: "PASS with warnings", 2: "FAIL", 3: "NOT JUDGED (something did not run)"}[
        doc["exit_code"]
    ]


# --- HTML ----------------------------------------------------------------------------------


def page(doc: dict[str, Any], runs: Sequence[NodeRun]) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Burn-in {html.escape(doc['run_id'])}</title><style>",
        "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}",
        "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}",
        ".pass{color:#2ca02c}.warn{color:#b38600}.fail{color:#d62728}.notrun{color:#777}",
        ".charts{display:flex;flex-wrap:wrap;gap:8px}svg{background:#fafafa;border:1px solid #ddd}",
        "</style></head><body>",
        f"<h1>Burn-in {html.escape(doc['run_id'])}: {html.escape(_overall(doc))}</h1>",
    ]
    # The summary first: what a ticket's reader needs before any chart.
    parts.append("<table><tr><th>node</th><th>verdict</th><th>what failed or warned</th></tr>")
    for node in doc["nodes"]:
        failed = "<br>".join(html.escape(_where(i) + _item_md(i)) for i in _failed(node))
        parts.append(
            f"<tr><td>{html.escape(node['node'])}</td><td>{_badge(node['status'])}"
            f"<span class='notrun'>{html.escape(_skipped(node))}</span></td>"
            f"<td>{failed or 'nothing'}</td></tr>"
        )
    parts.append("</table>")
    by_node = {r.node: r for r in runs}
    for node in doc["nodes"]:
        parts.append(
            f"<h2>{html.escape(node['node'])}: {_badge(node['status'])}"
            f"<span class='notrun'>{html.escape(_skipped(node))}</span></h2>"
        )
        parts.append("<table><tr><th>GPU</th><th>verdict</th><th>evidence and next step</th></tr>")
        for g in node["gpus"]:
            bad = [i for i in g["items"] if i["status"] != PASS] or g["items"][:1]
            cell = "<br>".join(html.escape(_item_md(i)) for i in bad)
            parts.append(
                f"<tr><td>{html.escape(str(g['index']))}</td><td>{_badge(g['status'])}</td>"
                f"<td>{cell}</td></tr>"
            )
        for i in node["items"]:
            parts.append(
                f"<tr><td>node</td><td>{_badge(i['status'])}</td>"
                f"<td>{html.escape(_item_md(i))}</td></tr>"
            )
        parts.append("</table>")
        parts.append(_before_html(node.get("before_the_run")))
        run = by_node.get(node["node"])
        if run is not None:
            parts.append(_charts(run))
    parts.append("</body></html>")
    return "\n".join(parts)


def _badge(status: VerdictStatus) -> str:
    cls = status.replace(" ", "")
    return f"<b class='{cls}'>{_MARK[status]}</b>"


def _charts(run: NodeRun) -> str:
    """A chart per GPU from the run's fold: a bounded low/high envelope per field."""
    fold = run.folded()
    load = run.phase("load")
    out = []
    for index in sorted(fold.envelopes):
        env = fold.envelopes[index]
        out.append(f"<h3>GPU {html.escape(str(index))}</h3><div class='charts'>")
        for title, lines, unit in CHARTS:
            data = [(label, colour, env.points(name)) for name, label, colour in lines]
            out.append(_svg(title, unit, [d for d in data if d[2]], load))
        out.append("</div>")
    return "\n".join(out)


def _thin(times: list[float], values: list[float]) -> list[tuple[float, float]]:
    """At most MAX_POINTS, each bucket's highest value kept (a spike must still show)."""
    if len(values) <= MAX_POINTS:
        return list(zip(times, values, strict=True))
    step = len(values) / MAX_POINTS
    out = []
    for b in range(MAX_POINTS):
        lo, hi = int(b * step), max(int((b + 1) * step), int(b * step) + 1)
        out.append((times[lo], max(values[lo:hi])))
    return out


def svg_chart(
    title: str,
    unit: str,
    times: list[float],
    columns: Mapping[str, Sequence[float | None]],
    lines: Sequence[tuple[str, str, str]],
    load: tuple[float, float] | None,
    width: int = 340,
    height: int = 150,
) -> str:
    data = []
    for field_name, label, colour in lines:
        column = columns.get(field_name, ())
        kept = [i for i, v in enumerate(column) if v is not None]
        if kept:
            values = [float(column[i]) for i in kept]  # type: ignore[arg-type]
            data.append((label, colour, _thin([times[i] for i in kept], values)))
    return _svg(title, unit, data, load, width, height)


def _minute_step(minutes: float) -> float:
    """A round tick step giving 3 to 6 ticks over ``minutes``."""
    for step in (0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 240, 480, 720):
        if minutes / step <= 6:
            return float(step)
    return 1440.0


def _svg(
    title: str,
    unit: str,
    data: Sequence[tuple[str, str, Sequence[tuple[float, float]]]],
    load: tuple[float, float] | None,
    width: int = 340,
    height: int = 150,
) -> str:
    pad_l, pad_r, pad_t, pad_b = 40, 8, 18, 18
    head = f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
    head += f"<text x='4' y='13' font-size='12'>{html.escape(title)} ({html.escape(unit)})</text>"
    if not data:
        return (
            head
            + f"<text x='{width // 2 - 30}' y='{height // 2}' font-size='12'>"
            + "not reported</text></svg>"
        )
    t0 = min(p[0] for _, _, pts in data for p in pts)
    t1 = max(p[0] for _, _, pts in data for p in pts)
    lo, hi = value_span(
        min(p[1] for _, _, pts in data for p in pts), max(p[1] for _, _, pts in data for p in pts)
    )
    span_t = (t1 - t0) or 1.0
    w, h = width - pad_l - pad_r, height - pad_t - pad_b

    def x_of(t: float) -> float:
        return pad_l + (t - t0) / span_t * w

    def xy(t: float, v: float) -> str:
        return f"{x_of(t):.1f},{pad_t + (hi - v) / (hi - lo) * h:.1f}"

    body = [head]
    if load is not None:
        a, b = max(load[0], t0), min(load[1], t1)
        if b > a:
            body.append(
                f"<rect x='{x_of(a):.1f}' y='{pad_t}' width='{(b - a) / span_t * w:.1f}' "
                f"height='{h}' fill='#eef3ff'/>"
            )
    for value, y in ((hi, pad_t + 8), ((hi + lo) / 2, pad_t + h / 2 + 4), (lo, pad_t + h)):
        body.append(f"<text x='2' y='{y:.0f}' font-size='10'>{value:.0f}</text>")
    # minutes into the run on the x axis, at a round step
    step = _minute_step(span_t / 60)
    minute = 0.0
    while minute * 60 <= span_t + 1e-6:
        x = x_of(t0 + minute * 60)
        last = (minute + step) * 60 > span_t + 1e-6
        label = f"{minute:g} min" if last else f"{minute:g}"
        anchor = "end" if last and minute > 0 else "middle" if minute else "start"
        body.append(
            f"<line x1='{x:.1f}' y1='{pad_t + h}' x2='{x:.1f}' y2='{pad_t + h + 3}' "
            "stroke='#999'/>"
            f"<text x='{x:.1f}' y='{height - 4}' font-size='10' text-anchor='{anchor}'>"
            f"{label}</text>"
        )
        minute += step
    # the legend on the title's line, right-aligned, one entry after the other
    right = width - 4
    for label, colour, _ in reversed(data):
        body.append(
            f"<text x='{right}' y='13' font-size='10' fill='{colour}' text-anchor='end'>"
            f"{html.escape(label)}</text>"
        )
        right -= 7 * len(label) + 8
    for _, colour, pts in data:
        body.append(
            f"<polyline fill='none' stroke='{colour}' stroke-width='1.2' points='"
            + " ".join(xy(t, v) for t, v in pts)
            + "'/>"
        )
    body.append("</svg>")
    return "".join(body)


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, default=str) + "\n"
