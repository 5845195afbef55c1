"""The fabric of a burn-in, folded as the samples arrive: the first and the last reading of every
HCA port and of every GPU's NVLink (the preflight baseline and the post reading), and when a
port or link that was up was first seen down. Bounded whatever the run's length. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field

from dltui.core.models import IbPortSample, NvlinkSample, Sample


@dataclass
class FabricFold:
    """First and last reading of every port and every GPU's NVLink, and when a port or link
    that was up was first seen down."""

    ports_first: dict[str, IbPortSample] = field(default_factory=dict)
    ports_last: dict[str, IbPortSample] = field(default_factory=dict)
    ports_lost: dict[str, float] = field(default_factory=dict)  # port -> when it went down
    links_first: dict[int, NvlinkSample] = field(default_factory=dict)
    links_last: dict[int, NvlinkSample] = field(default_factory=dict)
    links_lost: dict[int, tuple[float, int]] = field(default_factory=dict)  # gpu -> (when, fewest)
    first_time: float | None = None
    last_time: float | None = None

    def add(self, sample: Sample) -> None:
        if not sample.ib_ports and not sample.nvlinks:
            return
        if self.first_time is None:
            self.first_time = sample.time
        self.last_time = sample.time
        for port in sample.ib_ports:
            first = self.ports_first.setdefault(port.name, port)
            self.ports_last[port.name] = port
            if first.up and port.up is False:
                self.ports_lost.setdefault(port.name, sample.time)
        for links in sample.nvlinks:
            first_links = self.links_first.setdefault(links.gpu, links)
            self.links_last[links.gpu] = links
            active, before = links.links_active, first_links.links_active
            if active is not None and before is not None and active < before:
                when, fewest = self.links_lost.get(links.gpu, (sample.time, active))
                self.links_lost[links.gpu] = (when, min(fewest, active))
