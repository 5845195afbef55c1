"""An SSH config cut down to the lines that can apply to one destination.

asyncssh parses the whole config for every connection, and dltui parses it once more per
destination to route jumps and check host keys. With one ``Host`` block per node, as
generated fleet configs have, a fleet of N nodes costs 2 x N whole-file parses: at 64 nodes
half of dltui's start-up CPU, at 500 nodes tens of seconds. A ``Host`` block whose patterns
do not match the destination is skipped line by line by the parser anyway, so it is blanked
out here (line numbers stay as they were, for error messages) and each parse reads only the
global lines, the ``Match`` blocks and the destination's own ``Host`` blocks.

A config that uses ``Include`` or ``CanonicalizeHostname`` is handed over whole: what those
pull in or rename is for the parser to decide.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import weakref

from .library import WildcardPatternList

_WHOLE_FILE_KEYWORDS = {"include", "canonicalizehostname"}


class ConfigSlicer:
    """Per-destination slices of one config file as it is now (make a new one when it changes).
    The slices are files in a private temporary directory, removed with this object."""

    def __init__(self, path: str):
        self.path = path
        with open(path) as f:  # as the parser reads it: text mode, lines end at newlines only
            self.lines = f.readlines()
        # (first line, end line, Host patterns); None: always kept (global part, Match blocks)
        self.sections: list[tuple[int, int, WildcardPatternList | None]] = []
        self.whole = False
        self._scan()
        self._dir: str | None = None
        self._slices: dict[str, str] = {}

    def path_for(self, host: str) -> str:
        """A config file equivalent to the original for ``host`` (as given, before HostName)."""
        if self.whole:
            return self.path
        sliced = self._slices.get(host)
        if sliced is None:
            sliced = self._slices[host] = self._write(host)
        return sliced

    def real_path_in(self, message: str) -> str:
        """A parser message about a slice, naming the user's file instead."""
        for sliced in self._slices.values():
            message = message.replace(sliced, self.path)
        return message

    def _scan(self) -> None:
        start, patterns = 0, None
        for number, line in enumerate(self.lines):
            try:
                keyword, args = _keyword_and_args(line)
            except ValueError:  # unbalanced quotes: the parser fails the whole file, let it say so
                self.whole = True
                return
            if keyword in _WHOLE_FILE_KEYWORDS or (keyword == "host" and not args):
                self.whole = True
                return
            if keyword in ("host", "match"):
                self.sections.append((start, number, patterns))
                start = number
                # the parser's own matcher: Host patterns mean here exactly what they mean there
                patterns = WildcardPatternList(",".join(args)) if keyword == "host" else None
        self.sections.append((start, len(self.lines), patterns))

    def _write(self, host: str) -> str:
        kept: list[str] = []
        for start, end, patterns in self.sections:
            if patterns is None or patterns.matches(host):
                kept.extend(self.lines[start:end])
            else:
                kept.extend("\n" * (end - start))
        if self._dir is None:
            # the user's runtime dir where there is one: private, and emptied at logout even
            # when dltui was killed before it could clean up
            runtime = os.environ.get("XDG_RUNTIME_DIR")
            self._dir = tempfile.mkdtemp(
                prefix="dltui-ssh-config-",
                dir=runtime if runtime and os.path.isdir(runtime) else None,
            )
            weakref.finalize(self, _remove_dir, self._dir)
        fd, sliced = tempfile.mkstemp(dir=self._dir, suffix=".config")
        with os.fdopen(fd, "w") as out:
            out.writelines(kept)
        return sliced


def _keyword_and_args(line: str) -> tuple[str, list[str]]:
    """A config line's lower-cased keyword and its arguments, split the way asyncssh's
    ``SSHConfig.parse`` splits them (``shlex``, then ``Key=value`` forms; ``Host`` and ``Match``
    keep ``=`` inside their arguments). Raises ValueError where shlex does."""
    stripped = line.strip()
    if not stripped or stripped[0] == "#":
        return "", []
    words = shlex.split(stripped)
    args: list[str] = []
    keyword, allow_equal = "", True
    for i, word in enumerate(words, 1):
        if word.startswith("="):
            if len(word) > 1:
                args.append(word[1:])
        elif not allow_equal:
            args.extend(words[i - 1 :])
            break
        elif word.endswith("="):
            args.append(word[:-1])
        elif "=" in word:
            key, value = word.split("=", 1)
            args += [key, value]
        else:
            args.append(word)
        if i == 1:
            keyword = args.pop(0).lower() if args else ""
            allow_equal = keyword in ("host", "match")
    return keyword, args


def _remove_dir(path: str) -> None:
    for name in os.listdir(path):
        os.unlink(os.path.join(path, name))
    os.rmdir(path)
