"""Which units (and which checkpoint glob) belong to a node: per node group in the config.

    [groups.training]
    hosts = ["gpu*"]
    units = ["dl_train.service"]           # default for every node: ["dl_train.service"]
    checkpoint = "/data/ckpt/*/*.pt"        # newest mtime feeds checkpoint_stale (no default)

The first group (in file order) matching a node that names ``units`` gives its units; the same
for ``checkpoint``. The keys are declared in dltui/config.py (``GroupSection``); unit names
are checked against systemd's grammar here, when the settings are built.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from dltui.config import DEFAULT_UNITS, Config, ConfigError

from . import names


class UnitConfig:
    def __init__(self, cfg: Config | None = None):
        source = (cfg.source if cfg else None) or "config"
        self.groups: list[tuple[tuple[str, ...], tuple[str, ...] | None, str | None]] = []
        self.containers: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # (host patterns, containers)
        for name, group in (cfg.groups if cfg else {}).items():
            units = group.units
            if units is not None:
                try:
                    units = tuple(names.unit_name(u) for u in units)
                except names.InvalidName as exc:
                    raise ConfigError(f"{source}: [groups.{name}] units: {exc}") from None
            checkpoint = group.checkpoint
            if checkpoint is not None and not checkpoint.strip():
                raise ConfigError(
                    f'{source}: [groups.{name}] checkpoint must be a glob such as "/data/ckpt/*.pt"'
                )
            self.groups.append((tuple(h.lower() for h in group.hosts), units, checkpoint))
            if group.containers is not None:
                try:
                    wanted = tuple(names.container_ref(c) for c in group.containers)
                except names.InvalidName as exc:
                    raise ConfigError(f"{source}: [groups.{name}] containers: {exc}") from None
                self.containers.append((tuple(h.lower() for h in group.hosts), wanted))

    def containers_for(self, node: str) -> tuple[str, ...]:
        """The training containers of ``node``: the first matching group's that names them."""
        low = node.lower()
        return next((c for hosts, c in self.containers if any(fnmatchcase(low, h) for h in hosts)), ())

    def for_node(self, node: str) -> tuple[tuple[str, ...], str | None]:
        """(units, checkpoint glob or None) for ``node``."""
        low = node.lower()
        units: tuple[str, ...] | None = None
        checkpoint: str | None = None
        for hosts, g_units, g_checkpoint in self.groups:
            if not any(fnmatchcase(low, h) for h in hosts):
                continue
            if units is None and g_units is not None:
                units = g_units
            if checkpoint is None and g_checkpoint is not None:
                checkpoint = g_checkpoint
        return (DEFAULT_UNITS if units is None else units), checkpoint
