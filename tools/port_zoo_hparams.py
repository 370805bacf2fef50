"""Dev-time tool: write conf/algo_env/<algo>_<Env>.yaml from the RL Zoo's hyperparameter files.

    python tools/port_zoo_hparams.py /path/to/zoo_hparams conf/algo_env

The Zoo's strings become config nodes: ``lin_<x>`` -> LinearSchedule(x, 0, 1); ``policy_kwargs``/``normalize``
``dict(...)`` strings are parsed with ``ast`` (never evaluated); ``nn.<Act>`` and known class names -> a
``hydra.utils.get_class`` node; ``noise_type``/``noise_std`` -> an ``action_noise`` node completed with the action
size at run time; ``env_wrapper`` -> ``env.wrappers`` nodes and ``frame_stack`` -> a VecFrameStack in
``env.vec_wrappers``. An entry with a wrapper this harness does not have (e.g. the Zoo's autoencoder for SAC on
CarRacing) is not ported.
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
    "CartPole": "CartPole-v1",
    "Acrobot": "Acrobot-v1",
    "MountainCar": "MountainCar-v0",
    "MountainCarContinuous": "MountainCarContinuous-v0",
    "Pendulum": "Pendulum-v1",
    "CartPoleNoVel": "CartPoleNoVel-v1",
    "PendulumNoVel": "PendulumNoVel-v1",
    **{
        name: f"{name}-v4"
        for name in (
            "HalfCheetah",
            "Hopper",
            "Walker2d",
            "Ant",
            "Humanoid",
            "Swimmer",
            "Reacher",
            "InvertedPendulum",
            "InvertedDoublePendulum",
        )
    },
    "MountainCarContinuousNoVel": "MountainCarContinuousNoVel-v0",
    # one Zoo entry for every Atari game
    **{
        game: "atari"
        for game in (
            "Asteroids",
            "BeamRider",
            "Breakout",
            "Enduro",
            "MsPacman",
            "Pong",
            "Qbert",
            "RoadRunner",
            "Seaquest",
            "SpaceInvaders",
        )
    },
    "LunarLander": "LunarLander-v3",
    "LunarLanderContinuous": "LunarLanderContinuous-v3",
    "BipedalWalker": "BipedalWalker-v3",
    "BipedalWalkerHardcore": "BipedalWalkerHardcore-v3",
    "CarRacing": "CarRacing-v3",
    **{
        f"MiniGrid-{name}": f"MiniGrid-{name}-v0"
        for name in (
            "DoorKey-5x5",
            "Empty-Random-5x5",
            "FourRooms",
            "GoToDoor-5x5",
            "KeyCorridorS3R1",
            "LockedRoom",
            "MultiRoom-N4-S5",
            "ObstructedMaze-2Dlh",
            "PutNear-6x6-N2",
            "RedBlueDoors-6x6",
            "Unlock",
        )
    },
    **{f"{name}BulletEnv": f"{name}BulletEnv-v0" for name in ("Ant", "HalfCheetah", "Hopper", "Reacher", "Walker2D")},
    **{f"Fetch{task}": f"Fetch{task}-v1" for task in ("Reach", "Push", "Slide", "PickAndPlace")},
    **{f"Panda{task}": f"Panda{task}-v1" for task in ("Reach", "Push", "Slide", "PickAndPlace", "Stack")},
    "parking": "parking-v0",
}
CLASS_PATHS = {"nn": "torch.nn", "th.nn": "torch.nn", "torch.nn": "torch.nn"}
# bare class names the Zoo's files use (its own imports)
CLASS_NAMES = {
    "RMSpropTFLike": "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike",
    "HerReplayBuffer": "lit_sb3.HerReplayBuffer",
}
# the Zoo's wrapper classes -> ours (the Zoo's resize wrapper only turns the YAML list into a tuple, as ours does)
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
WRAPPERS = {
    ATARI_WRAPPER: ATARI_WRAPPER,
    "minigrid.wrappers.FlatObsWrapper": "minigrid.wrappers.FlatObsWrapper",
    "rl_zoo3.wrappers.FrameSkip": "lit_bench.wrappers.FrameSkip",
    "rl_zoo3.wrappers.YAMLCompatResizeObservation": "lit_bench.wrappers.ResizeObservation",
    "gymnasium.wrappers.transform_observation.GrayscaleObservation": "gymnasium.wrappers.GrayscaleObservation",
}
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
    if isinstance(expr, ast.Name) and expr.id in CLASS_NAMES:
        return class_node(expr.id)
    return ast.literal_eval(expr)


def class_node(name: str) -> dict[str, str]:
    return {"_target_": "hydra.utils.get_class", "path": CLASS_NAMES[name]}


def wrapper_nodes(spec: Any) -> list[dict[str, Any]] | None:
    """The Zoo's ``env_wrapper`` (a path, or a list of paths / ``{path: kwargs}``) as wrapper nodes; None when one
    of them has no counterpart here."""
    nodes = []
    for item in spec if isinstance(spec, list) else [spec]:
        path, kwargs = next(iter(item.items())) if isinstance(item, dict) else (item, {})
        if path not in WRAPPERS:
            return None
        nodes.append({"_target_": WRAPPERS[path], "_partial_": True, **(kwargs or {})})
    return nodes


def value_of(value: Any) -> Any:
    if isinstance(value, str) and value in CLASS_NAMES:
        return class_node(value)
    if isinstance(value, str) and value.startswith("lin_"):
        return {
            "_target_": "stable_baselines3.common.utils.LinearSchedule",
            "start": float(value[4:]),
            "end": 0.0,
            "end_fraction": 1.0,
        }
    if isinstance(value, str) and value.strip().startswith(("dict(", "{")):
        return node_of(ast.parse(value.strip(), mode="eval").body)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return int(value)
    return value


def version_note(key: str, env_id: str) -> str:
    if key == "atari":
        return f" (the Zoo's entry for every Atari game; this harness runs {env_id})"
    if key.endswith("-v4") and env_id.endswith("-v5"):
        return " (tuned on -v4; this harness runs -v5)"
    return f" (tuned on {key}; this harness runs {env_id})" if key != env_id else ""


def port(algo: str, env: str, key: str, entry: dict[str, Any], default_policy: str, env_id: str) -> str | None:
    algo_node = {k: value_of(v) for k, v in entry.items() if k not in SKIP}
    if entry.get("policy", default_policy) != default_policy:
        algo_node["policy"] = entry["policy"]
    if "noise_type" in entry:
        algo_node["action_noise"] = {
            "_target_": NOISE[entry["noise_type"]],
            "_partial_": True,
            "std": float(entry["noise_std"]),
        }
    doc: dict[str, Any] = {}
    if "n_timesteps" in entry:
        doc["budget"] = int(float(entry["n_timesteps"]))
    env_node: dict[str, Any] = {}
    if "n_envs" in entry:
        env_node["n_envs"] = int(entry["n_envs"])
    if "normalize" in entry:
        norm = value_of(entry["normalize"])
        env_node["normalize"] = norm if isinstance(norm, dict) else {"norm_obs": True, "norm_reward": True}
    if "env_wrapper" in entry:
        wrappers = wrapper_nodes(entry["env_wrapper"])
        if wrappers is None:
            return None
        env_node["wrappers"] = wrappers
    if "frame_stack" in entry:
        env_node["vec_wrappers"] = [
            {
                "_target_": "stable_baselines3.common.vec_env.VecFrameStack",
                "_partial_": True,
                "n_stack": int(entry["frame_stack"]),
            }
        ]
    if env_node:
        doc["env"] = env_node
    if algo_node:
        doc["algo"] = algo_node
    note = version_note(key, env_id)
    header = (
        f"# @package _global_\n# {algo.upper()} on {key}{note}: ported from rl-baselines3-zoo "
        f"hyperparams/{algo}.yml @ 22e3ff2, key {key!r}.\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def main(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for algo in ALGOS:
        entries = yaml.load((src / f"{algo}.yml").read_text(), Loader=yaml.SafeLoader)  # merge keys resolved
        for env, key in ENVS.items():
            if key in entries:
                policy = DEFAULT_POLICY.get(algo, "MlpPolicy")
                env_id = yaml.safe_load((dst.parent / "env" / f"{env}.yaml").read_text())["id"]
                text = port(algo, env, key, entries[key], policy, env_id)
                if text is None:
                    print(f"not ported: {algo} {key} (env_wrapper {entries[key]['env_wrapper']})")
                    continue
                (dst / f"{algo}_{env}.yaml").write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
