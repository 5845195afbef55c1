"""The burn-in's systemd-run launcher on a real systemd node (see systemd_node.py), as root over
real sshd: the transient unit dltui-burnin-<run> runs and ends, the run is judged, a second start
is refused while one runs, stop goes through systemctl (stop, then reset-failed) and every start
and stop is in the audit log. No GPU on the node: --gpu none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dltui.burnin import ship

from .conftest import require
from .systemd_node import SystemdNode, missing

pytestmark = [pytest.mark.systemd, pytest.mark.oldest_python_only]  # the unit runs under the node's systemd and python3

NODE = "sdnode7-root"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sd_node(tmp_path_factory):
    why = missing()
    require(why is None, why or "")
    node = SystemdNode(tmp_path_factory.mktemp("sdburnin") / "n7", 7).start()
    try:
        yield node, str(node.base / "ssh_config")
    finally:
        node.close()
        intact = node.canary_intact()
        node.remove_canary()
        assert intact, f"the host's /tmp lost {node.canary} while a systemd node ran"


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(home / "state"), PYTHONPATH=str(REPO))
    env.pop("SSH_AUTH_SOCK", None)
    return env


def _argv(config: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "dltui", "burn-in", *args, "-F", config]


def _cli(home: Path, config: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        _argv(config, *args), cwd=REPO, env=_env(home), capture_output=True, text=True, timeout=180
    )


def _start_args(run_id: str, duration: str, report: Path) -> tuple[str, ...]:
    return (
        NODE,
        "--duration",
        duration,
        "--gpu",
        "none",
        "--preflight",
        "1s",
        "--post",
        "1s",
        "--launcher",
        "systemd",
        "--run-id",
        run_id,
        "--report",
        str(report),
    )


def _unit(node: SystemdNode, run_id: str) -> dict[str, str]:
    out = node.exec(
        [
            "systemctl",
            "show",
            f"dltui-burnin-{run_id}",
            "-p",
            "LoadState,ActiveState,SubState,Result,ExecMainStatus",
        ]
    ).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _wait_for(cond, limit_s: float = 90.0) -> None:
    end = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        time.sleep(0.2)


def _audit(home: Path) -> list[dict]:
    path = home / "state" / "dltui" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_burnin_systemd_unit_runs_ends_is_judged_and_is_audited(sd_node, tmp_path):
    node, config = sd_node
    done = _cli(tmp_path, config, *_start_args("sdshort", "3s", tmp_path))
    assert "report:" in done.stdout, done.stdout + done.stderr
    assert f"{NODE}: " in done.stdout  # the node's verdict line
    report = json.loads((tmp_path / "burnin-sdshort" / "report.json").read_text())
    assert done.returncode == report["exit_code"], done.stdout + done.stderr
    # judged; what is "not run" is only what this GPU-less, BMC-less, SMART-less node cannot do
    not_run = {i["check"] for n in report["nodes"] for i in n["items"] if i["status"] == "not run"}
    assert not_run <= {"nccl", "bmc", "smoke", "drives"}, done.stdout
    assert "sdshort" in json.dumps(report)
    # the transient unit existed and ended: kept (no --collect) with its result
    unit = _unit(node, "sdshort")
    assert unit["LoadState"] == "loaded", unit
    assert (unit["ActiveState"], unit["SubState"]) == ("active", "exited"), unit
    assert unit["Result"] == "success" and unit["ExecMainStatus"] == "0", unit
    plan = json.loads(node.exec(["cat", "/var/lib/dltui/burnin/sdshort/plan.json"]).stdout)
    assert plan["unit"] == "dltui-burnin-sdshort"
    # audit first: the intent, then the outcome under the same id
    intent, outcome = [e for e in _audit(tmp_path) if e["action"] == "burnin-start"]
    assert intent["outcome"] == "intent" and outcome["id"] == intent["id"]
    assert outcome["node"] == NODE and outcome["outcome"] == "ok" and outcome["sent"] is True
    assert outcome["run_id"] == "sdshort" and "--launcher" in intent["argv"]
    assert outcome["user"] and outcome["duration_s"] >= 0


def test_burnin_systemd_second_start_refused_stop_stops_and_resets_unit(sd_node, tmp_path):
    node, config = sd_node
    long_run = subprocess.Popen(
        _argv(config, *_start_args("sdlong", "10m", tmp_path)),
        cwd=REPO,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: _unit(node, "sdlong").get("SubState") == "running")
        status = "/var/lib/dltui/burnin/sdlong/status.json"
        _wait_for(lambda: node.exec(["test", "-s", status], check=False).returncode == 0)
        second = _cli(tmp_path, config, *_start_args("sdsecond", "3s", tmp_path))
        assert second.returncode == 3, second.stdout + second.stderr
        assert "already running on this node (run sdlong)" in second.stderr
        assert _unit(node, "sdsecond")["LoadState"] == "not-found"
        ro = _cli(tmp_path, config, "stop", "sdlong", NODE, "--read-only")
        assert ro.returncode == 3 and "read-only" in ro.stderr
        assert _unit(node, "sdlong")["SubState"] == "running"  # the refusal touched nothing
        stop = _cli(tmp_path, config, "stop", "sdlong", NODE)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert f"{NODE}: stopped" in stop.stdout
        out, err = long_run.communicate(timeout=120)
    finally:
        if long_run.poll() is None:
            long_run.kill()
            long_run.wait()
    # systemctl stop, then reset-failed: the transient unit is gone, its name free again
    assert _unit(node, "sdlong")["LoadState"] == "not-found"
    listed = node.exec(["systemctl", "list-units", "--all", "--plain", "dltui-burnin-*"]).stdout
    assert "dltui-burnin-sdlong" not in listed
    code = node.exec(["cat", "/var/lib/dltui/burnin/sdlong/exit_code"]).stdout.strip()
    assert code.isdigit()
    assert "the run was stopped before its end" in out, out + err
    entries = [(e["action"], e["outcome"], e["run_id"]) for e in _audit(tmp_path)]
    assert ("burnin-start", "ok", "sdlong") in entries
    assert ("burnin-start", "failed", "sdsecond") in entries
    assert ("burnin-stop", "refused", "sdlong") in entries
    assert ("burnin-stop", "ok", "sdlong") in entries
    refused = next(e for e in _audit(tmp_path) if e["outcome"] == "refused")
    assert refused["argv"] is None and "read-only" in refused["message"]


def test_burnin_systemd_stop_clears_a_failed_unit_with_reset_failed(sd_node, tmp_path):
    """A run whose unit failed (its main process exited non-zero) stays loaded as failed until
    reset-failed; stop clears it. The failed unit is made by hand: a run that fails for real
    takes a broken node."""
    node, config = sd_node
    base = "/var/lib/dltui/burnin"
    node.exec(["mkdir", "-p", f"{base}/sdfail"])
    node.exec(["sh", "-c", f"cat > {base}/sdfail/driver.py"], input=ship.driver_script())
    plan = json.dumps({"run_id": "sdfail", "unit": "dltui-burnin-sdfail"})
    node.exec(["sh", "-c", f"cat > {base}/sdfail/plan.json"], input=plan)
    node.exec(["sh", "-c", f"echo 1 > {base}/sdfail/exit_code"])
    node.exec(["systemd-run", "--unit=dltui-burnin-sdfail", "--remain-after-exit", "false"])
    _wait_for(lambda: _unit(node, "sdfail").get("ActiveState") == "failed")
    stop = _cli(tmp_path, config, "stop", "sdfail", NODE)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert _unit(node, "sdfail")["LoadState"] == "not-found"
