"""Aggregate results over a suite of tasks (envs), as rliable does (Agarwal et al., "Deep RL at the Edge of the
Statistical Precipice", NeurIPS 2021): IQM, mean, median and optimality gap of normalized scores with stratified
bootstrap CIs, performance profiles (run-score distributions) and the probability of improvement of one
algorithm over another. Pure functions: ``[runs, tasks]`` score matrices in, numbers and frames out.

Definitions are rliable's (``rliable.metrics`` / ``rliable.library``, checked against it in the tests): the IQM is
the 25% trimmed mean of all runs x tasks; mean and median are of the per-task means; the optimality gap is
``gamma - mean(min(score, gamma))``; a profile at ``tau`` is the fraction of all runs x tasks scoring above ``tau``;
P(X > Y) is the Mann-Whitney U statistic over ``m * n`` per task, averaged over tasks (ties count half). CIs are
percentile intervals of a bootstrap that resamples runs with replacement within each task ("stratified"); P(X > Y)
resamples X and Y independently. All randomness comes from an explicit ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

OPTIMALITY_GAMMA = 1.0  # a normalized score of 1 (human / best reference) counts as optimal

# Every statistic here is a function of the scores ``x`` ([runs, tasks]) and of how often each run is counted,
# ``counts`` ([boot, runs, tasks]; all ones for the statistic itself). A bootstrap resample is such counts (each run's
# multiplicity in its task's resample), so no resample is ever sorted or materialized: the trimmed mean reads the
# once-sorted scores with weights, P(X > Y) the once-sorted Y with cumulative counts. The numbers are those of the
# resampled values (the same multiset), at O(boot x runs x tasks).


def _ones(x: np.ndarray) -> np.ndarray:
    return np.ones((1, *x.shape), dtype=np.int64)


def _counts_of(x: np.ndarray | None, counts: np.ndarray | None) -> np.ndarray:
    return _ones(np.asarray(x)) if counts is None else counts


def iqm(x: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """25% trimmed mean of all runs x tasks (``floor(n / 4)`` cut at each end, as scipy's trim_mean), per sample."""
    c = _counts_of(x, counts)
    values = np.asarray(x, dtype=float).ravel()
    order = np.argsort(values, kind="stable")
    n = values.size
    cut = n // 4
    ends = np.cumsum(c.reshape(len(c), -1)[:, order], axis=1)  # where each sorted value's copies end
    starts = ends - c.reshape(len(c), -1)[:, order]
    kept = np.clip(np.minimum(ends, n - cut) - np.maximum(starts, cut), 0, None)  # copies inside [cut, n - cut)
    return kept @ values[order] / (n - 2 * cut)


def _task_means(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.einsum("brt,rt->bt", c, np.asarray(x, dtype=float)) / x.shape[0]  # [boot, tasks] (a resample: runs)


def mean(x: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    return _task_means(x, _counts_of(x, counts)).mean(axis=1)


def median(x: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    return np.median(_task_means(x, _counts_of(x, counts)), axis=1)


def optimality_gap(x: np.ndarray, counts: np.ndarray | None = None, gamma: float = OPTIMALITY_GAMMA) -> np.ndarray:
    c = _counts_of(x, counts)
    clipped = np.minimum(np.asarray(x, dtype=float), gamma)
    return gamma - np.einsum("brt,rt->b", c, clipped) / c[0].size


AGGREGATES: dict[str, Callable[[np.ndarray, np.ndarray | None], np.ndarray]] = {
    "IQM": iqm,
    "mean": mean,
    "median": median,
    "optimality gap": optimality_gap,
}


def _matrix(scores: np.ndarray) -> np.ndarray:
    x = np.asarray(scores, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] == 0 or np.isnan(x).any():
        raise ValueError(f"scores: a [runs, tasks] matrix of numbers without NaN, got shape {x.shape}")
    return x


def stratified_counts(shape: tuple[int, int], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``[boot, runs, tasks]``: how often each run is drawn when ``runs`` runs are resampled with replacement within
    each task (rliable's stratified bootstrap), ``n_boot`` times."""
    runs, tasks = shape
    index = rng.integers(0, runs, size=(n_boot, runs, tasks))
    flat = (np.arange(n_boot)[:, None, None] * runs + index) * tasks + np.arange(tasks)
    return np.bincount(flat.ravel(), minlength=n_boot * runs * tasks).reshape(n_boot, runs, tasks)


CHUNK = 1 << 20  # resampled numbers per chunk of bootstrap samples (bounds the memory; the draws are fixed by it)


def _chunks(n_boot: int, size: int) -> list[int]:
    """Bootstrap samples per chunk (``CHUNK`` numbers at most, at least one sample)."""
    step = max(CHUNK // max(size, 1), 1)
    return [min(step, n_boot - a) for a in range(0, n_boot, step)]


def interval(
    statistic: Callable[[np.ndarray, np.ndarray | None], np.ndarray],
    scores: np.ndarray,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(point, low, high)`` of a (vector-valued) statistic of ``[runs, tasks]`` scores (``statistic(x, counts)``):
    its value and the percentile interval of its stratified bootstrap."""
    x = _matrix(scores)
    point = statistic(x, None)[0]
    rng = np.random.default_rng(seed)
    stats = np.concatenate([statistic(x, stratified_counts(x.shape, k, rng)) for k in _chunks(n_boot, x.size)])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha], axis=0)
    return point, low, high


def aggregate_table(
    scores: Mapping[str, np.ndarray], *, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """One row per name and aggregate: ``name, metric, value, ci_low, ci_high, runs, tasks``."""
    import pandas as pd

    def all_four(x: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
        means = _task_means(x, _counts_of(x, counts))  # (mean and median share them)
        return np.stack(
            [iqm(x, counts), means.mean(axis=1), np.median(means, axis=1), optimality_gap(x, counts)], axis=1
        )  # (AGGREGATES' order)

    rows = []
    for name, matrix in scores.items():
        x = _matrix(matrix)
        point, low, high = interval(all_four, x, n_boot=n_boot, confidence=confidence, seed=seed)
        rows += [
            {
                "name": name,
                "metric": metric,
                "value": point[k],
                "ci_low": low[k],
                "ci_high": high[k],
                "runs": x.shape[0],
                "tasks": x.shape[1],
            }
            for k, metric in enumerate(AGGREGATES)
        ]
    return pd.DataFrame(rows, columns=["name", "metric", "value", "ci_low", "ci_high", "runs", "tasks"])


def score_distribution(
    x: np.ndarray, taus: Sequence[float] | np.ndarray, counts: np.ndarray | None = None
) -> np.ndarray:
    """Fraction of all runs x tasks with a score above each ``tau``, per sample: ``[boot, taus]``."""
    c = _counts_of(x, counts)
    above = (np.asarray(x, dtype=float).reshape(-1, 1) > np.asarray(taus, dtype=float)).astype(float)
    return c.reshape(len(c), -1).astype(float) @ above / c[0].size  # (a float product: BLAS's)


def performance_profile(
    scores: Mapping[str, np.ndarray],
    taus: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Run-score distributions: ``name, tau, fraction, ci_low, ci_high`` (stratified bootstrap CI per tau)."""
    import pandas as pd

    t = np.asarray(taus, dtype=float)
    frames = []
    for name, matrix in scores.items():
        point, low, high = interval(
            lambda x, c: score_distribution(x, t, c), matrix, n_boot=n_boot, confidence=confidence, seed=seed
        )
        frames.append(pd.DataFrame({"name": name, "tau": t, "fraction": point, "ci_low": low, "ci_high": high}))
    return pd.concat(frames, ignore_index=True)


def improvement_probability(
    x: np.ndarray, y: np.ndarray, x_counts: np.ndarray | None = None, y_counts: np.ndarray | None = None
) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 per task, averaged over tasks, per sample (``[boot]``).

    Per task, each X run counts the Y runs below it and half those equal to it: with Y sorted once, that is the
    cumulative count of Y up to the X value's position (found once), so a resample costs O(runs), not O(m * n).
    """
    a, b = _matrix(x), _matrix(y)
    ca, cb = _counts_of(a, x_counts), _counts_of(b, y_counts)
    total = np.zeros(len(ca))
    for task in range(a.shape[1]):
        order = np.argsort(b[:, task], kind="stable")
        ys = b[order, task]
        below = np.concatenate([np.zeros((len(cb), 1)), np.cumsum(cb[:, order, task], axis=1)], axis=1)
        lt, le = np.searchsorted(ys, a[:, task], "left"), np.searchsorted(ys, a[:, task], "right")
        wins = 0.5 * (below[:, lt] + below[:, le])  # Y runs below each X run, ties half: [boot, m]
        total += (ca[:, :, task] * wins).sum(axis=1) / (a.shape[0] * b.shape[0])
    return total / a.shape[1]


def probability_of_improvement(
    x: np.ndarray, y: np.ndarray, *, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """``(P(X > Y), low, high)`` over the tasks both have: X and Y (``[runs, tasks]``, any run counts) resampled
    independently within each task."""
    a, b = _matrix(x), _matrix(y)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"probability_of_improvement: X has {a.shape[1]} tasks, Y {b.shape[1]}")
    rng = np.random.default_rng(seed)
    stats = np.concatenate(
        [
            improvement_probability(a, b, stratified_counts(a.shape, k, rng), stratified_counts(b.shape, k, rng))
            for k in _chunks(n_boot, a.size + b.size)
        ]
    )
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(improvement_probability(a, b)[0]), float(low), float(high)


def improvement_table(
    scores: Mapping[str, np.ndarray],
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """P(X > Y) [95% CI] for ``pairs`` of names (default: every pair, in the order given): ``x, y, probability,
    ci_low, ci_high, runs_x, runs_y, tasks``."""
    import pandas as pd

    rows = []
    for a, b in pairs if pairs is not None else list(combinations(scores, 2)):
        p, low, high = probability_of_improvement(scores[a], scores[b], n_boot=n_boot, seed=seed)
        rows.append(
            {
                "x": a,
                "y": b,
                "probability": p,
                "ci_low": low,
                "ci_high": high,
                "runs_x": len(scores[a]),
                "runs_y": len(scores[b]),
                "tasks": np.shape(scores[a])[1],
            }
        )
    return pd.DataFrame(rows, columns=["x", "y", "probability", "ci_low", "ci_high", "runs_x", "runs_y", "tasks"])
