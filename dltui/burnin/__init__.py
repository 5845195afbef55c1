"""Burn-in: a run that lives on the node (``node/``), read honestly (``parse``), judged
(``verdict``) and reported (``report``). Only ``ui`` code imports Textual; none of this does."""
