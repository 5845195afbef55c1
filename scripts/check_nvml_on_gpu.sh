#!/bin/sh
# On a machine with a real NVIDIA GPU: run the probe as a node runs it (the standalone bundle,
# pynvml inside) for 3 samples, then once more with NVML hidden so the nvidia-smi fallback
# answers, and print what nvidia-smi itself says for the same fields. Compare by eye.
#
#   scripts/check_nvml_on_gpu.sh            (needs python3 with nvidia-ml-py importable)
#
# Worth checking: the two probe runs agree with nvidia-smi; clock_event_sw_power_cap_us from
# NVML (converted from ns) matches nvidia-smi's clocks_event_reasons_counters.sw_power_cap (us);
# utilization_samples_percent holds ~6 readings per second.
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Prints the hello's GPU facts and every sample's GPU records with field names.
DECODE='
import json, sys
from dltui.node.wire import Decoder
decoder = Decoder()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        facts = msg["facts"]
        print("hello:", {k: facts.get(k) for k in ("gpu_source", "gpu_note", "driver_version", "cuda_version", "nvml_version")})
        for gpu in facts.get("gpus", []):
            print("  facts:", gpu)
    elif msg["type"] == "sample":
        records, _ = decoder.apply(msg)
        for key in sorted(k for k in records if k.startswith("gpu/")):
            print("  sample", key, records[key])
    else:
        print(" ", msg)
'

echo "== probe, NVML (standalone bundle, as shipped to nodes)"
$PY -c 'from dltui.node.bundle import standalone_script; print(standalone_script())' > "$TMP/probe.py"
python3 -I -S "$TMP/probe.py" --count 3 --interval 1 | $PY -c "$DECODE"

echo "== probe, nvidia-smi fallback (pynvml hidden)"
$PY -c 'import sys; sys.modules["pynvml"] = None
from dltui.node.probe.main import main; sys.exit(main(["--count", "3", "--interval", "1"]))' | $PY -c "$DECODE"

echo "== nvidia-smi"
nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,temperature.memory,temperature.gpu.tlimit,power.draw,enforced.power.limit,clocks.current.sm,clocks.current.memory,pstate,clocks_event_reasons.active,clocks_event_reasons_counters.sw_power_cap,pcie.link.gen.current,pcie.link.width.current --format=csv
