"""History from before dltui started, read from Prometheus (``[prometheus] url``,
``--history-from URL``): range queries for one node's window (``fetch``, planned by
``plan``, asked by ``queries``), replayed through the live rules to find the alerts its past
would have raised (``dltui.core.past_alerts``), cached per window (``source``)."""

from .fetch import FetchedWindow, NoHistory
from .source import HISTORY_WINDOWS_S, HistorySource, PastWindow

__all__ = ["HISTORY_WINDOWS_S", "FetchedWindow", "HistorySource", "NoHistory", "PastWindow"]
