"""From the dashboard to a burn-in: ``:burnin 2h`` starts one on the nodes picked on the fleet
screen (space; none picked: the ones it shows), after a typed confirmation; ``:attach RUN``
follows a run already going on them. The run lives on the nodes; this opens the burn-in screen
on it, and when it ends writes the report (``burnin-RUN/`` in the current directory), unless
the dashboard is read-only: then it writes nothing, neither report nor local spool. Starts,
stops, attaches and refusals go to the dashboard's audit log (under ``dltui serve`` its lines
name the browser)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dltui.actions.audit import AuditError, AuditLog
from dltui.burnin.arguments import duration
from dltui.burnin.remote import NodeShell, new_run_id
from dltui.burnin.session import BurnIn, Plan
from dltui.burnin.ship import check_run_id

from .screens.burnin import BurnInScreen
from .screens.prompt import PromptScreen


def _ssh_options(app: Any):
    for transport in app.transports:
        options = getattr(transport, "options", None)
        if options is not None:
            return options
    raise ValueError("burn-in runs on SSH nodes; this dashboard has none")


def _selected(app: Any) -> list[str]:
    """The SSH nodes picked on the fleet screen (space); none picked: the ones it shows (its
    filter), else every SSH node."""
    remote = {n for t in app.transports if getattr(t, "options", None) is not None for n in t.names}
    fleet = getattr(app, "_fleet_screen", None)
    now = app.fleet.clock()
    nodes = list(app.fleet)
    marked = _marked(fleet)
    if marked:
        nodes = [n for n in nodes if n.name in marked]
    elif fleet is not None and fleet.filter is not None:
        nodes = [n for n in nodes if fleet.filter(n, now)]
    return [n.name for n in nodes if n.name in remote]


def _marked(fleet: Any) -> set[str]:
    if fleet is None:
        return set()
    try:
        from .widgets import FleetTable

        return set(getattr(fleet.query_one(FleetTable), "marked", ()) or ())
    except Exception:  # noqa: BLE001 - not composed yet: nothing picked
        return set()


def _audit(app: Any) -> AuditLog:
    """The dashboard's audit log, which knows who acts (a browser tab's address under dltui
    serve)."""
    return app.actions.audit


def _attached(session: BurnIn, read_only: bool) -> None:
    """Audited like a start: an attach may act (it leaves the report on the nodes), so it is
    refused when the log cannot be written (``ValueError``)."""
    said = "following the run" + (" (read-only: nothing is written)" if read_only else "")
    for host in session.hosts:
        try:
            session.audit.record(host, "burnin-attach", None, "ok", said, 0.0, run_id=session.run_id)
        except AuditError as exc:
            raise ValueError(f"{exc}; not attached") from None


def open_burnin(app: Any, verb: str, arg: str) -> None:
    """Raises ValueError with the reason when it cannot (the app shows it)."""
    options = _ssh_options(app)
    hosts = _selected(app)
    if not hosts:
        raise ValueError("no SSH node shown: clear or change the filter")
    audit = _audit(app)
    if verb == "attach":
        if not arg:
            raise ValueError(":attach RUN (the run id 'dltui burn-in' printed)")
        run_id = check_run_id(arg.strip())
        session = BurnIn(NodeShell(options), hosts, run_id, thresholds=app.cfg.burnin, audit=audit)
        _attached(session, app.cfg.read_only)
        _launch(app, session, None)
        return
    if app.cfg.read_only:
        why = "burn-in loads the nodes fully: refused under --read-only"
        BurnIn(NodeShell(options), hosts, "-", audit=audit).refused("burnin-start", why)
        raise ValueError(why)
    try:
        seconds = duration(arg or "2h")
    except argparse.ArgumentTypeError as exc:  # not a ValueError: the command line shows it
        raise ValueError(str(exc)) from None
    run_id = new_run_id()

    def confirmed(answer: str | None) -> None:
        if answer != "yes":
            app.notify("burn-in not started", severity="information")
            return
        session = BurnIn(NodeShell(options), hosts, run_id, thresholds=app.cfg.burnin, audit=audit)
        _launch(app, session, Plan.from_config(app.cfg, duration_s=seconds))

    app.push_screen(
        PromptScreen(
            "burn-in? ",
            placeholder=f"full load for {arg or '2h'} on {len(hosts)} node(s) "
            f"({', '.join(hosts[:4])}{'…' if len(hosts) > 4 else ''}): type yes",
        ),
        confirmed,
    )


def _launch(app: Any, session: BurnIn, plan: Plan | None) -> None:
    if app.cfg.read_only:  # followed and judged in memory: no local copy of the samples
        for view in session.views.values():
            view.collector.spool = None

    async def stop() -> None:
        if app.cfg.read_only:
            why = "stopping a burn-in changes the nodes: refused under --read-only"
            session.refused("burnin-stop", why)
            app.notify(why, title="burn-in stop", severity="error")
            return
        answers = await session.stop()
        app.notify(
            "; ".join(
                f"{h}: {'stopped' if a.get('ok') else a.get('reason')}" for h, a in answers.items()
            ),
            title="burn-in stop",
        )

    async def work() -> None:
        try:
            if plan is not None:
                await session.start(plan)
                for host, why in session.failed.items():
                    app.notify(f"{host}: not started: {why}", severity="error")
            await session.follow()
            code = await session.judge()
            await _report(app, session, code)
            for notice in session.notices:
                app.notify(notice, title=f"burn-in {session.run_id}", severity="warning")
        finally:
            await session.shell.close()

    app.run_worker(work(), name=f"burn-in {session.run_id}", group="burn-in", exit_on_error=False)
    app.push_screen(
        BurnInScreen(
            session.run_id,
            session.views,
            on_stop=lambda: app.run_worker(stop(), exit_on_error=False),
            failed=session.failed,
        )
    )


async def _report(app: Any, session: BurnIn, code: int) -> None:
    """The report in ``burnin-RUN/`` of the current directory, and a copy on the nodes; a
    read-only dashboard writes neither, here or there, and says where a report comes from."""
    title = f"burn-in {session.run_id} done"
    if app.cfg.read_only:
        app.notify(
            f"exit {code}; read-only: no report written (dltui burn-in attach {session.run_id} "
            "HOST... writes one)",
            title=title,
        )
        return
    try:
        paths = session.write_report(Path.cwd() / f"burnin-{session.run_id}")
    except OSError as exc:  # a planted link or folder (UnsafePath), a full disk
        app.notify(f"exit {code}; the report was not written: {exc}", title=title, severity="error")
        return
    await session.leave_report_on_nodes(paths)
    app.notify(f"exit {code}; report {paths['md']}", title=title)
