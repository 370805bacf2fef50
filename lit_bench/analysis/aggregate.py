"""Aggregate statistics of multi-seed RL results (pure functions: arrays/frames in, numbers/frames out).

Conventions follow Agarwal et al., "Deep RL at the Edge of the Statistical Precipice" (NeurIPS 2021): the
interquartile mean (IQM) as the robust point estimate and stratified bootstrap confidence intervals. All
randomness comes from an explicit ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

Statistic = Callable[[np.ndarray], float]


def iqm(values: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean: the mean of the middle half, dropping ``floor(n / 4)`` values at each end."""
    x = np.sort(np.asarray(values, dtype=float).ravel())
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan")
    cut = x.size // 4
    return float(x[cut : x.size - cut].mean())


def interpolate_to_grid(timesteps: Sequence[float], values: Sequence[float], grid: Sequence[float]) -> np.ndarray:
    """Linear interpolation of one run's curve onto ``grid``; NaN outside the steps the run covered."""
    t = np.asarray(timesteps, dtype=float)
    v = np.asarray(values, dtype=float)
    g = np.asarray(grid, dtype=float)
    if t.size == 0:
        return np.full(g.shape, np.nan)
    order = np.argsort(t)
    t, v = t[order], v[order]
    out = np.interp(g, t, v)
    out[(g < t[0]) | (g > t[-1])] = np.nan
    return out


def common_grid(max_steps: Sequence[float], n_points: int = 50) -> np.ndarray:
    """An evenly spaced grid up to the shortest run (so every run contributes at every point)."""
    end = float(np.min(np.asarray(max_steps, dtype=float)))
    return np.linspace(end / n_points, end, n_points)


def final_score(timesteps: Sequence[float], values: Sequence[float], last_n: int = 3) -> float:
    """Mean of the last ``last_n`` evaluations of a run."""
    order = np.argsort(np.asarray(timesteps, dtype=float))
    v = np.asarray(values, dtype=float)[order]
    return float(v[-last_n:].mean()) if v.size else float("nan")


def steps_to_threshold(timesteps: Sequence[float], values: Sequence[float], threshold: float) -> float:
    """First evaluation step at which ``values`` reach ``threshold``; NaN when never reached."""
    order = np.argsort(np.asarray(timesteps, dtype=float))
    t = np.asarray(timesteps, dtype=float)[order]
    v = np.asarray(values, dtype=float)[order]
    hits = np.nonzero(v >= threshold)[0]
    return float(t[hits[0]]) if hits.size else float("nan")


def normalized_score(score: float | np.ndarray, reference: float, random: float | None = None) -> float | np.ndarray:
    """Score relative to a reference: ``(score - random) / (reference - random)``, or ``score / reference``."""
    if random is None:
        return np.asarray(score, dtype=float) / reference
    return (np.asarray(score, dtype=float) - random) / (reference - random)


def stratified_bootstrap_ci(
    scores: np.ndarray,
    statistic: Statistic = iqm,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile CI of ``statistic`` over a ``[runs, tasks]`` score matrix.

    Runs are resampled with replacement within each task (column) independently, as in rliable; a 1-D array is a
    single task. Returns ``(point, low, high)``.
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    point = float(statistic(x.ravel()))
    rng = np.random.default_rng(seed)
    n_runs = x.shape[0]
    idx = rng.integers(0, n_runs, size=(n_boot, n_runs, x.shape[1]))
    resampled = np.take_along_axis(x[None, :, :].repeat(n_boot, axis=0), idx, axis=1)
    stats = np.array([statistic(sample.ravel()) for sample in resampled])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.nanquantile(stats, [alpha, 1.0 - alpha])
    return point, float(low), float(high)


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 for scores of two algorithms, averaged over tasks (columns) as in rliable."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    per_task = []
    for task in range(a.shape[1]):
        xa, yb = a[:, task][:, None], b[:, task][None, :]
        per_task.append(float(((xa > yb) + 0.5 * (xa == yb)).mean()))
    return float(np.mean(per_task))


def curves_on_grid(
    curves: pd.DataFrame, grid: np.ndarray, *, run: str = "seed", x: str = "timesteps", y: str = "value"
) -> pd.DataFrame:
    """One row per grid point and run: every run's curve interpolated onto ``grid``."""
    frames = [
        pd.DataFrame({x: grid, y: interpolate_to_grid(group[x], group[y], grid), run: key})
        for key, group in curves.groupby(run, sort=True)
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[x, y, run])


def curve_band(
    on_grid: pd.DataFrame, *, x: str = "timesteps", y: str = "value", n_boot: int = 500, seed: int = 0
) -> pd.DataFrame:
    """Per grid point: mean, median, IQM and a bootstrap 95% CI of the IQM across runs."""
    rows = []
    for step, group in on_grid.groupby(x, sort=True):
        values = group[y].dropna().to_numpy()
        if values.size == 0:
            continue
        point, low, high = stratified_bootstrap_ci(values, iqm, n_boot=n_boot, seed=seed)
        rows.append({x: step, "mean": values.mean(), "median": float(np.median(values)), "iqm": point,
                     "ci_low": low, "ci_high": high, "n_runs": values.size})
    return pd.DataFrame(rows)
