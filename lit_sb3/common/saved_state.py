"""What every algorithm keeps besides its parameters and optimizer states, in each of the two formats.

- ``"checkpoint"``: the training state an exact resume needs (spaces, counters, RNGs, the env's replay log, the
  episode statistics), stored under ``checkpoint["lit_sb3"]`` next to Lightning's ``state_dict`` and
  ``hyper_parameters``;
- ``"zip"``: SB3's ``data`` entries (the hyperparameters and the attributes SB3's own ``load`` sets): what SB3's
  ``save`` of the same algorithm writes, so that either library loads it.

:func:`base_state` writes these entries, :func:`load_base_state` reads them back and :func:`resume_env_state` puts
the training env where a checkpoint left it; the algorithms and their parts add their own entries through
:class:`~lit_sb3.common.persistence.Persistence`'s hook pair.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Literal

from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import resume
from lit_sb3.common.envs import space_to_dict

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

StateFormat = Literal["checkpoint", "zip"]
CHECKPOINT: StateFormat = "checkpoint"
ZIP: StateFormat = "zip"

#: ``data`` entry listing what ``save(include=...)`` added, so that ``load`` puts exactly those back
INCLUDED_KEY = "lit_sb3_included"
#: constructor arguments that are not hyperparameters (ignored by ``save_hyperparameters``)
NOT_HPARAMS = ("self", "env", "_init_setup_model", "tensorboard_log")


def unsaved_hyperparameters(model: BaseAlgorithm) -> dict[str, Any]:
    """Constructor arguments Lightning left out of ``hparams`` because they cannot be pickled (lambdas), with the
    model's value of each."""
    parameters = inspect.signature(type(model).__init__).parameters.values()
    return {
        p.name: getattr(model, p.name)
        for p in parameters
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        and p.name not in NOT_HPARAMS
        and p.name not in model.hparams
        and p.name != "device"
        and hasattr(model, p.name)
    }


def base_state(model: BaseAlgorithm, fmt: StateFormat) -> dict[str, Any]:
    """The entries every algorithm keeps in format ``fmt`` (see the module docstring)."""
    observation_space, action_space = model.observation_space, model.action_space
    if observation_space is None or action_space is None:
        raise RuntimeError(f"{type(model).__name__}: the networks are not built yet, so there is no state to save")
    if fmt == ZIP:
        # "device" is where this process ran, not part of the model: SB3's load would take it over its argument
        data: dict[str, Any] = {k: v for k, v in model.hparams.items() if k != "device"}
        # what Lightning could not keep (lambdas): saved as SB3 saves it, so that it is never lost silently
        data.update(unsaved_hyperparameters(model))
        # SB3's load copies data over its attributes, where "*_kwargs" are dicts, never None
        data.update({k: {} for k, v in data.items() if k.endswith("_kwargs") and v is None})
        data.update(
            policy_class=model.policy_class,
            policy_kwargs=dict(model.policy_kwargs),
            observation_space=observation_space,
            action_space=action_space,
            n_envs=model.n_envs or (model._env.num_envs if model._env is not None else 1),
            num_timesteps=model.num_timesteps,
            _n_updates=model._n_updates,
        )
        return data
    state: dict[str, Any] = {
        "observation_space": space_to_dict(observation_space),
        "action_space": space_to_dict(action_space),
        "num_timesteps": model.num_timesteps,
        "n_updates": model._n_updates,
        "episode_num": model._episode_num,
        "rng": resume.rng_state(),
        "action_space_rng": resume.space_rng_state(action_space),
        "ep_info_buffer": resume.to_tree(list(model.ep_info_buffer)),
        "ep_success_buffer": resume.to_tree(list(model.ep_success_buffer)),
    }
    env = model._seeded_env
    if model._action_log is not None and env is not None and model._last_obs is not None:
        state["env"] = {
            "log": model._action_log.state(),
            "vecnormalize": resume.vecnormalize_state(env),
            "last_obs": resume.to_tree(model._last_obs),
            "last_episode_starts": resume.to_tree(model._last_episode_starts),
        }
    return state


def load_base_state(model: BaseAlgorithm, state: dict[str, Any], fmt: StateFormat) -> None:
    """Restore what :func:`base_state` wrote; a checkpoint's training state waits in ``model._pending_resume`` for
    the training env (applied at train start)."""
    if fmt == ZIP:
        model.num_timesteps = int(state.get("num_timesteps", 0))
        model._n_updates = int(state.get("_n_updates", 0))
        model.n_envs = state.get("n_envs")
        for name in state.get(INCLUDED_KEY) or []:
            if name in state:
                setattr(model, name, state[name])
        return
    model.num_timesteps = int(state["num_timesteps"])
    model._n_updates = int(state.get("n_updates", 0))
    model._episode_num = int(state.get("episode_num", 0))
    model.ep_info_buffer.extend(resume.from_tree(state.get("ep_info_buffer", [])))
    model.ep_success_buffer.extend(resume.from_tree(state.get("ep_success_buffer", [])))
    model._pending_resume = state if "rng" in state else None


def resume_env_state(model: BaseAlgorithm, env: VecEnv, state: dict[str, Any]) -> None:
    """Put ``env`` and the model's collection state where the checkpoint's ``state`` left them (the env's resets
    and actions replayed, VecNormalize's statistics, the last observation)."""
    log = resume.ActionLog.from_state(state["env"]["log"])
    log.replay(env)
    resume.set_vecnormalize_state(env, state["env"]["vecnormalize"])
    model._action_log, model._seeded_env = log, env
    model._last_obs = resume.from_tree(state["env"]["last_obs"])
    model._last_episode_starts = resume.from_tree(state["env"]["last_episode_starts"])
