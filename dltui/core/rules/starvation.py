"""The data-loader starvation detector: periodic drops of GPU utilisation to zero.

A training loop whose input pipeline cannot keep up runs the GPU flat out on a batch, then
waits for the next one: utilisation falls to 0 % in regular dips. Sampled fast enough (NVML's
sub-second samples, ~6 Hz), the dips show as runs of zeros. Three numbers describe them:

- ``zero_fraction``: zero samples / all samples in the window (how much time is lost);
- ``dips``: separate runs of zeros (a pattern, not a single pause);
- ``period_s``: the median gap between the starts of runs ("dips every ~4 s").

A single long run is a hang or a pause, not starvation (see the ``job_hung`` rule). At 1 Hz
(the nvidia-smi fallback), dips shorter than NVML's 1/6–1 s averaging window alias away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import median


@dataclass(frozen=True, slots=True)
class Starvation:
    zero_fraction: float
    dips: int
    period_s: float | None  # None with fewer than two dips
    window_s: float
    samples: int

    def words(self) -> str:
        """ "GPU starved 35 % of the time, dips every ~4 s (15 dips in 60 s)" """
        text = f"GPU starved {self.zero_fraction * 100:.0f} % of the time"
        if self.period_s is not None:
            digits = 0 if self.period_s >= 1.5 else 1
            text += f", dips every ~{self.period_s:.{digits}f} s"
        return text + f" ({self.dips} dips in {self.window_s:.0f} s)"


def detect(values: Sequence[float], sample_period_s: float) -> Starvation:
    """Describe the zero runs in ``values`` (oldest first, evenly spaced)."""
    values = list(values)
    n = len(values)
    zeros = values.count(0)
    window_s = n * sample_period_s
    if not zeros:
        return Starvation(0.0, 0, None, window_s, n)
    starts = [i for i in range(n) if values[i] == 0 and (i == 0 or values[i - 1] != 0)]
    gaps = [b - a for a, b in pairwise(starts)]
    period = median(gaps) * sample_period_s if gaps else None
    return Starvation(zeros / n, len(starts), period, window_s, n)
