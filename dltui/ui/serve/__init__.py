"""``dltui serve``: the dashboard in a browser, on textual-serve.

``command`` parses the options and builds the child command line; ``server`` is the web side:
a token on every request, one dashboard process per browser tab (textual-serve's own model),
the browser's address handed to that process for the action audit.
"""

# The browser's address, from the serve process to the dashboard it starts for that tab; the
# dashboard puts it in every action's audit record (ActionSettings.origin).
ORIGIN_ENV = "DLTUI_ACTION_ORIGIN"
