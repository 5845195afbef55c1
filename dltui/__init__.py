"""dltui: a terminal dashboard for deep-learning GPU servers.

The packages, in layers (each imports only from its own layer or below; the layering is a
test, tests/unit/test_boundaries.py): ``node`` (what runs on a node) and ``config`` at the
bottom; ``core`` (models, fleet state, rules); ``transport`` (sources of samples); ``actions``;
``burnin`` and ``export``; ``ui``; ``cli`` on top."""

__version__ = "0.1.0"
