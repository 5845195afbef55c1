"""Sources of samples, all writing into a ``Sink`` (``base``): ``ssh/`` (the fleet over SSH,
its public connection layer), ``local`` (this machine, the probe in process), ``demo/`` (a
seeded simulated fleet), ``recording/`` (record and replay), ``prometheus/`` (an existing
Prometheus). ``command`` is the seam every remote command goes through (``Runner``).
Transports never import the actions, the UI or (but the recorder itself) the recorder."""
