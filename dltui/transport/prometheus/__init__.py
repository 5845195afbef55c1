"""The fleet from an existing Prometheus (node_exporter + dcgm-exporter) instead of SSH.

Every refresh runs the same three instant queries, whatever the fleet's size:

1. ``DCGM_FI_DEV_*`` gauges (one selector, a ``__name__`` regex) of whole GPUs, grouped by
   only the labels that tell readings apart: the GPUs' readings;
2. node_exporter gauges and ``up``: memory, load, file systems, facts, target health;
3. node_exporter counters as rates (``irate``), each tagged with a ``dltui`` label and joined
   with ``or``: CPU by mode (summed per instance), disks, NICs, pressure;

and a fourth, the GPUs' facts (UUID, model, bus id, driver: one series per GPU), on the first
refresh, every ``FACTS_EVERY_S`` and in the refresh that sees a GPU they do not cover.

Nodes are joined on the host name: dcgm-exporter's ``Hostname`` (``hostname`` since 2026),
node_exporter's ``nodename`` from ``node_uname_info``, else the host part of ``instance``.
Series are mapped into the same ``Sample`` model as the probe's; what Prometheus does not hold
is ``None`` (n/a), never 0. There is no sub-second GPU utilisation here: the starvation rule
works on one reading per refresh, and its alerts say so.
"""

from .client import Client, PrometheusError, gc_paused
from .mapping import Fleet, build
from .queries import SelectorError, matchers, queries
from .source import PrometheusTransport, from_args

__all__ = [
    "Client",
    "Fleet",
    "PrometheusError",
    "PrometheusTransport",
    "SelectorError",
    "build",
    "from_args",
    "gc_paused",
    "matchers",
    "queries",
]
