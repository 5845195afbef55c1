"""dltui: a terminal dashboard for deep-learning GPU servers."""

__version__ = "0.1.0"
