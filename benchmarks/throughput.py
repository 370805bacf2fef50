"""Env-steps/s of lit_sb3 vs SB3 / sb3-contrib at identical hyperparameters, side by side in one process.

    python benchmarks/throughput.py                 # every case, 3 repetitions each
    python benchmarks/throughput.py --cases ppo_cartpole_1env a2c_cartpole_8env --reps 5

Each repetition trains both implementations back to back (alternating which goes first), so machine noise hits both
alike; the table reports the median env-steps/s of each and the median of the per-repetition ratios
(lit_sb3 / SB3 >= 1.0 means at least as fast).

Cases with a Lightning setting (``*_bf16``: ``precision="bf16-mixed"``; ``*_ddp2``: two processes,
``strategy="ddp"``, via benchmarks/ddp_ppo.py) also train lit_sb3 in its default setting (fp32, one process) in each
repetition, and report that ratio too ("vs lit default").
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import importlib
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
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
    precision: str = "32-true"  # lit_sb3 only
    devices: int = 1  # lit_sb3 only: processes of a benchmarks/ddp_ppo.py run (the Zoo's PPO CartPole setting)
    script: bool = False  # lit_sb3 runs benchmarks/ddp_ppo.py in `devices` processes (its default setting: in one)

    @property
    def default_setting(self) -> bool:
        return self.precision == "32-true" and self.devices == 1


# envs that are not registered with gymnasium, by the name a case gives
ENV_FACTORIES = {"InvalidActionEnvDiscrete": functools.partial(InvalidActionEnvDiscrete, dim=20, n_invalid_actions=10)}

PPO_ZOO_CARTPOLE = {"n_steps": 32, "batch_size": 256, "gae_lambda": 0.8, "gamma": 0.98, "n_epochs": 20,
                    "learning_rate": 1e-3}

CASES: dict[str, Case] = {
    "ppo_cartpole_1env": Case("PPO", "CartPole-v1", 1, 20_000),
    "ppo_cartpole_8env": Case("PPO", "CartPole-v1", 8, 20_000, PPO_ZOO_CARTPOLE),
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
    # bf16 autocast for the update (AVX512-BF16 CPUs); CrossQ with its default [1024, 1024] critics
    **{f"{name}_bf16": dataclasses.replace(case, precision="bf16-mixed") for name, case in {
        "sac_pendulum": Case("SAC", "Pendulum-v1", 1, 1_000),
        "td3_pendulum": Case("TD3", "Pendulum-v1", 1, 1_000),
        "tqc_pendulum": Case("TQC", "Pendulum-v1", 1, 1_000, reference="sb3_contrib"),
        "crossq_pendulum": Case("CrossQ", "Pendulum-v1", 1, 300, reference="sb3_contrib"),
        "ppo_cartpole_8env": Case("PPO", "CartPole-v1", 8, 20_000, PPO_ZOO_CARTPOLE),
    }.items()},
    # two processes (gloo) share the Zoo's 8 envs; the reference is SB3 in one process with all 8
    "ppo_cartpole_8env_ddp2": Case("PPO", "CartPole-v1", 8, 20_000, PPO_ZOO_CARTPOLE, devices=2, script=True),
    "maskable_ppo_invalid_actions": Case("MaskablePPO", "InvalidActionEnvDiscrete", 1, 8_192,
                                         {"n_steps": 256}, reference="sb3_contrib"),
}


def _train(package: str, case: Case, seed: int) -> float:
    from stable_baselines3.common.env_util import make_vec_env

    if case.script and package == "lit_sb3":
        return _train_processes(case, seed)
    cls = getattr(importlib.import_module(package), case.algo)
    env = make_vec_env(ENV_FACTORIES.get(case.env_id, case.env_id), n_envs=case.n_envs, seed=seed)
    model = cls(case.policy, env=env, seed=seed, device="cpu", **copy.deepcopy(case.kwargs))  # SB3 may mutate them
    start = time.perf_counter()
    if case.precision == "32-true" or package != "lit_sb3":
        model.learn(case.steps)
    else:
        from lit_sb3 import RLEnvDataModule, RLTrainer

        trainer = RLTrainer(max_steps=case.steps, precision=case.precision, logger=False, enable_progress_bar=False)
        trainer.fit(model, datamodule=RLEnvDataModule(train_env=env))
    elapsed = time.perf_counter() - start
    env.close()
    return model.num_timesteps / elapsed


def _train_processes(case: Case, seed: int) -> float:
    """Env steps/s of ``fit`` in ``case.devices`` processes (process start-up not counted)."""
    script = Path(__file__).with_name("ddp_ppo.py")
    command = [sys.executable, str(script), "--devices", str(case.devices), "--steps", str(case.steps),
               "--seed", str(seed)]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(json.loads(result.stdout.strip().splitlines()[-1])["steps_per_s"])


def run(case_names: list[str], reps: int) -> list[dict[str, Any]]:
    rows = []
    for name in case_names:
        case = CASES[name]
        default = dataclasses.replace(case, precision="32-true", devices=1)
        sides = {"lit_sb3": ("lit_sb3", case), "reference": (case.reference, case)}
        if not case.default_setting:
            sides["lit_default"] = ("lit_sb3", default)
        speeds: dict[str, list[float]] = {side: [] for side in sides}
        ratios: dict[str, list[float]] = {"reference": [], "lit_default": []}
        for rep in range(reps):
            order = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for side in order:
                package, setting = sides[side]
                speeds[side].append(_train(package, setting, seed=rep))
            line = f"  {name} rep {rep}: " + "  ".join(f"{side} {speeds[side][-1]:8.0f}" for side in sides)
            for side in ratios:
                if side in sides:
                    ratios[side].append(speeds["lit_sb3"][-1] / speeds[side][-1])
                    line += f"  vs {side} {ratios[side][-1]:.3f}"
            print(line, flush=True)
        rows.append({"case": name, "lit_sb3": statistics.median(speeds["lit_sb3"]),
                     "reference": statistics.median(speeds["reference"]),
                     "ratio": statistics.median(ratios["reference"]),
                     "vs_default": statistics.median(ratios["lit_default"]) if ratios["lit_default"] else None})
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
    print(f"\n| case | lit_sb3 steps/s | SB3 steps/s | ratio (median of {args.reps}) | vs lit default |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        versus = "" if row["vs_default"] is None else f"{row['vs_default']:.3f}"
        print(f"| {row['case']} | {row['lit_sb3']:.0f} | {row['reference']:.0f} | {row['ratio']:.3f} | {versus} |")


if __name__ == "__main__":
    main()
