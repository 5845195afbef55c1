"""Destinations as ssh(1) takes them: ``host``, ``user@host``, ``host:port``, ``user@host:port``,
``[v6addr]:port`` and ``ssh://user@host:port`` (the forms ``ssh -J`` and ``ProxyJump`` accept);
and node ranges on the command line, ``gpu[01-16]``, as pdsh and Slurm write them.

A host or user name that ssh(1) itself would refuse is refused here, with ssh's own rule: the
SSH config's ``ProxyCommand`` (run by a shell) receives them as ``%h`` and ``%r``, so a name
like ``inj$(touch F)`` would run on the operator's machine. Every destination — a HOST
argument, a ``-J`` hop, a ``ProxyJump`` hop — is parsed here before anything connects.
"""

from __future__ import annotations

import re
import unicodedata
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
    spec = text  # as written: a space or newline around it is refused below, as ssh does
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
    check_host(host, text)
    if user is not None:
        check_user(user, text)
    return Destination(text=text, host=host, user=user, port=port)


# OpenSSH's ssh_valid_hostname and ssh_valid_ruser (readconf.c; ssh 9.6 and later, and the
# distributions' backports of CVE-2023-51385, e.g. Debian's 9.2p1-2+deb12u2): characters a shell
# gives a meaning to. Controls and spaces are read as Unicode reads them (C1 controls, no-break
# spaces too): a little stricter than ssh's bytes, never looser.
_HOST_REFUSED = frozenset("'`\"$\\;&<>|(){},")
_USER_REFUSED = frozenset("'`\";&<>|(){}")
_WHY = "ssh refuses it too: a ProxyCommand's shell would read it"


def check_host(host: str, text: str) -> None:
    """Raise ``HostSpecError`` for a host name ssh(1) refuses ("hostname contains invalid
    characters"); ``text`` is the destination as written, for the message."""
    if host.startswith("-"):
        raise HostSpecError(f"{text!r}: a host name may not start with '-' (ssh refuses it too: it reads as an option)")
    bad = next((c for c in host if c in _HOST_REFUSED or _is_space_or_control(c)), None)
    if bad == ",":  # pdsh's -w list habit: say how dltui takes several nodes
        raise HostSpecError(f"{text!r}: ',' is not allowed in a host name: name nodes as separate words or gpu[01-02]")
    if bad is not None:
        raise HostSpecError(f"{text!r}: {bad!r} is not allowed in a host name ({_WHY})")


def check_user(user: str, text: str) -> None:
    """Raise ``HostSpecError`` for a user name ssh(1) refuses ("remote username contains
    invalid characters"): shell characters, controls, a '-' first or after a space (an
    option), a '\\' last (it would escape what follows)."""
    if user.startswith("-") or re.search(r"\s-", user):
        raise HostSpecError(f"{text!r}: a user name may not start a word with '-' (ssh refuses it too)")
    if user.endswith("\\"):
        raise HostSpecError(f"{text!r}: a user name may not end with '\\' (ssh refuses it too)")
    bad = next((c for c in user if c in _USER_REFUSED or unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise HostSpecError(f"{text!r}: {bad!r} is not allowed in a user name ({_WHY})")


def _is_space_or_control(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Cc"


def parse_jumps(text: str) -> tuple[Destination, ...]:
    """A ProxyJump / ``-J`` value: comma-separated hops, first hop first."""
    return tuple(parse_destination(hop.strip()) for hop in text.split(",") if hop.strip())


_RANGE = re.compile(r"\[(\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)\]")
MAX_EXPANDED = 10000  # a typo like gpu[1-99999] stops here instead of opening 99999 connections
MAX_HOST_CHARS = 255  # a DNS name is at most 253; user@ and :port fit in what is left


def expand_ranges(hosts: list[str]) -> list[str]:
    """``gpu[01-04,07]`` -> gpu01 … gpu04, gpu07, as pdsh, clush and Slurm write node lists;
    several groups multiply (``rack[1-2]-gpu[1-8]``). A leading zero sets the width. Brackets
    around anything else (``[v6addr]:port``, ``[host]:port``) are left alone. Every name that
    comes out is a destination ssh(1) would take (``HostSpecError`` names the first that is
    not), so a command refuses a bad HOST before it starts anything."""
    out: list[str] = []
    for text in hosts:
        if len(text) > MAX_HOST_CHARS:
            raise HostSpecError(f"{text[:40]!r}... is {len(text)} characters long: a host is at most {MAX_HOST_CHARS}")
        names = _expand(text, text)
        out.extend(names)
        if len(out) > MAX_EXPANDED:
            raise HostSpecError(f"{text!r} names more than {MAX_EXPANDED} nodes")
        for name in names:
            parse_destination(name)
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
