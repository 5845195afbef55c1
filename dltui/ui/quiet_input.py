"""Textual's Linux driver with an input thread that sleeps while no key comes.

Textual's input thread wakes every 0.1 s, for ever, to time out a lone Escape (ESCDELAY): ten
wakeups a second, each taking the GIL from the UI thread — some 8 % of the local dashboard's
CPU on a quiet node, where btop sleeps until a key or its next update. Here the thread keeps
Textual's 0.1 s step only while the parser may hold a partial sequence (until ESCDELAY after the
last bytes read), then blocks in ``select`` until the terminal has input or the driver stops
(the exit event wakes it through a pipe). Keys, mouse, paste and Escape parse as before: the
loop is Textual 8.2's ``run_input_thread`` with the timeout chosen per call
(tests/ui/test_quiet_input.py checks that source's hash, and an Escape alone through a pty).
"""

from __future__ import annotations

import os
import selectors
import time
from codecs import getincrementaldecoder
from threading import Event

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

POLL_S = 0.1  # Textual's own step while a sequence may be partial


class _WakingEvent(Event):
    """The driver's exit event: setting it also wakes the input thread's ``select``."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd: int | None = wake_fd

    def set(self) -> None:
        super().set()
        if self._wake_fd is not None:
            os.write(self._wake_fd, b"x")

    def forget(self) -> None:
        """The pipe is closing: never write to its number again (it may be reused)."""
        self._wake_fd = None


class QuietLinuxDriver(LinuxDriver):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self.exit_event: _WakingEvent = _WakingEvent(self._wake_w)

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual's loop; ``select`` blocks when idle)."""
        selector = selectors.SelectSelector()
        fileno = self.fileno
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        settle_s = constants.ESCAPE_DELAY + POLL_S  # a partial sequence has timed out by then
        last_input = time.monotonic()

        def process(events, final: bool = False) -> bool:
            """Feed what the terminal sent to the parser; False at the end of its input."""
            read_any = False
            for key, _mask in events:
                if key.fd != fileno:
                    self._drain_wake()
                    continue
                data = decode(os.read(fileno, 1024 * 4), final=final)
                if not data:  # stdin piped and closed
                    break
                read_any = True
                for event in parser.feed(data):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)
            return read_any

        try:
            self._drain_wake()
            while not self.exit_event.is_set():
                waiting = time.monotonic() - last_input < settle_s
                if process(selector.select(POLL_S if waiting else None)):
                    last_input = time.monotonic()
            selector.unregister(fileno)
            process(selector.select(POLL_S), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 64):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        super().close()
        self.exit_event.forget()
        os.close(self._wake_r)
        os.close(self._wake_w)
