"""Every shipped off-policy algo x env combination (algo_env presets included) checkpoints its replay buffer and
loads it back with ``weights_only=True``: HER's Dict buffer with its info dicts, n-envs buffers, VecNormalize envs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning
import numpy as np
import pytest
import torch

from lit_bench.config.checks import ConfigError, check_before_training, check_spaces
from lit_bench.config.envs import make_envs
from lit_sb3.common.off_policy import OffPolicyAlgorithm
from tests.lit_bench.helpers import ALGOS, CORE_ENVS, compose_run, harness_kwargs, lit_class_or_skip

pytestmark = pytest.mark.harness

OFF_POLICY = ("crossq", "ddpg", "dqn", "qrdqn", "sac", "td3", "tqc")
ENV_CACHE: dict[tuple, Any] = {}


def fill(model: OffPolicyAlgorithm, env: Any, steps: int) -> None:
    """Random transitions straight into the buffer (collection itself is tested elsewhere)."""
    obs = env.reset()
    for _ in range(steps):
        actions = np.array([env.action_space.sample() for _ in range(env.num_envs)])
        new_obs, rewards, dones, infos = env.step(actions)
        model.replay_buffer.add(obs, new_obs, actions, rewards, dones, infos)
        obs = new_obs


def filled(value: Any, size: int) -> Any:
    if isinstance(value, dict):
        return {k: filled(v, size) for k, v in value.items()}
    return value[:61] if value.shape[:1] == (size,) else value


def same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return a.shape == b.shape and all(same(x, y) for x, y in zip(a.ravel(), b.ravel()))
    return bool(np.array_equal(a, b))


DEFAULT_RUN = ("dqn", "sac")  # HER's Dict buffer, and a Box one; the others (same buffer code) in the slow run


@pytest.mark.parametrize(
    "algo", [a if a in DEFAULT_RUN else pytest.param(a, marks=pytest.mark.slow) for a in ALGOS if a in OFF_POLICY]
)
def test_every_off_policy_pair_checkpoints_its_replay_buffer(algo: str, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    checked = 0
    for env_name in CORE_ENVS:  # the families with an extra: test_envs.py (HER robotics buffers too)
        cfg = compose_run(f"algo={algo}", f"env={env_name}")
        cls = lit_class_or_skip(cfg)
        try:
            check_before_training(cfg)
        except ConfigError:
            continue  # an incompatible pair: its one-line error is tested in test_bench
        key = (env_name, int(cfg.env.n_envs), str(cfg.env.normalize))
        if key not in ENV_CACHE:
            ENV_CACHE[key] = make_envs(cfg.env, env_name, 0, cfg.algo.get("gamma"))[0]
        env = ENV_CACHE[key]
        try:
            check_spaces(cls, algo, env_name, cfg.algo.get("policy"), env)  # the harness's refusal once the env exists
        except ConfigError:
            continue
        model = cls(**harness_kwargs(cfg, cls, env, "lit"), seed=0)
        model.check_env(env)
        model.build(env.observation_space, env.action_space)
        model._setup_buffers(env)
        fill(model, env, 60)
        checkpoint: dict[str, Any] = {
            "state_dict": model.state_dict(),
            "hyper_parameters": dict(model.hparams),
            "pytorch-lightning_version": lightning.__version__,
        }  # what Trainer writes
        model.on_save_checkpoint(checkpoint)
        torch.save(checkpoint, tmp_path / "model.ckpt")
        loaded = cls.load_from_checkpoint(tmp_path / "model.ckpt", map_location="cpu")
        loaded._setup_buffers(env)
        size = model.replay_buffer.buffer_size
        ours, theirs = vars(model.replay_buffer), vars(loaded.replay_buffer)
        assert (ours["pos"], ours["full"]) == (theirs["pos"], theirs["full"]) == (60, False)
        for name, value in ours.items():
            if name == "infos" and not getattr(model.replay_buffer, "copy_info_dict", False):
                continue  # all empty unless HER copies them
            arrays = isinstance(value, dict) and all(isinstance(v, np.ndarray) for v in value.values())
            if isinstance(value, np.ndarray) or arrays:  # the filled part (the rest is zeros, never touched)
                assert same(filled(value, size), filled(theirs[name], size)), f"{algo}/{env_name}: {name} differs"
        checked += 1
    assert checked > 0
