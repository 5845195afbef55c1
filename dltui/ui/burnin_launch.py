"""From the dashboard to a burn-in: ``:burnin 2h`` starts one on the nodes picked on the fleet
screen (space; none picked: the ones it shows), after a typed confirmation; ``:attach RUN``
follows a run already going on them. The run lives on the nodes; this opens the burn-in screen
on it, and when it ends writes the report (``burnin-RUN/`` in the current directory), unless
the dashboard is read-only: then it writes nothing, neither report nor local spool. Starts,
stops, attaches and refusals go to the dashboard's audit log (under ``dltui serve`` its lines
name the browser)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from textual.app import App

from dltui.actions.audit import AuditError
from dltui.burnin.arguments import duration
from dltui.burnin.remote import new_run_id
from dltui.burnin.session import BurnIn, BurnInLauncher, Finished, Plan, see_through
from dltui.burnin.ship import check_run_id
from dltui.config import Config

from .screens.burnin import BurnInScreen
from .screens.prompt import PromptScreen


def _attached(session: BurnIn, read_only: bool) -> None:
    """Audited like a start: an attach may act (it leaves the report on the nodes), so it is
    refused when the log cannot be written (``ValueError``)."""
    said = "following the run" + (" (read-only: nothing is written)" if read_only else "")
    for host in session.hosts:
        try:
            session.audit.record(host, "burnin-attach", None, "ok", said, 0.0, run_id=session.run_id)
        except AuditError as exc:
            raise ValueError(f"{exc}; not attached") from None


def open_burnin(
    app: App[int], launcher: BurnInLauncher | None, shown: Sequence[str], verb: str, arg: str
) -> None:
    """``:burnin`` / ``:attach`` on the SSH nodes among ``shown`` (those picked on the fleet
    screen, else those it shows): ``launcher`` (built by ``dltui.wiring``; None without an SSH
    node) makes the session, ``app`` asks, shows and tells. Raises ValueError with the reason
    when it cannot (the app shows it)."""
    if launcher is None:
        raise ValueError("burn-in runs on SSH nodes; this dashboard has none")
    remote = set(launcher.hosts)
    hosts = [n for n in shown if n in remote]
    if not hosts:
        raise ValueError("no SSH node shown: clear or change the filter")
    cfg = launcher.cfg
    if verb == "attach":
        if not arg:
            raise ValueError(":attach RUN (the run id 'dltui burn-in' printed)")
        run_id = check_run_id(arg.strip())
        session = launcher.session(hosts, run_id)
        _attached(session, cfg.read_only)
        _launch(app, cfg, session, None)
        return
    if cfg.read_only:
        why = "burn-in loads the nodes fully: refused under --read-only"
        launcher.session(hosts, "-").refused("burnin-start", why)
        raise ValueError(why)
    words = arg.split()
    force = "force" in words  # ``:burnin 2h force``: load nodes that run someone's work
    length = next((w for w in words if w != "force"), "2h")
    try:
        seconds = duration(length)
    except argparse.ArgumentTypeError as exc:  # not a ValueError: the command line shows it
        raise ValueError(str(exc)) from None
    run_id = new_run_id()

    async def gate_then_launch() -> None:
        """As the CLI does: never load a node running someone's work unless forced."""
        refused = {} if force else await launcher.refusals(hosts)
        for host, why in refused.items():
            app.notify(f"{host}: not started: {why.replace('--force', ':burnin … force')}", severity="error")
        left = [h for h in hosts if h not in refused]
        if left:
            _launch(app, cfg, launcher.session(left, run_id), launcher.plan(duration_s=seconds))

    def confirmed(answer: str | None) -> None:
        if answer != "yes":
            app.notify("burn-in not started", severity="information")
            return
        app.run_worker(gate_then_launch(), group="burn-in", exit_on_error=False)

    app.push_screen(
        PromptScreen(
            "burn-in? ",
            placeholder=f"full load for {length} on {len(hosts)} node(s) "
            f"({', '.join(hosts[:4])}{'…' if len(hosts) > 4 else ''}): type yes",
        ),
        confirmed,
    )


def _launch(app: App[int], cfg: Config, session: BurnIn, plan: Plan | None) -> None:
    if cfg.read_only:  # followed and judged in memory: no local copy of the samples
        for view in session.views.values():
            view.collector.spool = None

    async def stop() -> None:
        if cfg.read_only:
            why = "stopping a burn-in changes the nodes: refused under --read-only"
            session.refused("burnin-stop", why)
            app.notify(why, title="burn-in stop", severity="error")
            return
        answers = await session.stop()
        app.notify(
            "; ".join(f"{h}: {'stopped' if a.ok else a.reason}" for h, a in answers.items()),
            title="burn-in stop",
        )

    async def work() -> None:  # on the fleet's connections: nothing of its own to close
        if plan is not None:
            await session.start(plan)
            for host, why in session.failed.items():
                app.notify(f"{host}: not started: {why}", severity="error")
        # read-only: followed and judged in memory, no report here or on the nodes
        folder = None if cfg.read_only else Path.cwd() / f"burnin-{session.run_id}"
        _told(app, session, await see_through(session, folder))
        for notice in session.notices:
            app.notify(notice, title=f"burn-in {session.run_id}", severity="warning")

    def stop_asked() -> None:
        app.run_worker(stop(), exit_on_error=False)

    app.run_worker(work(), name=f"burn-in {session.run_id}", group="burn-in", exit_on_error=False)
    app.push_screen(
        BurnInScreen(
            session.run_id,
            session.views,
            on_stop=stop_asked,
            failed=session.failed,
        )
    )


def _told(app: App[int], session: BurnIn, end: Finished) -> None:
    """The run's end in one notice: where its report is, why it is not, or, read-only, where a
    report comes from."""
    title = f"burn-in {session.run_id} done"
    if end.paths is not None:
        app.notify(f"exit {end.code}; report {end.paths['md']}", title=title)
    elif end.unwritten is not None:
        app.notify(f"exit {end.code}; the report was not written: {end.unwritten}", title=title, severity="error")
    else:
        app.notify(
            f"exit {end.code}; read-only: no report written (dltui burn-in attach {session.run_id} "
            "HOST... writes one)",
            title=title,
        )
