"""Configs named by their values: the defaults a config keeps read from its config.yaml (one read per sweep, algo and
env), shown in every label, and the configs of a sweep in the order of their values."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from lit_bench.analysis import style, summarize, variants
from lit_bench.analysis.figures import short_labels
from lit_bench.analysis.load import load_tables
from lit_bench.store.rundir import RunDir

from ..helpers import write_run

# a learning-rate sweep of dqn: its config ids ordered against its values (the old order was by config_id)
SWEEP = {"": ("d", 0.0001), "algo.learning_rate=1e-05": ("c", 1e-05), "algo.learning_rate=0.0006": ("b", 0.0006)}
SWEEP["algo.learning_rate=0.003"] = ("a", 0.003)


def _sweep(root: Path, configs: dict[str, tuple[str, float]], *, seeds: int = 2, backends=("lit",)) -> Path:
    sweep = root / "lr"
    for variant, (config_id, lr) in configs.items():
        for seed, backend in ((seed, backend) for seed in range(seeds) for backend in backends):
            run = write_run(
                sweep, "dqn", "CartPole", seed, backend, [10.0, 20.0 + lr], subdir=variant, variant=variant,
                config_id=config_id, sweep="lr",
            )  # fmt: skip
            config = {"seed": seed, "algo": {"learning_rate": lr, "gamma": 0.99}, "env": {"id": "CartPole-v1"}}
            (run / "config.yaml").write_text(yaml.safe_dump(config))
    return sweep


def test_labels_show_the_kept_defaults_and_configs_read_in_value_order(tmp_path, monkeypatch):
    reads = []
    read_config = RunDir.read_config
    monkeypatch.setattr(RunDir, "read_config", lambda self: reads.append(self.root) or read_config(self))
    runs, evals = load_tables([_sweep(tmp_path, SWEEP, backends=("lit", "sb3"))])
    summary = summarize.summary_table(runs, evals)
    in_order = ["algo.learning_rate=1e-05", "", "algo.learning_rate=0.0006", "algo.learning_rate=0.003"]
    assert summary.variant.tolist() == in_order * 2  # numeric, the defaults (0.0001) in their place; lit, then SB3
    assert summary.defaults.tolist() == ["", "algo.learning_rate=0.0001", "", ""] * 2  # read from its config.yaml
    assert len(reads) == 1  # one config read for the sweep (both backends), not one per run
    comparison = summarize.comparison_table(runs, evals, summary=summary)
    assert comparison.variant.tolist() == in_order  # the summary's order (by name without it)
    assert summarize.comparison_table(runs, evals).variant.tolist() == sorted(in_order)
    summary = summary[summary.backend == "lit"]
    assert list(summary.columns[summary.columns.get_loc("variant") :][:2]) == ["variant", "defaults"]
    assert short_labels(summary) == [
        "dqn learning_rate=1e-05 / lit",
        "dqn learning_rate=0.0001 / lit",
        "dqn learning_rate=0.0006 / lit",
        "dqn learning_rate=0.003 / lit",
    ]
    look = style.Look.of(summary)
    assert look.configs == [("lr", "dqn", v) for v in summary.variant]  # colours in the same order
    assert look.sort([("lr", "dqn", "algo.learning_rate=0.003"), ("lr", "dqn", "")]) == [
        ("lr", "dqn", ""),
        ("lr", "dqn", "algo.learning_rate=0.003"),
    ]


def test_without_a_readable_config_the_label_says_default(tmp_path):
    sweep = _sweep(tmp_path, {"": ("d", 0.0001), "algo.learning_rate=0.003": ("a", 0.003)}, seeds=1)
    (sweep / "dqn" / "CartPole" / "seed_0" / "config.yaml").unlink()
    runs, evals = load_tables([sweep])
    summary = summarize.summary_table(runs, evals)
    assert summary.variant.tolist() == ["", "algo.learning_rate=0.003"]  # unknown: first
    assert summary.defaults.isna().tolist() == [True, False]
    assert short_labels(summary, backend=False) == ["dqn learning_rate=default", "dqn learning_rate=0.003"]


def test_kept_defaults_one_read_per_group_and_a_cut_variant_reads_its_own(tmp_path, monkeypatch):
    def run_dir(name: str, config: dict | None) -> str:
        path = tmp_path / name
        path.mkdir()
        if config is not None:
            (path / "config.yaml").write_text(yaml.safe_dump(config))
        return str(path)

    base = {"algo": {"learning_rate": 0.0003, "n_steps": 2048, "policy_kwargs": {"net_arch": [64, 64]}}}
    lr = run_dir("lr", {"algo": {**base["algo"], "learning_rate": 0.001}})
    steps = run_dir("steps", {"algo": {**base["algo"], "n_steps": 128}})
    cut = run_dir("cut", {"algo": {**base["algo"], "n_steps": 64, "learning_rate": 0.1}})
    other_env = run_dir("pendulum", {"algo": {"learning_rate": 0.0003, "n_steps": 1024}})
    sac = run_dir("sac", {"algo": {"learning_rate": 0.0003}})  # no n_steps
    keys = ["algo.learning_rate", "algo.n_steps"]
    configs = [
        ("s", "ppo", "CartPole", "algo.learning_rate=0.001"),
        ("s", "ppo", "CartPole", "algo.n_steps=128"),
        ("s", "ppo", "CartPole", "algo.gamma=0.9"),  # keeps both: known from the two configs read
        ("s", "ppo", "CartPole", "algo.gamma=0.8,+2"),  # a cut slug: its own config
        ("s", "ppo", "Pendulum", ""),
        ("s", "sac", "Pendulum", ""),
        ("s", "ppo", "Acrobot", ""),  # no readable config
    ]
    dirs = [[lr], [steps], [run_dir("unread", None)], [cut], [other_env], [sac], [run_dir("none", None)]]
    reads = []
    read_config = RunDir.read_config
    monkeypatch.setattr(RunDir, "read_config", lambda self: reads.append(self.root.name) or read_config(self))
    assert variants.kept_defaults(configs, dirs, keys) == [
        "algo.n_steps=2048",
        "algo.learning_rate=0.0003",
        "algo.learning_rate=0.0003,algo.n_steps=2048",
        "algo.learning_rate=0.1,algo.n_steps=64",
        "algo.learning_rate=0.0003,algo.n_steps=1024",
        "algo.learning_rate=0.0003",
        None,
    ]
    assert reads == ["lr", "steps", "cut", "pendulum", "sac", "none"]  # (not "unread": what it keeps is known)
    labels = style.short_labels(
        [("s", "ppo", ""), ("s", "ppo", "algo.n_steps=128"), ("s", "sac", ""), ("s", "ppo", "")],
        defaults=["algo.n_steps=1024", "", "", None],
    )
    assert labels == ["ppo n_steps=1024", "ppo n_steps=128", "sac", "ppo n_steps=default"]  # sac has no n_steps


def test_order_key_is_numeric_then_by_name_unknown_first():
    keys = ["algo.learning_rate"]
    names = ["algo.learning_rate=0.01", "algo.learning_rate=1e-05", "algo.learning_rate=constant", "", "x=1"]
    kept = [None, None, None, "algo.learning_rate=0.0003", None]
    order = sorted(range(5), key=lambda i: variants.order_key(names[i], kept[i], keys))
    assert [names[i] for i in order] == ["x=1", "algo.learning_rate=1e-05", "", "algo.learning_rate=0.01",
                                         "algo.learning_rate=constant"]  # fmt: skip
    assert variants.keys_of(["algo.gamma=0.9,+3", "budget=10", ""]) == ["algo.gamma", "budget"]


def test_look_over_several_envs_joins_values_that_differ():
    summary = pd.DataFrame(
        {
            "sweep": ["s"] * 4,
            "algo": ["ppo"] * 4,
            "env": ["CartPole", "CartPole", "Pendulum", "Pendulum"],
            "variant": ["", "algo.n_steps=128", "", "algo.n_steps=128"],
            "defaults": ["algo.n_steps=32", "", "algo.n_steps=1024", ""],
        }
    )
    look = style.Look.of(summary)
    configs = [("s", "ppo", ""), ("s", "ppo", "algo.n_steps=128")]
    assert look.labels(configs, envs=["Pendulum", "Pendulum"]) == ["ppo n_steps=1024", "ppo n_steps=128"]
    assert look.labels(configs) == ["ppo n_steps=32/1024", "ppo n_steps=128"]  # over all its envs (the suite)
    assert look.configs == [("s", "ppo", ""), ("s", "ppo", "algo.n_steps=128")]  # (32 < 128: its first env's)
