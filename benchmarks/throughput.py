"""Env-steps/s of lit_sb3 vs SB3 / sb3-contrib at identical hyperparameters, side by side in one process.

    python benchmarks/throughput.py                 # every case, 3 repetitions each
    python benchmarks/throughput.py --cases ppo_cartpole_1env a2c_cartpole_8env --reps 5

Each repetition trains both implementations back to back (alternating which goes first), so machine noise hits both
alike; the table reports the median env-steps/s of each and the median of the per-repetition ratios
(lit_sb3 / SB3 >= 1.0 means at least as fast).
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from sb3_contrib.common.envs import InvalidActionEnvDiscrete


@dataclass(frozen=True)
class Case:
    algo: str  # class name, the same in lit_sb3 and SB3 / sb3-contrib
    env_id: str
    n_envs: int
    steps: int
    kwargs: dict[str, Any] = field(default_factory=dict)
    reference: str = "stable_baselines3"
    policy: str = "MlpPolicy"


# envs that are not registered with gymnasium, by the name a case gives
ENV_FACTORIES = {"InvalidActionEnvDiscrete": functools.partial(InvalidActionEnvDiscrete, dim=20, n_invalid_actions=10)}

CASES: dict[str, Case] = {
    "ppo_cartpole_1env": Case("PPO", "CartPole-v1", 1, 20_000),
    "ppo_cartpole_8env": Case(
        "PPO", "CartPole-v1", 8, 20_000,
        {"n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20, "learning_rate": 1e-3},
    ),
    "a2c_cartpole_8env": Case("A2C", "CartPole-v1", 8, 40_000),
    # off-policy: SB3 defaults ([256, 256] nets, one update per env step); short runs, updates dominate the cost
    "sac_pendulum": Case("SAC", "Pendulum-v1", 1, 1_000),
    "td3_pendulum": Case("TD3", "Pendulum-v1", 1, 1_000),
    "sac_halfcheetah": Case("SAC", "HalfCheetah-v5", 1, 800),
    "dqn_cartpole": Case("DQN", "CartPole-v1", 1, 10_000),
    # RL Zoo's CartPole setting (linear policy, 2 directions); same seed -> the same iterations on both sides
    "ars_cartpole": Case("ARS", "CartPole-v1", 1, 20_000, {"n_delta": 2}, reference="sb3_contrib",
                         policy="LinearPolicy"),
    # sb3-contrib off-policy: defaults (TQC: 2 critics x 25 quantiles; QRDQN: 200 quantiles); CrossQ with the RL Zoo's
    # Pendulum net ([256, 256]; its default [1024, 1024] critics run at ~12 steps/s)
    "tqc_pendulum": Case("TQC", "Pendulum-v1", 1, 1_000, reference="sb3_contrib"),
    "crossq_pendulum": Case("CrossQ", "Pendulum-v1", 1, 1_000, {"policy_kwargs": {"net_arch": [256, 256]}},
                            reference="sb3_contrib"),
    "qrdqn_cartpole": Case("QRDQN", "CartPole-v1", 1, 10_000, reference="sb3_contrib"),
    # sb3-contrib on-policy: the RL Zoo's CartPole TRPO; RecurrentPPO with its CartPoleNoVel net (10 epochs);
    # MaskablePPO on sb3-contrib's masked identity env (masks read from the env at every step)
    "trpo_cartpole": Case("TRPO", "CartPole-v1", 2, 20_000,
                          {"n_steps": 512, "batch_size": 512, "cg_damping": 1e-3, "gae_lambda": 0.98,
                           "n_critic_updates": 20}, reference="sb3_contrib"),
    "recurrent_ppo_cartpole": Case("RecurrentPPO", "CartPole-v1", 8, 4_096,
                                   {"n_steps": 32, "batch_size": 256, "n_epochs": 10,
                                    "policy_kwargs": {"lstm_hidden_size": 64, "enable_critic_lstm": True,
                                                      "net_arch": {"pi": [64], "vf": [64]}}},
                                   reference="sb3_contrib", policy="MlpLstmPolicy"),
    "maskable_ppo_invalid_actions": Case("MaskablePPO", "InvalidActionEnvDiscrete", 1, 8_192,
                                         {"n_steps": 256}, reference="sb3_contrib"),
}


def _train(package: str, case: Case, seed: int) -> float:
    from stable_baselines3.common.env_util import make_vec_env

    cls = getattr(importlib.import_module(package), case.algo)
    env = make_vec_env(ENV_FACTORIES.get(case.env_id, case.env_id), n_envs=case.n_envs, seed=seed)
    model = cls(case.policy, env=env, seed=seed, device="cpu", **copy.deepcopy(case.kwargs))  # SB3 may mutate them
    start = time.perf_counter()
    model.learn(case.steps)
    elapsed = time.perf_counter() - start
    env.close()
    return model.num_timesteps / elapsed


def run(case_names: list[str], reps: int) -> list[dict[str, Any]]:
    rows = []
    for name in case_names:
        case = CASES[name]
        ours, theirs, ratios = [], [], []
        for rep in range(reps):
            order = [("lit_sb3", ours), (case.reference, theirs)]
            if rep % 2:
                order.reverse()
            for package, sink in order:
                sink.append(_train(package, case, seed=rep))
            ratios.append(ours[-1] / theirs[-1])
            print(f"  {name} rep {rep}: lit_sb3 {ours[-1]:8.0f}  ref {theirs[-1]:8.0f}  ratio {ratios[-1]:.3f}",
                  flush=True)
        rows.append({"case": name, "lit_sb3": statistics.median(ours), "reference": statistics.median(theirs),
                     "ratio": statistics.median(ratios)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads for both sides (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = run(args.cases, args.reps)
    print(f"\n| case | lit_sb3 steps/s | SB3 steps/s | ratio (median of {args.reps}) |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row['case']} | {row['lit_sb3']:.0f} | {row['reference']:.0f} | {row['ratio']:.3f} |")


if __name__ == "__main__":
    main()
