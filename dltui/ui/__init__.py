"""The Textual dashboard: ``build_app`` / ``run_dashboard`` in ``app``."""
