"""The demo fleet's story: which node does what, and when. Every node follows a scenario
chosen by its position in the fleet (the pattern repeats every 16 nodes)."""

from __future__ import annotations

EPOCH = 1_767_258_000.0  # 2026-01-01 09:00 UTC: a fixed start so stepped runs are repeatable
SUBSAMPLES_PER_S = 6  # NVML utilisation samples every 1/6 s (H100)
CORES = 64
MIB = 1024 * 1024
GIB = 1024 * MIB

TRAINING, HOT_GPU, STARVED, FLAPPING, IDLE, OOM = (
    "training",
    "hot-gpu",
    "starved",
    "flapping",
    "idle",
    "oom",
)
# Other vendors' nodes (demo/accelerators.py): an MI300X node whose GPU 5's XGMI link errors
# rise, a Gaudi 3 node one of whose AIPs stops answering.
MI300X_XGMI, GAUDI_HOT = "mi300x-xgmi", "gaudi-hot"
PATTERN = (
    TRAINING,
    HOT_GPU,
    STARVED,
    FLAPPING,
    TRAINING,
    IDLE,
    OOM,
    TRAINING,
    MI300X_XGMI,  # gpu09
    TRAINING,
    TRAINING,
    GAUDI_HOT,  # gpu12
    TRAINING,
    TRAINING,
    TRAINING,
    TRAINING,
)
HOT_GPU_INDEX = 3
LOADER_PERIOD_S = 4.0  # the starved loader's GPUs idle once every 4 s ...
LOADER_STALL_S = 1.5  # ... for 1.5 s
OUTAGE_START_STEP = 150  # the flapping node drops at this step ...
OUTAGE_STEPS = 40  # ... stays away this long (the last RETRY_STEPS of it reconnecting) ...
RETRY_STEPS = 8
OUTAGE_PERIOD_STEPS = 600  # ... and does it again this many steps later
OOM_KILL_STEP = 100  # the OOM node's kernel kills a DataLoader worker at this step
UNIT = "dl_train.service"
CRASHLOOP_INDEX = 7  # gpu08's training unit crash-loops: systemd restarts it every CRASH_EVERY steps
CRASH_EVERY = 25

UP, DOWN, RETRYING = "up", "down", "retrying"


def scenario_for(index: int) -> str:
    return PATTERN[index % len(PATTERN)]
