"""End to end: real sshd nodes behind a jump host, the real probe, a fake ``nvidia-smi`` (the
real H100 capture) on a two-GPU node told to report GPU 0 hot and throttled; ``dltui snapshot
--json`` names that GPU's alerts, nothing on the other GPU or the other node, and exits 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import build_lab
from .sshd import REPO, client_env

HOT_AND_THROTTLED = {
    "temperature.gpu": "91",
    "temperature.gpu.tlimit": "[N/A]",  # no margin: core temperature is the only signal
    "clocks_event_reasons.active": "0x0000000000000088",  # HW slowdown + HW power brake
    "clocks_event_reasons.hw_slowdown": "Active",
    "clocks_event_reasons.hw_power_brake_slowdown": "Active",
    "clocks.current.sm": "705",
}


@pytest.fixture
def hot_lab(tmp_path):
    lab = build_lab(tmp_path / "lab", extra_nodes=("gpu-hot",))
    scenario = tmp_path / "hot.jsonl"
    scenario.write_text(json.dumps({"gpus": {"0": HOT_AND_THROTTLED}}) + "\n")
    lab.nodes["gpu-hot"].env.update(FAKE_SMI_SCENARIO=str(scenario), FAKE_SMI_GPU_COUNT="2")
    try:
        yield lab.start()
    finally:
        lab.close()


def test_snapshot_lists_the_hot_throttled_gpus_alerts_and_exits_2_fake_smi(hot_lab, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "snapshot", "gpu01", "gpu-hot", "--json", "--seconds", "3", "--interval", "0.25"],
        cwd=REPO,
        env=client_env(hot_lab.make_home(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr + done.stdout
    nodes = {n["name"]: n for n in json.loads(done.stdout)["nodes"]}
    assert nodes["gpu01"]["status"] == nodes["gpu-hot"]["status"] == "ok"
    assert nodes["gpu01"]["alerts"] == []
    alerts = {(a["rule"], a["gpu"]): a for a in nodes["gpu-hot"]["alerts"]}
    assert set(alerts) == {("hw_slowdown", 0), ("power_brake", 0), ("gpu_temp_high", 0)}
    assert {a["severity"] for a in alerts.values()} == {"critical"}
    assert alerts[("hw_slowdown", 0)]["message"].startswith(
        "HW slowdown active (0x88: hw_slowdown, hw_power_brake_slowdown) for "
    )
    assert "SM 705 of 1980 MHz" in alerts[("hw_slowdown", 0)]["message"]
    assert alerts[("power_brake", 0)]["message"].endswith(" — check PSU and power cabling")
    hot = alerts[("gpu_temp_high", 0)]["message"]
    assert hot.startswith("core 91 °C ≥ 90 °C for ")
    assert "this GPU reports no T.Limit margin, so core temperature is the only thermal signal" in hot
    assert "(seen throughout the 3 s snapshot; the rule normally needs 30 s)" in hot
    assert alerts[("gpu_temp_high", 0)]["evidence"] == {"temperature_c": 91, "threshold_c": 90, "temperature_margin_c": None}
    opened = [e for e in nodes["gpu-hot"]["timeline"] if e["kind"] == "alert-opened"]
    assert {(e["rule"], e["gpu"], e["severity"]) for e in opened} == {
        ("hw_slowdown", 0, "critical"), ("power_brake", 0, "critical"), ("gpu_temp_high", 0, "critical")
    }
    gpus = nodes["gpu-hot"]["sample"]["gpus"]
    assert [(g["index"], g["temperature_c"]) for g in gpus][0] == (0, 91)
    assert gpus[1]["temperature_c"] < 85 and gpus[1]["clock_event_reasons_mask"] == gpus[1]["clock_event_reasons_mask"] & ~0x88
