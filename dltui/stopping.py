"""How a command stops: SIGINT (Ctrl-C), SIGTERM and SIGHUP alike.

``run(main)`` is ``asyncio.run(main)`` where any of those signals cancels the main task, so
every ``finally`` below it runs — connections closed (their node-side probes exit with
them), recorders flushed, temporary files removed, an action in flight audited as
interrupted — and then ``Stopped`` (a ``KeyboardInterrupt``) is raised to the caller, which
ends the command as its Ctrl-C path says (snapshot: UNKNOWN; export: a clean stop; unit:
128 + the signal; burn-in: detached). Without it, SIGTERM (``timeout``, systemd, a job
scheduler) or SIGHUP (a closed terminal) kill the process where it stands.

``on_stop`` replaces the cancellation for a program that has its own way to end, e.g. the
dashboard's ``app.exit``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Raised by ``run`` after a stop signal; ``signum`` says which (exit codes 128 + it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def run(
    main: Coroutine[Any, Any, T],
    on_stop: Callable[[], object] | None = None,
    signals: tuple[signal.Signals, ...] = STOP_SIGNALS,
) -> T:
    stopped: list[int] = []

    async def guarded() -> T:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None

        def stop(signum: int) -> None:
            logging.getLogger("dltui.stopping").debug("%s: stopping", signal.Signals(signum).name)
            stopped.append(signum)
            if on_stop is not None:
                on_stop()
            else:
                task.cancel()

        for sig in signals:
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await main
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if stopped:
            raise Stopped(stopped[0]) from None
        raise
