"""The burn-in's node side: the detached driver (``driver``: its modes), split by phase —
``preflight`` (facts, the ``baseline`` seam: ``bmc``, ``kernel``), ``load`` (``stressors``),
``post`` (nccl-tests, the smoke test) — with ``run`` (the loop), ``start``, ``follow``, ``stop``,
``plan`` and ``places`` (the run folder, the lock); and ``parse``, the stressors' output
readers the operator's verdict uses too."""
