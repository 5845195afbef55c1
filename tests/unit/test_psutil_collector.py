"""The local view off Linux: psutil gives the same records (run here on Linux's psutil)."""

import time

from dltui.core.models import NodeFacts, Sample
from dltui.node.schema import RECORD_FIELDS
from dltui.transport.psutil_collector import PsutilCollector


def test_psutil_collector_gives_schema_records_and_rates_on_the_second_sample():
    c = PsutilCollector(interval_s=0.2)
    facts = NodeFacts.from_dict(c.facts())
    first = c.sample()
    time.sleep(0.2)
    second = c.sample()
    c.close()
    assert facts.cpu_count >= 1 and facts.memory_total_bytes > 0
    assert facts.gpu_note == "no NVIDIA driver found" and first["gpus"] == []
    for kind, key in (("disk", "disks"), ("network", "networks"), ("filesystem", "filesystems")):
        for rec in second[key]:
            assert set(rec) == set(RECORD_FIELDS[kind]), kind
    assert all(d["read_bytes_per_s"] is None for d in first["disks"])  # no fake zeros before a delta
    assert all(d["read_bytes_per_s"] is not None for d in second["disks"])
    sample = Sample.from_dict(second)
    assert 0 <= sample.cpu.total_percent <= 100
    assert len(sample.cpu.cores) == facts.cpu_count
    assert sample.memory.total_bytes == facts.memory_total_bytes
    assert sample.pressure is None  # psutil has no PSI: n/a, not zeros
    assert any(fs.mountpoint == "/" for fs in sample.filesystems)
