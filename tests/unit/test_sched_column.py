"""The SCHED column and the ``/sched=`` filter, from the scheduler's view of each node (parsed
from this project's real Slurm lab captures)."""

from __future__ import annotations

from pathlib import Path

from dltui.core.scheduler import SchedulerView, parse_scontrol_node
from dltui.core.state import FleetState
from dltui.ui import levels
from dltui.ui.fleet_query import parse_filter
from dltui.ui.widgets import fleet_row

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scheduler"


def _view(name: str) -> SchedulerView:
    node = parse_scontrol_node((FIXTURES / f"scontrol-show-node-oneliner_dltui-lab-22.05.8-{name}.txt").read_text())
    assert node is not None
    return SchedulerView(slurm=node)


def _fleet() -> FleetState:
    fleet = FleetState(["gpu01", "gpu02", "gpu03", "gpu04"])
    fleet.on_scheduler("gpu01", _view("idle"))
    fleet.on_scheduler("gpu02", _view("idle-drain"))
    fleet.on_scheduler("gpu03", _view("mixed-drain-nhc"))
    return fleet


def test_sched_filter_words():
    fleet = _fleet()

    def matching(text: str) -> list[str]:
        f = parse_filter(text)
        return [n.name for n in fleet if f(n, 0.0)]

    assert matching("sched=drain") == ["gpu02", "gpu03"]  # draining counts: it takes no new work
    assert matching("sched=draining") == ["gpu03"]
    assert matching("sched=idle") == ["gpu01"]
    assert matching("sched=none") == ["gpu04"]  # no scheduler read (yet, or none configured)
    assert matching("sched!=drain") == ["gpu01", "gpu04"]


def test_a_change_of_state_goes_on_the_timeline_once():
    fleet = _fleet()
    node = fleet.nodes["gpu02"]
    before = len(node.timeline)
    fleet.on_scheduler("gpu02", _view("idle-drain"))  # the same view again: nothing new
    assert len(node.timeline) == before
    fleet.on_scheduler("gpu02", _view("idle"))
    assert node.timeline[-1].message == "scheduler: idle"


def test_the_column_shows_word_and_reason_and_is_only_there_with_a_scheduler():
    fleet = _fleet()
    layout = fleet_row.choose_layout(160, 5, 8, sched=True)
    assert layout.sched and layout.width <= 160
    assert "SCHED" in fleet_row.header(layout).plain
    line = fleet_row.row(fleet.nodes["gpu03"], 0.0, layout, levels.Thresholds.from_rules({}))
    assert "draining NHC: c…" in line.plain  # word and reason, clipped to the column
    assert fleet_row.has_sched(fleet.nodes["gpu03"]) and not fleet_row.has_sched(fleet.nodes["gpu04"])
    assert not fleet_row.choose_layout(160, 5, 8).sched


def test_beside_jobs_and_units_at_160_columns_the_column_keeps_the_word_alone():
    """A drained node says so even where the reason does not fit (JOBS and UNIT take the room)."""
    fleet = _fleet()
    layout = fleet_row.choose_layout(160, 5, 8, True, jobs=True, sched=True)
    assert layout.sched and layout.sched_short and layout.width <= 160
    line = fleet_row.row(fleet.nodes["gpu03"], 0.0, layout, levels.Thresholds.from_rules({}))
    assert "draining " in line.plain and "NHC" not in line.plain
