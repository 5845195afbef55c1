"""Sample lines carry only what changed, and the decoder rebuilds the whole sample."""

import copy
import json

import pytest

from dltui.node.schema import GPU_FIELDS
from dltui.node.wire import DecodeError, Decoder, Encoder


def collected(t, util=97.0, temp=61, disks=("nvme0n1",)):
    gpu = dict.fromkeys(GPU_FIELDS)
    gpu.update(index=0, uuid="GPU-0", name="NVIDIA H100 80GB HBM3", utilization_percent=util,
               temperature_c=temp, memory_total_mib=81559.0, processes=[], utilization_samples_percent=[util])
    return {
        "time": t,
        "cpu": {"total_percent": 10.0, "user_percent": 8.0, "system_percent": 2.0, "iowait_percent": 0.0,
                "steal_percent": 0.0, "load_1": 1.0, "load_5": 1.0, "load_15": 1.0,
                "cores": [{"index": 0, "total_percent": 10.0, "user_percent": 8.0, "system_percent": 2.0,
                           "iowait_percent": 0.0, "steal_percent": 0.0}]},
        "memory": None,
        "pressure": None,
        "tasks": {"running": 1, "blocked_io": 0, "d_state_processes": 0},
        "disks": [{"name": d, "read_bytes_per_s": 1.0, "write_bytes_per_s": None, "read_iops": 1.0,
                   "write_iops": 0.0, "busy_percent": 5.0, "queue_depth": 0.1, "await_ms": 0.2} for d in disks],
        "filesystems": [],
        "networks": [],
        "gpus": [gpu],
    }


def roundtrip(lines):
    decoder = Decoder()
    out = []
    for line in lines:
        records, changed = decoder.apply(json.loads(json.dumps(line)))
        out.append((copy.deepcopy(records), changed))
    return out


def test_first_line_is_a_keyframe_and_later_lines_carry_only_changes():
    enc = Encoder()
    first = enc.encode(collected(1.0))
    second = enc.encode(collected(2.0, util=0.0))
    assert first["key"] == 1
    assert "key" not in second
    assert set(second["r"]) == {"gpu/0"}  # cpu, tasks, disk unchanged: not sent
    pos_util = str(GPU_FIELDS.index("utilization_percent"))
    assert second["r"]["gpu/0"][pos_util] == 0.0
    assert len(json.dumps(second)) < len(json.dumps(first)) / 3


def test_decoder_rebuilds_every_field_including_nulls():
    enc = Encoder()
    lines = [enc.encode(collected(float(t), util=float(t % 3 * 40))) for t in range(5)]
    (records, _), *_rest, (last, changed) = roundtrip(lines)
    assert last["gpu/0"]["utilization_percent"] == 40.0  # t=4 -> 4 % 3 * 40
    assert last["gpu/0"]["memory_temperature_c"] is None
    assert last["disk/nvme0n1"]["write_bytes_per_s"] is None
    assert changed == {"gpu/0"}
    assert set(records) == {"cpu", "tasks", "core/0", "disk/nvme0n1", "gpu/0"}


def test_vanished_record_is_listed_as_gone_and_removed():
    enc = Encoder()
    lines = [enc.encode(collected(1.0, disks=("sda", "sdb"))), enc.encode(collected(2.0, disks=("sda",)))]
    assert lines[1]["gone"] == ["disk/sdb"]
    (_, _), (records, changed) = roundtrip(lines)
    assert "disk/sdb" not in records and "disk/sdb" in changed


def test_keyframe_repairs_a_decoder_that_missed_a_line():
    enc = Encoder(keyframe_every=3)
    lines = [enc.encode(collected(float(t), temp=60 + t)) for t in range(4)]
    decoder = Decoder()
    decoder.apply(lines[0])
    # line 1 and 2 lost; line 3 is the next keyframe
    assert lines[3].get("key") == 1
    records, _ = decoder.apply(lines[3])
    assert records["gpu/0"]["temperature_c"] == 63


@pytest.mark.parametrize(
    "line",
    [{"type": "sample", "time": 1}, {"type": "sample", "time": 1, "r": {"gpu/0": {"999": 1}}},
     {"type": "sample", "time": 1, "r": {"toaster/0": {}}}, {"type": "sample", "time": 1, "r": {"gpu/0": {"x": 1}}}],
)
def test_lines_that_do_not_fit_the_tables_raise_decode_error(line):
    with pytest.raises(DecodeError):
        Decoder().apply(line)
