"""``RLEnvDataModule``: the environments of an RL run, one per Lightning stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import lightning as L
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv

from lit_sb3.common.envs import EnvSource, check_env_id, env_spec_of, to_vec_env
from lit_sb3.common.seeding import RANK_SEED_STRIDE, STAGE_SEED_OFFSETS

Stage = Literal["fit", "validate", "test", "predict"]
_STAGES: tuple[Stage, ...] = ("fit", "validate", "test", "predict")
_LIGHTNING_STAGE_ALIASES = {"fit": "fit", "train": "fit", "validate": "validate", "test": "test", "predict": "predict"}


class RLEnvDataModule(L.LightningDataModule):
    """A :class:`~lightning.LightningDataModule` that holds environments for each RL stage.

    Instead of dataloaders it exposes envs (``train_env``, ``val_env``, ``test_env``, ``predict_env``); the
    :class:`~lit_sb3.trainer.RLTrainer` takes the stage's env from :meth:`get_env`. Each source may be an env id, a
    gymnasium env, a factory returning one, or a VecEnv; envs are wrapped in ``Monitor`` and a VecEnv on ``setup``.
    VecEnvs it builds itself are closed on ``teardown`` and on exceptions; VecEnvs handed in belong to the caller.
    Validation, test and predict envs fall back to the training env's source (an id or factory) when not given.

    :param train_env: environment (or env-id string) used for training
    :param val_env: environment (or env-id string) used for validation / evaluation
    :param test_env: environment (or env-id string) used for testing / evaluation
    :param predict_env: environment (or env-id string) used for prediction
    :param monitor_wrapper: whether to wrap raw gym envs in a ``Monitor`` wrapper
    :param verbose: verbosity level forwarded to env wrapping utilities
    :param n_envs: copies of the training env for ids and factories (evaluation envs use one)
    :param env_kwargs: keyword arguments for ``gymnasium.make`` / the factory
    :param vec_env_cls: VecEnv class for ids and factories (``DummyVecEnv`` by default)
    :param seed: seed of the envs built from ids and factories (validation envs get ``seed + 1000``, test envs
        ``seed + 2000``, predict envs ``seed + 3000``)
    :param n_eval_episodes: episodes per ``validate`` / ``test`` run
    :param deterministic_eval: evaluate with deterministic actions
    """

    def __init__(
        self,
        train_env: GymEnv | str | None = None,
        val_env: GymEnv | str | None = None,
        test_env: GymEnv | str | None = None,
        predict_env: GymEnv | str | None = None,
        monitor_wrapper: bool = True,
        verbose: int = 0,
        n_envs: int = 1,
        env_kwargs: dict[str, Any] | None = None,
        vec_env_cls: type[VecEnv] | None = None,
        seed: int | None = None,
        n_eval_episodes: int = 10,
        deterministic_eval: bool = True,
    ) -> None:
        super().__init__()
        if n_envs < 1:
            raise ValueError(f"n_envs: must be >= 1, got {n_envs}")
        if n_eval_episodes < 1:
            raise ValueError(f"n_eval_episodes: must be >= 1, got {n_eval_episodes}")
        self._sources: dict[str, EnvSource | None] = {
            "fit": train_env,
            "validate": val_env,
            "test": test_env,
            "predict": predict_env,
        }
        for source in self._sources.values():
            if isinstance(source, str):
                check_env_id(source)  # fail at construction, not deep inside fit
        self.monitor_wrapper = monitor_wrapper
        self.verbose = verbose
        self.n_envs = n_envs
        self.env_kwargs = dict(env_kwargs or {})
        self.vec_env_cls = vec_env_cls
        self.seed = seed
        self.n_eval_episodes = n_eval_episodes
        self.deterministic_eval = deterministic_eval
        self._envs: dict[str, VecEnv] = {}
        self._owned: set[str] = set()

    # ------------------------------------------------------------------ env access

    @property
    def train_env(self) -> VecEnv | None:
        return self.get_env("fit")

    @property
    def val_env(self) -> VecEnv | None:
        return self.get_env("validate")

    @property
    def test_env(self) -> VecEnv | None:
        return self.get_env("test")

    @property
    def predict_env(self) -> VecEnv | None:
        return self.get_env("predict")

    def _source(self, stage: str) -> EnvSource | None:
        source = self._sources[stage]
        if source is None and stage in ("validate", "test", "predict"):
            fit_source = self._sources["fit"]
            # an env id or factory can be instantiated again; a live env cannot be shared with evaluation
            if isinstance(fit_source, str) or (callable(fit_source) and not _is_env(fit_source)):
                return fit_source
        return source

    def setup(self, stage: str | None = None) -> None:
        """Resolve and wrap environments for the requested stage.

        Called automatically by Lightning before each stage, or can be called manually.
        """
        stages = _STAGES if stage is None else (_LIGHTNING_STAGE_ALIASES.get(stage, stage),)
        for name in stages:
            if name in self._envs:
                continue
            source = self._source(name)
            if source is None:
                continue
            training = name == "fit"
            seed = None if self.seed is None else self.seed + STAGE_SEED_OFFSETS[name] + RANK_SEED_STRIDE * self._rank()
            env = to_vec_env(
                source,
                n_envs=self.n_envs if training and not _is_env(source) else 1,
                seed=seed,
                monitor_wrapper=self.monitor_wrapper,
                env_kwargs=self.env_kwargs,
                vec_env_cls=self.vec_env_cls,
            )
            self._envs[name] = env
            if env is not source:
                self._owned.add(name)

    def _rank(self) -> int:
        """This process's rank in a multi-process run (0 otherwise): each rank collects its own episodes."""
        return int(self.trainer.global_rank) if self.trainer is not None else 0

    def teardown(self, stage: str | None = None) -> None:
        """Release resolved environments for the requested stage."""
        stages = _STAGES if stage is None else (_LIGHTNING_STAGE_ALIASES.get(stage, stage),)
        for name in stages:
            self._close(name)

    def on_exception(self, exception: BaseException) -> None:
        """Ensure vectorized envs are closed when Lightning aborts the run."""
        self.close()

    def get_env(self, stage: Stage, *, resolve: bool = True) -> VecEnv | None:
        """Return the environment configured for ``stage``.

        :param stage: Lightning stage name
        :param resolve: whether to call :meth:`setup` before reading the stage env
        """
        if stage not in _STAGES:
            raise ValueError(f"stage: unknown stage {stage!r}; valid choices: {', '.join(_STAGES)}")
        if resolve and stage not in self._envs:
            self.setup(stage)
        return self._envs.get(stage)

    def close(self) -> None:
        """Close all resolved environments and free resources."""
        for name in list(self._envs):
            self._close(name)

    def _close(self, name: str) -> None:
        env = self._envs.pop(name, None)
        if env is not None and name in self._owned:
            env.close()
        self._owned.discard(name)

    # ------------------------------------------------------------------ no dataloaders

    def _no_dataloader(self, stage: str) -> None:
        raise TypeError(
            f"RLEnvDataModule exposes envs, not {stage} dataloaders: use get_env({_hook_stage(stage)!r}) "
            f"(RLTrainer does this for you)"
        )

    def train_dataloader(self) -> None:
        """RLEnvDataModule exposes envs, not training dataloaders."""
        self._no_dataloader("training")

    def val_dataloader(self) -> None:
        """RLEnvDataModule exposes envs, not validation dataloaders."""
        self._no_dataloader("validation")

    def test_dataloader(self) -> None:
        """RLEnvDataModule exposes envs, not test dataloaders."""
        self._no_dataloader("test")

    def predict_dataloader(self) -> None:
        """RLEnvDataModule exposes envs, not predict dataloaders."""
        self._no_dataloader("predict")

    # ------------------------------------------------------------------ persistence

    def state_dict(self) -> dict[str, Any]:
        """Persist serializable datamodule config and env specs, never live env instances."""
        return {
            "env_ids": {stage: env_spec_of(source) for stage, source in self._sources.items()},
            "n_envs": self.n_envs,
            "env_kwargs": self.env_kwargs,
            "seed": self.seed,
            "n_eval_episodes": self.n_eval_episodes,
            "deterministic_eval": self.deterministic_eval,
            "monitor_wrapper": self.monitor_wrapper,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore serializable env specs and datamodule config from checkpoint state."""
        for stage, env_id in state_dict.get("env_ids", {}).items():
            if self._sources.get(stage) is None and env_id is not None:
                self._sources[stage] = env_id
        for key in ("n_envs", "env_kwargs", "seed", "n_eval_episodes", "deterministic_eval", "monitor_wrapper"):
            if key in state_dict:
                setattr(self, key, state_dict[key])

    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: Any,
        map_location: Any = None,
        hparams_file: Any = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> RLEnvDataModule:
        """Load the datamodule and then restore env specs through :meth:`load_state_dict`; safe by default as
        the algorithms' ``load_from_checkpoint`` (``weights_only=True`` with lit_sb3's allow-list)."""
        from lit_sb3.common.allow_list import is_trusted
        from lit_sb3.common.safe_load import trusted_checkpoint
        from lit_sb3.lightning_compat import load_checkpoint_file as pl_load

        if weights_only is None:
            weights_only = not is_trusted()
        local = isinstance(checkpoint_path, (str, Path)) and "://" not in str(checkpoint_path)
        datamodule = cls(**kwargs)
        with trusted_checkpoint(checkpoint_path if local and weights_only else None):
            checkpoint = pl_load(checkpoint_path, map_location=map_location, weights_only=weights_only)
        state = checkpoint.get(cls.__qualname__)
        if state is not None:
            datamodule.load_state_dict(state)
        return datamodule


def _is_env(source: Any) -> bool:
    return hasattr(source, "step") and hasattr(source, "reset")


def _hook_stage(stage: str) -> str:
    return {"training": "fit", "validation": "validate"}.get(stage, stage)
