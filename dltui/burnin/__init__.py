"""The burn-in's operator side: start, follow and stop a run that lives on the node
(``session``, ``remote``: over the SSH layer's session runner; ``ship``: the driver script
sent), fold its samples as they come (``fold``, ``spool``), judge it (``verdict``: ``items``,
``gpu_checks``, ``host_checks``) and report it (``report``, ``live``). The node side is
``dltui.node.burnin``. Nothing here imports Textual."""
