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


def _per_row(samples: np.ndarray) -> np.ndarray:
    """``[boot, runs, tasks]`` (or ``[runs, tasks]``: one sample) as ``[boot, runs, tasks]``."""
    return samples[None] if samples.ndim == 2 else samples


def iqm(samples: np.ndarray) -> np.ndarray:
    """25% trimmed mean of all runs x tasks, per sample (``floor(n / 4)`` cut at each end, as scipy's trim_mean)."""
    flat = np.sort(_per_row(samples).reshape(len(_per_row(samples)), -1), axis=1)
    cut = flat.shape[1] // 4
    return flat[:, cut:flat.shape[1] - cut].mean(axis=1)


def mean(samples: np.ndarray) -> np.ndarray:
    return _per_row(samples).mean(axis=1).mean(axis=1)


def median(samples: np.ndarray) -> np.ndarray:
    return np.median(_per_row(samples).mean(axis=1), axis=1)


def optimality_gap(samples: np.ndarray, gamma: float = OPTIMALITY_GAMMA) -> np.ndarray:
    s = _per_row(samples)
    return gamma - np.minimum(s, gamma).reshape(len(s), -1).mean(axis=1)


AGGREGATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "IQM": iqm, "mean": mean, "median": median, "optimality gap": optimality_gap}


def _matrix(scores: np.ndarray) -> np.ndarray:
    x = np.asarray(scores, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    if x.ndim != 2 or x.shape[0] == 0 or np.isnan(x).any():
        raise ValueError(f"scores: a [runs, tasks] matrix of numbers without NaN, got shape {x.shape}")
    return x


def stratified_resamples(scores: np.ndarray, n_boot: int, rng: np.random.Generator,
                         step: int | None = None) -> list[np.ndarray]:
    """Bootstrap samples ``[boot, runs, tasks]`` of a score matrix, runs resampled within each task, ``step``
    samples at a time (default: about 4M numbers per chunk; the same draws whatever the step: one index array)."""
    x = _matrix(scores)
    runs, tasks = x.shape
    index = rng.integers(0, runs, size=(n_boot, runs, tasks))
    step = step or max((1 << 22) // (runs * tasks), 1)
    return [x[index[a:a + step], np.arange(tasks)] for a in range(0, n_boot, step)]


def interval(statistic: Callable[[np.ndarray], np.ndarray], scores: np.ndarray, *, n_boot: int = 2000,
             confidence: float = 0.95, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(point, low, high)`` of a (vector-valued) statistic of ``[runs, tasks]`` scores: its value and the
    percentile interval of its stratified bootstrap."""
    x = _matrix(scores)
    point = statistic(x)[0]
    stats = np.concatenate([statistic(s) for s in stratified_resamples(x, n_boot, np.random.default_rng(seed))])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha], axis=0)
    return point, low, high


def aggregate_table(scores: Mapping[str, np.ndarray], *, n_boot: int = 2000, confidence: float = 0.95,
                    seed: int = 0) -> pd.DataFrame:
    """One row per name and aggregate: ``name, metric, value, ci_low, ci_high, runs, tasks``."""
    import pandas as pd

    def all_four(samples: np.ndarray) -> np.ndarray:
        return np.stack([f(samples) for f in AGGREGATES.values()], axis=1)

    rows = []
    for name, matrix in scores.items():
        x = _matrix(matrix)
        point, low, high = interval(all_four, x, n_boot=n_boot, confidence=confidence, seed=seed)
        rows += [{"name": name, "metric": metric, "value": point[k], "ci_low": low[k], "ci_high": high[k],
                  "runs": x.shape[0], "tasks": x.shape[1]} for k, metric in enumerate(AGGREGATES)]
    return pd.DataFrame(rows, columns=["name", "metric", "value", "ci_low", "ci_high", "runs", "tasks"])


def score_distribution(samples: np.ndarray, taus: Sequence[float] | np.ndarray) -> np.ndarray:
    """Fraction of all runs x tasks with a score above each ``tau``, per sample: ``[boot, taus]``."""
    s = _per_row(samples)
    flat = np.sort(s.reshape(len(s), -1), axis=1)
    t = np.asarray(taus, dtype=float)
    at_or_below = np.stack([np.searchsorted(row, t, side="right") for row in flat])
    return 1.0 - at_or_below / flat.shape[1]


def performance_profile(scores: Mapping[str, np.ndarray], taus: Sequence[float] | np.ndarray, *,
                        n_boot: int = 2000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Run-score distributions: ``name, tau, fraction, ci_low, ci_high`` (stratified bootstrap CI per tau)."""
    import pandas as pd

    t = np.asarray(taus, dtype=float)
    frames = []
    for name, matrix in scores.items():
        point, low, high = interval(lambda s: score_distribution(s, t), matrix, n_boot=n_boot,
                                    confidence=confidence, seed=seed)
        frames.append(pd.DataFrame({"name": name, "tau": t, "fraction": point, "ci_low": low, "ci_high": high}))
    return pd.concat(frames, ignore_index=True)


def improvement_probability(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 per task, averaged over tasks; ``[boot, runs, tasks]`` samples give one per sample.

    Computed from ranks (the Mann-Whitney U of X: the sum of its average ranks in the pooled sample, minus
    ``m (m + 1) / 2``), which is the pairwise count without its ``m * n`` comparisons.
    """
    from scipy.stats import rankdata

    a, b = _per_row(np.asarray(x, dtype=float)), _per_row(np.asarray(y, dtype=float))
    m, n = a.shape[1], b.shape[1]
    ranks = rankdata(np.concatenate([a, b], axis=1), axis=1)  # average ranks over ties, per sample and task
    u = ranks[:, :m].sum(axis=1) - m * (m + 1) / 2.0  # [boot, tasks]
    return (u / (m * n)).mean(axis=1)


def probability_of_improvement(x: np.ndarray, y: np.ndarray, *, n_boot: int = 2000, confidence: float = 0.95,
                               seed: int = 0) -> tuple[float, float, float]:
    """``(P(X > Y), low, high)`` over the tasks both have: X and Y (``[runs, tasks]``, any run counts) resampled
    independently within each task."""
    a, b = _matrix(x), _matrix(y)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"probability_of_improvement: X has {a.shape[1]} tasks, Y {b.shape[1]}")
    rng = np.random.default_rng(seed)
    step = max((1 << 22) // ((len(a) + len(b)) * a.shape[1]), 1)  # (both in chunks of the same samples)
    xs, ys = stratified_resamples(a, n_boot, rng, step), stratified_resamples(b, n_boot, rng, step)
    stats = np.concatenate([improvement_probability(p, q) for p, q in zip(xs, ys)])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(improvement_probability(a, b)[0]), float(low), float(high)


def improvement_table(scores: Mapping[str, np.ndarray], pairs: Sequence[tuple[str, str]] | None = None, *,
                      n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """P(X > Y) [95% CI] for ``pairs`` of names (default: every pair, in the order given): ``x, y, probability,
    ci_low, ci_high, runs_x, runs_y, tasks``."""
    import pandas as pd

    rows = []
    for a, b in pairs if pairs is not None else list(combinations(scores, 2)):
        p, low, high = probability_of_improvement(scores[a], scores[b], n_boot=n_boot, seed=seed)
        rows.append({"x": a, "y": b, "probability": p, "ci_low": low, "ci_high": high,
                     "runs_x": len(scores[a]), "runs_y": len(scores[b]), "tasks": np.shape(scores[a])[1]})
    return pd.DataFrame(rows, columns=["x", "y", "probability", "ci_low", "ci_high", "runs_x", "runs_y", "tasks"])
