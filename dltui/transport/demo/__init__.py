"""A seeded simulated fleet: the data behind ``dltui demo``, the screenshots, UI tests and
benchmarks.

Every node follows a scenario chosen by its position in the fleet (``scenarios``: steady
training, one GPU running hot and throttling, a data loader starving its GPUs while the dataset
disk is saturated, a node that drops off the network and comes back, an idle node, a node whose
kernel OOM-kills a DataLoader worker, a crash-looping training unit). Values come only from
``random.Random`` seeded with (seed, node name) and the step number, and time from a simulated
clock that starts at a fixed epoch: stepping the fleet by hand (``step_into``) gives the same
numbers and times on every run.

- ``fleet``: ``DemoTransport``, the fleet stepped or streamed; actions through a given hook;
- ``node``: one node (facts, samples, link); ``host``: its CPU, memory, disks, NICs;
- ``gpu``: a GPU under its scenario; ``h100``: the one synthetic GPU (an H100 SXM 80 GB, as the
  real captures in tests/fixtures/nvidia-smi/ report it), shared with the burn-in demo;
- ``unit``: its training unit as systemd reports it.
"""

from .fleet import CommandHook, DemoTransport
from .scenarios import EPOCH

__all__ = ["EPOCH", "CommandHook", "DemoTransport"]
