"""Actions on nodes: the training unit (systemd) and GPU processes.

Pure policy lives here, outside the UI, in the order a change goes through it: ``validate``
(names, PIDs, read-only), ``authorise`` (privilege: root, ``sudo -n`` or polkit; which PID may
be signalled; what to allow when refused), ``run`` (audit first, then send), ``verify`` (the
node's own state after). ``query`` reads without changing anything, ``commands`` builds the
exact argv, ``audit`` is the log, ``journal`` reads a unit's journal. The UI and the CLI both
call ``ActionService`` (``service``). Nothing here imports Textual.
"""
