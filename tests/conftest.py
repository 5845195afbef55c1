pytest_plugins = ["tests.collect_guard"]
