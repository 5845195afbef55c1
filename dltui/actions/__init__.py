"""Actions on nodes: the training unit (systemd) and GPU processes.

Pure policy lives here, outside the UI: validation (``names``), the exact argv and its
privilege (``commands``), running it on a node (``runner``), verification (``unit``,
``signal``) and the audit log (``audit``). The UI and the CLI both call ``ActionService``.
Nothing here imports Textual.
"""
