"""``dltui export``: the fleet state served as Prometheus metrics (``metrics``: the page,
``server``: the HTTP side, ``command``: the subcommand). Never imports the UI."""
