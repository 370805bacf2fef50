"""load_runs' hyperparameter columns come from each run's config.yaml (only those that differ); load_metrics reads
train/metrics.csv into a long table."""

from __future__ import annotations

import pytest

from lit_bench.analysis import load, training
from tests.lit_bench.helpers import write_config_and_metrics, write_run


def test_hyperparameter_columns_and_training_metrics(tmp_path):
    for k, (lr, schedule) in enumerate(((0.001, None), (0.0003, {"_target_": "LinearSchedule", "start": 0.2}))):
        for seed in range(2):
            run = write_run(
                tmp_path,
                "ppo",
                "CartPole",
                seed,
                "lit",
                [10.0, 20.0],
                subdir=f"c{k}",
                config_id=f"c{k}",
                variant=f"algo.learning_rate={lr}",
            )
            write_config_and_metrics(
                run,
                {
                    "seed": seed,
                    "out_dir": str(tmp_path),
                    "env": {"n_envs": 8},
                    "algo": {"learning_rate": lr, "gamma": 0.99, "clip_range": schedule},
                },
            )
    runs = load.load_runs([tmp_path]).sort_values(["config_id", "seed"])
    # only what differs, by dotted key; seed and paths are not hyperparameters; a schedule's fields are columns
    assert {"algo.learning_rate", "algo.clip_range._target_", "algo.clip_range.start"} <= set(runs.columns)
    assert not {"out_dir", "algo.gamma", "env.n_envs"} & set(runs.columns)  # (the seed differs too: left out)
    assert runs["algo.learning_rate"].tolist() == [0.001, 0.001, 0.0003, 0.0003]
    metrics = training.load_metrics(runs)
    losses = metrics[(metrics.metric == "train/loss") & (metrics.run_dir == runs.run_dir.iloc[0])]
    assert losses.timesteps.tolist() == [256, 512, 768, 1024, 1280]  # env steps from the `step` column
    assert losses.value.tolist() == pytest.approx([1.0, 0.5, 1 / 3, 0.25, 0.2])
    assert training.chosen_metrics(metrics) == ["rollout/ep_rew_mean", "train/loss", "train/value_loss"]
    band = training.metric_band(metrics[metrics.config_id == "c0"], "train/loss")
    assert band.n_runs.max() == 2 and band.iqm.iloc[-1] == pytest.approx(0.2)  # both seeds end at 0.2
