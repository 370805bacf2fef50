"""load_runs' hyperparameter columns come from each run's config.yaml (only those that differ); load_metrics reads
train/metrics.csv into a long table."""

from __future__ import annotations

import pandas as pd
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


def test_metrics_of_many_files_read_together_equal_each_file_read_alone(tmp_path):
    """Files of one header are parsed together; another header, a file not plainly written (a short row) and one
    that cannot be read are each handled on their own, with the numbers of a file read alone."""
    from lit_bench.analysis.metrics_csv import metric_names, read_metrics_csvs

    texts = {
        "a": "step,train/loss,rollout/ep_rew_mean\n100,1.0,5.0\n200,0.5,6.0\n",
        "b": "step,train/loss,rollout/ep_rew_mean\n100,2.0,1.0\n200,,2.0\n300,1.5,3.0\n",
        "c": "time/total_timesteps,train/value_loss\n50,9.0\n",
        "d": "step,train/loss,rollout/ep_rew_mean\n100,4.0\n",  # a short row: read alone (pandas fills NaN)
        "e": "step,train/loss\n\x00\x01,\n",  # no number: rows without values are left out
    }
    paths = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    paths.append(tmp_path / "missing.csv")
    assert metric_names(paths) == ["train/loss", "rollout/ep_rew_mean", "train/value_loss"]
    together = training._long(list(read_metrics_csvs(paths)))
    alone = [training._long(list(read_metrics_csvs([p]))).assign(run=k) for k, p in enumerate(paths)]
    expected = pd.concat([a for a in alone if len(a)], ignore_index=True)
    pd.testing.assert_frame_equal(together, expected, check_dtype=False)
    assert together[together.run == 1].value.tolist() == [2.0, 1.5, 1.0, 2.0, 3.0]  # the empty loss left out
    assert together[together.run == 3].value.tolist() == [4.0]
    assert set(together.run) == {0, 1, 2, 3}
    only = training._long(list(read_metrics_csvs(paths, ["train/value_loss"])))
    assert only.metric.tolist() == ["train/value_loss"] and only.timesteps.tolist() == [50]


def test_a_config_without_the_metric_has_an_empty_band_that_draws_as_nothing():
    import matplotlib.pyplot as plt

    long = pd.DataFrame(
        {"run_dir": ["r0"], "status": ["completed"], "timesteps": [4096.0], "metric": ["time/fps"], "value": [380.0]}
    )
    band = training.metric_band(long, "rollout/ep_rew_mean")
    assert band.empty and all(dtype.kind == "f" for dtype in band.dtypes)
    figure, ax = plt.subplots()
    training.draw_metric(ax, {"ppo / Acrobot": band}, {}, "rollout/ep_rew_mean")  # numpy refused object columns
    assert not ax.lines and not ax.collections
    plt.close(figure)
