"""Input checks that run before any env or network exists, each failing with one line that names the mistake.

A run's config is checked in two passes, both here: :func:`check_run_options` (seed, threads, intervals, flags,
``out_dir``, ``sweep``: they shape the run's directory, so they are checked before it is named) and
:func:`check_before_training` (the algorithm, its hyperparameters, the budget, the env's package, the loggers, the
evaluation video, the objective, the console, the processes, the trainer: before the directory changes). Only
:func:`check_spaces` waits for the env itself.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import os
import sys
import tempfile
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from lit_bench.stats import OBJECTIVE_METRICS
from lit_bench.store.format import FINAL_VIDEO

if TYPE_CHECKING:
    import gymnasium as gym
    from gymnasium import spaces
    from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm

    from lit_sb3.common.base import BaseAlgorithm

# Arguments the harness passes itself; a config must not set them.
HARNESS_ARGS = ("env", "seed", "verbose", "_init_setup_model")
BACKENDS = ("lit", "sb3")
VARIANT_BASE = "base"  # an algo config's reserved key: the algorithm a variant derives from (never an argument)


class ConfigError(ValueError):
    """A user mistake in the run's configuration: reported as one line, without a traceback."""


def check_before_training(cfg: DictConfig) -> tuple[type, int]:
    """Every check that needs no env, in one pass, before the run's directory changes: the algorithm class, its
    hyperparameters, the budget, the declared action space, the loggers' packages, the env's package, the evaluation
    video, the objective, the console, the processes, the precision and the trainer's options. Returns the algorithm
    class and the budget (the run options are checked before, by :func:`check_run_options`)."""
    algo_cls = algorithm_class(str(cfg.algo._target_), str(cfg.backend))
    check_hyperparameters(algo_cls, cfg.algo, str(cfg.algo_name))
    check_hyperparameter_values(algo_cls, cfg.algo)
    budget = check_budget(cfg.budget)
    check_declared_action_space(algo_cls, str(cfg.algo_name), str(cfg.env_name), str(cfg.env.action_space))
    check_loggers(cfg)
    require_package(cfg.env, str(cfg.env_name))  # a missing env family names its extra before any run dir changes
    check_eval_video(cfg.eval, cfg.env, str(cfg.env_name))
    check_objective(cfg.objective)
    check_console(str((cfg.get("console") or {}).get("progress", "auto")))
    check_processes(cfg, algo_cls)
    check_precision(cfg)
    check_trainer_options(cfg)
    return algo_cls, budget


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


# ---- the env: its package installed, its id registered, its frames renderable (gymnasium is imported only here: the
# sweep's parent process imports this module for check_out_dir and never pays for it)


def require_package(env_cfg: DictConfig, env_name: str) -> None:
    """Import the env's ``package`` (one module, or a list: the first registers its ids, the others are what its
    wrappers need); a missing one names the extra that installs it."""
    package = env_cfg.get("package")
    modules = [package] if isinstance(package, str) else list(package or [])
    try:
        for module in modules:
            importlib.import_module(str(module))
    except ImportError as error:
        extra = env_cfg.get("extra") or "envs"
        raise ConfigError(
            f"env={env_name} needs the '{extra}' extra (missing module {error.name!r}): pip install 'lit-sb3[{extra}]'"
        ) from None
    if uses_mujoco(env_cfg):
        refuse_broken_mujoco(env_name)


# Releases whose results are known to be wrong: 4.0.0's constraint solver (fixed in 4.0.1) changes MuJoCo returns.
BROKEN_MUJOCO = ("4.0.0",)


def uses_mujoco(env_cfg: DictConfig) -> bool:
    """Whether the env's registered entry point is a MuJoCo model (gymnasium's own, or a family's built on it)."""
    import gymnasium as gym

    env_id = env_cfg.get("id")
    spec = gym.envs.registry.get(str(env_id)) if env_id else None
    entry = spec.entry_point if spec is not None else None
    name = entry if isinstance(entry, str) else getattr(entry, "__module__", "")
    return "mujoco" in str(name).lower()


def refuse_broken_mujoco(env_name: str) -> None:
    try:
        installed = version("mujoco")
    except PackageNotFoundError:
        return
    if installed in BROKEN_MUJOCO:
        raise ConfigError(
            f"env={env_name}: mujoco=={installed} has a solver bug that changes MuJoCo results (fixed in 4.0.1); "
            "install another release: pip install 'mujoco!=4.0.0'"
        )


def env_source(env_cfg: DictConfig, env_name: str) -> str | Callable[..., gym.Env]:
    """The registered id, or the factory built from the ``make`` node (its package imported first)."""
    import gymnasium as gym
    from hydra.utils import instantiate

    require_package(env_cfg, env_name)
    if env_cfg.get("make") is not None:
        return instantiate(env_cfg.make)
    if not env_cfg.get("id"):
        raise ConfigError(f"env={env_name}: give either env.id (a registered id) or env.make (a factory node)")
    env_id = str(env_cfg.id)
    if env_id not in gym.envs.registry:
        raise ConfigError(f"env.id={env_id}: gymnasium has no such environment (env={env_name})")
    return env_id


def headless_rendering() -> None:
    """Off-screen rendering when no display exists (call before MuJoCo or pygame is imported); a user's choice wins:
    MuJoCo through EGL, and pygame (classic control, Box2D) on SDL's dummy video driver, which draws the same
    frames and does not probe for a display server ("XDG_RUNTIME_DIR is invalid" on a headless machine)."""
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


def check_renderable(env_cfg: Any, env_name: str) -> None:
    """The configured env must offer ``rgb_array`` rendering (checked on one throwaway instance, before training)."""
    import gymnasium as gym

    headless_rendering()
    source, kwargs = env_source(env_cfg, env_name), dict(env_cfg.get("kwargs") or {})
    env = gym.make(source, **kwargs) if isinstance(source, str) else source(**kwargs)
    try:
        modes = env.metadata.get("render_modes") or []
    finally:
        env.close()
    if "rgb_array" not in modes:
        raise ConfigError(f"video: env={env_name} cannot render frames (its render modes: {list(modes) or 'none'})")


# ---- what the run writes and shows besides its results: loggers, videos, the console, its processes

LOGGERS_EXTRA = "pip install -e '.[loggers]'"
_PACKAGE_OF = {"TensorBoardLogger": "tensorboard", "WandbLogger": "wandb"}  # Lightning logger -> what it imports


def check_loggers(cfg: DictConfig) -> None:
    """Every chosen logger's package is installed (one line naming the extra otherwise)."""
    for name, node in (cfg.logger.get("extra") or {}).items():
        package = _PACKAGE_OF.get(str(node.get("_target_", "")).rpartition(".")[2])
        if package and importlib.util.find_spec(package) is None:
            raise ConfigError(
                f"logger={name}: needs the {package} package, which is not installed; install the "
                f"loggers extra: {LOGGERS_EXTRA}"
            )


VIDEO_EXTRA = "video"
VIDEO_SUFFIXES = (".mp4", ".gif")


def check_video_deps(path: str | Path) -> None:
    """One line naming the extra when a module the video needs is missing (checked before any training)."""
    suffix = Path(path).suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ConfigError(f"video: {path} must end in {' or '.join(VIDEO_SUFFIXES)}")
    needed = ["imageio", "imageio_ffmpeg"] if suffix == ".mp4" else ["imageio", "PIL"]
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"video: {', '.join(missing)} not installed; install the extra: pip install -e '.[{VIDEO_EXTRA}]'"
        )


def check_eval_video(eval_cfg: Any, env_cfg: Any, env_name: str) -> None:
    """Video settings valid, video deps installed, the env able to render frames."""
    if not eval_cfg.get("video"):
        return
    every = eval_cfg.get("video_every")
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every <= 0):
        raise ConfigError(f"eval.video_every={every}: must be a positive number of evaluations (or null)")
    check_video_deps(FINAL_VIDEO)
    check_renderable(env_cfg, env_name)


CONSOLE_MODES = ("auto", "bar", "lines", "off")  # console.progress (lit_bench.run.console)


def check_console(progress: str) -> None:
    """``console.progress`` is one of ``CONSOLE_MODES``."""
    if progress not in CONSOLE_MODES:
        raise ConfigError(f"console.progress={progress}: choose one of {', '.join(CONSOLE_MODES)}")


def requested_devices(cfg: DictConfig) -> int:
    """The processes ``trainer.devices`` asks for (1 for ``auto``)."""
    devices = cfg.trainer.get("devices", 1)
    return int(devices) if str(devices).isdigit() else 1


def check_processes(cfg: DictConfig, algo_cls: type) -> None:
    """``trainer.devices > 1`` needs the lit backend, strategy ddp, one run (not a sweep) and an algorithm that
    trains in several processes (``multi_process_update``: the on-policy ones)."""
    devices = requested_devices(cfg)
    if str(cfg.trainer.get("devices", 1)) not in [str(devices), "auto"] or devices < 1:
        raise ConfigError(f"trainer.devices: a number of processes (1, 2, ...), got {cfg.trainer.get('devices')!r}")
    if devices == 1:
        return
    if str(cfg.backend) != "lit":
        raise ConfigError(f"trainer.devices={devices}: backend=sb3 trains in one process; use backend=lit")
    if str(cfg.trainer.get("strategy", "auto")) != "ddp":
        raise ConfigError(
            f"trainer.strategy: multi-process runs (trainer.devices={devices}) need trainer.strategy=ddp "
            f"(each process builds its own envs), got {cfg.trainer.get('strategy')!r}"
        )
    if not getattr(algo_cls, "multi_process_update", False):
        raise ConfigError(
            f"trainer.devices={devices}: {algo_cls.__name__} trains in one process (multi-process "
            f"training: PPO, A2C, TRPO, MaskablePPO, RecurrentPPO); run seeds in parallel with -m"
        )
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        raise ConfigError(
            f"trainer.devices={devices}: multi-process training runs one run per command (Lightning "
            f"starts the other processes by re-running it); drop -m, or use trainer.devices=1 in sweeps"
        )
