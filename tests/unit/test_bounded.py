"""Defence in depth: the action layer refuses an absurd journal line count itself, whatever
the command line let through, before anything is sent."""

import asyncio

import pytest

from dltui.actions import names
from dltui.actions.policy import REFUSED
from dltui.actions.service import ActionService
from dltui.transport.command import CommandResult


class Runner:
    def __init__(self):
        self.sent = []

    async def run_command(self, node, argv, timeout_s):
        self.sent.append(list(argv))
        return CommandResult(tuple(argv), 0, "")


@pytest.mark.parametrize("lines", [0, -1, names.JOURNAL_LINES_MAX + 1, 10**100, True, 2.5, "50"])
def test_an_absurd_journal_line_count_is_refused_and_nothing_is_sent(lines):
    runner = Runner()
    result = asyncio.run(ActionService(runner).logs("gpu01", "dl_train.service", lines))
    assert result.outcome == REFUSED and "journal lines" in result.message
    assert runner.sent == []


def test_a_sane_journal_line_count_is_sent_as_given():
    runner = Runner()
    asyncio.run(ActionService(runner).logs("gpu01", "dl_train.service", names.JOURNAL_LINES_MAX))
    assert runner.sent == [["journalctl", "--no-pager", "-o", "json", "-u", "dl_train.service",
                            "-n", str(names.JOURNAL_LINES_MAX)]]
