"""Dev-time tool: write conf/algo_env/<algo>_<Env>.yaml from the RL Zoo's hyperparameter files.

    python tools/port_zoo_hparams.py /path/to/zoo_hparams conf/algo_env

The Zoo's strings become config nodes: ``lin_<x>`` -> LinearSchedule(x, 0, 1); ``policy_kwargs``/``normalize``
``dict(...)`` strings are parsed with ``ast`` (never evaluated); ``nn.<Act>`` -> a ``hydra.utils.get_class`` node;
``noise_type``/``noise_std`` -> an ``action_noise`` node completed with the action size at run time.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import yaml

ALGOS = ("ppo", "a2c", "sac", "td3", "ddpg", "dqn", "ars", "tqc", "qrdqn", "crossq", "trpo", "ppo_lstm")
# the policy conf/algo/<algo>.yaml sets (a Zoo entry naming another one gets a `policy` line)
DEFAULT_POLICY = {"ars": "LinearPolicy", "ppo_lstm": "MlpLstmPolicy"}
# our env group name -> the Zoo's key (MuJoCo: the Zoo tunes -v4, we run -v5)
ENVS = {
    "CartPole": "CartPole-v1", "Acrobot": "Acrobot-v1", "MountainCar": "MountainCar-v0",
    "MountainCarContinuous": "MountainCarContinuous-v0", "Pendulum": "Pendulum-v1",
    "CartPoleNoVel": "CartPoleNoVel-v1", "PendulumNoVel": "PendulumNoVel-v1",
    **{name: f"{name}-v4" for name in ("HalfCheetah", "Hopper", "Walker2d", "Ant", "Humanoid", "Swimmer", "Reacher",
                                       "InvertedPendulum", "InvertedDoublePendulum")},
}
CLASS_PATHS = {"nn": "torch.nn", "th.nn": "torch.nn", "torch.nn": "torch.nn"}
NOISE = {"normal": "lit_bench.noise.normal", "ornstein-uhlenbeck": "lit_bench.noise.ornstein_uhlenbeck"}
SKIP = {"n_timesteps", "n_envs", "normalize", "policy", "noise_type", "noise_std", "env_wrapper", "frame_stack"}


def node_of(expr: ast.expr) -> Any:
    """A ``dict(...)`` expression as plain YAML data, refusing anything that is not a literal or a class."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict":
        return {kw.arg: node_of(kw.value) for kw in expr.keywords}
    if isinstance(expr, ast.Dict):
        return {node_of(k): node_of(v) for k, v in zip(expr.keys, expr.values)}
    if isinstance(expr, (ast.List, ast.Tuple)):
        return [node_of(e) for e in expr.elts]
    if isinstance(expr, ast.Attribute):
        module = ast.unparse(expr.value)
        return {"_target_": "hydra.utils.get_class", "path": f"{CLASS_PATHS[module]}.{expr.attr}"}
    return ast.literal_eval(expr)


def value_of(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("lin_"):
        return {"_target_": "stable_baselines3.common.utils.LinearSchedule", "start": float(value[4:]), "end": 0.0,
                "end_fraction": 1.0}
    if isinstance(value, str) and value.strip().startswith(("dict(", "{")):
        return node_of(ast.parse(value.strip(), mode="eval").body)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return int(value)
    return value


def port(algo: str, env: str, key: str, entry: dict[str, Any], default_policy: str) -> str:
    algo_node = {k: value_of(v) for k, v in entry.items() if k not in SKIP}
    if entry.get("policy", default_policy) != default_policy:
        algo_node["policy"] = entry["policy"]
    if "noise_type" in entry:
        algo_node["action_noise"] = {"_target_": NOISE[entry["noise_type"]], "_partial_": True,
                                     "std": float(entry["noise_std"])}
    doc: dict[str, Any] = {}
    if "n_timesteps" in entry:
        doc["budget"] = int(float(entry["n_timesteps"]))
    env_node: dict[str, Any] = {}
    if "n_envs" in entry:
        env_node["n_envs"] = int(entry["n_envs"])
    if "normalize" in entry:
        norm = value_of(entry["normalize"])
        env_node["normalize"] = norm if isinstance(norm, dict) else {"norm_obs": True, "norm_reward": True}
    if env_node:
        doc["env"] = env_node
    if algo_node:
        doc["algo"] = algo_node
    note = " (tuned on -v4; this harness runs -v5)" if key.endswith("-v4") else ""
    header = (f"# @package _global_\n# {algo.upper()} on {key}{note}: ported from rl-baselines3-zoo "
              f"hyperparams/{algo}.yml @ 22e3ff2, key {key!r}.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def main(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for algo in ALGOS:
        entries = yaml.load((src / f"{algo}.yml").read_text(), Loader=yaml.SafeLoader)  # merge keys resolved
        for env, key in ENVS.items():
            if key in entries:
                policy = DEFAULT_POLICY.get(algo, "MlpPolicy")
                (dst / f"{algo}_{env}.yaml").write_text(port(algo, env, key, entries[key], policy))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
