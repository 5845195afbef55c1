"""The seeded demo fleet the UI tests look at, built the way the app builds its own.

Stepping the fleet through the rules is most of a UI test's CPU (12 nodes x 180 steps: ~1.5 s
on an idle core), and dozens of tests look at the same 180 steps. For a small fleet ``feed``
steps each shape once per test process and copies that state into every later test's own
objects: the demo, the fleet, its nodes and their histories stay the objects the app and the
screens hold (a screen keeps its nodes between frames), holding what stepping them would have
made (tests/ui/test_demo_fleet.py checks that). A copy costs about what 10 steps of 12 nodes
cost, but 256 nodes' preallocated histories copy as slowly as 20-40 of their steps, and the
big fleets are each used by one or three tests: they are stepped every time."""

from __future__ import annotations

import copy
import weakref

from dltui.actions import simulated
from dltui.config import Config
from dltui.core.state import FleetState
from dltui.transport.demo import DemoTransport
from dltui.ui.app import DltuiApp, build_app
from dltui.ui.themes import PACKAGED_DIR
from dltui.wiring import fleet_state

STEPS = 180  # 3 simulated minutes: past the rules' warm-up, gpu04 away since step 150
SEED = 7
SHARED_UP_TO = 16  # nodes: fleets this small are stepped once per process and copied

# A demo made by ``demo_app`` -> (its fleet, (nodes, gpus)): what ``feed`` may copy into.
_MADE: weakref.WeakKeyDictionary[DemoTransport, tuple[FleetState, tuple[int, int]]] = (
    weakref.WeakKeyDictionary()
)
# (nodes, gpus, steps) -> a demo and fleet stepped that far, never handed to a test itself.
_STEPPED: dict[tuple[int, int, int], tuple[DemoTransport, FleetState]] = {}


def new_fleet(nodes: int = 12, gpus: int = 8, cfg: Config | None = None) -> tuple[DemoTransport, FleetState]:
    """A fresh demo fleet and the fleet state it writes into, as ``demo_app`` makes them (the
    theme, the only setting the tests vary, is not read by the rules)."""
    demo = DemoTransport(nodes=nodes, gpus=gpus, seed=SEED, commands=simulated.answer)
    return demo, fleet_state(cfg or Config(), demo.names, clock=demo.clock)


def demo_app(nodes: int = 12, gpus: int = 8, theme: str = "dltui-dark") -> tuple[DltuiApp, DemoTransport]:
    """An app on an empty demo fleet with a frozen clock; ``feed`` fills it (in ``run_before``)."""
    cfg = Config(theme=theme)
    demo, fleet = new_fleet(nodes, gpus, cfg)
    _MADE[demo] = (fleet, (nodes, gpus))
    return build_app([], cfg, fleet=fleet, theme_dirs=[PACKAGED_DIR]), demo


def feed(app: DltuiApp, demo: DemoTransport, steps: int = STEPS) -> None:
    """Step ``demo`` ``steps`` intervals into the app's fleet, then tick the app once."""
    made = _MADE.get(demo)
    untouched = made is not None and made[0] is app.fleet and demo.step_count == 0
    if untouched and made[1][0] <= SHARED_UP_TO:
        _copy_stepped(demo, app.fleet, (*made[1], steps))
    else:
        demo.step_into(app.fleet, steps)
    app.tick()


def _copy_stepped(demo: DemoTransport, fleet: FleetState, key: tuple[int, int, int]) -> None:
    if key not in _STEPPED:
        nodes, gpus, steps = key
        stepped_demo, stepped_fleet = new_fleet(nodes, gpus)
        stepped_demo.step_into(stepped_fleet, steps)
        _STEPPED[key] = stepped_demo, stepped_fleet
    pairs = _counterparts(*_STEPPED[key], demo, fleet)
    # One deep copy of every stepped object's contents, in which a reference to any of them
    # (the fleet's clock is the demo's, a node's history) is a reference to the test's own.
    memo = {id(stepped): own for stepped, own in pairs}
    states = copy.deepcopy([_contents(stepped) for stepped, _ in pairs], memo)
    for (_, own), state in zip(pairs, states):
        _refill(own, state)


def _counterparts(stepped_demo, stepped_fleet, demo, fleet) -> list[tuple[object, object]]:
    """The objects the test, the app or a screen may hold, each with the stepped one it becomes."""
    pairs: list[tuple[object, object]] = [(stepped_demo, demo), (stepped_fleet, fleet)]
    pairs.append((stepped_fleet.nodes, fleet.nodes))
    for name, stepped in stepped_fleet.nodes.items():
        own = fleet.nodes[name]
        pairs += [(stepped, own), (stepped.history, own.history), (stepped.history.time, own.history.time)]
    return pairs


def _contents(obj) -> dict:
    if isinstance(obj, dict):
        return dict(obj)
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    return {name: getattr(obj, name) for name in obj.__slots__}


def _refill(obj, contents: dict) -> None:
    if isinstance(obj, dict):
        obj.clear()
        obj.update(contents)
        return
    for name, value in contents.items():
        setattr(obj, name, value)


async def charts_drawn(app: DltuiApp, pilot) -> None:
    """Until the fleet chart, drawn in a thread, is on screen."""
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
