"""Writes grafana/dltui-fleet.json, the Grafana (10+) dashboard for the series `dltui export`
serves. The panels are data here, so the JSON stays consistent (ids, grid, data source);
tests/integration/test_grafana_dashboard_fake_smi.py runs every panel's query against a real
Prometheus scraping `dltui export`. Run: python scripts/grafana_dashboard.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "grafana" / "dltui-fleet.json"
DS = {"type": "prometheus", "uid": "${datasource}"}
N = 'node=~"$node"'  # every query is narrowed to the nodes picked in the `node` variable

# (row title, [(panel type, title, unit, width, [(expr, legend)], options)])
ROWS: list[tuple[str, list[tuple]]] = [
    (
        "Fleet",
        [
            ("stat", "Nodes up", "none", 4, [(f"sum(dltui_node_up{{{N}}})", "up")], {"color": "green"}),
            (
                "stat",
                "Nodes not up",
                "none",
                4,
                [(f"count(dltui_node_up{{{N}}} == 0) or vector(0)", "not up")],
                {"red_from": 1},
            ),
            (
                "bargauge",
                "Open alerts by severity",
                "none",
                8,
                [(f"count by (severity) (dltui_alert{{{N}}})", "{{severity}}")],
                {},
            ),
            (
                "table",
                "Node status",
                "none",
                8,
                [(f"dltui_node_status{{{N}}}", "")],
                {"instant": True, "columns": ["node", "status"]},
            ),
            (
                "table",
                "Open alerts (how long, in seconds)",
                "s",
                24,
                [(f"time() - dltui_alert_since_timestamp_seconds{{{N}}}", "")],
                {"instant": True, "columns": ["node", "gpu", "rule", "severity", "Value"]},
            ),
        ],
    ),
    (
        "GPUs",
        [
            (
                "timeseries",
                "Hottest GPU per node",
                "celsius",
                12,
                [(f"max by (node) (dltui_gpu_temperature_celsius{{{N}}})", "{{node}}")],
                {"red_from": 85},
            ),
            (
                "timeseries",
                "Thermal margin (smallest per node, to T.Limit)",
                "celsius",
                12,
                [(f"min by (node) (dltui_gpu_temperature_margin_celsius{{{N}}})", "{{node}}")],
                {"red_below": 5},
            ),
            (
                "timeseries",
                "GPU utilisation: mean and lowest in each minute (a starving loader dips)",
                "percentunit",
                12,
                [
                    (f"avg by (node) (avg_over_time(dltui_gpu_utilization_ratio{{{N}}}[1m]))", "{{node}} mean"),
                    (f"min by (node) (min_over_time(dltui_gpu_utilization_ratio{{{N}}}[1m]))", "{{node}} lowest"),
                ],
                {"max": 1},
            ),
            (
                "timeseries",
                "Power against the enforced limit",
                "percentunit",
                12,
                [
                    (
                        f"sum by (node) (dltui_gpu_power_watts{{{N}}})"
                        f" / sum by (node) (dltui_gpu_power_limit_watts{{{N}}})",
                        "{{node}}",
                    )
                ],
                {"max": 1},
            ),
            (
                "timeseries",
                "Clock-event reasons: share of time the clocks were held down",
                "percentunit",
                12,
                [
                    (
                        f"max by (node, reason) "
                        f"(rate(dltui_gpu_clock_event_seconds_total{{{N}}}[$__rate_interval]))",
                        "{{node}} {{reason}}",
                    )
                ],
                {"max": 1},
            ),
            (
                "timeseries",
                "SM clock against its max (lowest GPU per node)",
                "percentunit",
                12,
                [
                    (
                        f"min by (node) (dltui_gpu_sm_clock_hertz{{{N}}} / dltui_gpu_sm_clock_max_hertz{{{N}}})",
                        "{{node}}",
                    )
                ],
                {"max": 1},
            ),
            (
                "timeseries",
                "GPU memory used (fullest GPU per node)",
                "percentunit",
                12,
                [
                    (
                        f"max by (node) (dltui_gpu_memory_used_bytes{{{N}}} / dltui_gpu_memory_total_bytes{{{N}}})",
                        "{{node}}",
                    )
                ],
                {"max": 1},
            ),
            (
                "table",
                "Errors: ECC (volatile), pending row remaps, PCIe replays in the last hour",
                "none",
                12,
                [
                    (f'sum by (node, gpu) (dltui_gpu_ecc_errors_total{{{N},scope="volatile"}})', "ecc"),
                    (f"sum by (node, gpu) (dltui_gpu_remapped_rows_pending{{{N}}})", "remap pending"),
                    (f"sum by (node, gpu) (increase(dltui_gpu_pcie_replays_total{{{N}}}[1h]))", "replays"),
                ],
                {"instant": True},
            ),
            (
                "table",
                "AMD GPUs: junction (hotspot) °C, XGMI link errors in the last hour",
                "none",
                12,
                [
                    (f"max by (node, gpu) (dltui_gpu_hotspot_temperature_celsius{{{N}}})", "hotspot °C"),
                    (f"sum by (node, gpu) (increase(dltui_gpu_xgmi_errors_total{{{N}}}[1h]))", "XGMI errors"),
                ],
                {"instant": True},
            ),
        ],
    ),
    (
        "Training unit",
        [
            (
                "stat",
                "Units not active",
                "none",
                4,
                [(f"count(dltui_unit_active{{{N}}} == 0) or vector(0)", "not active")],
                {"red_from": 1},
            ),
            (
                "table",
                "Unit state",
                "none",
                8,
                [(f"dltui_unit_state{{{N}}} == 1", "")],
                {"instant": True, "columns": ["node", "unit", "state"]},
            ),
            (
                "timeseries",
                "Unit restarts in the last hour",
                "none",
                6,
                [(f"sum by (node, unit) (increase(dltui_unit_restarts_total{{{N}}}[1h]))", "{{node}} {{unit}}")],
                {"red_from": 1},
            ),
            (
                "timeseries",
                "Age of the newest checkpoint",
                "s",
                6,
                [(f"max by (node) (dltui_checkpoint_age_seconds{{{N}}})", "{{node}}")],
                {},
            ),
            (
                "table",
                "Unit and checkpoint alerts (failed, flapping, stale checkpoint)",
                "none",
                24,
                [(f'dltui_alert{{{N},rule=~"unit_.*|checkpoint_stale"}}', "")],
                {"instant": True, "columns": ["node", "rule", "severity"]},
            ),
        ],
    ),
    (
        "Fabric: InfiniBand and NVLink",
        [
            (
                "stat",
                "InfiniBand ports down",
                "none",
                4,
                [(f"count(dltui_infiniband_port_up{{{N}}} == 0) or vector(0)", "down")],
                {"red_from": 1},
            ),
            (
                "table",
                "InfiniBand ports not up",
                "none",
                8,
                [(f"dltui_infiniband_port_up{{{N}}} == 0", "")],
                {"instant": True, "columns": ["node", "device", "port"]},
            ),
            (
                "timeseries",
                "InfiniBand link rate (slowest port per node)",
                "Bps",
                6,
                [(f"min by (node) (dltui_infiniband_port_rate_bytes_per_second{{{N}}})", "{{node}}")],
                {},
            ),
            (
                "timeseries",
                "InfiniBand receive / transmit",
                "Bps",
                6,
                [
                    (f"sum by (node) (dltui_infiniband_port_receive_bytes_per_second{{{N}}})", "{{node}} rx"),
                    (f"sum by (node) (dltui_infiniband_port_transmit_bytes_per_second{{{N}}})", "{{node}} tx"),
                ],
                {},
            ),
            (
                "table",
                "InfiniBand port error counters that rose in the last hour",
                "none",
                12,
                [(f"sum by (node, device, port, counter) (increase(dltui_infiniband_port_errors_total{{{N}}}[1h])) > 0", "")],
                {"instant": True, "columns": ["node", "device", "port", "counter", "Value"]},
            ),
            (
                "timeseries",
                "NVLinks up (lowest GPU per node)",
                "percentunit",
                6,
                [
                    (
                        f"min by (node) (dltui_gpu_nvlink_links_active{{{N}}} / dltui_gpu_nvlink_links{{{N}}})",
                        "{{node}}",
                    )
                ],
                {"max": 1, "red_below": 1},
            ),
            (
                "timeseries",
                "NVLink errors per second, by type",
                "none",
                6,
                [
                    (
                        f"sum by (node, type) (rate(dltui_gpu_nvlink_errors_total{{{N}}}[$__rate_interval]))",
                        "{{node}} {{type}}",
                    )
                ],
                {},
            ),
        ],
    ),
    (
        "Host",
        [
            (
                "timeseries",
                "CPU busy",
                "percentunit",
                12,
                [(f'dltui_cpu_utilization_ratio{{{N},mode="total"}}', "{{node}}")],
                {"max": 1},
            ),
            (
                "timeseries",
                "Memory used (1 - available / total)",
                "percentunit",
                12,
                [(f"1 - dltui_memory_available_bytes{{{N}}} / dltui_memory_total_bytes{{{N}}}", "{{node}}")],
                {"max": 1},
            ),
            (
                "timeseries",
                "Disk read / write",
                "Bps",
                8,
                [
                    (f"sum by (node) (dltui_disk_read_bytes_per_second{{{N}}})", "{{node}} read"),
                    (f"sum by (node) (dltui_disk_written_bytes_per_second{{{N}}})", "{{node}} write"),
                ],
                {},
            ),
            (
                "timeseries",
                "File system used (fullest per node)",
                "percentunit",
                8,
                [
                    (
                        f"max by (node) (1 - dltui_filesystem_avail_bytes{{{N}}} / dltui_filesystem_size_bytes{{{N}}})",
                        "{{node}}",
                    )
                ],
                {"max": 1},
            ),
            (
                "timeseries",
                "Network receive / transmit",
                "Bps",
                8,
                [
                    (f"sum by (node) (dltui_network_receive_bytes_per_second{{{N}}})", "{{node}} rx"),
                    (f"sum by (node) (dltui_network_transmit_bytes_per_second{{{N}}})", "{{node}} tx"),
                ],
                {},
            ),
        ],
    ),
    (
        "Drives",
        [
            (
                "stat",
                "Drives failing SMART",
                "none",
                4,
                [(f"count(dltui_drive_smart_passed{{{N}}} == 0) or vector(0)", "failing")],
                {"red_from": 1},
            ),
            (
                "table",
                "Drive health (SMART passed 1 / failed 0, NVMe critical warning bits, spare left, wear, errors)",
                "none",
                20,
                [
                    (f"min by (node, device) (dltui_drive_smart_passed{{{N}}})", "passed"),
                    (f"max by (node, device) (dltui_drive_critical_warning{{{N}}})", "critical warning"),
                    (f"min by (node, device) (dltui_drive_available_spare_ratio{{{N}}})", "spare"),
                    (f"max by (node, device) (dltui_drive_endurance_used_ratio{{{N}}})", "wear"),
                    (f"max by (node, device) (dltui_drive_media_errors_total{{{N}}})", "media errors"),
                    (f"max by (node, device) (dltui_drive_reallocated_sectors_total{{{N}}})", "reallocated"),
                    (f"max by (node, device) (dltui_drive_pending_sectors{{{N}}})", "pending"),
                ],
                {"instant": True},
            ),
            (
                "timeseries",
                "Drive spare left (lowest per node; the drive warns under its threshold)",
                "percentunit",
                8,
                [(f"min by (node) (dltui_drive_available_spare_ratio{{{N}}})", "{{node}}")],
                {"max": 1, "red_below": 0.1},
            ),
            (
                "timeseries",
                "Drive wear: rated endurance used (most worn per node)",
                "percentunit",
                8,
                [(f"max by (node) (dltui_drive_endurance_used_ratio{{{N}}})", "{{node}}")],
                {"red_from": 0.9},
            ),
            (
                "timeseries",
                "Drive temperature (hottest per node)",
                "celsius",
                8,
                [(f"max by (node) (dltui_drive_temperature_celsius{{{N}}})", "{{node}}")],
                {"red_from": 70},
            ),
        ],
    ),
    (
        "Software stack",
        [
            (
                "stat",
                "Nodes whose driver is not held",
                "none",
                4,
                [(f"count(dltui_stack_driver_held{{{N}}} == 0) or vector(0)", "not held")],
                {"red_from": 1},
            ),
            (
                "stat",
                "Nodes waiting for a reboot",
                "none",
                4,
                [(f"count(dltui_stack_reboot_pending{{{N}}} == 1) or vector(0)", "reboot pending")],
                {"red_from": 1},
            ),
            (
                "table",
                "Driver held, automatic upgrades on, upgrades skip the driver, reboot pending (1 = yes)",
                "none",
                16,
                [
                    (f"max by (node) (dltui_stack_driver_held{{{N}}})", "driver held"),
                    (f"max by (node) (dltui_stack_auto_upgrades{{{N}}})", "auto upgrades"),
                    (f"max by (node) (dltui_stack_auto_upgrades_skip_driver{{{N}}})", "skip driver"),
                    (f"max by (node) (dltui_stack_reboot_pending{{{N}}})", "reboot pending"),
                ],
                {"instant": True},
            ),
            (
                "table",
                "Driver packages, loaded module and newest kernel installed",
                "none",
                24,
                [(f"dltui_stack_info{{{N}}}", "")],
                {
                    "instant": True,
                    "columns": [
                        "node",
                        "package_manager",
                        "driver_package_version",
                        "driver_module_version",
                        "kernel_newest_installed",
                    ],
                },
            ),
        ],
    ),
]


def ref(i: int) -> str:
    return chr(ord("A") + i)


def panel(pid: int, x: int, y: int, kind: str, title: str, unit: str, width: int, targets, opts) -> dict:
    thresholds = [{"color": opts.get("color", "green"), "value": None}]
    for key, color in (("red_from", "red"),):
        if key in opts:
            thresholds.append({"color": color, "value": opts[key]})
    if "red_below" in opts:
        thresholds = [{"color": "red", "value": None}, {"color": "green", "value": opts["red_below"]}]
    defaults: dict = {"unit": unit, "thresholds": {"mode": "absolute", "steps": thresholds}}
    if "max" in opts:
        defaults.update(min=0, max=opts["max"])
    out = {
        "id": pid,
        "type": kind,
        "title": title,
        "datasource": DS,
        "gridPos": {"h": 8, "w": width, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {
                "refId": ref(i),
                "datasource": DS,
                "expr": expr,
                "legendFormat": legend or "__auto",
                "instant": bool(opts.get("instant")),
                "range": not opts.get("instant"),
                **({"format": "table"} if kind == "table" else {}),
            }
            for i, (expr, legend) in enumerate(targets)
        ],
        "options": {},
    }
    if kind == "timeseries":
        out["options"] = {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}}
    if kind == "table" and "columns" in opts:
        keep = set(opts["columns"])
        out["transformations"] = [
            {"id": "organize", "options": {"excludeByName": {"Time": True, "__name__": True, "job": True, "instance": True}}},
            {"id": "filterFieldsByName", "options": {"include": {"names": sorted(keep)}}},
        ]
    if kind == "table" and len(targets) > 1:  # one row per node (GPU, drive), a column per query
        names = {f"Value #{ref(i)}": legend for i, (_, legend) in enumerate(targets)}
        out["transformations"] = [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": names}},
        ]
    return out


def dashboard() -> dict:
    panels: list[dict] = []
    pid, y = 1, 0
    for row, items in ROWS:
        panels.append({"id": pid, "type": "row", "title": row, "collapsed": False, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        pid, y, x = pid + 1, y + 1, 0
        for kind, title, unit, width, targets, opts in items:
            if x + width > 24:
                x, y = 0, y + 8
            panels.append(panel(pid, x, y, kind, title, unit, width, targets, opts))
            pid, x = pid + 1, x + width
        y += 8
    return {
        "title": "dltui fleet",
        "uid": "dltui-fleet",
        "description": "GPU nodes as `dltui export` serves them: status, alerts, temperatures, "
        "utilisation, power, clocks, unit state, InfiniBand and NVLink, the host, drives and the "
        "driver stack.",
        "tags": ["dltui", "gpu"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "timepicker": {},
        "annotations": {"list": []},
        "links": [],
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {},
                    "hide": 0,
                },
                {
                    "name": "node",
                    "label": "node",
                    "type": "query",
                    "datasource": DS,
                    "definition": "label_values(dltui_node_up, node)",
                    "query": {"query": "label_values(dltui_node_up, node)", "refId": "node"},
                    "refresh": 2,
                    "multi": True,
                    "includeAll": True,
                    "allValue": ".*",
                    "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                    "sort": 1,
                    "hide": 0,
                },
            ]
        },
        "panels": panels,
    }


def text() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text())
    print(f"wrote {OUT}", file=sys.stderr)
