"""Env config -> the training and evaluation VecEnvs of a run (same for both backends); the env the config names
(its package, its id or factory) is checked and found by ``lit_bench.config.checks.env_source``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.vec_env import VecEnv, VecNormalize, VecTransposeImage

from lit_bench.config.checks import env_source, require_package
from lit_sb3.common.seeding import EVAL_SEED_OFFSET


def _wrapper_class(env_cfg: DictConfig) -> Callable[[gym.Env], gym.Env] | None:
    wrappers = [instantiate(node) for node in env_cfg.get("wrappers") or []]
    if not wrappers:
        return None

    def wrap(env: gym.Env) -> gym.Env:
        for wrapper in wrappers:
            env = wrapper(env)
        return env

    return wrap


def wrap_vec_env(env: VecEnv, env_cfg: DictConfig) -> VecEnv:
    """The ``vec_wrappers`` nodes (e.g. VecFrameStack), then channel-first images as SB3 does automatically."""
    for node in env_cfg.get("vec_wrappers") or []:
        env = instantiate(node)(env)
    space = env.observation_space
    if is_image_space(space) and not is_image_space_channels_first(space):  # type: ignore[arg-type]
        env = VecTransposeImage(env)
    return env


def normalize_kwargs(env_cfg: DictConfig, gamma: float | None) -> dict[str, Any] | None:
    """VecNormalize arguments; the return discount follows the algorithm's gamma unless set (as the RL Zoo does)."""
    node = env_cfg.get("normalize")
    if node is None or node is False:
        return None
    kwargs: dict[str, Any] = {} if node is True else dict(OmegaConf.to_container(node, resolve=True))  # type: ignore[arg-type]
    if gamma is not None:
        kwargs.setdefault("gamma", gamma)
    return kwargs


def make_envs(
    env_cfg: DictConfig,
    env_name: str,
    seed: int,
    gamma: float | None,
    render_mode: str | None = None,
    monitor_dir: str | None = None,
    append_monitor: bool = False,
    outer: Callable[[gym.Env], gym.Env] | None = None,
) -> tuple[VecEnv, VecEnv]:
    """Training VecEnv (``n_envs`` copies, VecNormalize when configured) and a one-env evaluation VecEnv.

    Both have the same wrappers; SB3's ``Monitor`` sits innermost (``make_vec_env``), so evaluation scores are
    whole episodes of the unwrapped env with raw rewards (Atari: full games over all lives, unclipped), as in the RL
    Zoo. The evaluation env normalizes observations with the training statistics (synced before each evaluation).
    VecNormalize is the outermost wrapper (the RL Zoo puts it below the frame stack; with ``norm_obs: false``, as
    its image envs use, the order makes no difference). ``render_mode`` (e.g. "rgb_array" for videos) applies to the
    evaluation env only. ``monitor_dir``: the training envs' Monitors write SB3's ``<i>.monitor.csv`` there
    (``append_monitor``: to the end of the files a resumed run kept). ``outer`` wraps every env copy last (the run's
    env watchdog, ``lit_bench.run.watchdog``).
    """
    source = env_source(env_cfg, env_name)
    wrap = _wrapper_class(env_cfg)
    if outer is not None:
        inner, wrap = wrap, (lambda env: outer(inner(env) if inner else env))
    env_kwargs: dict[str, Any] = dict(env_cfg.get("kwargs") or {})
    train_vec = make_vec_env(
        source,
        n_envs=int(env_cfg.n_envs),
        seed=seed,
        env_kwargs=env_kwargs,
        wrapper_class=wrap,
        monitor_dir=monitor_dir or None,
        monitor_kwargs={"override_existing": not append_monitor} if monitor_dir else None,
    )
    if render_mode is not None:
        env_kwargs = {**env_kwargs, "render_mode": render_mode}
    evaluation_vec = make_vec_env(
        source, n_envs=1, seed=seed + EVAL_SEED_OFFSET, env_kwargs=env_kwargs, wrapper_class=wrap
    )
    return _outer_wrappers(train_vec, evaluation_vec, env_cfg, gamma)


def _outer_wrappers(
    train_vec: VecEnv, evaluation_vec: VecEnv, env_cfg: DictConfig, gamma: float | None
) -> tuple[VecEnv, VecEnv]:
    """The training and evaluation VecEnvs with the config's VecEnv wrappers, then VecNormalize (``make_envs``)."""
    train = wrap_vec_env(train_vec, env_cfg)
    evaluation = wrap_vec_env(evaluation_vec, env_cfg)
    norm = normalize_kwargs(env_cfg, gamma)
    if norm is not None:
        train = VecNormalize(train, **norm)
        evaluation = VecNormalize(evaluation, **{**norm, "training": False, "norm_reward": False})
    return train, evaluation


def batched_classic_id(env_cfg: DictConfig) -> str | None:
    """The env id when the config's env is a plain classic-control env that ``lit_sb3.seeds.classic_envs`` steps as
    arrays, exactly as ``make_vec_env`` would (a registered id of its table, default kwargs, no gymnasium wrappers);
    None otherwise."""
    from lit_sb3.seeds.classic_envs import is_classic

    env_id = env_cfg.get("id")
    plain = env_cfg.get("make") is None and not env_cfg.get("kwargs") and not env_cfg.get("wrappers")
    return str(env_id) if plain and env_id and is_classic(str(env_id)) else None


def make_seed_envs(
    env_cfg: DictConfig,
    env_name: str,
    seeds: list[int],
    gamma: float | None,
    monitor_dirs: list[str],
    append_monitor: bool = False,
    outer: Callable[[gym.Env], gym.Env] | None = None,
) -> list[tuple[VecEnv, VecEnv]]:
    """``make_envs`` for each of a seed group's seeds (``monitor_dirs[i]``: seed i's monitor files). A plain
    classic-control env without ``outer`` (``batched_classic_id``) gives the same envs as arrays
    (``lit_sb3.seeds.classic_envs``): every seed's training envs in one bank, every seed's evaluation env in another,
    so that the group steps each bank in one call."""
    env_id = batched_classic_id(env_cfg) if outer is None else None
    if env_id is None:
        return [
            make_envs(env_cfg, env_name, seed, gamma, monitor_dir=d, append_monitor=append_monitor, outer=outer)
            for seed, d in zip(seeds, monitor_dirs, strict=True)
        ]
    from lit_sb3.seeds.classic_envs import classic_vec_envs

    require_package(env_cfg, env_name)
    n_envs = int(env_cfg.n_envs)
    trains = classic_vec_envs(
        env_id, n_envs, len(seeds), seeds=seeds, monitor_dirs=monitor_dirs, override_existing=not append_monitor
    )
    evaluations = classic_vec_envs(env_id, 1, len(seeds), seeds=[seed + EVAL_SEED_OFFSET for seed in seeds])
    return [_outer_wrappers(t, e, env_cfg, gamma) for t, e in zip(trains, evaluations)]
