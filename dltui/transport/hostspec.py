"""Destinations as ssh(1) takes them: ``host``, ``user@host``, ``host:port``, ``user@host:port``,
``[v6addr]:port`` and ``ssh://user@host:port`` (the forms ``ssh -J`` and ``ProxyJump`` accept);
and node ranges on the command line, ``gpu[01-16]``, as pdsh and Slurm write them."""

from __future__ import annotations

import re
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


_RANGE = re.compile(r"\[(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\]")
MAX_EXPANDED = 10000  # a typo like gpu[1-99999] stops here instead of opening 99999 connections
MAX_HOST_CHARS = 255  # a DNS name is at most 253; user@ and :port fit in what is left


def expand_ranges(hosts: list[str]) -> list[str]:
    """``gpu[01-04,07]`` -> gpu01 … gpu04, gpu07, as pdsh, clush and Slurm write node lists;
    several groups multiply (``rack[1-2]-gpu[1-8]``). A leading zero sets the width. Brackets
    around anything else (``[v6addr]:port``, ``[host]:port``) are left alone."""
    out: list[str] = []
    for text in hosts:
        if len(text) > MAX_HOST_CHARS:
            raise HostSpecError(f"{text[:40]!r}... is {len(text)} characters long: a host is at most {MAX_HOST_CHARS}")
        out.extend(_expand(text, text))
        if len(out) > MAX_EXPANDED:
            raise HostSpecError(f"{text!r} names more than {MAX_EXPANDED} nodes")
    return out


def _expand(text: str, whole: str) -> list[str]:
    match = _RANGE.search(text)
    if match is None:
        return [text]
    head, tail = text[: match.start()], _expand(text[match.end() :], whole)
    out: list[str] = []
    for part in match.group(1).split(","):
        lo, _, hi = part.partition("-")
        hi = hi or lo
        if int(hi) < int(lo):
            raise HostSpecError(f"range [{part}] in {whole!r} runs backwards")
        width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
        for n in range(int(lo), int(hi) + 1):
            if len(out) > MAX_EXPANDED:
                raise HostSpecError(f"{whole!r} names more than {MAX_EXPANDED} nodes")
            out.extend(f"{head}{n:0{width}d}{rest}" for rest in tail)
    return out
