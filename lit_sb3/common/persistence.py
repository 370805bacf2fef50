"""Saving and loading an algorithm: SB3-style zips (``save`` / ``load``) and Lightning checkpoints.

Both formats keep the modules' parameters and optimizer states; what an algorithm keeps besides them goes through
ONE hook pair, :meth:`Persistence._extra_state` / :meth:`Persistence._load_extra_state`, asked for a format (the
algorithm's parts, :mod:`lit_sb3.common.parts`, add theirs through the same pair):

- ``"checkpoint"``: the training state an exact resume needs (counters, RNGs, the env's replay, buffers), stored
  under ``checkpoint["lit_sb3"]`` next to Lightning's ``state_dict`` and ``hyper_parameters``;
- ``"zip"``: SB3's ``data`` entries (attributes SB3's own ``load`` sets) and, for tensors, its ``pytorch_variables``
  (SAC's ``log_ent_coef``): what SB3's ``save`` of the same algorithm writes, so that either library loads it.
"""

from __future__ import annotations

import inspect
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import torch
from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import check_for_correct_spaces
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common import resume, safe_zip
from lit_sb3.common.envs import space_from_dict, space_to_dict, to_vec_env
from lit_sb3.common.safe_load import CheckpointError, is_trusted, trusted_checkpoint
from lit_sb3.lightning_compat import attached_trainer

if TYPE_CHECKING:
    from lit_sb3.common.base import BaseAlgorithm

StateFormat = Literal["checkpoint", "zip"]
CHECKPOINT: StateFormat = "checkpoint"
ZIP: StateFormat = "zip"

SelfPersistence = TypeVar("SelfPersistence", bound="Persistence")

_CKPT_KEY = "lit_sb3"
#: ``data`` entry listing what ``save(include=...)`` added, so that ``load`` puts exactly those back
_INCLUDED_KEY = "lit_sb3_included"
#: where an env stood when the zip was written; ``load(env=..., force_reset=False)`` continues from there
_CONTINUATION = ("_last_obs", "_last_episode_starts", "_last_original_obs")
_VOLATILE_HPARAMS = ("verbose", "device")  # where and how loudly a run trains, not what it trains
#: checkpoint entry naming the constructor arguments Lightning could not keep in ``hyper_parameters`` (lambdas)
_UNSAVED_KEY = "unsaved_hyperparameters"
#: constructor arguments that are not hyperparameters (ignored by ``save_hyperparameters``)
_NOT_HPARAMS = ("self", "env", "_init_setup_model")


class Persistence:
    """``save`` / ``load`` / ``get_parameters`` / ``set_parameters`` and the checkpoint hooks of :class:`BaseAlgorithm`
    (a mixin placed before ``LightningModule``, whose checkpoint hooks it overrides)."""

    # ------------------------------------------------------------------ the one hook pair

    def _extra_state(self: BaseAlgorithm, fmt: StateFormat = CHECKPOINT) -> dict[str, Any]:
        """What this algorithm keeps besides its parameters and optimizer states, in format ``fmt`` (see the module
        docstring); subclasses extend the dict (and check ``fmt`` when an entry belongs to one format only)."""
        state = _base_state(self, fmt)
        for part in self._parts:
            state.update(part.state(fmt))
        return state

    def _load_extra_state(self: BaseAlgorithm, state: dict[str, Any], fmt: StateFormat = CHECKPOINT) -> None:
        """Restore what :meth:`_extra_state` returned (the networks are built already); a checkpoint's env state
        waits for the training env (:meth:`_resume_training_state` at train start)."""
        for part in self._parts:
            part.load_state(state, fmt)
        if fmt == ZIP:
            self.num_timesteps = int(state.get("num_timesteps", 0))
            self._n_updates = int(state.get("_n_updates", 0))
            self.n_envs = state.get("n_envs")
            for name in state.get(_INCLUDED_KEY) or []:
                if name in state:
                    setattr(self, name, state[name])
            return
        self.num_timesteps = int(state["num_timesteps"])
        self._n_updates = int(state.get("n_updates", 0))
        self._episode_num = int(state.get("episode_num", 0))
        self.ep_info_buffer.extend(resume.from_tree(state.get("ep_info_buffer", [])))
        self.ep_success_buffer.extend(resume.from_tree(state.get("ep_success_buffer", [])))
        self._pending_resume = state if "rng" in state else None

    def _resume_training_state(self: BaseAlgorithm, env: VecEnv, state: dict[str, Any]) -> None:
        """Put ``env`` and the collection state where the checkpoint left them (subclasses extend)."""
        log = resume.ActionLog.from_state(state["env"]["log"])
        log.replay(env)
        resume.set_vecnormalize_state(env, state["env"]["vecnormalize"])
        self._action_log, self._seeded_env = log, env
        self._last_obs = resume.from_tree(state["env"]["last_obs"])
        self._last_episode_starts = resume.from_tree(state["env"]["last_episode_starts"])

    # ------------------------------------------------------------------ Lightning checkpoints

    def on_save_checkpoint(self: BaseAlgorithm, checkpoint: dict[str, Any]) -> None:
        if self.observation_space is not None:
            checkpoint[_CKPT_KEY] = self._extra_state(CHECKPOINT)
            checkpoint[_CKPT_KEY][_UNSAVED_KEY] = sorted(_unsaved_hyperparameters(self))

    def on_load_checkpoint(self: BaseAlgorithm, checkpoint: dict[str, Any]) -> None:
        if attached_trainer(self) is not None:  # resuming into a model the caller built (load_from_checkpoint: its own)
            _warn_about_changed_hyperparameters(self, checkpoint.get("hyper_parameters") or {})
        state = checkpoint.get(_CKPT_KEY)
        if state is None:
            return
        self.build(space_from_dict(state["observation_space"]), space_from_dict(state["action_space"]))
        self._load_extra_state(state, CHECKPOINT)
        self._unsaved_in_checkpoint = list(state.get(_UNSAVED_KEY) or [])

    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | Path | Any,
        map_location: Any = None,
        hparams_file: str | Path | None = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Lightning's ``load_from_checkpoint``, safe by default: ``weights_only=True`` with the objects lit_sb3
        checkpoints hold allow-listed (action noise, schedules, policy/buffer classes); one clear line for a
        missing, truncated or foreign file. ``weights_only=False`` unpickles anything (trusted files only)."""
        if weights_only is None and is_trusted():  # LIT_SB3_TRUST=1 / lit_sb3.safe_load.trusted()
            weights_only = False
        local = isinstance(checkpoint_path, (str, Path)) and "://" not in str(checkpoint_path)
        with trusted_checkpoint(checkpoint_path if local and weights_only is not False else None):
            model = super().load_from_checkpoint(  # type: ignore[misc]
                checkpoint_path,
                map_location=map_location,
                hparams_file=hparams_file,
                strict=strict,
                weights_only=True if weights_only is None else weights_only,
                **kwargs,
            )
        missing = [name for name in getattr(model, "_unsaved_in_checkpoint", []) if name not in kwargs]
        if missing:  # the model was built with the defaults instead: never hand it back as the saved one
            raise CheckpointError(
                f"load_from_checkpoint: the checkpoint has no {', '.join(missing)} (code, e.g. a lambda, which "
                f"Lightning does not keep in a checkpoint); give it again: load_from_checkpoint(path, "
                f"{', '.join(f'{name}=...' for name in missing)})"
            )
        return model

    # ------------------------------------------------------------------ SB3 parameters and zips

    def get_parameters(self: BaseAlgorithm) -> dict[str, dict]:
        """``{"policy": state_dict, "policy.optimizer": state_dict, ...}`` as SB3 returns it."""
        if self.policy is None:
            raise RuntimeError("get_parameters: the networks are not built yet")
        params = {"policy": self.policy.state_dict()}
        for name, optimizer in self._named_optimizers().items():
            params[name] = optimizer.state_dict()
        return params

    def set_parameters(
        self: BaseAlgorithm,
        load_path_or_dict: str | dict[str, dict],
        exact_match: bool = True,
        device: torch.device | str = "auto",
    ) -> None:
        """Load parameters from a ``save`` zip or a ``get_parameters`` dict."""
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            _, params, _ = load_from_zip_file(load_path_or_dict, device=device, load_data=False)
        targets: dict[str, Any] = {"policy": self.policy, **self._named_optimizers()}
        missing = set(targets) - set(params)
        if exact_match and missing:
            raise ValueError(f"set_parameters: missing {sorted(missing)} in the loaded parameters")
        for name, state in params.items():
            if name not in targets:
                raise ValueError(f"set_parameters: unknown parameter group {name!r}; expected {sorted(targets)}")
            if isinstance(targets[name], torch.optim.Optimizer):
                targets[name].load_state_dict(state)
            else:
                targets[name].load_state_dict(state, strict=exact_match)

    def save(
        self: BaseAlgorithm, path: str | Path, exclude: list[str] | None = None, include: list[str] | None = None
    ) -> None:
        """SB3-style zip: hyperparameters, spaces and counters (``data``) plus parameters (``params``).

        :param exclude: ``data`` entries to leave out (except those also in ``include``, as in SB3)
        :param include: attributes ``save`` leaves out by default to keep as well (e.g. ``["_last_obs",
            "_last_episode_starts"]``, which ``load(env=..., force_reset=False)`` continues from); ``load`` puts
            them back
        """
        if self.policy is None:
            raise RuntimeError("save: the networks are not built yet")
        state = self._extra_state(ZIP)
        for name in include or []:
            if not hasattr(self, name):
                raise ValueError(f"include: {type(self).__name__} has no attribute {name!r}")
            state[name] = getattr(self, name)
        if include:
            state[_INCLUDED_KEY] = list(include)
        for name in set(exclude or []) - set(include or []):  # as SB3: what is included is never excluded
            state.pop(name, None)
        pytorch_variables = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        data = {k: v for k, v in state.items() if k not in pytorch_variables}
        data[safe_zip.SAFE_KEY] = safe_zip.safe_mirror(data)  # what load reads instead of the pickled entries
        _warn_about_unsafe_values(data, set(data[safe_zip.SAFE_KEY]))
        save_to_zip_file(path, data=data, params=self.get_parameters(), pytorch_variables=pytorch_variables)

    @classmethod
    def load(
        cls: type[SelfPersistence],
        path: str | Path,
        env: GymEnv | str | None = None,
        device: torch.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        *,
        trusted: bool | None = None,
        **kwargs: Any,
    ) -> SelfPersistence:
        """Load a zip written by ``save`` (or by SB3's own ``save`` of the same algorithm).

        Safe by default: values come from ``custom_objects``, the plain-JSON mirror ``save`` writes, or the zip's
        ``:serialized:`` (cloudpickle) entries read through lit_sb3's allow-list (:mod:`lit_sb3.safe_load`: how an
        SB3-written zip loads); a needed value naming anything else is refused in one line. ``trusted=True`` (or,
        when ``trusted`` is not given, ``LIT_SB3_TRUST=1`` / ``lit_sb3.safe_load.trusted()``) unpickles everything.

        :param force_reset: as in SB3: reset ``env`` before training. ``False`` continues ``env`` from the
            observation the zip holds (SB3's zips, or ``save(include=["_last_obs", "_last_episode_starts"])``)
            when the next ``learn`` keeps counting (``reset_num_timesteps=False``)
        """
        if isinstance(path, (str, Path)) and not Path(path).is_file():
            if not Path(f"{path}.zip").is_file():
                raise FileNotFoundError(f"load: no such file: {path}")
            path = f"{path}.zip"  # SB3's save adds the suffix
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self", "env", "_init_setup_model"}
        if trusted is None:
            trusted = is_trusted()
        try:
            if trusted:
                data, params, pytorch_variables = load_from_zip_file(
                    path, device=device, custom_objects=custom_objects, print_system_info=print_system_info
                )
            else:
                needed = accepted | {"observation_space", "action_space", "policy", "policy_class"}
                data = safe_zip.read_data(path, custom_objects, needed)
                _, params, pytorch_variables = load_from_zip_file(path, device=device, load_data=False)
        except zipfile.BadZipFile as error:
            raise ValueError(f"load: {path} is not a readable save() zip ({error})") from None
        if data is None or "observation_space" not in data:
            raise ValueError(f"load: {path} holds no observation/action spaces; was it written by save()?")
        init_kwargs = {k: v for k, v in data.items() if k in accepted}
        # SB3 keeps some constructor arguments only as the schedule built from them (sb3-contrib ARS's delta_std)
        init_kwargs.update({k: data[f"{k}_schedule"] for k in accepted - set(data) if f"{k}_schedule" in data})
        init_kwargs["policy"] = data.get("policy", data.get("policy_class"))
        init_kwargs.update(kwargs, device=device)
        model: BaseAlgorithm = cls(**init_kwargs)  # type: ignore[assignment]
        if env is not None:
            model._env = to_vec_env(env)
            check_for_correct_spaces(model._env, data["observation_space"], data["action_space"])
        model.build(data["observation_space"], data["action_space"])
        model.set_parameters(params, exact_match=False, device=device)
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
        return model  # type: ignore[return-value]


def _unsaved_hyperparameters(model: BaseAlgorithm) -> dict[str, Any]:
    """Constructor arguments Lightning left out of ``hparams`` because they cannot be pickled (lambdas), with the
    model's value of each."""
    parameters = inspect.signature(type(model).__init__).parameters.values()
    return {
        p.name: getattr(model, p.name)
        for p in parameters
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        and p.name not in _NOT_HPARAMS
        and p.name not in model.hparams
        and p.name != "device"
        and hasattr(model, p.name)
    }


def _warn_about_unsafe_values(data: dict[str, Any], mirrored: set[str]) -> None:
    """``save`` keeps a value without a plain-JSON form as SB3 does, a pickle; say which ones ``load`` will refuse
    unless trusted (code such as a lambda, or a class outside the allow-list), instead of losing them silently."""
    import cloudpickle

    from lit_sb3.common.safe_load import NotAllowed, loads

    unsafe: dict[str, str] = {}
    for key in sorted(set(data) - mirrored - {safe_zip.SAFE_KEY}):
        try:
            loads(cloudpickle.dumps(data[key]), key)
        except NotAllowed as error:
            code = error.name.startswith(("cloudpickle", "builtins", "types"))
            unsafe[key] = "a function" if code else error.name
        except Exception:
            continue
    if unsafe:
        kinds = ", ".join(sorted(set(unsafe.values())))
        warnings.warn(
            f"save: {', '.join(unsafe)} hold code ({kinds}), which a file keeps only as a pickle: load() refuses "
            f"them unless given again in custom_objects, allow-listed (lit_sb3.safe_load.allow, for classes) or the "
            f"file is trusted (load(..., trusted=True), LIT_SB3_TRUST=1)",
            stacklevel=3,
        )


def _base_state(model: BaseAlgorithm, fmt: StateFormat) -> dict[str, Any]:
    """The entries every algorithm keeps (see the module docstring)."""
    if fmt == ZIP:
        # "device" is where this process ran, not part of the model: SB3's load would take it over its argument
        data: dict[str, Any] = {k: v for k, v in model.hparams.items() if k != "device"}
        # what Lightning could not keep (lambdas): saved as SB3 saves it, so that it is never lost silently
        data.update(_unsaved_hyperparameters(model))
        # SB3's load copies data over its attributes, where "*_kwargs" are dicts, never None
        data.update({k: {} for k, v in data.items() if k.endswith("_kwargs") and v is None})
        data.update(
            policy_class=model.policy_class,
            policy_kwargs=dict(model.policy_kwargs),
            observation_space=model.observation_space,
            action_space=model.action_space,
            n_envs=model.n_envs or (model._env.num_envs if model._env is not None else 1),
            num_timesteps=model.num_timesteps,
            _n_updates=model._n_updates,
        )
        return data
    state: dict[str, Any] = {
        "observation_space": space_to_dict(model.observation_space),
        "action_space": space_to_dict(model.action_space),
        "num_timesteps": model.num_timesteps,
        "n_updates": model._n_updates,
        "episode_num": model._episode_num,
        "rng": resume.rng_state(),
        "action_space_rng": resume.space_rng_state(model.action_space),
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


def _same(a: Any, b: Any) -> bool:
    """Equal values, comparing objects without ``__eq__`` (action noise, schedules) by their attributes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is type(b) and hasattr(a, "__dict__") and not isinstance(a, type) and type(a).__eq__ is object.__eq__:
        if type(a).__repr__ is not object.__repr__:  # action noise: its repr names the settings, not the noise state
            return repr(a) == repr(b)
        return _same(vars(a), vars(b))
    return bool(a == b)


def _warn_about_changed_hyperparameters(model: BaseAlgorithm, saved: dict[str, Any]) -> None:
    """Resuming a checkpoint into a model built with other hyperparameters trains with the model's: say which."""
    changed = [
        f"{key}={model.hparams[key]!r} (checkpoint: {saved[key]!r})"
        for key in saved
        if key in model.hparams and key not in _VOLATILE_HPARAMS and not _same(model.hparams[key], saved[key])
    ]
    if changed:
        warnings.warn(
            f"ckpt_path: {type(model).__name__} differs from the checkpoint's hyperparameters: {'; '.join(changed)}; "
            f"training continues with the model's values (build the model with the checkpoint's to resume it exactly)",
            stacklevel=2,
        )
