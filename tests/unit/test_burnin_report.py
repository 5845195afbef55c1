"""The report (Markdown, JSON, self-contained HTML) and the run's recording replayed."""

from __future__ import annotations

import asyncio
import re
import json

from dltui.burnin import report
from dltui.burnin import verdict as v
from dltui.burnin.session import write_recording
from dltui.core.models import GpuFacts, NodeFacts
from dltui.transport.recording.replay import ReplayTransport

from .test_burnin_verdict import _run


def _judged():
    runs = [_run(), _run(log="derived_gpu_burn_faulty.log")]
    runs[1].node = "gpu02"
    for r in runs:
        r.facts = NodeFacts(
            hostname=r.node,
            gpus=[GpuFacts(index=i, name="NVIDIA H100", serial=f"S{i}") for i in range(8)],
        )
    return runs, [v.judge(r) for r in runs]


def test_markdown_and_json_say_who_failed_why_and_what_next_derived_faulty():
    runs, verdicts = _judged()
    doc = report.document("r1", runs, verdicts, v.DEFAULTS)
    assert doc["exit_code"] == 2
    md = report.markdown(doc)
    assert "## gpu01: PASS" in md and "## gpu02: FAIL" in md
    assert "| 3 | FAIL | stressor: gpu_burn: FAULTY" in md and "RMA" in md
    assert "serial S3" in md
    # the summary on top names the failing GPU before any per-node section
    summary = md.split("## gpu01")[0]
    assert "| gpu01 | PASS | nothing |" in summary
    assert "| gpu02 | FAIL | GPU 3 stressor: gpu_burn: FAULTY" in summary
    again = json.loads(report.to_json(doc))
    assert again["nodes"][1]["gpus"][3]["status"] == "fail"


def test_html_is_self_contained_with_a_chart_per_gpu():
    runs, verdicts = _judged()
    page = report.page(report.document("r1", runs, verdicts, v.DEFAULTS), runs)
    assert page.count("<svg") == 2 * 8 * len(report.CHARTS)
    assert "<script" not in page and "src=" not in page and "href=" not in page
    assert "gpu_burn: FAULTY" in page
    assert page.index("GPU 3 stressor: gpu_burn: FAULTY") < page.index("<h2>gpu01")


def test_chart_thins_long_runs_but_keeps_spikes():
    times = [float(t) for t in range(7200)]
    temps = [50.0 if t != 5000 else 99.0 for t in range(7200)]
    svg = report.svg_chart("T", "°C", times, {"temperature_c": temps},
                           [("temperature_c", "core", "#000")], None)
    points = svg.split("points='")[1].split("'")[0].split()
    assert len(points) <= report.MAX_POINTS
    assert ">99<" in svg  # the axis top is the spike


async def test_recording_replays_every_sample_in_order(tmp_path):
    runs, _ = _judged()
    path = tmp_path / "recording.jsonl"
    write_recording(path, runs)
    replay = ReplayTransport(path, speed=0)
    got: dict[str, int] = {}

    class Count:
        def on_status(self, *a): ...
        def on_hello(self, *a): ...
        def on_event(self, *a): ...
        def on_sample(self, name, sample):
            got[name] = got.get(name, 0) + 1

    task = asyncio.create_task(replay.run(Count()))
    await asyncio.wait_for(replay.finished.wait(), 30)
    task.cancel()
    assert replay.names == ["gpu01", "gpu02"]
    assert got == {"gpu01": len(runs[0].samples), "gpu02": len(runs[1].samples)}


def test_a_spool_left_by_a_dltui_that_ended_is_removed_not_a_live_ones(tmp_path):
    import os
    import subprocess
    import sys

    from dltui.burnin import spool

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f"gpu01.{gone}.jsonl"
    mine = tmp_path / f"gpu01.{os.getpid()}.jsonl"
    other = tmp_path / "gpu01.1.jsonl"  # pid 1 is alive
    for p in (stale, mine, other):
        p.write_text("{}\n")
    spool.remove_stale(tmp_path)
    assert not stale.exists() and mine.exists() and other.exists()


def test_a_spool_that_cannot_be_written_costs_the_recording_not_the_run(tmp_path):
    from dltui.burnin import spool
    from dltui.burnin.remote import RunCollector
    from dltui.core.models import GpuSample, Sample

    blocker = tmp_path / "state"
    blocker.write_text("a file where the spool folder should go")
    collector = RunCollector(spool=spool.Spool(blocker / "run" / "gpu01.1.jsonl", "gpu01"))
    for t in range(3):
        collector.on_sample("gpu01", Sample(time=float(t), gpus=[GpuSample(index=0)]))
    assert collector.count == 3  # still folded
    assert collector.spool is not None and "state" in (collector.spool.error or "")


def test_markdown_escapes_node_text_a_pipe_cannot_break_a_row_nor_html_or_a_link_get_in():
    """A node's words (a stressor's error line in the evidence, the GPU's name and serial)
    carry a table's "|", a newline, HTML and a Markdown link: each row keeps its three cells,
    nothing of it is a tag or a link, and the words are all there, escaped."""
    hostile = "bad | cell <script>alert(1)</script> [click](https://evil.example) `x`"
    runs, verdicts = _judged()
    runs[1].facts.gpus[0].name = "two\nlines " + hostile
    verdicts[1].gpus[3].items.append(v.Item("stressor", v.FAIL, hostile, "ask " + hostile, gpu=3))
    verdicts[1].items.append(v.Item("smoke", v.WARN, hostile))
    md = report.markdown(report.document("r1", runs, verdicts, v.DEFAULTS))
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert rows and all(len(re.split(r"(?<!\\)\|", row)) == 5 for row in rows), rows  # 3 cells each
    assert "<script" not in md and "](" not in md.replace("\\](", "")
    escaped = r"bad \| cell &lt;script&gt;alert(1)&lt;/script&gt; \[click\](https://evil.example) \`x\`"
    assert f"- GPU 0: two lines {escaped} serial S0" in md
    assert f"stressor: {escaped} → ask {escaped}" in md.split("| 3 | FAIL | ")[1].splitlines()[0]
    assert f"- WARN smoke: {escaped}\n" in md
