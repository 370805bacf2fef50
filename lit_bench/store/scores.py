"""The scores a run writes into ``summary.json`` (``objective``, ``steps_to_threshold``), defined once: the run computes
them from its own evaluations, ``lit_bench.analysis.aggregate`` (which re-exports them) over many runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

THRESHOLD_WINDOW = 3  # evaluations in a row that must reach an env's threshold for it to count as reached


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle half, dropping ``floor(n / 4)`` values at each end."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    cut = x.size // 4
    return float(x[cut : x.size - cut].mean())


def steps_to_threshold(
    timesteps: Sequence[float], values: Sequence[float], threshold: float | None, window: int = THRESHOLD_WINDOW
) -> float:
    """First evaluation step from which ``window`` evaluations in a row reach ``threshold``.

    Missing value: NaN, like every score here, when no evaluation does or the env has no threshold (None or NaN);
    ``summary.json`` spells it ``null``. One lucky evaluation (e.g. 500 on CartPole before any update) is not
    "solved": the threshold has to hold at that evaluation and at the ``window - 1`` that follow it, so a run whose
    last evaluations are the first to reach it has not (yet) reached it.
    """
    if threshold is None or np.isnan(threshold):
        return float("nan")
    order = np.argsort(np.asarray(timesteps, dtype=float), kind="stable")
    t = np.asarray(timesteps, dtype=float)[order]
    hit = np.asarray(values, dtype=float)[order] >= threshold
    if hit.size < window:
        return float("nan")
    reached = np.concatenate([[0], np.cumsum(hit)])
    held = reached[window:] - reached[:-window] == window  # hit at i .. i + window - 1 (a window view is ~3x slower)
    first = np.flatnonzero(held)
    return float(t[first[0]]) if first.size else float("nan")
