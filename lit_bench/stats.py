"""The statistics of RL results, one module for the run and the analysis (pure functions: arrays/frames in,
numbers/frames out): a run's scores for its ``summary.json`` (``objective``, ``steps_to_threshold``), the value of a
trial over its seeds, and the aggregates of many runs that the report shows.

Conventions follow Agarwal et al., "Deep RL at the Edge of the Statistical Precipice" (NeurIPS 2021): the
interquartile mean (IQM) as the robust point estimate and stratified bootstrap confidence intervals. All
randomness comes from an explicit ``seed``. (A suite of tasks, rliable's score matrices: ``lit_bench.analysis.suite``.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # (imported where a frame is made: every training run imports this module for its scores)

THRESHOLD_WINDOW = 3  # evaluations in a row that must reach an env's threshold for it to count as reached
OBJECTIVE_METRICS = ("final", "iqm_last")  # objective.metric: what a run gives back to a Hydra sweeper
SEED_AGGREGATES = ("mean", "iqm")  # hpo.aggregate: a trial's value over its seeds


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


def objective(rows: Sequence[Mapping[str, Any]], metric: str, last: int | None = None) -> float:
    """The number a run gives back to a Hydra sweeper (e.g. Optuna), from its ``eval.csv`` rows. ``final``: the last
    evaluation's mean return (taken at the end of the budget); ``iqm_last``: the IQM of the last ``last``
    evaluations' mean returns. NaN when the run has no evaluation."""
    returns = [float(row["mean_return"]) for row in rows]
    if not returns:
        return float("nan")
    if metric == "final":
        return returns[-1]
    if metric != "iqm_last" or last is None or last < 1:  # (lit_bench.config.checks.check_objective says it first)
        raise ValueError(f"objective: metric={metric}, last={last}; choose final, or iqm_last with last >= 1")
    return iqm(returns[-last:])


def seeds_value(values: Sequence[float], how: str) -> float:
    """The value of a trial evaluated on several seeds (``hpo.aggregate``): their mean or their IQM."""
    if not values:
        return float("nan")
    return float(sum(values) / len(values)) if how == "mean" else iqm(values)


Statistic = Callable[[np.ndarray], float]


def _per_sample(statistic: Statistic, samples: np.ndarray) -> np.ndarray:
    """``statistic`` of every row of ``samples`` (the IQM of NaN-free rows in one vectorized pass: bootstraps)."""
    if statistic is iqm and not np.isnan(samples).any():
        cut = samples.shape[1] // 4
        return np.asarray(np.sort(samples, axis=1)[:, cut : samples.shape[1] - cut].mean(axis=1))
    return np.array([statistic(row) for row in samples])


def _resampled_iqm(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The IQM of each row of ``values[positions]`` (``_per_sample(iqm, ...)`` of it: the same numbers), without
    sorting floats: each row's ranks are sorted (small integers sort several times faster), then read in that order,
    the same ascending sequence as sorting the values, so the same sums."""
    order = np.argsort(values, kind="stable")
    rank = np.empty(values.size, dtype=np.int16 if values.size < 2**15 else np.int64)
    rank[order] = np.arange(values.size, dtype=rank.dtype)
    drawn = rank[positions]
    drawn.sort(axis=1)
    cut = positions.shape[1] // 4
    return np.asarray(values[order][drawn[:, cut : positions.shape[1] - cut]].mean(axis=1))


def interpolate_to_grid(timesteps: Sequence[float], values: Sequence[float], grid: Sequence[float]) -> np.ndarray:
    """Linear interpolation of one run's curve onto ``grid``; NaN outside the steps the run covered."""
    t = np.asarray(timesteps, dtype=float)
    return np.asarray(runs_on_grid(np.zeros(t.size, dtype=int), 1, t, np.asarray(values, dtype=float), grid)[0])


def runs_on_grid(
    runs: np.ndarray,
    n_runs: int,
    timesteps: np.ndarray,
    values: np.ndarray,
    grid: Sequence[float] | np.ndarray,
    *,
    chunk: int = 1 << 22,
) -> np.ndarray:
    """Every run's curve interpolated linearly onto ``grid`` at once: ``[n_runs, len(grid)]``, NaN outside the steps a
    run covered (a run without points: all NaN). ``runs[i]`` numbers the run of point ``i`` (0 .. n_runs - 1; -1: no
    run, left out). The numbers are ``np.interp``'s (same formula, same float operations): the steps are laid out as a
    ``[runs, points]`` matrix, and each grid value finds its interval by counting the steps at or below it.
    """
    g = np.asarray(grid, dtype=float)
    keep = np.asarray(runs) >= 0
    code, t, v = np.asarray(runs)[keep], np.asarray(timesteps, float)[keep], np.asarray(values, float)[keep]
    order = np.lexsort((t, code))  # by run, then by step (stable: of equal steps, the last in file order counts)
    code, t, v = code[order], t[order], v[order]
    counts = np.bincount(code, minlength=n_runs)
    width = max(int(counts.max(initial=0)), 2)
    column = np.arange(code.size) - (np.cumsum(counts) - counts)[code]
    steps, vals = np.full((n_runs, width), np.inf), np.full((n_runs, width), np.nan)
    steps[code, column], vals[code, column] = t, v
    rows = max(chunk // (width * max(g.size, 1)), 1)  # bounds the [rows, width, grid] comparison
    at_or_below = np.concatenate(
        [(steps[a : a + rows, :, None] <= g).sum(axis=1) for a in range(0, n_runs, rows)]
        or [np.zeros((0, g.size), dtype=int)]
    )
    r = np.arange(n_runs)[:, None]
    last = np.maximum(counts - 1, 0)[:, None]
    j = np.clip(at_or_below - 1, 0, width - 2)  # interval [j, j + 1] (np.interp: steps[j] <= g < steps[j + 1])
    t0, t1, v0, v1 = steps[r, j], steps[r, j + 1], vals[r, j], vals[r, j + 1]
    with np.errstate(invalid="ignore", divide="ignore"):  # (the padding after a run's last step: NaN, dropped below)
        slope = (v1 - v0) / (t1 - t0)
        out = slope * (g - t0) + v0
        retry = np.isnan(out)  # as np.interp: a NaN from one end of the interval is tried from the other
        out[retry] = (slope * (g - t1) + v1)[retry]
    flat = retry & np.isnan(out) & (v0 == v1)
    out[flat] = v0[flat]
    out = np.where(at_or_below - 1 == last, vals[r, last], out)  # on the last step: its value (after it: NaN)
    out[(at_or_below == 0) | (g > steps[r, last])] = np.nan  # before the first step or after the last (or none)
    return out


def band_runs(status: Sequence[str] | np.ndarray) -> np.ndarray:
    """Which runs a config's curve band is drawn from: its completed ones when it has any, else all of them. The
    band's grid ends at its shortest run (``common_grid``), so one run that failed or was killed early would cut the
    curve of all the others short."""
    done = np.asarray(status, dtype=object) == "completed"
    return done if done.any() else np.ones(done.shape, dtype=bool)


def common_grid(max_steps: Sequence[float] | np.ndarray, n_points: int = 50) -> np.ndarray:
    """An evenly spaced grid up to the shortest run (so every run contributes at every point)."""
    end = float(np.min(np.asarray(max_steps, dtype=float)))
    return np.linspace(end / n_points, end, n_points)


AT_EVALUATIONS = "at_evaluations"  # a curve band's ``attrs`` key: True when its points are the runs' evaluations


def evaluation_grid(
    runs: np.ndarray, n_runs: int, timesteps: np.ndarray, *, n_points: int = 50
) -> tuple[np.ndarray, bool]:
    """The grid of a band of runs (``runs[i]`` numbers the run of point ``i``) and whether its points are the runs'
    evaluations: their steps up to the shortest run when every run evaluated at exactly those steps and there are at
    most ``n_points`` of them (a sweep's seeds of one config, the common case), else ``common_grid``."""
    code, t = np.asarray(runs), np.asarray(timesteps, dtype=float)
    last = np.full(n_runs, -np.inf)
    np.fmax.at(last, code, t)
    end = float(np.min(last)) if n_runs else -np.inf
    within = t <= end
    shared = np.unique(t[within])
    counts = np.bincount(code[within], minlength=n_runs)
    pairs = np.unique(np.stack([code[within], t[within]]), axis=1).shape[1]  # (a run's repeated step counts once)
    if 0 < shared.size <= n_points and np.all(counts == shared.size) and pairs == within.sum():
        return shared, True  # every run: shared.size distinct steps, all among the shared ones, so the same steps
    return common_grid(last, n_points=n_points), False


FINAL = "the last evaluation, at the end of the budget"  # the one meaning of "final" (console, sweep table, report)

# A bootstrap CI over n seeds is flagged below this n. With n seeds a bootstrap has only C(2n-1, n) distinct
# resamples (n=2: 3, n=3: 10, n=4: 35, n=5: 126), so a 95% percentile interval over fewer than 5 seeds is little more
# than the range of the scores; Agarwal et al. (rliable, NeurIPS 2021, Sec. 4) show such few-run intervals undercover.
MIN_SEEDS_FOR_CI = 5


def final_score(timesteps: Sequence[float], values: Sequence[float]) -> float:
    """The value of the last evaluation (see ``FINAL``); NaN for a run without evaluations."""
    order = np.argsort(np.asarray(timesteps, dtype=float), kind="stable")
    v = np.asarray(values, dtype=float)[order]
    return float(v[-1]) if v.size else float("nan")


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
    if statistic is iqm and not np.isnan(x).any():  # [boot, run, task] = x[idx[boot, run, task], task], by rank
        stats = _resampled_iqm(x.ravel(), (idx * x.shape[1] + np.arange(x.shape[1])).reshape(n_boot, -1))
    else:
        resampled = x[idx, np.arange(x.shape[1])]
        stats = _per_sample(statistic, resampled.reshape(n_boot, -1))
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
    """One row per grid point and run: every run's curve interpolated onto ``grid`` (runs in sorted order)."""
    import pandas as pd

    codes, keys = pd.factorize(curves[run], sort=True)
    if not len(keys):
        return pd.DataFrame(columns=[x, y, run])
    values = runs_on_grid(codes, len(keys), curves[x].to_numpy(float), curves[y].to_numpy(float), grid)
    return pd.DataFrame({x: np.tile(grid, len(keys)), y: values.ravel(), run: np.repeat(keys, len(grid))})


def curve_band(
    on_grid: pd.DataFrame, *, x: str = "timesteps", y: str = "value", n_boot: int = 500, seed: int = 0
) -> pd.DataFrame:
    """Per grid point: mean, median, IQM and a bootstrap 95% CI of the IQM across runs (see ``iqm_band``)."""
    on_grid = on_grid[on_grid[x].notna()]
    steps, column = np.unique(on_grid[x].to_numpy(float), return_inverse=True)
    row = on_grid.groupby(x).cumcount().to_numpy()  # a point's runs in frame order
    matrix = np.full((int(row.max(initial=-1)) + 1, steps.size), np.nan)
    matrix[row, column] = on_grid[y].to_numpy(float)
    return iqm_band(matrix, steps, x=x, n_boot=n_boot, seed=seed)


def iqm_band(
    matrix: np.ndarray,
    steps: np.ndarray,
    *,
    x: str = "timesteps",
    n_boot: int = 500,
    confidence: float = 0.95,
    seed: int = 0,
    chunk: int = 1 << 22,
) -> pd.DataFrame:
    """Per column of a ``[runs, points]`` matrix (runs' curves on a grid, NaN where a run has no value): ``x``
    (``steps``), mean, median, IQM and its stratified-bootstrap CI across the column's runs, ``n_runs``; columns
    without values are left out.

    The numbers are ``stratified_bootstrap_ci(column, iqm, n_boot=n_boot, seed=seed)`` of each column's values, but
    computed for all columns at once: with one seed, every column with the same number of runs draws the same resample
    of run indices (a joint resample of whole curves), so one index array serves them all.
    """
    import pandas as pd

    m = np.asarray(matrix, dtype=float)
    valid = ~np.isnan(m)
    n_runs = valid.sum(axis=0)
    columns = np.flatnonzero(n_runs)
    out = {name: np.full(columns.size, np.nan) for name in ("mean", "median", "iqm", "ci_low", "ci_high")}
    alpha = (1.0 - confidence) / 2.0
    for n in np.unique(n_runs[columns]):
        where = np.flatnonzero(n_runs[columns] == n)
        picked = columns[where]
        values = m.T[picked][valid.T[picked]].reshape(picked.size, n)  # each column's values, in row order
        cut = n // 4
        out["mean"][where], out["median"][where] = values.mean(axis=1), np.median(values, axis=1)
        order = np.argsort(values, axis=1, kind="stable")
        ordered = np.take_along_axis(values, order, axis=1)
        out["iqm"][where] = ordered[:, cut : n - cut].mean(axis=1)
        # resamples sort each value's rank (int16 sorts faster than float64), then read the values in that order:
        # the same ascending sequence as sorting the values, so the same sums
        rank = np.empty(order.shape, dtype=np.int16 if n < 2**15 else np.int64)
        np.put_along_axis(rank, order, np.arange(n, dtype=rank.dtype)[None], axis=1)
        index = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        step = max(chunk // (n_boot * n), 1)  # bounds the [columns, n_boot, runs] resample
        for a in range(0, picked.size, step):
            resampled = np.take(rank[a : a + step], index, axis=1).reshape(-1, n)  # [columns * n_boot, runs]
            resampled.sort(axis=1)
            first = np.repeat(np.arange(a, min(a + step, picked.size)) * n, n_boot)[:, None]  # column's offset
            trimmed = ordered.ravel()[resampled[:, cut : n - cut] + first]
            stats = trimmed.mean(axis=1).reshape(-1, n_boot)  # (2-D, as _per_sample: the same sums)
            quantile = np.nanquantile if np.isnan(stats).any() else np.quantile  # (nanquantile: a loop over rows)
            low, high = quantile(stats, [alpha, 1.0 - alpha], axis=1)
            out["ci_low"][where[a : a + step]], out["ci_high"][where[a : a + step]] = low, high
    return pd.DataFrame({x: np.asarray(steps, dtype=float)[columns], **out, "n_runs": n_runs[columns]})


@dataclass(frozen=True)
class PairedComparison:
    """A vs B on the same seeds (lit vs SB3, a variant vs its base, ...): per-seed differences, CI of the IQM
    difference, P(A > B), a verdict."""

    seeds: list[int]
    differences: list[float]  # a - b, per seed
    a_iqm: float
    b_iqm: float
    iqm_difference: float
    ci_low: float
    ci_high: float
    ci_flagged: bool  # fewer than MIN_SEEDS_FOR_CI seeds
    probability_of_improvement: float  # P(a > b)
    sign_flip_p_value: float  # the paired sign-flip test's p-value of the mean difference (NaN under 2 seeds)
    verdict: str


def paired_bootstrap_ci(
    x: np.ndarray,
    y: np.ndarray,
    statistic: Statistic = iqm,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``statistic(x) - statistic(y)`` and its percentile CI, resampling runs (rows) jointly (x[i], y[i]: one seed).

    Stratified like ``stratified_bootstrap_ci``: ``[runs, tasks]`` matrices are resampled within each task (column).
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.ndim == 1:
        a, b = a[:, None], b[:, None]
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same shape, got {a.shape} and {b.shape}")
    point = float(statistic(a.ravel()) - statistic(b.ravel()))
    idx = np.random.default_rng(seed).integers(0, a.shape[0], size=(n_boot, *a.shape))
    if statistic is iqm and not (np.isnan(a).any() or np.isnan(b).any()):  # (as stratified_bootstrap_ci)
        positions = (idx * a.shape[1] + np.arange(a.shape[1])).reshape(n_boot, -1)
        diffs = _resampled_iqm(a.ravel(), positions) - _resampled_iqm(b.ravel(), positions)
    else:
        resampled = [m[idx, np.arange(m.shape[1])].reshape(n_boot, -1) for m in (a, b)]
        diffs = _per_sample(statistic, resampled[0]) - _per_sample(statistic, resampled[1])
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(diffs, [alpha, 1.0 - alpha])
    return point, float(low), float(high)


# Where A and B do not differ, each seed's difference is as likely to have either sign: the sign-flip test's exact
# null distribution. n seeds have 2^n sign patterns; all are counted up to SIGN_FLIP_EXACT_MAX_SEEDS, a seeded sample
# beyond.
SIGN_FLIP_EXACT_MAX_SEEDS = 14
SIGN_FLIP_SAMPLES = 20_000
# The test's smallest two-sided p-value over n seeds is 2 / 2^n (all differences of one sign): under 5% from 6 seeds
# on. Under that a verdict could only ever read "indistinguishable", whatever the scores, so it is withheld instead.
MIN_SEEDS_FOR_VERDICT = 6


def sign_flip_p_value(differences: Sequence[float], *, n_samples: int = SIGN_FLIP_SAMPLES, seed: int = 0) -> float:
    """Two-sided p-value of the mean of paired differences (A - B, one per seed) by the paired permutation test
    (Fisher's): the share of the 2^n ways of flipping the differences' signs (a seeded sample of ``n_samples`` past
    ``SIGN_FLIP_EXACT_MAX_SEEDS`` seeds) whose mean is at least as far from 0 as the observed one. Exact at any n:
    it can reject at 5% only from 6 seeds on (n=5: at least 2/32). NaN under 2 seeds."""
    d = np.asarray(differences, dtype=float).ravel()
    n = d.size
    if n < 2:
        return float("nan")
    if n <= SIGN_FLIP_EXACT_MAX_SEEDS:
        flipped = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    else:
        flipped = np.random.default_rng(seed).integers(0, 2, size=(n_samples, n)).astype(bool)
        flipped[0] = False  # the observed signs are one of the draws (a p-value is never 0)
    means = np.where(flipped, -d, d).mean(axis=1)
    observed = abs(float(d.mean()))
    # (a tolerance for sums taken in another order: a mean equal to the observed one counts as at least as far)
    return float(np.mean(np.abs(means) >= observed - 1e-9 * max(observed, 1.0)))


def verdict(
    low: float, high: float, n: int, p_value: float, min_seeds: int = MIN_SEEDS_FOR_VERDICT, name: str = "lit"
) -> str:
    """A few words on ``name`` (the A side) vs B: better or worse only where both the CI of the IQM difference
    excludes 0 and the paired sign-flip test rejects at 5% (``p_value``); withheld under ``min_seeds`` seeds, where
    the test cannot reject. A percentile bootstrap's interval over a few seeds is too narrow (it excluded 0 with 2 of
    5 differences >= 0); the sign-flip test is exact at any n."""
    if n < min_seeds:
        return f"n<{min_seeds}"
    if not p_value < 0.05:
        return "indistinguishable"
    if low > 0:
        return f"{name} better"
    if high < 0:
        return f"{name} worse"
    return "indistinguishable"


def paired_comparison(
    a: Mapping[int, float], b: Mapping[int, float], *, n_boot: int = 2000, seed: int = 0, name: str = "lit"
) -> PairedComparison | None:
    """Compare final scores by seed (only seeds both sides have; ``name``: A's, for the verdict); None when they
    share no seed."""
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    x = np.array([a[s] for s in seeds], dtype=float)
    y = np.array([b[s] for s in seeds], dtype=float)
    point, low, high = paired_bootstrap_ci(x, y, iqm, n_boot=n_boot, seed=seed)
    if len(seeds) < 2:
        low = high = float("nan")  # one pair has no interval
    p_value = sign_flip_p_value(x - y, seed=seed)
    return PairedComparison(
        seeds=seeds,
        differences=[float(d) for d in x - y],
        a_iqm=iqm(x),
        b_iqm=iqm(y),
        iqm_difference=point,
        ci_low=low,
        ci_high=high,
        ci_flagged=len(seeds) < MIN_SEEDS_FOR_CI,
        probability_of_improvement=probability_of_improvement(x, y),
        sign_flip_p_value=p_value,
        verdict=verdict(low, high, len(seeds), p_value, name=name),
    )


def ratio_spread(numerator: Mapping[int, float], denominator: Mapping[int, float]) -> tuple[float, float, float]:
    """Median, min and max over shared keys (seeds) of ``numerator / denominator`` (e.g. the env-steps/s ratio)."""
    keys = [
        k
        for k in sorted(set(numerator) & set(denominator))
        if np.isfinite(numerator[k]) and np.isfinite(denominator[k]) and denominator[k] > 0
    ]
    if not keys:
        return float("nan"), float("nan"), float("nan")
    ratios = np.array([numerator[k] / denominator[k] for k in keys])
    return float(np.median(ratios)), float(ratios.min()), float(ratios.max())


def rliable_scores(evals: pd.DataFrame) -> dict[str, np.ndarray]:
    """rliable's score dictionary from ``load.load_evaluations``: ``"algo / backend"`` (plus ``[variant]`` and the
    sweep when they vary) -> ``[runs, tasks]`` final scores, tasks = envs in sorted order, runs = completed seeds.

    rliable needs the same number of runs for every task of an algorithm; a ragged set raises ``ValueError``.
    """
    returns = evals[(evals.metric == "mean_return") & (evals.status == "completed")].dropna(subset=["value"])
    several_sweeps = returns.sweep.nunique() > 1
    finals = (
        returns.groupby(["sweep", "algo", "variant", "backend", "env", "run_dir"])
        .apply(lambda run: final_score(run.timesteps, run.value), include_groups=False)
        .rename("final")
        .reset_index()
    )
    envs = sorted(finals.env.unique())
    scores = {}
    for (sweep, algo, variant, backend), group in finals.groupby(["sweep", "algo", "variant", "backend"]):
        name = f"{algo}{f'[{variant}]' if variant else ''} / {backend}{f' ({sweep})' if several_sweeps else ''}"
        columns = [group[group.env == env].final.to_numpy() for env in envs]
        if len({c.size for c in columns}) != 1:
            counts = ", ".join(f"{env}: {c.size}" for env, c in zip(envs, columns))
            raise ValueError(f"rliable_scores: {name} has different numbers of runs per env ({counts})")
        scores[name] = np.stack(columns, axis=1)
    return scores
