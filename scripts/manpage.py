#!/usr/bin/env python3
"""Write the man page, dltui/man/dltui.1, from the command line's own parser (so it never
drifts: tests/unit/test_packaging.py checks the committed page against a fresh one).

    python scripts/manpage.py            # rewrite dltui/man/dltui.1
    python scripts/manpage.py --check    # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dltui import __version__  # noqa: E402
from dltui import cli  # noqa: E402

PAGE = REPO / "dltui" / "man" / "dltui.1"


def roff(text: str) -> str:
    """Plain text as roff: backslashes and option dashes escaped, no line starting a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line if line[:1] in (".", "'") else line) for line in text.splitlines())


def options(parser: argparse.ArgumentParser) -> list[str]:
    out = []
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = ", ".join(action.option_strings)
            meta = "" if action.nargs == 0 else " " + (action.metavar or action.dest.upper())
            head = f"\\fB{roff(names)}\\fR{roff(meta)}"
        else:
            head = f"\\fI{roff(str(action.metavar or action.dest))}\\fR"
        out += [".TP", head, roff(action.help or "")]
    return out


def synopsis(name: str, parser: argparse.ArgumentParser) -> str:
    """``dltui NAME [options] ARG ...`` from the parser (not argparse's usage line, whose
    wrapping differs between Python versions)."""
    words = [f"\\fBdltui {roff(name)}\\fR", "[\\fIoptions\\fR]"]
    for action in parser._actions:  # noqa: SLF001
        if action.option_strings:
            continue
        meta = f"\\fI{roff(str(action.metavar or action.dest))}\\fR"
        if action.choices and not action.metavar:
            meta = "{" + ",".join(roff(str(c)) for c in action.choices) + "}"
        words.append({"*": f"[{meta} ...]", "+": f"{meta} ...", "?": f"[{meta}]"}.get(str(action.nargs), meta))
    return " ".join(words)


def page() -> str:
    parser = cli.build_parser()
    lines = [
        f'.TH DLTUI 1 "" "dltui {__version__}" "User Commands"',
        ".SH NAME",
        "dltui \\- terminal dashboard for deep\\-learning GPU servers",
        ".SH SYNOPSIS",
        ".B dltui",
        "[\\fIHOST\\fR ...]",
        ".br",
        ".B dltui",
        "\\fICOMMAND\\fR [\\fIoptions\\fR] ...",
        ".SH DESCRIPTION",
        roff(parser.description or ""),
        "Nodes are reached as ssh(1) reaches them (the SSH config, ProxyJump, keys, agent,",
        "known_hosts); a small probe runs on each over that connection.",
        ".SH COMMANDS",
    ]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    for name, command in sub.choices.items():
        lines += [f".SS {roff(name)}", synopsis(name, command), ".PP", roff(command.description or "")]
        lines += options(command)
        if command.epilog:
            lines += [".PP", roff(command.epilog)]
    lines += [
        ".SH FILES",
        ".TP",
        "\\fI~/.config/dltui/config.toml\\fR",
        "The config file (\\fB$XDG_CONFIG_HOME\\fR, \\fB\\-\\-config\\fR, \\fB$DLTUI_CONFIG\\fR).",
        ".TP",
        "\\fI~/.config/dltui/themes/NAME.toml\\fR",
        "Your own colour themes.",
        ".TP",
        "\\fI~/.local/state/dltui/dltui.log\\fR",
        "dltui's log (\\fB$XDG_STATE_HOME\\fR, \\fB\\-\\-log\\-file\\fR): warnings, crash tracebacks, "
        "debug records with \\fB\\-\\-debug\\fR.",
        ".TP",
        "\\fI~/.local/state/dltui/audit.jsonl\\fR",
        "Every action on a node, appended.",
        ".SH ENVIRONMENT",
        ".TP",
        "\\fBDLTUI_CONFIG\\fR, \\fBDLTUI_INTERVAL\\fR, \\fBDLTUI_THEME\\fR",
        "The config file, the sampling interval and the theme, under the command line.",
        ".SH SEE ALSO",
        "ssh(1), ssh_config(5), nvidia\\-smi(1)",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    text = page()
    if "--check" in sys.argv[1:]:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE} is out of date: python scripts/manpage.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
