"""Shared helpers of the lit_sb3 tests: the RL Zoo settings ported in ``conf/algo_env/``, learning runs evaluated
against a reward threshold, and off-policy parity pairs (the reference model and ours: same weights, one batch)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import torch
import yaml
from hydra.utils import instantiate
from omegaconf import OmegaConf
from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

import lit_sb3
from lit_sb3.common.seeding import EVAL_SEED_OFFSET

ALGO_ENV = Path(__file__).resolve().parents[2] / "conf" / "algo_env"


class ZooSettings(NamedTuple):
    hyperparameters: dict[str, Any]  # keyword arguments for ``best_eval_reward`` (incl. n_envs / normalize if set)
    budget: int  # the Zoo's env-step budget


def zoo_settings(algo: str, env: str, n_actions: int | None = None) -> ZooSettings:
    """The RL Zoo's tuned settings as ``conf/algo_env/<algo>_<env>.yaml`` ports them (one source for tests and harness).

    Config nodes are instantiated (schedules, classes); a partial action noise is completed with ``n_actions``.
    """
    node = yaml.safe_load((ALGO_ENV / f"{algo}_{env}.yaml").read_text())
    hyperparameters = instantiate(OmegaConf.create(node.get("algo", {})), _convert_="all")
    if "action_noise" in hyperparameters:
        hyperparameters["action_noise"] = hyperparameters["action_noise"](n_actions=n_actions)
    env_node = node.get("env", {})
    if "n_envs" in env_node:
        hyperparameters["n_envs"] = env_node["n_envs"]
    if env_node.get("normalize"):
        hyperparameters["normalize"] = env_node["normalize"]
    return ZooSettings(dict(hyperparameters), int(node["budget"]))


def best_eval_reward(
    algo: type,
    env_id: str | Callable[[], gym.Env],
    *,
    budget: int,
    threshold: float,
    seed: int,
    n_envs: int = 1,
    eval_every: int = 5_000,
    n_eval_episodes: int = 10,
    policy: str = "MlpPolicy",
    wrapper_class: Callable[[gym.Env], gym.Env] | None = None,
    normalize: bool | dict[str, Any] = False,
    evaluator_class: type[EvalCallback] = EvalCallback,
    **hyperparameters: Any,
) -> float:
    """Best mean return of ``n_eval_episodes`` deterministic episodes, evaluated every ``eval_every`` env steps.

    ``env_id`` may be a factory; ``normalize`` (True or VecNormalize's keyword arguments) wraps both envs in
    VecNormalize (the evaluation env uses the training statistics and raw rewards, as the RL Zoo does);
    ``evaluator_class`` e.g. sb3-contrib's masked one.
    """
    train_env = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrapper_class)
    eval_env = make_vec_env(env_id, n_envs=1, seed=seed + EVAL_SEED_OFFSET, wrapper_class=wrapper_class)
    if normalize:
        train_env = VecNormalize(train_env, **(normalize if isinstance(normalize, dict) else {}))
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
    evaluator = evaluator_class(
        eval_env,
        eval_freq=max(eval_every // n_envs, 1),
        n_eval_episodes=n_eval_episodes,
        deterministic=True,
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=threshold),
        verbose=0,
    )
    model = algo(policy, env=train_env, seed=seed, device="cpu", **hyperparameters)
    model.learn(budget, callback=evaluator)
    train_env.close()
    eval_env.close()
    return float(evaluator.best_mean_reward)


# ---------------------------------------------------------------------- off-policy parity

TOL = 1e-6


def fixed_batch(model, batch_size: int = 64, seed: int = 0) -> ReplayBufferSamples:
    """A replay batch in the buffer's format (Box actions scaled to [-1, 1], some terminals)."""
    rng = np.random.default_rng(seed)
    obs_space, act_space = model.observation_space, model.action_space
    obs = np.stack([obs_space.sample() for _ in range(batch_size)]).astype(np.float32)
    next_obs = np.stack([obs_space.sample() for _ in range(batch_size)]).astype(np.float32)
    if isinstance(act_space, sb3.common.policies.spaces.Box):
        actions = rng.uniform(-1, 1, size=(batch_size, *act_space.shape)).astype(np.float32)
    else:
        actions = rng.integers(0, act_space.n, size=(batch_size, 1)).astype(np.float32)
    rewards = rng.normal(size=(batch_size, 1)).astype(np.float32)
    dones = (rng.random((batch_size, 1)) < 0.2).astype(np.float32)
    t = torch.as_tensor
    return ReplayBufferSamples(t(obs), t(actions), t(next_obs), t(dones), t(rewards))


def record_step_grads(optimizers: dict[str, torch.optim.Optimizer]) -> dict[str, list[list[torch.Tensor]]]:
    """Wrap each optimizer's ``step`` to keep a copy of the gradients it applies."""
    seen: dict[str, list[list[torch.Tensor]]] = {name: [] for name in optimizers}
    for name, opt in optimizers.items():
        original = opt.step

        def step(*args, _name=name, _opt=opt, _orig=original, **kwargs):
            params = [p for g in _opt.param_groups for p in g["params"]]
            seen[_name].append([p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params])
            return _orig(*args, **kwargs)

        opt.step = step
    return seen


def offpolicy_pair(name: str, env_id: str, reference: Any = sb3, **kwargs):
    """The reference package's model (SB3 or sb3-contrib) and ours, same weights, both sampling one fixed batch."""
    ref = getattr(reference, name)("MlpPolicy", env_id, seed=0, device="cpu", **kwargs)
    ours = getattr(lit_sb3, name)("MlpPolicy", env=env_id, seed=0, device="cpu", **kwargs)
    ours.policy.load_state_dict(ref.policy.state_dict())
    ref.set_logger(Logger(folder=None, output_formats=[]))
    batch = fixed_batch(ref)
    ref.replay_buffer.sample = lambda *a, **k: batch
    ours.replay_buffer = SimpleNamespace(sample=lambda *a, **k: batch)
    return ref, ours


def run_both(ref, ours, ref_opts, our_opts, gradient_steps: int):
    ref_grads = record_step_grads(ref_opts)
    our_grads = record_step_grads(our_opts)
    torch.manual_seed(123)
    ref.train(gradient_steps=gradient_steps, batch_size=64)
    torch.manual_seed(123)
    ours.policy.set_training_mode(True)
    ours.gradient_updates(gradient_steps, 64)
    return ref_grads, our_grads


def assert_same(ref_grads, our_grads, ref, ours):
    for name in ref_grads:
        assert len(ref_grads[name]) == len(our_grads[name]) > 0, name
        for ref_step, our_step in zip(ref_grads[name], our_grads[name]):
            for g_ref, g_ours in zip(ref_step, our_step):
                # 1e-6 absolute, or relative for gradients above 1 (CrossQ's entropy gradient, ~1.5, differs by up to
                # ~8 float32 ulps from run to run: SIMD sums whose order follows the tensors' memory alignment)
                torch.testing.assert_close(g_ours, g_ref, atol=TOL, rtol=TOL)
    ref_state, our_state = ref.policy.state_dict(), ours.policy.state_dict()
    for key, value in ref_state.items():
        torch.testing.assert_close(our_state[key], value, atol=TOL, rtol=0, msg=key)


class LinearExtractor(BaseFeaturesExtractor):
    """A features extractor with weights (SB3's default one for vectors has none), so that sharing it matters."""

    def __init__(self, observation_space: gym.Space, features_dim: int = 8) -> None:
        super().__init__(observation_space, features_dim)
        linear = torch.nn.Linear(get_flattened_obs_dim(observation_space), features_dim)
        self.net = torch.nn.Sequential(torch.nn.Flatten(), linear, torch.nn.ReLU())

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.net(observations)


def shared_extractor_kwargs(**policy_kwargs: Any) -> dict[str, Any]:
    """policy_kwargs of an actor-critic whose actor and critic share one trained features extractor (fresh each
    call: SB3 writes into the policy_kwargs it is given)."""
    return {"features_extractor_class": LinearExtractor, "share_features_extractor": True, **policy_kwargs}


def our_mean(ours, key: str) -> float:
    return (ours._metrics.sums[key] / ours._metrics.counts[key]).item()


def assert_logged_means(ref, ours, keys) -> None:
    """SB3 / sb3-contrib log the mean over the gradient steps of the last train() call, as our running means do."""
    logged = ref.logger.name_to_value
    for key in keys:
        assert our_mean(ours, key) == pytest.approx(logged[f"train/{key}"], abs=TOL), key
