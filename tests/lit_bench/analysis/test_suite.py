"""Suite aggregates, performance profiles and P(improvement) against rliable's own numbers on a fixture.

Expected values: rliable 1.2.0 (arch 7.2.0, numpy 2.4.6, scipy 1.17.1, pandas 2.3.3 in a throwaway venv: rliable
does not import with pandas 3) on the fixture below, by ``rliable.metrics.aggregate_{iqm,mean,median,
optimality_gap}``, ``metrics.probability_of_improvement``, ``library.create_performance_profile(reps=20000)`` and
``library.get_interval_estimates(reps=20000)`` (P(improvement): reps=5000). Point estimates must match to the last
digits; bootstrap CIs (different random draws) within 0.02 of rliable's.
"""

from __future__ import annotations

import numpy as np
import pytest

from lit_bench.analysis import suite

# 3 algorithms x 5 runs x 4 tasks of normalized scores (ties across algorithms, scores above 1)
A = np.array(
    [
        [0.88, 1.26, 1.09, 0.32],
        [0.42, 1.22, 0.01, 1.15],
        [1.12, 0.66, 0.42, 0.39],
        [0.36, 0.62, 0.71, 0.77],
        [1.39, 1.11, 0.87, 1.38],
    ]
)
B = np.array(
    [
        [0.52, 0.98, 0.75, 0.28],
        [0.35, 0.96, -0.24, 0.87],
        [0.89, 0.54, 0.18, 0.26],
        [0.19, 0.42, 0.67, 0.54],
        [1.11, 0.98, 0.64, 1.09],
    ]
)
C = np.array(
    [
        [0.88, 0.56, 0.79, 0.65],
        [0.72, 0.26, 0.58, 0.56],
        [0.81, 0.45, 0.62, 0.24],
        [0.47, 0.43, 0.31, 0.77],
        [0.47, 0.89, 0.61, 0.62],
    ]
)
SCORES = {"A": A, "B": B, "C": C}

RLIABLE = {  # name: (IQM, mean, median, optimality gap), their CIs [low, high]
    "A": ((0.825, 0.8075, 0.818, 0.2785), ((0.589, 0.646, 0.618, 0.156), (1.042, 0.9685, 1.006, 0.4055))),
    "B": ((0.619, 0.599, 0.61, 0.411), ((0.432, 0.4585, 0.438, 0.2765), (0.805, 0.7415, 0.779, 0.547))),
    "C": ((0.586, 0.5845, 0.575, 0.4155), ((0.504, 0.507, 0.493, 0.337), (0.682, 0.663, 0.671, 0.493))),
}
TAUS = np.linspace(0.0, 1.5, 7)
RLIABLE_PROFILES = {  # fraction of runs above each tau, its CI low, high
    "A": (
        [1.0, 0.95, 0.7, 0.55, 0.4, 0.15, 0.0],
        [1.0, 0.85, 0.5, 0.35, 0.2, 0.0, 0.0],
        [1.0, 1.0, 0.9, 0.75, 0.6, 0.3, 0.0],
    ),
    "B": (
        [0.95, 0.85, 0.65, 0.35, 0.1, 0.0, 0.0],
        [0.85, 0.7, 0.45, 0.15, 0.0, 0.0, 0.0],
        [1.0, 1.0, 0.85, 0.55, 0.25, 0.0, 0.0],
    ),
    "C": (
        [1.0, 0.95, 0.65, 0.25, 0.0, 0.0, 0.0],
        [1.0, 0.85, 0.45, 0.1, 0.0, 0.0, 0.0],
        [1.0, 1.0, 0.85, 0.45, 0.0, 0.0, 0.0],
    ),
}


def test_aggregates_and_their_cis_are_rliables():
    table = suite.aggregate_table(SCORES, n_boot=20000).set_index(["name", "metric"])
    for name, (points, (lows, highs)) in RLIABLE.items():
        for k, metric in enumerate(suite.AGGREGATES):
            row = table.loc[(name, metric)]
            assert row.value == pytest.approx(points[k], abs=1e-12), (name, metric)
            assert row.ci_low == pytest.approx(lows[k], abs=0.02) and row.ci_high == pytest.approx(highs[k], abs=0.02)
            assert row.runs == 5 and row.tasks == 4


def test_performance_profiles_are_rliables():
    profile = suite.performance_profile(SCORES, TAUS, n_boot=20000)
    for name, (fraction, low, high) in RLIABLE_PROFILES.items():
        rows = profile[profile.name == name]
        np.testing.assert_allclose(rows.fraction, fraction, atol=1e-12)
        np.testing.assert_allclose(rows.ci_low, low, atol=0.051)  # (a CI bound moves in steps of 1/20 runs)
        np.testing.assert_allclose(rows.ci_high, high, atol=0.051)


def test_probability_of_improvement_is_rliables():
    table = suite.improvement_table(SCORES, n_boot=5000).set_index(["x", "y"])
    assert table.loc[("A", "B"), "probability"] == pytest.approx(0.70, abs=1e-12)
    assert table.loc[("A", "C"), "probability"] == pytest.approx(0.69, abs=1e-12)
    assert table.loc[("B", "C"), "probability"] == pytest.approx(1 - 0.44, abs=1e-12)  # rliable: P(C > B) = 0.44
    assert table.loc[("A", "B"), "ci_low"] == pytest.approx(0.51, abs=0.02)
    assert table.loc[("A", "B"), "ci_high"] == pytest.approx(0.86, abs=0.02)


def test_known_numbers_by_hand():
    # one task: X = {1, 2, 3}, Y = {2, 2}: pairs X > Y: 3>2 twice = 2, ties 2=2 twice = 1 -> (2 + 1) / 6 = 0.5
    x, y = np.array([[1.0], [2.0], [3.0]]), np.array([[2.0], [2.0]])
    assert suite.improvement_probability(x, y)[0] == pytest.approx(0.5)
    assert suite.probability_of_improvement(x + 10, y)[0] == 1.0  # X always better: 1, its CI [1, 1]
    # 8 scores: the IQM drops 2 at each end; optimality gap of {0.5, 1.5}: 1 - mean(0.5, 1) = 0.25
    eight = np.arange(8.0).reshape(4, 2)
    assert suite.iqm(eight)[0] == pytest.approx(3.5)
    assert suite.optimality_gap(np.array([[0.5, 1.5]]))[0] == pytest.approx(0.25)
    assert list(suite.score_distribution(np.array([[0.0, 1.0], [1.0, 2.0]]), [1.0])[0]) == [0.25]  # strictly above
    with pytest.raises(ValueError, match="without NaN"):
        suite.aggregate_table({"x": np.array([[np.nan, 1.0]])})


def test_pair_labels_say_only_what_differs():
    from lit_bench.analysis.suite_page import pair_label

    assert pair_label("ppo / lit", "ppo / sb3") == "ppo: lit > SB3"
    assert pair_label("ppo gamma=0.9 / lit", "ppo gamma=0.99 / lit") == "ppo gamma=0.9 > ppo gamma=0.99 (lit)"
    assert pair_label("ppo / lit", "a2c / sb3") == "ppo / lit > a2c / sb3"


def test_suite_page_notes_stay_a_few_lines_at_many_configs():
    import pandas as pd

    from lit_bench.analysis import style
    from lit_bench.analysis.suite_page import suite_of

    rows = []
    for k in range(12):  # 12 learning rates on two envs: seeds 0-4 on CartPole, 0-3 (or 0-2) on Acrobot
        variant = f"algo.learning_rate={10.0 ** -(k % 6 + 2):g}" + (",algo.gamma=0.9" if k >= 6 else "")
        for env, env_id, seeds in (("CartPole", "CartPole-v1", 5), ("Acrobot", "Acrobot-v1", 3 + k % 2)):
            rows += [
                {"sweep": "s", "algo": "ppo", "variant": variant, "backend": "lit", "env": env, "env_id": env_id,
                 "seed": seed, "final": 100.0 + seed}
                for seed in range(seeds)
            ]  # fmt: skip
    rows.append({"sweep": "s", "algo": "a2c", "variant": "", "backend": "lit", "env": "CartPole"})
    rows[-1].update(env_id="CartPole-v1", seed=0, final=50.0)  # only on one env: left out
    per_run = pd.DataFrame(rows)
    found = suite_of(per_run, style.Look(zip(per_run.sweep, per_run.algo, per_run.variant)))
    assert found is not None and found.notes == [
        "left out, not on every env of the suite: a2c gamma=default learning_rate=default / lit",
        "12 of 12 entries have more runs on some env than on another: each keeps its fewest on any env, its lowest "
        "seeds (3-4 runs per env)",
    ]  # (one line per entry before)
    names = list(found.scores)
    assert names[:3] == [
        "ppo gamma=default learning_rate=1e-07 / lit",  # the look's order: by gamma, then learning rate
        "ppo gamma=default learning_rate=1e-06 / lit",
        "ppo gamma=default learning_rate=1e-05 / lit",
    ]
    assert {m.shape[0] for m in found.scores.values()} == {3, 4}
