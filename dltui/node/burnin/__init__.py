"""The burn-in's node side: the detached driver and the stressors' output readers."""
