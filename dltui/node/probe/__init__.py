"""The node probe: standard library only, Python 3.8+, no root.

Every module here but ``smi_text`` (a reader of pasted ``nvidia-smi -q`` text, for the operator
side) is shipped to nodes as source and run there by ``python3`` (see ``dltui.node.bundle``).
Nothing here may import anything outside the standard library and ``dltui.node`` (``pynvml``
travels with it).
"""

__version__ = "0.1.0"
