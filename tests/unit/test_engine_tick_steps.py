"""The redraw tick's rules in steps (``tick_steps``): the dashboard runs keys between them, and
what the rules conclude is the same as in one go."""

from dltui.core.models import Sample
from dltui.core.rules import engine as engine_module
from tests.unit.rules_support import Rig, busy_gpu, host

NAMES = tuple(f"gpu{i:02d}" for i in range(1, 6))


def _stale_fleet() -> Rig:
    rig = Rig(NAMES)
    for name in NAMES:
        rig.run(3, [busy_gpu(0)], name=name)
    rig.clock.t += 6.0  # no sample for 6 s at 1 s a sample: every node stale
    return rig


def _alerts(rig: Rig) -> dict:
    return {
        name: sorted((key, a.severity, a.message) for key, a in rig.fleet.nodes[name].alerts.items())
        for name in NAMES
    }


def test_a_tick_in_steps_opens_the_alerts_a_whole_tick_opens(monkeypatch):
    monkeypatch.setattr(engine_module, "TICK_SLICE", 2)
    whole, stepped = _stale_fleet(), _stale_fleet()
    whole.fleet.tick()
    steps = sum(1 for _ in stepped.fleet.tick_steps())
    assert steps == 2  # 5 nodes, 2 a step: 3 steps, 2 pauses between them
    assert _alerts(stepped) == _alerts(whole)
    assert all(stepped.alert("node_stale", None, name=name) is not None for name in NAMES)


def test_a_sample_or_a_node_arriving_between_steps_is_taken_as_the_next_tick_takes_it(monkeypatch):
    """gpu05 sends a sample while gpu01-gpu02 are judged: it is not stale; a node that joins
    the fleet meanwhile is judged from the next tick, and nothing fails over the fleet's
    growing while it is walked."""
    monkeypatch.setattr(engine_module, "TICK_SLICE", 2)
    rig = _stale_fleet()
    steps = rig.fleet.tick_steps()
    next(steps)
    rig.fleet.on_sample("gpu05", Sample.from_dict({**host(), "time": rig.clock.t, "gpus": [busy_gpu(0)]}))
    rig.fleet.node("gpu99")
    for _ in steps:
        pass
    assert [name for name in NAMES if rig.alert("node_stale", None, name=name)] == list(NAMES[:4])
    assert rig.fleet.nodes["gpu99"].alerts == {}
