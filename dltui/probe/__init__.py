"""The node probe: standard library only, Python 3.8+, no root.

Every module in this package except ``bundle.py`` is shipped to nodes as source and run there
by ``python3``; ``bundle.py`` builds that shipment on the operator's machine. Nothing here may
import anything outside the standard library and this package (``pynvml`` travels with it).
"""

__version__ = "0.1.0"
