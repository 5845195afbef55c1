"""The command line as a user meets it: real subprocesses of `python -m dltui`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dltui import __version__

ROOT = Path(__file__).resolve().parents[2]


def dltui(*args, env=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "dltui", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


@pytest.fixture
def home_env(tmp_path, monkeypatch):
    import os

    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"))
    env.pop("DLTUI_CONFIG", None)
    return env


def test_version():
    out = dltui("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"dltui {__version__}"


def test_help_describes_every_subcommand():
    out = dltui("--help")
    assert out.returncode == 0
    for command in ("watch", "snapshot", "demo", "replay"):
        assert command in out.stdout
    assert "0 ok, 1 warning, 2 critical, 3 unknown" in out.stdout


def test_snapshot_json_of_this_machine_follows_the_schema(home_env):
    out = dltui("snapshot", "--json", "--seconds", "1.5", "--interval", "0.5", env=home_env)
    doc = json.loads(out.stdout)
    assert doc["version"] == 1
    (node,) = doc["nodes"]
    assert node["name"] == "localhost" and node["status"] == "ok" and node["error"] is None
    sample = node["sample"]
    assert set(sample) == {"time", "cpu", "memory", "pressure", "tasks", "disks", "filesystems", "networks", "gpus", "units", "checkpoint",
                           "drives"}
    assert sample["gpus"] == []  # no GPU here: an empty list, not an error
    assert node["facts"]["gpu_note"] == "no NVIDIA driver found"
    assert isinstance(node["facts"]["stack"]["reboot_reasons"], list)  # read from this machine's files
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    assert sample["memory"]["total_bytes"] == int(meminfo[1]) * 1024
    assert any(fs["mountpoint"] == "/" for fs in sample["filesystems"])
    assert 0 <= sample["cpu"]["total_percent"] <= 100
    assert len(sample["cpu"]["cores"]) == node["facts"]["cpu_count"]
    assert all(a["severity"] in ("info", "warning", "critical") for a in node["alerts"])
    worst = {a["severity"] for a in node["alerts"]}
    expected = 2 if "critical" in worst else 1 if "warning" in worst else 0
    assert out.returncode == expected


def test_snapshot_text_report_names_the_node_and_its_parts(home_env):
    out = dltui("snapshot", "--seconds", "1", "--interval", "0.5", env=home_env)
    assert out.stdout.startswith("localhost: ok")
    assert "gpus: none" in out.stdout and "no NVIDIA driver found" in out.stdout


def test_a_broken_config_file_is_one_plain_line_and_unknown_for_snapshot(home_env, tmp_path):
    """Under monitoring, 2 means CRITICAL: a config typo is UNKNOWN (3), never a page."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[rules.gpu_temp_high]\nwarnign = 80\n")
    out = dltui("snapshot", "--config", str(bad), env=home_env)
    assert out.returncode == 3
    assert out.stderr.startswith("dltui: ") and len(out.stderr.strip().splitlines()) == 1
    assert "warnign" in out.stderr
    assert dltui("snapshot", "--seconds", "abc", env=home_env).returncode == 3


def test_usage_errors_of_the_other_commands_exit_2(home_env, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("interval = = 1\n")
    out = dltui("demo", "--config", str(bad), env=home_env)
    assert out.returncode == 2 and "not valid TOML" in out.stderr
    assert dltui("demo", "--nodes", "many", env=home_env).returncode == 2


def test_a_recording_that_would_overwrite_a_file_is_refused(home_env, tmp_path):
    existing = tmp_path / "rec.jsonl"
    existing.write_text("precious\n")
    out = dltui("snapshot", "--seconds", "0.5", "--record", str(existing), env=home_env)
    assert out.returncode == 3 and "already exists" in out.stderr
    assert existing.read_text() == "precious\n"


def test_a_snapshot_shorter_than_two_samples_waits_for_the_second_one(home_env):
    """Rates need two samples: a 0.5 s snapshot at 1 Hz must still report CPU, not n/a."""
    out = dltui("snapshot", "--json", "--seconds", "0.5", "--interval", "1", env=home_env)
    (node,) = json.loads(out.stdout)["nodes"]
    assert node["status"] == "ok"
    assert node["sample"]["cpu"]["total_percent"] is not None
