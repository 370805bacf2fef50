"""Outcome equivalence of seed groups: N seeds trained as one ``SeedGroup`` against the same N seeds trained as
ordinary lit_sb3 models, one after another (each seeds its own random streams, so it is the run its own process
trains).

    OMP_NUM_THREADS=1 python benchmarks/seeds_equivalence.py --algo ppo sac --seeds 10 --steps 20000 6000

The configurations are ``benchmarks/seeds.py``'s (the RL Zoo's settings). Every final model is scored the same way:
SB3's ``evaluate_policy``, deterministic, ``--episodes`` episodes on a fresh env seeded ``seed + 1000``. A grouped
seed draws the random numbers of the ordinary run of the same seed, so the two differ only by the batched kernels'
rounding, which training may amplify: the per-seed differences (grouped - ordinary) are printed, and the table gives
the largest one beside the difference of the IQMs with a bootstrap 95% CI that resamples each side on its own
(stratified: conservative for such paired samples) and rliable's probability of improvement P(grouped > ordinary).
Equivalent training shows a CI that contains 0 and P near 0.5. Prints a Markdown table; ``--out`` writes it as CSV
too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from seeds import CONFIGS, Config

from lit_bench.stats import iqm, probability_of_improvement


def _objects(config: Config) -> dict[str, Any]:
    """The configuration's keyword arguments, its expressions (TD3's action noise) evaluated."""
    namespace: dict[str, Any] = {}
    exec(config.imports(), namespace)  # (the benchmark's own source text: numpy and SB3's noise class)
    return {**config.kwargs, **{k: eval(v, namespace) for k, v in config.exprs.items()}}


def _score(model: Any, env_id: str, seed: int, episodes: int) -> float:
    from stable_baselines3.common.evaluation import evaluate_policy

    from lit_sb3.common.envs import to_vec_env

    env = to_vec_env(env_id)
    env.seed(seed + 1000)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True)
    env.close()
    return float(mean)


def grouped(config: Config, seeds: list[int], steps: int, episodes: int) -> tuple[list[float], float]:
    import lit_sb3
    from lit_sb3 import SeedGroup

    started = time.process_time()
    group = SeedGroup(
        getattr(lit_sb3, config.algo), seeds=seeds, env=config.env, n_envs=config.n_envs, **_objects(config)
    )
    group.learn(steps)
    cpu = time.process_time() - started
    return [_score(group.model(i), config.env, seed, episodes) for i, seed in enumerate(seeds)], cpu


def ordinary(config: Config, seeds: list[int], steps: int, episodes: int) -> tuple[list[float], float]:
    import lit_sb3
    from lit_sb3.common.envs import to_vec_env

    scores, cpu = [], 0.0
    for seed in seeds:
        started = time.process_time()
        env = to_vec_env(config.env, n_envs=config.n_envs, seed=seed)
        model = getattr(lit_sb3, config.algo)("MlpPolicy", env, seed=seed, **_objects(config))
        model.learn(steps)
        cpu += time.process_time() - started
        scores.append(_score(model, config.env, seed, episodes))
    return scores, cpu


def independent_difference_ci(a: np.ndarray, b: np.ndarray, n_boot: int = 5000, seed: int = 0) -> tuple[float, ...]:
    """IQM(a) - IQM(b) and its percentile 95% CI, resampling each sample on its own."""
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, len(a), size=(n_boot, len(a)))
    ib = rng.integers(0, len(b), size=(n_boot, len(b)))
    diffs = np.array([iqm(a[i]) - iqm(b[j]) for i, j in zip(ia, ib)])
    low, high = np.quantile(diffs, [0.025, 0.975])
    return iqm(a) - iqm(b), float(low), float(high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", nargs="+", default=["ppo", "sac"], choices=sorted(CONFIGS))
    parser.add_argument("--steps", type=int, nargs="+", default=[20000, 6000], help="env steps per seed, per algo")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if len(args.steps) not in (1, len(args.algo)):
        parser.error(f"--steps: one value, or one per --algo ({len(args.algo)})")
    seeds = list(range(args.seeds))
    rows = []
    for name, steps in zip(args.algo, args.steps * len(args.algo) if len(args.steps) == 1 else args.steps):
        config = CONFIGS[name]
        group_scores, group_cpu = grouped(config, seeds, steps, args.episodes)
        alone_scores, alone_cpu = ordinary(config, seeds, steps, args.episodes)
        a, b = np.array(group_scores), np.array(alone_scores)
        diff, low, high = independent_difference_ci(a, b)
        rows.append(
            {
                "algo": name,
                "env": config.env,
                "steps": steps,
                "seeds": len(seeds),
                "grouped_iqm": iqm(a),
                "ordinary_iqm": iqm(b),
                "diff": diff,
                "ci_low": low,
                "ci_high": high,
                "p_grouped_gt_ordinary": probability_of_improvement(a, b),
                "grouped_cpu_s": group_cpu,
                "ordinary_cpu_s": alone_cpu,
                "max_seed_diff": float(np.abs(a - b).max()),
                "grouped": " ".join(f"{s:.1f}" for s in a),
                "ordinary": " ".join(f"{s:.1f}" for s in b),
            }
        )
        print(f"{name}: grouped {a.round(1).tolist()}, ordinary {b.round(1).tolist()}", flush=True)
        print(f"{name}: grouped - ordinary, per seed {(a - b).round(1).tolist()}", flush=True)
    table = pd.DataFrame(rows)
    print(
        "| algo | env | steps | seeds | grouped IQM | ordinary IQM | grouped - ordinary [95% CI] "
        "| P(grouped > ordinary) | largest per-seed difference | training CPU s, grouped / ordinary |\n"
        "|---|---|---:|---:|---:|---:|---|---:|---:|---|"
    )
    for r in table.itertuples():
        print(
            f"| {r.algo} | {r.env} | {r.steps:,} | {r.seeds} | {r.grouped_iqm:.1f} | {r.ordinary_iqm:.1f} | "
            f"{r.diff:+.1f} [{r.ci_low:+.1f}, {r.ci_high:+.1f}] | {r.p_grouped_gt_ordinary:.2f} | "
            f"{r.max_seed_diff:.1f} | {r.grouped_cpu_s:.0f} / {r.ordinary_cpu_s:.0f} |"
        )
    if args.out is not None:
        table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
