"""APT's configuration files (apt.conf(5)), read as APT reads them, for the few keys dltui needs.

The syntax: ``A::B "value";`` assigns; ``A { B "value"; };`` is the same key in a scope;
``List { "one"; "two"; };`` is a list; ``#clear A::B;`` forgets a key; ``//``, ``/* */`` and
lines starting with ``#`` are comments. Keys are case-insensitive. Files of
``/etc/apt/apt.conf.d`` count in name order, then ``/etc/apt/apt.conf``; file names APT
ignores (backups, ``.disabled``, odd characters) are ignored here too. Stdlib only, 3.8.
"""

from __future__ import annotations

import os
import re

_TOKEN = re.compile(
    r'\s*(?:(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>"[^"\n]*")|(?P<punct>[{};])'
    r"|(?P<directive>#(?:clear|include)\b)|(?P<hash>#[^\n]*)|(?P<word>[^\s{};\"]+))",
    re.S,
)
# APT's Dir::Ignore-Files-Silently, and the characters a parts file name may use.
_IGNORED = re.compile(
    r"(~|\.disabled|\.bak|\.dpkg-[a-z]+|\.ucf-[a-z]+|\.save|\.orig|\.distUpgrade)$"
)
_GOOD_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class AptConfig:
    """Key (lower case, ``::``-joined) -> its values: one for a plain setting, several for a
    list."""

    def __init__(self) -> None:
        self.values: dict[str, list[str]] = {}

    def get(self, key: str) -> str | None:
        values = self.values.get(key.lower())
        return values[-1] if values else None

    def items(self, key: str) -> list[str]:
        return list(self.values.get(key.lower(), ()))

    def parse(self, text: str) -> None:
        scopes: list[str] = []
        name: str | None = None  # a word waiting for its value or its block
        clear = False
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            token = match.group(kind) if kind else ""
            if kind in ("comment", "hash") or not token:
                continue
            if kind == "directive":
                clear = token == "#clear"
                continue
            if kind == "word" and name is None:
                name = token
                continue
            if kind in ("string", "word"):
                value = token[1:-1] if kind == "string" else token  # APT tolerates A::B 1;
                if name is not None:  # A::B "value";
                    self.values[self._key(scopes, name)] = [value]
                    name = None
                elif scopes:  # a list item: "value"; inside List { ... }
                    self.values.setdefault("::".join(scopes), []).append(value)
            elif token == "{":
                scopes.append(self._key([], name) if name is not None else "")
                self.values.setdefault("::".join(scopes), [])
                name = None
            elif token == "}":
                if scopes:
                    scopes.pop()
            elif token == ";":
                if clear and name is not None:
                    prefix = self._key(scopes, name)
                    for key in [
                        k for k in self.values if k == prefix or k.startswith(prefix + "::")
                    ]:
                        del self.values[key]
                clear, name = False, None

    @staticmethod
    def _key(scopes: list[str], name: str) -> str:
        return "::".join([*scopes, name.lower()]) if scopes else name.lower()


def _read_by_apt(name: str) -> bool:
    """APT reads parts files with no extension or ``.conf``, made of ``[A-Za-z0-9_.-]``."""
    return (
        bool(_GOOD_NAME.match(name))
        and not _IGNORED.search(name)
        and ("." not in name or name.endswith(".conf"))
    )


def read_apt_config(etc_apt: str) -> AptConfig:
    """Every configuration file under ``etc_apt`` (``/etc/apt``), in APT's order."""
    config = AptConfig()
    parts = os.path.join(etc_apt, "apt.conf.d")
    try:
        names = sorted(os.listdir(parts))
    except OSError:
        names = []
    paths = [os.path.join(parts, n) for n in names if _read_by_apt(n)]
    paths.append(os.path.join(etc_apt, "apt.conf"))
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                config.parse(f.read())
        except OSError:
            continue
    return config
