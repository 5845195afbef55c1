"""The probe's bundle goes down its channel in chunks, a loop turn apart, as flow control allows."""

import asyncio

import pytest

from dltui.core.state import FleetState
from dltui.node import bundle
from dltui.transport.protocol import ProbeReader
from dltui.transport.ssh.fleet import BUNDLE_CHUNK_BYTES, _NodeLink, _ProbeSession


class RecordingChannel:
    """Takes writes; pauses the session's writing after ``pause_after`` of them, as asyncssh
    does when the peer's window is full."""

    def __init__(self, session, pause_after=None, fail_after=None):
        self.session = session
        self.writes: list[bytes] = []
        self.pause_after = pause_after
        self.fail_after = fail_after

    def write(self, data):
        if self.fail_after is not None and len(self.writes) >= self.fail_after:
            raise BrokenPipeError("channel closed")  # the probe already exited
        self.writes.append(bytes(data))
        if self.pause_after is not None and len(self.writes) == self.pause_after:
            self.session.pause_writing()


def link_and_session():
    link = _NodeLink("gpu01", sessions=None, interval_s=1.0, python="python3")
    session = _ProbeSession(ProbeReader("gpu01", FleetState(["gpu01"])), lambda sink: None)
    return link, session


async def test_the_bundle_arrives_whole_in_chunks_that_fit_one_packet():
    link, session = link_and_session()
    chan = RecordingChannel(session)
    await link._send_bundle(chan, session)
    assert b"".join(chan.writes) == bundle.payload()
    assert len(chan.writes) > 1 and all(len(w) <= BUNDLE_CHUNK_BYTES for w in chan.writes)


async def test_other_work_runs_between_the_chunks():
    link, session = link_and_session()
    chan = RecordingChannel(session)
    seen = []  # how many chunks were written each time another task got a turn

    async def other():
        while True:
            seen.append(len(chan.writes))
            await asyncio.sleep(0)

    task = asyncio.create_task(other())
    await link._send_bundle(chan, session)
    task.cancel()
    assert len(set(seen)) >= len(chan.writes) - 1  # a turn between (nearly) every two chunks


async def test_a_full_window_pauses_the_writing_until_the_channel_resumes_it():
    link, session = link_and_session()
    chan = RecordingChannel(session, pause_after=2)
    sending = asyncio.create_task(link._send_bundle(chan, session))
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(chan.writes) == 2 and not sending.done()
    session.resume_writing()
    await asyncio.wait_for(sending, 5)
    assert b"".join(chan.writes) == bundle.payload()


@pytest.mark.parametrize("lost", ["closed while paused", "write refused"])
async def test_a_probe_that_has_ended_stops_the_writing_without_an_error(lost):
    link, session = link_and_session()
    if lost == "closed while paused":
        chan = RecordingChannel(session, pause_after=1)
        sending = asyncio.create_task(link._send_bundle(chan, session))
        await asyncio.sleep(0)
        session.connection_lost(None)  # the channel went away while the window was full
        chan.fail_after = 1
    else:
        chan = RecordingChannel(session, fail_after=1)
        sending = asyncio.create_task(link._send_bundle(chan, session))
    await asyncio.wait_for(sending, 5)  # returns: the exit status, not a write error, says why
    assert len(chan.writes) == 1
