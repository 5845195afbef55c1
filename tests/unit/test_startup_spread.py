"""What a fleet's first seconds cost is spread or paid once: rule memories bound a bounded
number of nodes a live tick, history rings allocated whole while the fleet's budget lasts."""

from __future__ import annotations

from dltui.core.rules import build_engine
from dltui.core.rules.engine import BIND_PER_TICK
from dltui.core.state import HISTORY_POINTS, FleetState, NodeHistory, RingBudget
from dltui.transport.demo import DemoTransport


def _hellos_only(nodes: int, window_s: float | None) -> tuple[FleetState, DemoTransport]:
    demo = DemoTransport(nodes=nodes, gpus=1, seed=7)
    fleet = FleetState(demo.names, engine=build_engine(snapshot_window_s=window_s), clock=demo.clock)
    demo.step_into(fleet, 0)  # every node's hello and status at once, no sample yet
    return fleet, demo


def test_a_live_tick_binds_a_bounded_number_of_new_nodes_and_the_rest_on_later_ticks():
    fleet, _ = _hellos_only(3 * BIND_PER_TICK + 5, None)
    engine = fleet.engine
    fleet.tick()
    assert len(engine.nodes) == BIND_PER_TICK
    for _ in range(3):
        fleet.tick()
    assert set(engine.nodes) == set(fleet.nodes)
    assert all(engine.nodes[n.name].facts is n.facts for n in fleet)


def test_a_snapshot_binds_every_node_in_its_one_tick():
    fleet, _ = _hellos_only(3 * BIND_PER_TICK + 5, 60.0)
    fleet.tick()
    assert set(fleet.engine.nodes) == set(fleet.nodes)


def test_history_rings_are_allocated_whole_while_the_fleets_budget_lasts():
    """Whole rings never regrow (the process's size is the same at minute 2 as at hour 2); the
    budget bounds what a large fleet takes before its history exists; past it, rings double."""
    budget = RingBudget(10 * HISTORY_POINTS)  # some 5 int16 rings' worth
    history = NodeHistory(HISTORY_POINTS, budget)
    demo = DemoTransport(nodes=1, gpus=2, seed=7)
    demo.step_into(Recorded(history), 3)
    rings = [history.time, *history.series.values()]
    whole = [r for r in rings if len(r._data) == HISTORY_POINTS]
    assert 1 <= len(whole) < len(rings) and budget.left < 4 * HISTORY_POINTS
    assert sum(r._data.itemsize * HISTORY_POINTS for r in whole) <= 10 * HISTORY_POINTS
    assert all(len(r) == 3 for r in rings)  # whole or not, each holds what was recorded


class Recorded:
    """The demo's samples straight into one node's history."""

    def __init__(self, history: NodeHistory) -> None:
        self.history = history

    def on_sample(self, name: str, sample) -> None:
        self.history.record(sample)

    def on_status(self, *args: object) -> None:
        pass

    def on_hello(self, *args: object) -> None:
        pass

    def on_event(self, *args: object) -> None:
        pass
