"""Recordings: one format (``format``), written by the ``Recorder`` (``--record``) and the
burn-in's spool, played back by ``ReplayTransport`` (``dltui replay``)."""
