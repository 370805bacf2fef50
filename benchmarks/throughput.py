"""Env-steps/s of lit_sb3 vs SB3 / sb3-contrib at identical hyperparameters, side by side in one process.

    python benchmarks/throughput.py                 # every case, 3 repetitions each
    python benchmarks/throughput.py --cases ppo_cartpole_1env a2c_cartpole_8env --reps 5
    python benchmarks/throughput.py --quick         # the workload shapes (SHAPES) on shorter budgets
    python benchmarks/throughput.py --cases shapes  # the workload shapes at full budget (group names: all, shapes)

Each repetition trains both implementations back to back (alternating which goes first), so machine noise hits both
alike; the table reports the median env-steps/s of each and the median of the per-repetition ratios
(lit_sb3 / SB3 >= 1.0 means at least as fast).

Cases with a Lightning setting (``*_bf16``: ``precision="bf16-mixed"``; ``*_ddp2``: two processes,
``strategy="ddp"``, via benchmarks/ddp_ppo.py) also train lit_sb3 in its default setting (fp32, one process) in each
repetition, and report that ratio too ("vs lit default").

The workload shapes (``SHAPES``) vary what the per-step cost of a Lightning loop meets: many small minibatches per
rollout, many envs, many updates per collection, large networks, image observations, ``train_freq`` in episodes.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import importlib
import inspect
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
from stable_baselines3.common.envs import FakeImageEnv


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


# envs that are not registered with gymnasium, by the name a case gives; FakeImage64: random 64x64 grey frames,
# 6 discrete actions, 10-step episodes (the smallest image NatureCNN takes comfortably)
ENV_FACTORIES = {
    "InvalidActionEnvDiscrete": functools.partial(InvalidActionEnvDiscrete, dim=20, n_invalid_actions=10),
    "FakeImage64": functools.partial(FakeImageEnv, screen_height=64, screen_width=64),
}

PPO_ZOO_CARTPOLE = {
    "n_steps": 32,
    "batch_size": 256,
    "gae_lambda": 0.8,
    "gamma": 0.98,
    "n_epochs": 20,
    "learning_rate": 1e-3,
}

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
    "ars_cartpole": Case(
        "ARS", "CartPole-v1", 1, 20_000, {"n_delta": 2}, reference="sb3_contrib", policy="LinearPolicy"
    ),
    # sb3-contrib off-policy: defaults (TQC: 2 critics x 25 quantiles; QRDQN: 200 quantiles); CrossQ with the RL Zoo's
    # Pendulum net ([256, 256]; its default [1024, 1024] critics run at ~12 steps/s)
    "tqc_pendulum": Case("TQC", "Pendulum-v1", 1, 1_000, reference="sb3_contrib"),
    "crossq_pendulum": Case(
        "CrossQ", "Pendulum-v1", 1, 1_000, {"policy_kwargs": {"net_arch": [256, 256]}}, reference="sb3_contrib"
    ),
    "qrdqn_cartpole": Case("QRDQN", "CartPole-v1", 1, 10_000, reference="sb3_contrib"),
    # sb3-contrib on-policy: the RL Zoo's CartPole TRPO; RecurrentPPO with its CartPoleNoVel net (10 epochs);
    # MaskablePPO on sb3-contrib's masked identity env (masks read from the env at every step)
    "trpo_cartpole": Case(
        "TRPO",
        "CartPole-v1",
        2,
        20_000,
        {"n_steps": 512, "batch_size": 512, "cg_damping": 1e-3, "gae_lambda": 0.98, "n_critic_updates": 20},
        reference="sb3_contrib",
    ),
    "recurrent_ppo_cartpole": Case(
        "RecurrentPPO",
        "CartPole-v1",
        8,
        4_096,
        {
            "n_steps": 32,
            "batch_size": 256,
            "n_epochs": 10,
            "policy_kwargs": {"lstm_hidden_size": 64, "enable_critic_lstm": True, "net_arch": {"pi": [64], "vf": [64]}},
        },
        reference="sb3_contrib",
        policy="MlpLstmPolicy",
    ),
    # bf16 autocast for the update (AVX512-BF16 CPUs); CrossQ with its default [1024, 1024] critics
    **{
        f"{name}_bf16": dataclasses.replace(case, precision="bf16-mixed")
        for name, case in {
            "sac_pendulum": Case("SAC", "Pendulum-v1", 1, 1_000),
            "td3_pendulum": Case("TD3", "Pendulum-v1", 1, 1_000),
            "tqc_pendulum": Case("TQC", "Pendulum-v1", 1, 1_000, reference="sb3_contrib"),
            "crossq_pendulum": Case("CrossQ", "Pendulum-v1", 1, 300, reference="sb3_contrib"),
            "ppo_cartpole_8env": Case("PPO", "CartPole-v1", 8, 20_000, PPO_ZOO_CARTPOLE),
        }.items()
    },
    # two processes (gloo) share the Zoo's 8 envs; the reference is SB3 in one process with all 8
    "ppo_cartpole_8env_ddp2": Case("PPO", "CartPole-v1", 8, 20_000, PPO_ZOO_CARTPOLE, devices=2, script=True),
    "maskable_ppo_invalid_actions": Case(
        "MaskablePPO", "InvalidActionEnvDiscrete", 1, 8_192, {"n_steps": 256}, reference="sb3_contrib"
    ),
}

# Workload shapes: where Lightning's per-step cost and lit_sb3's bookkeeping meet many small steps.
SHAPES: dict[str, Case] = {
    # many minibatches per rollout: 16 envs x 256 steps = 4,096 samples, 64 (128) minibatches per epoch, 4 epochs
    "ppo_16env_b64": Case("PPO", "CartPole-v1", 16, 12_288, {"n_steps": 256, "batch_size": 64, "n_epochs": 4}),
    "ppo_16env_b32": Case("PPO", "CartPole-v1", 16, 8_192, {"n_steps": 256, "batch_size": 32, "n_epochs": 4}),
    # many envs: one short rollout (5 steps) of 16 / 32 envs per update
    "a2c_16env": Case("A2C", "CartPole-v1", 16, 40_000),
    "a2c_32env": Case("A2C", "CartPole-v1", 32, 60_000),
    # many updates per collection: as many updates as env steps collected, in groups of 4
    "dqn_gs-1": Case(
        "DQN",
        "CartPole-v1",
        1,
        3_000,
        {"gradient_steps": -1, "train_freq": 4, "batch_size": 128, "policy_kwargs": {"net_arch": [256, 256]}},
    ),
    "qrdqn_gs4": Case(
        "QRDQN", "CartPole-v1", 1, 2_000, {"gradient_steps": 4, "train_freq": 4}, reference="sb3_contrib"
    ),
    "sac_gs4": Case("SAC", "Pendulum-v1", 1, 500, {"gradient_steps": 4, "train_freq": 4}),
    # large networks: CrossQ's default [1024, 1024] critics (~12 steps/s), TD3 with the RL Zoo's Pendulum net
    "crossq_1024": Case("CrossQ", "Pendulum-v1", 1, 220, reference="sb3_contrib"),
    "td3_400_300": Case(
        "TD3", "Pendulum-v1", 1, 1_000, {"learning_rate": 1e-3, "policy_kwargs": {"net_arch": [400, 300]}}
    ),
    # image observations (NatureCNN)
    "ppo_cnn": Case(
        "PPO", "FakeImage64", 4, 2_048, {"n_steps": 128, "batch_size": 64, "n_epochs": 4}, policy="CnnPolicy"
    ),
    "dqn_cnn": Case("DQN", "FakeImage64", 1, 1_000, {"buffer_size": 5_000, "learning_starts": 200}, policy="CnnPolicy"),
    # train_freq in episodes: one collection per episode, then as many updates as its env steps
    "sac_episode": Case("SAC", "Pendulum-v1", 1, 800, {"train_freq": (1, "episode"), "gradient_steps": -1}),
    "dqn_episode": Case("DQN", "CartPole-v1", 1, 4_000, {"train_freq": (1, "episode"), "gradient_steps": -1}),
}
CASES.update(SHAPES)
#: ``--quick``: each shape on about a third of its budget (off-policy: past learning_starts, updates still dominate)
QUICK_FRACTION = 0.35
GROUPS = {"all": list(CASES), "shapes": list(SHAPES)}


#: what a repetition is timed with: wall-clock seconds, or this process's CPU seconds (on a machine shared with other
#: work, CPU time measures the work done and not the waits for a core; multi-process cases always use the wall clock)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _train(package: str, case: Case, seed: int, clock: str = "wall") -> float:
    from stable_baselines3.common.env_util import make_vec_env

    if case.script and package == "lit_sb3":
        return _train_processes(case, seed)
    timer = CLOCKS[clock]
    cls = getattr(importlib.import_module(package), case.algo)
    env = make_vec_env(ENV_FACTORIES.get(case.env_id, case.env_id), n_envs=case.n_envs, seed=seed)
    model = cls(case.policy, env=env, seed=seed, device="cpu", **copy.deepcopy(case.kwargs))  # SB3 may mutate them
    start = timer()
    if case.precision == "32-true" or package != "lit_sb3":
        model.learn(case.steps)
    else:
        from lit_sb3 import RLEnvDataModule, RLTrainer

        trainer = RLTrainer(max_steps=case.steps, precision=case.precision, logger=False, enable_progress_bar=False)
        trainer.fit(model, datamodule=RLEnvDataModule(train_env=env))
    elapsed = timer() - start
    env.close()
    return model.num_timesteps / elapsed


def _train_processes(case: Case, seed: int) -> float:
    """Env steps/s of ``fit`` in ``case.devices`` processes (process start-up not counted)."""
    script = Path(__file__).with_name("ddp_ppo.py")
    command = [
        sys.executable,
        str(script),
        "--devices",
        str(case.devices),
        "--steps",
        str(case.steps),
        "--seed",
        str(seed),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(json.loads(result.stdout.strip().splitlines()[-1])["steps_per_s"])


def _quick(case: Case) -> Case:
    steps = max(int(case.steps * QUICK_FRACTION), case.kwargs.get("learning_starts", 100) + 100)
    return dataclasses.replace(case, steps=steps)


def run(case_names: list[str], reps: int, quick: bool = False, clock: str = "wall") -> list[dict[str, Any]]:
    rows = []
    for name in case_names:
        case = _quick(CASES[name]) if quick else CASES[name]
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
                speeds[side].append(_train(package, setting, seed=rep, clock=clock))
            line = f"  {name} rep {rep}: " + "  ".join(f"{side} {speeds[side][-1]:8.0f}" for side in sides)
            for side in ratios:
                if side in sides:
                    ratios[side].append(speeds["lit_sb3"][-1] / speeds[side][-1])
                    line += f"  vs {side} {ratios[side][-1]:.3f}"
            print(line, flush=True)
        rows.append(
            {
                "case": name,
                "lit_sb3": statistics.median(speeds["lit_sb3"]),
                "reference": statistics.median(speeds["reference"]),
                "ratio": statistics.median(ratios["reference"]),
                "ratios": ratios["reference"],
                "vs_default": statistics.median(ratios["lit_default"]) if ratios["lit_default"] else None,
            }
        )
    return rows


def _learning_starts(case: Case) -> int:
    """The steps an off-policy case collects before its first update (0 for on-policy algorithms)."""
    cls = getattr(importlib.import_module(case.reference), case.algo)
    default = inspect.signature(cls.__init__).parameters.get("learning_starts")
    return int(case.kwargs.get("learning_starts", default.default if default else 0))


def run_interleaved(case_names: list[str], chunks: int, quick: bool = False) -> list[dict[str, Any]]:
    """Both implementations train one model each in turns of a tenth of the case's budget (``learn(...,
    reset_num_timesteps=False)``), timed by CPU time: on a busy machine both see the same load, which whole-run
    alternation does not give. lit_sb3 pays its per-``learn`` trainer set-up in every turn; the first turn (at least
    ``learning_starts`` steps: warm-up without updates would compare set-up costs, not training) is not counted.
    Default-setting cases only."""
    from stable_baselines3.common.env_util import make_vec_env

    rows = []
    for name in case_names:
        case = _quick(CASES[name]) if quick else CASES[name]
        if not case.default_setting:
            print(f"  {name}: skipped (interleaving compares default settings only)")
            continue
        turn = max(case.steps // 10, 1)
        warm_up = max(turn, _learning_starts(case))
        models = {}
        for side, package in (("lit_sb3", "lit_sb3"), ("reference", case.reference)):
            env = make_vec_env(ENV_FACTORIES.get(case.env_id, case.env_id), n_envs=case.n_envs, seed=0)
            cls = getattr(importlib.import_module(package), case.algo)
            models[side] = cls(case.policy, env=env, seed=0, device="cpu", **copy.deepcopy(case.kwargs))
        speeds: dict[str, list[float]] = {side: [] for side in models}
        for chunk in range(chunks + 1):
            for side in list(models) if chunk % 2 == 0 else list(reversed(models)):
                model, before = models[side], models[side].num_timesteps
                start = time.process_time()
                model.learn(turn if chunk else warm_up, reset_num_timesteps=chunk == 0)
                if chunk:
                    speeds[side].append((model.num_timesteps - before) / (time.process_time() - start))
        ratios = [lit / ref for lit, ref in zip(speeds["lit_sb3"], speeds["reference"])]
        print(f"  {name}: turns of {turn} steps, ratios " + " ".join(f"{r:.2f}" for r in ratios), flush=True)
        rows.append(
            {
                "case": name,
                "lit_sb3": statistics.median(speeds["lit_sb3"]),
                "reference": statistics.median(speeds["reference"]),
                "ratio": statistics.median(ratios),
                "ratios": ratios,
                "vs_default": None,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases",
        nargs="*",
        default=None,
        choices=[*CASES, *GROUPS],
        help="case names or groups (all, shapes); default: all, or shapes with --quick",
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help=f"budgets x {QUICK_FRACTION} (default cases: shapes)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads for both sides (0: torch's default)")
    parser.add_argument(
        "--clock",
        choices=list(CLOCKS),
        default="wall",
        help="time repetitions by wall clock or by this process's CPU time (for a busy machine)",
    )
    parser.add_argument(
        "--interleave",
        type=int,
        default=0,
        metavar="TURNS",
        help="instead of whole runs: TURNS alternating turns of one model per side, CPU-timed",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.cases or (["shapes"] if args.quick else ["all"])
    cases = list(dict.fromkeys(case for name in names for case in GROUPS.get(name, [name])))
    if args.interleave:
        rows, clock, reps = run_interleaved(cases, args.interleave, quick=args.quick), "cpu", args.interleave
    else:
        rows, clock, reps = run(cases, args.reps, quick=args.quick, clock=args.clock), args.clock, args.reps
    budgets = f" (budgets x {QUICK_FRACTION})" if args.quick else ""
    print(f"\nenv steps per {clock}-clock second{budgets}{' (interleaved turns)' if args.interleave else ''}")
    print(
        f"| case | lit_sb3 steps/s | SB3 steps/s | ratio (median of {reps}) | min-max | per repetition "
        f"| vs lit default |"
    )
    print("|---|---:|---:|---:|---:|---|---:|")
    for row in rows:
        versus = "" if row["vs_default"] is None else f"{row['vs_default']:.3f}"
        spread = f"{min(row['ratios']):.2f}-{max(row['ratios']):.2f}"
        each = " ".join(f"{r:.2f}" for r in row["ratios"])
        print(
            f"| {row['case']} | {row['lit_sb3']:.0f} | {row['reference']:.0f} | {row['ratio']:.3f} | {spread} "
            f"| {each} | {versus} |"
        )


if __name__ == "__main__":
    main()
