"""Destinations as ssh(1) takes them: ``host``, ``user@host``, ``host:port``, ``user@host:port``,
``[v6addr]:port`` and ``ssh://user@host:port`` (the forms ``ssh -J`` and ``ProxyJump`` accept)."""

from __future__ import annotations

from dataclasses import dataclass


class HostSpecError(ValueError):
    """A destination that cannot be parsed; the message quotes it."""


@dataclass(frozen=True)
class Destination:
    text: str  # as the operator wrote it: the name shown and used in messages
    host: str  # a Host alias or a hostname; the SSH config is looked up with it
    user: str | None = None
    port: int | None = None


def parse_destination(text: str) -> Destination:
    spec = text.strip()
    if spec.startswith("ssh://"):
        spec = spec[len("ssh://") :].rstrip("/")
    user = None
    if "@" in spec:
        user, spec = spec.rsplit("@", 1)
    port = None
    if spec.startswith("["):  # [v6addr]:port or [host]:port
        host, sep, rest = spec[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise HostSpecError(f"cannot parse destination {text!r}")
        port_text = rest[1:] or None
    elif spec.count(":") == 1:
        host, port_text = spec.split(":")
    else:  # no port, or a bare IPv6 address
        host, port_text = spec, None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise HostSpecError(f"bad port in destination {text!r}")
        port = int(port_text)
    if not host or user == "":
        raise HostSpecError(f"cannot parse destination {text!r}")
    return Destination(text=text, host=host, user=user, port=port)


def parse_jumps(text: str) -> tuple[Destination, ...]:
    """A ProxyJump / ``-J`` value: comma-separated hops, first hop first."""
    return tuple(parse_destination(hop) for hop in text.split(",") if hop.strip())
