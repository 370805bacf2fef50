"""Input checks that run before any env or network exists, each failing with one line that names the mistake."""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from lit_bench.stats import OBJECTIVE_METRICS

if TYPE_CHECKING:
    from gymnasium import spaces
    from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm

    from lit_sb3.common.base import BaseAlgorithm

# Arguments the harness passes itself; a config must not set them.
HARNESS_ARGS = ("env", "seed", "verbose", "_init_setup_model")
BACKENDS = ("lit", "sb3")
VARIANT_BASE = "base"  # an algo config's reserved key: the algorithm a variant derives from (never an argument)


class ConfigError(ValueError):
    """A user mistake in the run's configuration: reported as one line, without a traceback."""


def algorithm_class(target: str, backend: str) -> type:
    """The class a config's ``_target_`` names, for ``backend`` (sb3: the SB3 / sb3-contrib class of that name)."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend={backend}: unknown backend; choose one of {', '.join(BACKENDS)}")
    module_name, _, name = target.rpartition(".")
    if backend == "sb3":
        for module_name in ("stable_baselines3", "sb3_contrib"):
            cls = getattr(importlib.import_module(module_name), name, None)
            if cls is not None:
                return cls
        raise ConfigError(f"algo: stable_baselines3 / sb3_contrib have no algorithm named {name}")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        raise ConfigError(f"algo: {target} is not available in this lit_sb3 (yet); try backend=sb3") from None


def sb3_equivalent(value: Any) -> Any:
    """A lit_sb3 class given as a hyperparameter (e.g. ``HerReplayBuffer``) -> SB3's class of the same name."""
    if isinstance(value, type) and value.__module__.startswith("lit_sb3"):
        import stable_baselines3

        return getattr(stable_baselines3, value.__name__, value)
    return value


#: the largest budget a run accepts: 10^11 env steps are 116 days at 10,000 env steps/s, faster than any SB3 /
#: lit_sb3 algorithm trains (a larger one could never finish, and would only train until killed)
MAX_BUDGET = 10**11


def check_objective(objective: Any) -> None:
    """``objective``: what a run gives back to a Hydra sweeper (``lit_bench.stats.objective``)."""
    if objective.metric not in OBJECTIVE_METRICS:
        raise ConfigError(f"objective.metric={objective.metric}: choose one of {', '.join(OBJECTIVE_METRICS)}")
    if objective.metric == "iqm_last" and int(objective.last) < 1:
        raise ConfigError(f"objective.last={objective.last}: must be >= 1 evaluations")


def check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ConfigError(f"budget={budget}: the env-step budget must be a positive integer")
    if budget > MAX_BUDGET:
        raise ConfigError(
            f"budget={budget}: more env steps than any run could finish (at most {MAX_BUDGET:.0e}, 116 days at "
            f"10,000 env steps/s)"
        )
    return budget


def constructor_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The named arguments the constructor accepts: its own, and, while it passes ``**kwargs`` on, those of the
    classes after it in the MRO (``MyPPO(*args, vf_coef=1.0, **kwargs)`` accepts PPO's arguments too); the first
    class naming an argument gives its default."""
    found: dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters  # type: ignore[misc]
        for name, param in params.items():
            if name != "self" and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                found.setdefault(name, param)
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            break
    return found


def check_hyperparameters(cls: type, algo_cfg: DictConfig, algo_name: str) -> None:
    """Every key of the algo config must be an argument of the algorithm's constructor (``base``: a variant's)."""
    accepted = [p for p in constructor_parameters(cls) if p not in HARNESS_ARGS]
    for key in algo_cfg:
        key = str(key)
        if (key.startswith("_") and key.endswith("_")) or key == VARIANT_BASE:
            continue  # _target_, _convert_, ...; base: what a variant derives from (lit_bench.config.sources)
        if key in HARNESS_ARGS:
            raise ConfigError(f"algo.{key}: set by the harness, not by the algo config ({cls.__name__})")
        if key not in accepted:
            close = difflib.get_close_matches(key, accepted, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; valid: {', '.join(accepted)}"
            raise ConfigError(f"algo.{key}: {cls.__name__} (algo={algo_name}) has no hyperparameter {key!r}{hint}")


def supported_action_spaces(cls: type) -> tuple[type[spaces.Space], ...] | None:
    """What the algorithm can act in: lit_sb3 classes say it; for SB3's, ask the lit_sb3 class of the same name."""
    supported = getattr(cls, "supported_action_spaces", None)
    if supported is None:
        lit_cls = getattr(importlib.import_module("lit_sb3"), cls.__name__, None)
        supported = getattr(lit_cls, "supported_action_spaces", None)
    return tuple(supported) if supported is not None else None


def check_declared_action_space(cls: type, algo_name: str, env_name: str, declared: str) -> None:
    """Compare the env config's ``action_space`` with what the algorithm supports, before building the env."""
    supported = supported_action_spaces(cls)
    if supported is not None and declared not in {s.__name__ for s in supported}:
        raise _unsupported_actions(cls, supported, algo_name, env_name, declared)


def _unsupported_actions(
    cls: type, supported: tuple[type, ...], algo_name: str, env_name: str, has: str
) -> ConfigError:
    names = ", ".join(s.__name__ for s in supported)
    return ConfigError(
        f"algo={algo_name} cannot act in env={env_name}: {cls.__name__} supports {names} actions, "
        f"{env_name} has {has} actions"
    )


def check_spaces(
    cls: type[BaseAlgorithm] | type[SB3Algorithm], algo_name: str, env_name: str, policy: Any, env: Any
) -> None:
    """After the env exists: its real action space, and Dict observations needing MultiInputPolicy."""
    from gymnasium import spaces  # here: the sweep's parent process imports this module (check_out_dir) lightly
    from sb3_contrib.common.maskable.utils import is_masking_supported

    supported = supported_action_spaces(cls)
    action_space = env.action_space
    if supported is not None and not isinstance(action_space, supported):
        raise _unsupported_actions(cls, supported, algo_name, env_name, type(action_space).__name__)
    if "use_masking" in inspect.signature(cls.learn).parameters and not is_masking_supported(env):
        raise ConfigError(
            f"algo={algo_name} acts on action masks: env={env_name} has no action_masks() method "
            f"(use a masked env, e.g. env=InvalidActionDiscrete)"
        )
    if isinstance(env.observation_space, spaces.Dict) and policy != "MultiInputPolicy":
        raise ConfigError(f"env={env_name} has Dict observations: set algo.policy=MultiInputPolicy (got {policy})")


def _positive_int(name: str, value: Any, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name}={value}: must be a positive integer" + (" or null" if optional else ""))


def check_out_dir(out_dir: Any) -> None:
    """``out_dir`` must be a directory this process can create files in."""
    path = Path(str(out_dir))
    if path.exists() and not path.is_dir():
        raise ConfigError(f"out_dir={out_dir}: is a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as error:
        raise ConfigError(f"out_dir={out_dir}: cannot write results there ({error.strerror})") from None


def check_sweep(sweep: Any, out_dir: Any) -> None:
    """``sweep`` names a directory below ``out_dir``: a relative path without ``..``, each part short enough for the
    file system (so that nothing is ever written outside ``out_dir``, and no mkdir fails mid-run)."""
    text = str(sweep)
    if not text.isprintable():  # a newline or other control character would split every line that names the sweep
        raise ConfigError(f"sweep={text!r}: a sweep name is printable text, without control characters (newlines)")
    parts = Path(text).parts
    if not text or Path(text).is_absolute() or ".." in parts or not parts:
        raise ConfigError(
            f"sweep={sweep}: a sweep name is a relative path below out_dir (e.g. sweep=ppo_tuning or "
            f"sweep=2026/ppo), without '..'; to write elsewhere, set out_dir="
        )
    try:
        name_max = os.pathconf(str(out_dir) if Path(str(out_dir)).is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    long = next((p for p in parts if len(os.fsencode(p)) > name_max), None)
    if long is not None:
        raise ConfigError(
            f"sweep={text[:40]}...: the part {long[:20]}... is {len(os.fsencode(long))} bytes, longer "
            f"than the file system's {name_max}; choose a shorter sweep name"
        )


def check_run_options(cfg: DictConfig) -> None:
    """The harness's own options (seed, threads, intervals, flags, out_dir)."""
    seed = cfg.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed={seed}: must be a non-negative integer (several: -m seed=0,1,2)")
    _positive_int("threads", cfg.get("threads"))
    _positive_int("env.n_envs", cfg.env.get("n_envs"))
    _positive_int("eval.episodes", cfg.eval.episodes)
    for name in ("log_interval", "eval.every", "checkpoint.every"):
        _positive_int(name, OmegaConf.select(cfg, name), optional=True)
    for name, optional in (("stop_timeout_s", False), ("step_timeout_s", True)):
        value = cfg.get(name)
        if not (optional and value is None) and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
        ):
            raise ConfigError(f"{name}={value}: must be a positive number of seconds" + (" or null" * optional))
    for name in ("eval.deterministic", "checkpoint.replay_buffer", "force"):
        value = OmegaConf.select(cfg, name)
        if not isinstance(value, bool):
            raise ConfigError(f"{name}={value}: must be true or false")
    check_out_dir(cfg.out_dir)
    check_sweep(cfg.sweep, cfg.out_dir)


_CLASS_NODE = "{_target_: hydra.utils.get_class, path: %s}"


def check_hyperparameter_values(cls: type, algo_cfg: DictConfig) -> None:
    """A string where the constructor wants a number, a flag or a class: caught here, not after the envs exist."""
    params = constructor_parameters(cls)
    for key, value in algo_cfg.items():
        key = str(key)
        if not isinstance(value, str) or key not in params:
            continue
        default = params[key].default
        if key.endswith("_class"):
            raise ConfigError(f"algo.{key}={value}: a class is a config node, not a string: {_CLASS_NODE % value}")
        if isinstance(default, bool):
            raise ConfigError(f"algo.{key}={value}: must be true or false")
        if isinstance(default, (int, float)):
            schedule = " or a schedule node ({_target_: stable_baselines3.common.utils.LinearSchedule, ...})"
            hint = schedule if "Schedule" in str(params[key].annotation) else ""
            raise ConfigError(f"algo.{key}={value}: must be a number{hint}")
    policy_kwargs = algo_cfg.get("policy_kwargs") or {}
    for key, value in policy_kwargs.items():
        if isinstance(value, str) and str(key).endswith(("_fn", "_class")):
            raise ConfigError(
                f"algo.policy_kwargs.{key}={value}: a class is a config node, not a string: {_CLASS_NODE % value}"
            )


# Lightning Trainer options that change how much is trained (or for how long): the budget is budget= env steps.
TRAINING_LENGTH_OPTIONS = (
    "max_epochs",
    "min_epochs",
    "max_steps",
    "min_steps",
    "max_time",
    "fast_dev_run",
    "overfit_batches",
    "limit_train_batches",
    "limit_val_batches",
    "limit_test_batches",
    "limit_predict_batches",
)


def check_trainer_options(cfg: DictConfig) -> None:
    """No ``trainer.*`` option may shorten or stretch a run: a run is complete only when it trained its budget."""
    for name in TRAINING_LENGTH_OPTIONS:
        if name in cfg.trainer:
            raise ConfigError(
                f"trainer.{name}={cfg.trainer[name]}: changes how many env steps are trained; the "
                f"harness trains exactly budget= env steps (set budget=, and eval.every= for "
                f"evaluations; remove trainer.{name})"
            )


_PRECISION_ALIASES = {"32": "32-true", "bf16": "bf16-mixed", "16": "16-mixed"}  # Lightning's short names


def check_precision(cfg: DictConfig) -> None:
    """``trainer.precision`` (lit backend) is one that RLTrainer trains with; checked before any env is built."""
    from lit_sb3.trainer import SUPPORTED_PRECISIONS

    precision = str(cfg.trainer.get("precision", "32-true"))
    if str(cfg.backend) == "lit" and _PRECISION_ALIASES.get(precision, precision) not in SUPPORTED_PRECISIONS:
        raise ConfigError(
            f"trainer.precision: one of {', '.join(SUPPORTED_PRECISIONS)} (16-mixed runs as bf16-mixed "
            f"on CPU; the policies compute in float32, so 64-true and *-true halves do not apply), "
            f"got {precision!r}"
        )
