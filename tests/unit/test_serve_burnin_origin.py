"""A browser tab's burn-in, start and stop, is audited with the browser's address, as its unit
actions are: the real dashboard (built as ``dltui watch`` builds it, with the origin ``dltui
serve`` hands each tab) on an SSH node that refuses connections, so every step is audited and
fails at the node. The read-only tab's refusals and attach, end to end in a browser:
tests/integration/test_serve_trust_fake_smi.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from dltui import wiring
from dltui.ui.screens import PromptScreen
from dltui.ui.screens.burnin import BurnInScreen
from dltui.ui.serve import ORIGIN_ENV


def _entries(state: Path) -> list[dict]:
    path = state / "dltui" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _until(pilot, done, timeout_s: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not done():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await pilot.pause(0.05)


async def test_a_browser_tabs_burnin_start_and_stop_are_audited_with_its_address(tmp_path, monkeypatch):
    state = tmp_path / "state"
    for name, path in (("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"), ("cwd", "cwd")):
        (tmp_path / path).mkdir()
        if name != "cwd":
            monkeypatch.setenv(name, str(tmp_path / path))
    monkeypatch.chdir(tmp_path / "cwd")  # where the dashboard writes the run's report
    monkeypatch.setenv(ORIGIN_ENV, "browser 10.1.2.3")
    app, fleet = wiring.dashboard_app(wiring.load_settings(), wiring.Hosts(("127.0.0.1:1",)))
    with fleet:
        async with app.run_test(size=(160, 48)) as pilot:
            app.execute("burnin 5s")
            await _until(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press(*"yes", "enter")
            await _until(pilot, lambda: isinstance(app.screen, BurnInScreen))
            await _until(pilot, lambda: any(e["outcome"] != "intent" for e in _entries(state)))
            await pilot.press("x")
            await _until(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press(*"yes", "enter")
            await _until(pilot, lambda: len(_entries(state)) == 4)
    entries = _entries(state)
    assert [(e["action"], e["outcome"]) for e in entries] == [
        ("burnin-start", "intent"), ("burnin-start", "failed"),
        ("burnin-stop", "intent"), ("burnin-stop", "failed"),
    ]
    assert all(e["origin"] == "browser 10.1.2.3" for e in entries)
