"""Everything that runs on a node: standard library only, Python 3.8+, no root.

- ``schema``, ``wire`` and ``xid``: the contract both ends read (the records and the events,
  their line codec, the XID catalog). The operator side imports these, and what it ships
  (``bundle``, the burn-in driver's plan and output readers), nothing else from here.
- ``probe/``: the collectors and the streaming probe.
- ``burnin/``: the detached burn-in driver and the stressors' output readers.
- ``bundle``: builds what is shipped (runs on the operator's machine; it is not shipped itself).

Shipped modules keep their names on the node (``dltui.node.probe.main``), so the same imports
work there and here.
"""
