"""The seeded demo fleet the UI tests look at, built the way the app builds its own."""

from __future__ import annotations

from dltui.actions import simulated
from dltui.config import Config
from dltui.transport.demo import DemoTransport
from dltui.ui.app import DltuiApp, build_app
from dltui.ui.themes import PACKAGED_DIR
from dltui.wiring import fleet_state

STEPS = 180  # 3 simulated minutes: past the rules' warm-up, gpu04 away since step 150


def demo_app(nodes: int = 12, gpus: int = 8, theme: str = "dltui-dark") -> tuple[DltuiApp, DemoTransport]:
    """An app on an empty demo fleet with a frozen clock; ``feed`` fills it (in ``run_before``)."""
    cfg = Config(theme=theme)
    demo = DemoTransport(nodes=nodes, gpus=gpus, seed=7, commands=simulated.answer)
    fleet = fleet_state(cfg, demo.names, clock=demo.clock)
    return build_app([], cfg, fleet=fleet, theme_dirs=[PACKAGED_DIR]), demo


def feed(app: DltuiApp, demo: DemoTransport, steps: int = STEPS) -> None:
    demo.step_into(app.fleet, steps)
    app.tick()


async def charts_drawn(app: DltuiApp, pilot) -> None:
    """Until the fleet chart, drawn in a thread, is on screen."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
