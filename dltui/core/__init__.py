"""The pure core: models (``models``), fleet state with its history (``state``), the anomaly
rules (``rules/``), alerts and the timeline (``timeline``), the status words (``status``),
cleaning of node text (``text``), formatting (``format``) and the GPU inventory across
sessions. No Textual, no transport, no command: tests and scripts use it as it is."""
