"""Prometheus text exposition lines as the query API returns them (tests only): lets the
mapping be tested on the real dcgm-exporter captures without a server."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm-exporter"
_LINE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$")
_LABEL = re.compile(r'\s*([A-Za-z_]\w*)="((?:\\.|[^"\\])*)"\s*,?')


def parse(text: str) -> list[tuple[str, dict[str, str], str]]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, line
        labels = {
            k: v.replace('\\"', '"').replace("\\\\", "\\")
            for k, v in _LABEL.findall(m.group(2) or "")
        }
        out.append((m.group(1), labels, m.group(3)))
    return out


def vector(text: str, instance: str, job: str, t: float = 1700000000.0) -> list[dict]:
    """The series as an instant query answers them, with the target labels Prometheus adds."""
    return [
        {
            "metric": {"__name__": name, **labels, "instance": instance, "job": job},
            "value": [t, value],
        }
        for name, labels, value in parse(text)
    ]


def gpu_answers(series: list[dict], index_label: str) -> dict:
    """A vendor exporter's GPU series as the source's queries answer them: ``index_label``
    (AMD's gpu_id, Gaudi's id) relabelled ``gpu``, as the query does; nothing of the host."""
    for s in series:
        s["metric"]["gpu"] = s["metric"][index_label]
    return {"gpu": {"result": series}, "host": {"result": []}, "rates": {"result": []},
            "gpu_facts": {"result": series}, "smartctl": {"result": []}}


def capture(name: str) -> str:
    return (FIXTURES / name).read_text()
