"""Aggregation functions on tiny hand-written arrays with exact expected values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from lit_bench import stats


def test_iqm_drops_a_quarter_at_each_end():
    assert stats.iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx((3 + 4 + 5 + 6) / 4)
    assert stats.iqm([5.0, 1.0, 3.0]) == pytest.approx(3.0)  # n=3: nothing cut
    assert stats.iqm([1, 2, 3, 4, np.nan]) == pytest.approx(2.5)
    assert np.isnan(stats.iqm([]))


def test_interpolation_is_linear_and_never_extrapolates():
    out = stats.interpolate_to_grid([0, 10, 20], [0.0, 10.0, 30.0], [5, 15, 20, 25])
    np.testing.assert_allclose(out[:3], [5.0, 20.0, 30.0])
    assert np.isnan(out[3])
    np.testing.assert_allclose(stats.common_grid([100, 80], n_points=4), [20, 40, 60, 80])


def test_final_is_the_last_evaluation():
    assert stats.final_score([30, 10, 20, 40], [3.0, 1.0, 2.0, 5.0]) == 5.0
    assert np.isnan(stats.final_score([], []))


def test_steps_to_threshold_needs_the_threshold_held():
    steps = [200, 400, 600, 800, 1000, 1200, 1400]
    # a lucky 500 before any update, then the threshold held from 600 on for three evaluations
    assert stats.steps_to_threshold(steps, [500, 14, 480, 490, 500, 20, 30], 475) == 600
    assert np.isnan(stats.steps_to_threshold(steps, [500, 14, 9, 10, 11, 12, 14], 475))  # the seed-0 case
    assert np.isnan(stats.steps_to_threshold(steps, [1, 2, 3, 4, 5, 480, 490], 475))  # not yet held long enough
    assert stats.steps_to_threshold(list(reversed(steps)), [9, 9, 9, 9, 480, 480, 480], 475) == 200  # sorted by step
    assert stats.steps_to_threshold(steps, [1, 2, 3, 4, 5, 480, 490], 475, window=2) == 1200
    assert np.isnan(stats.steps_to_threshold(steps, [500] * 7, None))  # an env without a threshold
    assert np.isnan(stats.steps_to_threshold(steps, [500] * 7, float("nan")))


def test_normalization():
    assert stats.normalized_score(50.0, reference=200.0) == pytest.approx(0.25)
    assert stats.normalized_score(110.0, reference=210.0, random=10.0) == pytest.approx(0.5)


def test_bootstrap_is_reproducible_and_contains_the_point():
    scores = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    first = stats.stratified_bootstrap_ci(scores, np.mean, n_boot=500, seed=3)
    assert first == stats.stratified_bootstrap_ci(scores, np.mean, n_boot=500, seed=3)
    point, low, high = first
    assert point == pytest.approx(4.0) and low <= point <= high and low < high
    constant = stats.stratified_bootstrap_ci(np.full((4, 2), 7.0), stats.iqm, n_boot=50)
    assert constant == (7.0, 7.0, 7.0)


def test_stratified_bootstrap_resamples_within_tasks():
    # task 0 always 0, task 1 always 1: any within-task resample keeps the overall mean at exactly 0.5
    scores = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    assert stats.stratified_bootstrap_ci(scores, np.mean, n_boot=100) == (0.5, 0.5, 0.5)


def test_probability_of_improvement():
    assert stats.probability_of_improvement(np.array([2.0, 3.0]), np.array([1.0, 1.0])) == 1.0
    assert stats.probability_of_improvement(np.array([1.0, 2.0]), np.array([2.0, 1.0])) == pytest.approx(0.5)
    # ties count half; averaged over two tasks: task 0 -> 1.0, task 1 -> 0.5
    x = np.array([[2.0, 1.0], [2.0, 1.0]])
    y = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert stats.probability_of_improvement(x, y) == pytest.approx(0.75)


def test_curves_on_grid_and_band():
    curves = pd.DataFrame({"seed": [0, 0, 1, 1], "timesteps": [0, 10, 0, 10], "value": [0.0, 10.0, 2.0, 4.0]})
    on_grid = stats.curves_on_grid(curves, np.array([5.0, 10.0]))
    assert list(on_grid["value"]) == [5.0, 10.0, 3.0, 4.0]
    band = stats.curve_band(on_grid, n_boot=50)
    assert list(band["mean"]) == [4.0, 7.0] and list(band["n_runs"]) == [2, 2]
    assert (band["ci_low"] <= band["iqm"]).all() and (band["iqm"] <= band["ci_high"]).all()


def test_a_narrow_bootstrap_interval_over_six_seeds_is_no_verdict():
    """make run's 6 seeds of PPO CartPole (lit grouped vs SB3, 2026-12-06): the paired bootstrap's CI excluded 0 with
    2 of the 6 differences >= 0; the sign-flip test (p = 8/64) finds no difference. (60 seeds of the same command:
    -53.8 [-123.8, +23.0], p = 0.14.)"""
    lit = dict(enumerate([168.4, 226.6, 300.0, 500.0, 196.0, 139.0]))
    sb3 = dict(enumerate([500.0, 213.8, 500.0, 500.0, 491.0, 346.4]))
    pair = stats.paired_comparison(lit, sb3)
    assert pair is not None and pair.ci_high < 0 and pair.sign_flip_p_value == pytest.approx(8 / 64)
    assert pair.verdict == "indistinguishable"


def test_no_verdict_where_the_sign_flip_test_cannot_reject():
    """Over n seeds the test's smallest p-value is 2 / 2^n: 5 seeds all better by the same margin is p = 2/32, so
    a verdict there could only read "indistinguishable"; it is withheld until 6, where the same data reject."""
    assert 2 / 2 ** (stats.MIN_SEEDS_FOR_VERDICT - 1) >= 0.05 > 2 / 2**stats.MIN_SEEDS_FOR_VERDICT
    for n, verdict in ((5, "n<6"), (6, "lit better")):
        pair = stats.paired_comparison({s: s + 1.0 for s in range(n)}, {s: float(s) for s in range(n)}, n_boot=200)
        assert pair is not None and pair.sign_flip_p_value == pytest.approx(2 / 2**n) and pair.verdict == verdict


def test_the_sign_flip_test_is_exact_and_sampled_past_its_limit():
    # 6 differences: the observed signs and their mirror are the only patterns as far from 0 (2 of 64)
    assert stats.sign_flip_p_value([3.0, 1.0, 2.0, 5.0, 4.0, 6.0]) == pytest.approx(2 / 64)
    # [2, 1]: means 1.5, 0.5, -0.5, -1.5; a zero difference flips onto itself: [2, 0]'s means are all +-1
    assert stats.sign_flip_p_value([2.0, 1.0]) == pytest.approx(0.5)
    assert stats.sign_flip_p_value([2.0, 0.0]) == 1.0
    assert stats.sign_flip_p_value([1.0, -1.0, 1.0, -1.0]) == 1.0  # a mean of 0: every pattern is as far
    assert np.isnan(stats.sign_flip_p_value([1.0]))
    many = [1.0] * (stats.SIGN_FLIP_EXACT_MAX_SEEDS + 6)  # sampled: only the observed draw is as far
    assert stats.sign_flip_p_value(many, n_samples=1000) == pytest.approx(1 / 1000)
    symmetric = np.random.default_rng(0).normal(size=40)
    assert 0.05 < stats.sign_flip_p_value(symmetric - symmetric.mean()) <= 1.0


def test_paired_comparison_on_known_numbers():
    lit = {s: float(v) for s, v in enumerate([1, 2, 3, 4, 5])}
    plus_one = stats.paired_comparison(lit, {s: v - 1 for s, v in lit.items()}, n_boot=200)
    # IQM of 1..5 drops one value at each end: 3 vs 2; every paired resample differs by exactly 1
    assert (plus_one.a_iqm, plus_one.b_iqm, plus_one.iqm_difference) == (3.0, 2.0, 1.0)
    assert (plus_one.ci_low, plus_one.ci_high) == pytest.approx((1.0, 1.0))
    # ...but 5 differences of one sign are 2 of the sign-flip test's 32 patterns: p = 0.0625, no verdict
    assert plus_one.sign_flip_p_value == pytest.approx(2 / 32) and not plus_one.ci_flagged
    assert plus_one.verdict == f"n<{stats.MIN_SEEDS_FOR_VERDICT}"
    # P(X > Y) + P(X = Y) / 2 over all 25 pairs: 15 greater, 4 ties
    assert plus_one.probability_of_improvement == pytest.approx((15 + 2) / 25)
    assert plus_one.differences == [1.0] * 5 and plus_one.seeds == [0, 1, 2, 3, 4]
    six = {**lit, 5: 6.0}
    better = stats.paired_comparison(six, {s: v - 1 for s, v in six.items()}, n_boot=200)
    assert (better.verdict, better.sign_flip_p_value) == ("lit better", pytest.approx(2 / 64))
    worse = stats.paired_comparison({s: v - 1 for s, v in six.items()}, six, n_boot=200)
    assert worse.verdict == "lit worse" and worse.iqm_difference == pytest.approx(-1.0)
    mixed = stats.paired_comparison(six, {0: 2.0, 1: 1.0, 2: 4.0, 3: 3.0, 4: 5.0, 5: 6.0}, n_boot=500)
    assert mixed.ci_low < 0 < mixed.ci_high and mixed.verdict == "indistinguishable"
    few = stats.paired_comparison({0: 2.0, 1: 3.0, 9: 7.0}, {0: 1.0, 1: 1.0, 2: 0.0}, n_boot=50)
    assert few.seeds == [0, 1] and few.ci_flagged and few.verdict == f"n<{stats.MIN_SEEDS_FOR_VERDICT}"
    assert stats.paired_comparison({0: 1.0}, {1: 1.0}) is None  # no shared seed: nothing to pair


def test_paired_bootstrap_resamples_seeds_jointly():
    x = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    # y = x - 3: independent resampling would give a wide interval; a paired one is exactly 3
    assert stats.paired_bootstrap_ci(x, x - 3, np.mean, n_boot=300) == pytest.approx((3.0, 3.0, 3.0))
    with pytest.raises(ValueError, match="same shape"):
        stats.paired_bootstrap_ci(x, x[:3])


def test_vectorized_iqm_bootstrap_matches_the_statistic():
    scores = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    fast = stats.stratified_bootstrap_ci(scores, stats.iqm, n_boot=300, seed=1)
    slow = stats.stratified_bootstrap_ci(scores, lambda v: stats.iqm(v), n_boot=300, seed=1)
    assert fast == pytest.approx(slow)


def test_ratio_spread():
    assert stats.ratio_spread({0: 100.0, 1: 90.0, 2: 80.0}, {0: 100.0, 1: 100.0, 3: 1.0}) == pytest.approx(
        (0.95, 0.9, 1.0)
    )
    assert all(np.isnan(stats.ratio_spread({0: 1.0}, {1: 1.0})))


def test_rliable_scores_from_load_evaluations(tmp_path):
    from lit_bench.analysis.load import load_evaluations

    from .helpers import make_sweep, write_run

    make_sweep(tmp_path)
    scores = stats.rliable_scores(load_evaluations([tmp_path / "fixture_sweep"]))
    assert set(scores) == {"ppo / lit", "ppo / sb3"}  # a2c has no completed run
    np.testing.assert_array_equal(scores["ppo / lit"], [[480.0], [490.0], [500.0]])  # [runs, tasks]
    write_run(tmp_path / "fixture_sweep", "ppo", "Pendulum", 0, "lit", [-900.0, -200.0], env_id="Pendulum-v1")
    with pytest.raises(ValueError, match="different numbers of runs per env"):
        stats.rliable_scores(load_evaluations([tmp_path / "fixture_sweep"]))


def test_console_line_says_reached_only_when_the_threshold_held():
    from lit_bench.run.outcome import describe

    base = {
        "algo": "ppo",
        "env": "CartPole",
        "seed": 0,
        "backend": "lit",
        "status": "completed",
        "timesteps": 3000,
        "final_std_return": 0.0,
        "threshold": 475.0,
        "run_dir": "r",
    }
    assert np.isnan(stats.steps_to_threshold([1000, 2000, 3000], [500.0, 20.0, 500.0], 475.0))  # lucky, then late
    line = describe({**base, "final_mean_return": 500.0, "steps_to_threshold": None})
    assert "475 not held for 3 evaluations in a row yet" in line and "below" not in line
    assert "; below 475" in describe({**base, "final_mean_return": 20.0, "steps_to_threshold": None})
    assert "reached 475 at 1000 steps" in describe({**base, "final_mean_return": 500.0, "steps_to_threshold": 1000})


def _interp_per_run(t: np.ndarray, v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The reference: np.interp of one run's points sorted by step (stable), NaN outside them."""
    if t.size == 0:
        return np.full(grid.shape, np.nan)
    order = np.argsort(t, kind="stable")
    out = np.interp(grid, t[order], v[order])
    out[(grid < t[order][0]) | (grid > t[order][-1])] = np.nan
    return out


def test_all_runs_on_the_grid_at_once_are_np_interp_per_run():
    rng = np.random.default_rng(0)
    lengths = [5, 1, 0, 7, 3, 2]  # a run with one point, one with none
    runs = np.repeat(np.arange(len(lengths)), lengths)
    steps = rng.choice(np.arange(0, 100, 5.0), size=runs.size)  # unsorted, repeated steps within a run
    values = rng.normal(size=runs.size) * 100
    order = rng.permutation(runs.size)  # runs interleaved in the input
    runs, steps, values = runs[order], steps[order], values[order]
    runs_with_a_stranger = np.r_[runs, -1]  # a point of no run is left out
    grid = np.r_[np.linspace(-5, 105, 23), steps[:4]]  # before, between, on and after the steps
    matrix = stats.runs_on_grid(
        runs_with_a_stranger, len(lengths), np.r_[steps, 50.0], np.r_[values, 1e9], grid, chunk=7
    )  # (a small chunk: several passes)
    for k in range(len(lengths)):
        np.testing.assert_array_equal(matrix[k], _interp_per_run(steps[runs == k], values[runs == k], grid))
    assert np.isnan(matrix[2]).all()


def test_the_band_of_all_grid_points_is_the_bootstrap_of_each_point():
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(9, 6))
    matrix[[0, 4], 1] = np.nan  # points with fewer runs, one with none
    matrix[3, 2] = np.nan
    matrix[:, 5] = np.nan
    steps = np.arange(6) * 10.0
    band = stats.iqm_band(matrix, steps, n_boot=200, seed=3, chunk=500)
    assert list(band.timesteps) == [0.0, 10.0, 20.0, 30.0, 40.0] and list(band.n_runs) == [9, 7, 8, 9, 9]
    for row in band.itertuples():
        values = matrix[:, int(row.timesteps) // 10]
        values = values[~np.isnan(values)]
        point, low, high = stats.stratified_bootstrap_ci(values, stats.iqm, n_boot=200, seed=3)
        assert (row.iqm, row.ci_low, row.ci_high) == (point, low, high)  # the same numbers, not close ones
        assert (row.mean, row.median) == (values.mean(), np.median(values))
    # the tidy frame's band is the matrix's
    tidy = pd.DataFrame({"timesteps": np.tile(steps, 9), "value": matrix.ravel(), "seed": np.repeat(np.arange(9), 6)})
    pd.testing.assert_frame_equal(stats.curve_band(tidy, n_boot=200, seed=3), band)


@pytest.mark.parametrize("shape", [(1,), (4,), (167,), (9, 3)])
def test_bootstrap_iqm_by_rank_gives_the_numbers_of_sorting_the_scores(shape):
    """The IQM's bootstrap sorts ranks, not scores: the same numbers as the generic path (any other statistic),
    ties included."""
    rng = np.random.default_rng(len(shape))
    x = np.round(rng.normal(size=shape), 1)  # (ties)
    y = x + np.round(rng.normal(size=shape), 1)
    generic = lambda v: stats.iqm(v)  # noqa: E731 - not stats.iqm itself: the path that sorts the resampled scores
    assert stats.stratified_bootstrap_ci(x, stats.iqm, seed=3) == stats.stratified_bootstrap_ci(x, generic, seed=3)
    assert stats.paired_bootstrap_ci(x, y, stats.iqm, seed=3) == stats.paired_bootstrap_ci(x, y, generic, seed=3)


def test_a_band_is_drawn_at_its_runs_evaluations_when_they_share_them():
    runs = np.array([0, 0, 0, 1, 1, 1, 1])
    steps = np.array([500.0, 1000.0, 1500.0, 1500.0, 500.0, 1000.0, 2000.0])  # run 1 is longer, its rows unsorted
    grid, at_evaluations = stats.evaluation_grid(runs, 2, steps)
    assert at_evaluations and grid.tolist() == [500.0, 1000.0, 1500.0]  # up to the shortest run
    other = np.array([500.0, 1000.0, 1500.0, 400.0, 1000.0, 1500.0, 2000.0])  # run 1 evaluated at 400, not 500
    grid, at_evaluations = stats.evaluation_grid(runs, 2, other, n_points=4)
    assert not at_evaluations and grid.tolist() == stats.common_grid([1500.0, 2000.0], n_points=4).tolist()
    repeated = np.array([500.0, 500.0, 1500.0, 500.0, 1000.0, 1500.0, 2000.0])  # run 0: 500 twice, no 1000
    assert not stats.evaluation_grid(runs, 2, repeated)[1]
    assert not stats.evaluation_grid(runs, 2, steps, n_points=2)[1]  # more evaluations than points: the even grid
