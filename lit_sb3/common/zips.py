"""SB3's zip format for a model: what ``save`` writes, and how ``load`` builds a model from a zip (ours or SB3's).

A zip holds SB3's ``data`` (hyperparameters, spaces, counters: :func:`~lit_sb3.common.saved_state.base_state` plus
the algorithm's own entries), ``params`` (the policy's and the optimizers' state dicts, under SB3's names) and
``pytorch_variables`` (tensors such as SAC's ``log_ent_coef``). Its pickled values are read without running code
(:mod:`lit_sb3.common.safe_zip`) unless the caller trusts the file.
"""

from __future__ import annotations

import inspect
import pickle
import warnings
import zipfile
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import torch
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import check_for_correct_spaces
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import safe_zip
from lit_sb3.common.allow_list import is_trusted
from lit_sb3.common.envs import to_vec_env
from lit_sb3.common.safe_load import NotAllowed, loads, zip_tensor_refusal
from lit_sb3.common.saved_state import INCLUDED_KEY, NOT_HPARAMS, ZIP, StateFormat


class ZipModel(Protocol):
    """What writing and reading a zip needs of an algorithm (``BaseAlgorithm`` has it all)."""

    policy: Any
    n_envs: int | None
    _env: VecEnv | None
    _seeded_env: VecEnv | None
    _last_obs: Any

    def _extra_state(self, fmt: StateFormat = ...) -> dict[str, Any]: ...
    def _load_extra_state(self, state: dict[str, Any], fmt: StateFormat = ...) -> None: ...
    def _built(self) -> tuple[BasePolicy, spaces.Space[Any], spaces.Space[Any]]: ...
    def build(self, observation_space: spaces.Space[Any], action_space: spaces.Space[Any]) -> None: ...
    def get_parameters(self) -> dict[str, dict[str, Any]]: ...
    def set_parameters(
        self,
        load_path_or_dict: str | dict[str, dict[str, Any]],
        exact_match: bool = ...,
        device: torch.device | str = ...,
    ) -> None: ...


Model = TypeVar("Model", bound=ZipModel)

#: where an env stood when the zip was written; ``load(env=..., force_reset=False)`` continues from there
_CONTINUATION = ("_last_obs", "_last_episode_starts", "_last_original_obs")
#: ``data`` entries ``load`` needs besides the constructor's arguments
_MODEL_ENTRIES = {"observation_space", "action_space", "policy", "policy_class"}


def read_parameters(path: str | Path, device: torch.device | str) -> dict[str, dict[str, Any]]:
    """The zip's ``params``: ``{"policy": state_dict, "policy.optimizer": state_dict, ...}``."""
    try:
        _, params, _ = load_from_zip_file(path, device=device, load_data=False)
    except pickle.UnpicklingError as error:
        raise zip_tensor_refusal(path, error) from None
    return _state_dicts(params)


def _state_dicts(params: dict[str, torch.Tensor]) -> dict[str, dict[str, Any]]:
    """SB3 annotates a zip's ``params`` as tensors; each value is a module's or an optimizer's state dict."""
    return cast(dict[str, dict[str, Any]], params)


def save_zip(model: ZipModel, path: str | Path, exclude: list[str] | None, include: list[str] | None) -> None:
    """Write ``model`` to ``path`` as SB3's ``save`` writes it, plus the plain-JSON mirror that ``load`` reads
    instead of the pickles (see :meth:`~lit_sb3.common.base.BaseAlgorithm.save` for the arguments)."""
    if model.policy is None:
        raise RuntimeError("save: the networks are not built yet")
    state = model._extra_state(ZIP)
    for name in include or []:
        if not hasattr(model, name):
            raise ValueError(f"include: {type(model).__name__} has no attribute {name!r}")
        state[name] = getattr(model, name)
    if include:
        state[INCLUDED_KEY] = list(include)
    for name in set(exclude or []) - set(include or []):  # as SB3: what is included is never excluded
        state.pop(name, None)
    pytorch_variables = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
    data = {k: v for k, v in state.items() if k not in pytorch_variables}
    data[safe_zip.SAFE_KEY] = safe_zip.safe_mirror(data)  # what load reads instead of the pickled entries
    _warn_about_unsafe_values(data, set(data[safe_zip.SAFE_KEY]))
    save_to_zip_file(path, data=data, params=model.get_parameters(), pytorch_variables=pytorch_variables)


def load_zip(
    cls: type[Model],
    path: str | Path,
    env: GymEnv | str | None,
    device: torch.device | str,
    custom_objects: dict[str, Any] | None,
    print_system_info: bool,
    force_reset: bool,
    trusted: bool | None,
    kwargs: dict[str, Any],
) -> Model:
    """A ``cls`` built from the zip at ``path`` (see :meth:`~lit_sb3.common.base.BaseAlgorithm.load`)."""
    if isinstance(path, (str, Path)) and not Path(path).is_file():
        if not Path(f"{path}.zip").is_file():
            raise FileNotFoundError(f"load: no such file: {path}")
        path = f"{path}.zip"  # SB3's save adds the suffix
    accepted = set(inspect.signature(cls.__init__).parameters) - set(NOT_HPARAMS)
    if trusted is None:
        trusted = is_trusted()
    try:
        if trusted:
            data, params, pytorch_variables = load_from_zip_file(
                path, device=device, custom_objects=custom_objects, print_system_info=print_system_info
            )
        else:
            # an entry the caller passes (PPO.load(path, learning_rate=...), the RL Zoo's `train -i`) is not read
            given = {**(custom_objects or {}), **{k: v for k, v in kwargs.items() if k in accepted}}
            data = safe_zip.read_data(path, given, accepted | _MODEL_ENTRIES)
            _, params, pytorch_variables = load_from_zip_file(path, device=device, load_data=False)
    except zipfile.BadZipFile as error:
        message = f"Error: the file {path} wasn't a zip-file. "  # SB3's words, then ours
        raise ValueError(f"{message}load: {path} is not a readable save() zip ({error})") from None
    except pickle.UnpicklingError as error:  # torch's weights_only refusal of a tensor file: many lines
        raise zip_tensor_refusal(path, error) from None
    if data is None or "observation_space" not in data:
        raise ValueError(f"load: {path} holds no observation/action spaces; was it written by save()?")
    init_kwargs = {k: v for k, v in data.items() if k in accepted}
    # SB3 keeps some constructor arguments only as the schedule built from them (sb3-contrib ARS's delta_std)
    init_kwargs.update({k: data[f"{k}_schedule"] for k in accepted - set(data) if f"{k}_schedule" in data})
    init_kwargs["policy"] = data.get("policy", data.get("policy_class"))
    init_kwargs.update(kwargs, device=device)
    model = cls(**init_kwargs)
    if env is not None:
        model._env = to_vec_env(env)
        check_for_correct_spaces(model._env, data["observation_space"], data["action_space"])
    model.build(data["observation_space"], data["action_space"])
    model.set_parameters(_patched_for_old_sb3(model, _state_dicts(params)), exact_match=False, device=device)
    model._load_extra_state({**data, **(pytorch_variables or {})}, ZIP)
    if model._env is not None:
        model.n_envs = model._env.num_envs  # as SB3's load: the env given now decides
    if model._env is not None and not force_reset and data.get("_last_obs") is not None:
        for name in _CONTINUATION:
            if name in data:
                setattr(model, name, data[name])
        if hasattr(model, "_last_original_obs") and model._last_original_obs is None:
            raise ValueError(
                "force_reset: continuing an off-policy run also needs '_last_original_obs' in the zip "
                "(save(include=[..., '_last_original_obs']))"
            )
        model._seeded_env = model._env  # the env stands where the zip left it: no reset at train start
    else:
        model._last_obs = None  # a saved observation is stale: the env resets at train start
    return model


def _patched_for_old_sb3(model: ZipModel, params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``params`` of a zip written by an older SB3, made loadable as SB3's ``load`` makes them, with its warnings:
    A2C/PPO before 1.7 had no ``pi_`` / ``vf_features_extractor`` (the shared extractor's weights serve), DQN before
    2.4 listed the target network's parameters in the optimizer too (truncated to the online network's)."""
    policy = model._built()[0]
    expected = set(policy.state_dict())
    if any("pi_features_extractor" in key for key in expected - set(params.get("policy", expected))):
        warnings.warn(
            "You are probably loading a A2C/PPO model saved with SB3 < 1.7.0, we deactivated exact_match so you can "
            "save the model again to avoid issues in the future (see "
            "https://github.com/DLR-RM/stable-baselines3/issues/1233 for more info). load: the zip has no "
            "pi_features_extractor / vf_features_extractor weights; the shared features extractor's serve",
            stacklevel=4,
        )
    saved = params.get("policy.optimizer", {}).get("param_groups", [{}])[0].get("params")
    optimizer = getattr(policy, "optimizer", None)
    n_params = len(optimizer.param_groups[0]["params"]) if optimizer is not None else 0
    if saved is not None and len(saved) == 2 * n_params > 0:
        params["policy.optimizer"]["param_groups"][0]["params"] = saved[:n_params]
        warnings.warn(
            "You are probably loading a DQN model saved with SB3 < 2.4.0, we truncated the optimizer state so you "
            "can save the model again to avoid issues in the future (see "
            "https://github.com/DLR-RM/stable-baselines3/pull/1963 for more info). load: the zip's optimizer lists "
            f"{len(saved)} parameters for the policy's {n_params} (its target network's too)",
            stacklevel=4,
        )
    return params


def _warn_about_unsafe_values(data: dict[str, Any], mirrored: set[str]) -> None:
    """``save`` keeps a value without a plain-JSON form as SB3 does, a pickle; say which ones are code (a lambda, a
    function), which ``load`` refuses unless trusted or given again, instead of losing them silently.

    An instance of an importable class (the RL Zoo's ``SimpleLinearSchedule``) is not warned about at every save: it
    loads once its class is allow-listed or when the caller passes the value again (as the Zoo does), and a load
    without either says so in one line.
    """
    import cloudpickle

    unsafe: list[str] = []
    for key in sorted(set(data) - mirrored - {safe_zip.SAFE_KEY}):
        try:
            loads(cloudpickle.dumps(data[key]), key)
        except NotAllowed as error:
            if error.name.startswith(("cloudpickle", "builtins", "types")):
                unsafe.append(key)
        except Exception:
            continue
    if unsafe:
        warnings.warn(
            f"save: {', '.join(unsafe)} hold code (a function), which a file keeps only as a pickle: load() refuses "
            "them unless given again (load(path, learning_rate=...) or custom_objects) or the file is trusted "
            "(load(..., trusted=True), LIT_SB3_TRUST=1)",
            stacklevel=4,
        )
