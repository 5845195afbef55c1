"""The Textual dashboard: ``build_app`` / ``run_dashboard`` in ``app``; ``screens/`` and
``widgets/``; ``levels`` (a value's colour, from the rules' thresholds); ``action_flows`` (the
dialogs around ``dltui.actions``)."""
