"""A burn-in started from the dashboard (``:burnin 30s``, then ``yes``) runs with what the config
gives every run, as ``dltui burn-in`` does: the configured sampling interval and ``[probe]
sysfs``. Read from the start command the audit log records (it is written before anything is
sent); the real app, the real SSH transport and session runner, and a node address where nothing
listens, so the start itself is refused after it was audited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dltui.config import load
from dltui.transport.ssh.fleet import SshFleet
from dltui.transport.ssh.options import SshOptions
from dltui.ui.app import build_app
from dltui.ui.themes import PACKAGED_DIR
from dltui.wiring import dashboard_services, fleet_state

NODE = "127.0.0.1:9"  # the discard port: nothing listens there
REPO = Path(__file__).resolve().parents[2]
CONFIG = 'interval = 5\n\n[probe]\nsysfs = "/host/sys"\n'


def _starts(state) -> list[dict]:
    log = state / "dltui" / "audit.jsonl"
    if not log.exists():
        return []
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in entries if e["action"] == "burnin-start" and e["outcome"] == "intent"]


async def test_a_burnin_from_the_dashboard_samples_at_the_configured_interval_as_the_clis(tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    state = tmp_path / "state"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.chdir(tmp_path)  # where a report would go
    cfg = load(str(config))
    transport = SshFleet([NODE], cfg.interval_s, SshOptions(sysfs=cfg.probe.sysfs))
    services = dashboard_services([transport], cfg)  # as dltui.wiring hands them to the dashboard
    app = build_app([transport], cfg, fleet=fleet_state(cfg, [NODE]), services=services, theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=(120, 40)) as pilot:
        app.execute("burnin 30s")
        await pilot.pause()
        await pilot.press("y", "e", "s", "enter")
        for _ in range(200):
            if _starts(state):
                break
            await pilot.pause(0.05)
    (start,) = _starts(state)
    argv = start["argv"]
    assert argv[argv.index("--duration") + 1] == "30"
    assert argv[argv.index("--interval") + 1] == "5.0"  # Plan's own default is 1.0
    assert argv[argv.index("--sysfs") + 1] == "/host/sys"

    # ``dltui burn-in`` with the same config file sends the same start, run id aside
    cli_state = tmp_path / "cli-state"
    env = {**os.environ, "XDG_STATE_HOME": str(cli_state)}
    done = subprocess.run(
        [sys.executable, "-m", "dltui", "burn-in", NODE, "--duration", "30s", "--config", str(config),
         "--report", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 3, done.stderr  # not run: nothing listens on the node's port
    (cli,) = _starts(cli_state)

    def unnamed(argv: list[str]) -> list[str]:
        at = argv.index("--run-id")
        return argv[:at] + argv[at + 2:]

    assert unnamed(cli["argv"]) == unnamed(argv)
