"""Regenerate ``screenshots/*.svg`` from the seeded demo fleet (``make screenshots``).

Every picture is the demo fleet three simulated minutes in, with the clock frozen, so the files
change only when the dashboard's look does.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from pathlib import Path

from dltui.actions import simulated
from dltui.burnin import demo as burnin_demo
from dltui.config import Config
from dltui.transport.demo import DemoTransport
from dltui.ui.app import build_app
from dltui.ui.themes import PACKAGED_DIR
from dltui.wiring import dashboard_services, fleet_state

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "screenshots"
STEPS = 180
# name, nodes, theme, terminal size, keys pressed
SHOTS = (
    ("fleet", 12, "dltui-dark", (160, 48), ()),
    ("node-hot-gpu", 12, "dltui-dark", (160, 48), ("j", "enter")),
    ("node-starved-loader", 12, "dltui-dark", (160, 48), ("j", "j", "enter")),
    ("fleet-compact-256", 256, "dltui-dark", (160, 48), ()),
    ("help", 12, "dltui-dark", (160, 48), ("question_mark",)),
    ("fleet-light", 12, "dltui-light", (160, 48), ()),
    ("node-high-contrast", 12, "dltui-high-contrast", (160, 48), ("j", "enter")),
    ("fleet-80x24", 12, "dltui-dark", (80, 24), ()),
    ("node-200x60", 12, "dltui-dark", (200, 60), ("j", "enter")),
    ("node-unit-crash-loop", 12, "dltui-dark", (160, 48), ("j",) * 7 + ("enter",)),
    ("node-hca-port-down", 12, "dltui-dark", (200, 60), ("j",) * 4 + ("enter",)),
    ("confirm-fleet-restart", 12, "dltui-dark", (160, 48), ("space", "space", "R")),
    ("chart-hot-gpu", 12, "dltui-dark", (160, 48), ("j", "enter", "v", "n", "n", "n")),
    ("chart-every-gpu-temperature", 12, "dltui-dark", (160, 48), ("j", "enter", "v", "o")),
    ("chart-fleet", 12, "dltui-dark", (160, 48), ("v",)),
    ("node-failing-drive", 12, "dltui-dark", (160, 48), ("j",) * 9 + ("enter",)),
    ("stack", 12, "dltui-dark", (160, 48), ("V",)),
    # the other vendors' nodes of the mixed fleet: gpu09 an AMD MI300X node, gpu12 an Intel Gaudi 3 node
    ("node-amd-mi300x", 12, "dltui-dark", (160, 48), ("j",) * 8 + ("enter",)),
    ("node-intel-gaudi", 12, "dltui-dark", (160, 48), ("j",) * 11 + ("enter",)),
)
# The burn-in screen follows a run on real nodes, which the demo fleet does not make: its
# picture is the one its snapshot test draws from a seeded run (tests/ui/test_burnin_screen.py).
COPIED = {
    "burnin-mid-run": ROOT / "tests/ui/__snapshots__/test_burnin_screen/test_burnin_screen_mid_run.svg",
    # a week from a real Prometheus (promtool-built blocks of a seeded week): tests/ui/test_history_chart.py
    "chart-node-7-days": ROOT / "tests/ui/__snapshots__/test_history_chart/test_chart_of_a_node_over_7_days.svg",
}


async def shoot(name: str, nodes: int, theme: str, size: tuple[int, int], keys: tuple[str, ...]) -> Path:
    cfg = Config(theme=theme)
    demo = DemoTransport(nodes=nodes, seed=7, commands=simulated.answer)
    fleet = fleet_state(cfg, demo.names, clock=demo.clock)
    # the demo's simulated actions, as dltui.wiring hands them to the dashboard; the app runs no
    # transport of its own (the script steps the demo into the fleet itself)
    app = build_app([], cfg, fleet=fleet, services=dashboard_services([demo], cfg), theme_dirs=[PACKAGED_DIR])
    async with app.run_test(size=size) as pilot:
        demo.step_into(fleet, STEPS)
        app.tick()
        await pilot.pause()
        await pilot.press(*keys)
        await asyncio.sleep(0.5)  # the unit's journal, or the confirm dialog's command lines
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        path = OUT / f"{name}.svg"
        path.write_text(app.export_screenshot(title=f"dltui — {name}", simplify=True), encoding="utf-8")
    return path


# The burn-in report is an HTML page for the ticket: its picture is the page of the seeded
# demo run (gpu02's GPU 2 failing) as headless Chromium draws it, the top of the page.
REPORT_SIZE = (1280, 2000)


def shoot_report() -> Path | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("no chromium: burnin-report.png not redrawn (apt-get install chromium)")
        return None
    path = OUT / "burnin-report.png"
    with tempfile.TemporaryDirectory() as folder:
        page = burnin_demo.write_report(Path(folder))["html"]
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",  # as root in a container there is no user namespace sandbox
                "--disable-gpu",
                "--hide-scrollbars",
                f"--window-size={REPORT_SIZE[0]},{REPORT_SIZE[1]}",
                f"--screenshot={path}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    return path


async def main() -> None:
    OUT.mkdir(exist_ok=True)
    for shot in SHOTS:
        print(await shoot(*shot))
    for name, source in COPIED.items():
        (OUT / f"{name}.svg").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
        print(OUT / f"{name}.svg")
    report = shoot_report()
    if report is not None:
        print(report)


if __name__ == "__main__":
    asyncio.run(main())
