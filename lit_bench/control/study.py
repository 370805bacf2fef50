"""An Optuna study of a sweep: its search space, sampler, pruner and storage, read from the sweeper's config, and a
trial's job's side of it.

Used by the project's Hydra sweeper (``hydra_plugins.lit_optuna_sweeper``) and by each trial's job. Samplers and
pruners are named (``tpe``, ``random``, ``cmaes``, ``gp``, ``qmc``; ``none``, ``median``, ``percentile``, ``halving``,
``hyperband``, ``threshold``) and mapped to Optuna's classes here, so a config names data, never code. Pruners count
steps in env steps: a trial reports each evaluation at its env step.

A trial's job: the sweeper gives each of its jobs ``hpo.study``, ``hpo.storage`` and ``hpo.trial``. After each
evaluation :class:`TrialReporter` sets the trial's intermediate value at the env step (the aggregate over the trial's
seeds that have reached that step) and asks the study's pruner; a prune is acted on at the next checkpoint boundary
(``lit_bench.run.stopping``), like a signal: the checkpoint is written there and :class:`Pruned` raised, which the run
records as status ``pruned``. Optuna is imported only by the sweeper and by trial jobs.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from lit_bench.config.checks import ConfigError
from lit_bench.stats import SEED_AGGREGATES
from lit_bench.store.rundir import RunDir

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution

SAMPLERS = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "cmaes": "CmaEsSampler",
    "gp": "GPSampler",
    "qmc": "QMCSampler",
}
PRUNERS = {
    "none": "NopPruner",
    "median": "MedianPruner",
    "percentile": "PercentilePruner",
    "halving": "SuccessiveHalvingPruner",
    "hyperband": "HyperbandPruner",
    "threshold": "ThresholdPruner",
}
DIRECTIONS = ("maximize", "minimize")
#: keys that say where a run is written, which runs it is and whether finished work is redone: never searched, and a
#: study's trial (data from its storage, which others may write) never sets them
PLACEMENT_KEYS = ("out_dir", "sweep", "force", "backend")
JOURNAL_SUFFIX = ".journal"


def _named(kind: str, spec: Mapping[str, Any] | None, names: dict[str, str], module: Any) -> Any:
    """The Optuna object ``spec`` names (``{name: tpe, seed: 0, ...}``: the rest are its keyword arguments)."""
    from optuna.exceptions import ExperimentalWarning

    options = dict(spec or {})
    name = str(options.pop("name", "none" if kind == "pruner" else "tpe"))
    if name not in names:
        raise ConfigError(f"hydra.sweeper.{kind}.name={name}: choose one of {', '.join(names)}")
    try:
        with warnings.catch_warnings():  # QMC / GP / PED-ANOVA are "experimental" in Optuna's words, and work
            warnings.simplefilter("ignore", category=ExperimentalWarning)
            return getattr(module, names[name])(**options)
    except (TypeError, ValueError, ImportError) as error:
        raise ConfigError(f"hydra.sweeper.{kind} ({name}): {error}") from None


def make_sampler(spec: Mapping[str, Any] | None, offset: int = 0) -> optuna.samplers.BaseSampler:
    """The sampler; its seed moved on by ``offset`` (the trials the study already has), so that a resumed study
    draws new points instead of repeating the first ones."""
    import optuna

    options = dict(spec or {})
    if options.get("seed") is not None:
        options["seed"] = int(options["seed"]) + offset
    return _named("sampler", options, SAMPLERS, optuna.samplers)


def make_pruner(spec: Mapping[str, Any] | None) -> optuna.pruners.BasePruner:
    import optuna

    return _named("pruner", spec, PRUNERS, optuna.pruners)


def _number(value: Any) -> float | int:
    return value if isinstance(value, int) and not isinstance(value, bool) else float(value)


def distribution_from_mapping(key: str, spec: Mapping[str, Any]) -> BaseDistribution:
    """Optuna's distribution from YAML: ``{type: float, low, high, log, step}``, ``{type: int, ...}`` or
    ``{type: categorical, choices: [...]}``."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    kind = spec.get("type")
    try:
        if kind == "categorical":
            return CategoricalDistribution(list(spec["choices"]))
        if kind == "float":
            step = spec.get("step")
            return FloatDistribution(
                float(spec["low"]),
                float(spec["high"]),
                log=bool(spec.get("log", False)),
                step=None if step is None else float(step),
            )
        if kind == "int":
            return IntDistribution(
                int(spec["low"]), int(spec["high"]), log=bool(spec.get("log", False)), step=int(spec.get("step", 1))
            )
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(f"hydra.sweeper.params.{key}: {type(error).__name__}: {error}") from None
    raise ConfigError(f"hydra.sweeper.params.{key}.type={kind}: choose one of float, int, categorical")


def distribution_from_sweep(key: str, sweep: Any) -> BaseDistribution:
    """Optuna's distribution from Hydra's sweep syntax: ``choice(...)`` / ``a,b,c``, ``interval(lo, hi)`` (floats;
    ``tag(int, ...)`` for integers), ``range(start, stop[, step])`` (stop excluded), ``tag(log, ...)`` for a log
    scale. Bounds Optuna refuses (low > high, low <= 0 on a log scale) are one line naming ``key``."""
    try:
        return _sweep_distribution(key, sweep)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:  # Optuna's own checks of the bounds
        raise ConfigError(f"{key}: {error}") from None


def _sweep_distribution(key: str, sweep: Any) -> BaseDistribution:
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    log = "log" in sweep.tags
    if isinstance(sweep, ChoiceSweep):
        return CategoricalDistribution([_plain(choice) for choice in sweep.list])
    if isinstance(sweep, IntervalSweep):
        if sweep.start is None or sweep.end is None:
            raise ConfigError(f"{key}: {sweep} needs both ends, e.g. interval(1e-5, 1e-2)")
        if "int" in sweep.tags:
            return IntDistribution(int(sweep.start), int(sweep.end), log=log)
        return FloatDistribution(float(sweep.start), float(sweep.end), log=log)
    if isinstance(sweep, RangeSweep):
        start, stop, step = sweep.start, sweep.stop, sweep.step
        if start is None or stop is None or step is None:
            raise ConfigError(f"{key}: {sweep} needs a start and a stop, e.g. range(1, 10)")
        if isinstance(start, int) and isinstance(stop, int) and isinstance(step, int):
            return IntDistribution(start, stop - step, log=log, step=1 if log else step)
        count = math.floor((stop - start) / step - 1e-9)
        return FloatDistribution(float(start), float(start + count * step), step=float(step))
    raise ConfigError(f"{key}: {sweep} is not a search space; use choice(...), interval(...) or range(...)")


def _plain(choice: Any) -> Any:
    """A choice as Optuna stores it (None, bool, int, float or str)."""
    return choice if choice is None or isinstance(choice, (bool, int, float, str)) else str(choice)


def search_space(
    params: Mapping[str, Any] | None, arguments: list[str]
) -> tuple[dict[str, BaseDistribution], list[str]]:
    """(distributions by key, the fixed overrides): ``params`` from the sweeper's config, then the command line's
    sweep overrides (which win); the command line's other overrides are passed to every trial unchanged, and one
    that sets a key of ``params`` takes it out of the search (``algo.gamma=0.99`` fixes it)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    space: dict[str, BaseDistribution] = {}
    for key, value in (params or {}).items():
        check_searchable(str(key), f"hydra.sweeper.params.{key}")
        if isinstance(value, Mapping):
            space[str(key)] = distribution_from_mapping(str(key), value)
        else:
            override = parser.parse_override(f"{key}={value}")
            if not override.is_sweep_override():
                raise ConfigError(
                    f"hydra.sweeper.params.{key}={value}: not a search space; use choice(...), "
                    f"interval(...) or range(...)"
                )
            space[str(key)] = distribution_from_sweep(str(key), override.value())
    fixed = []
    for override in parser.parse_overrides(arguments):
        line = override.input_line
        assert line is not None  # parse_overrides keeps each override's text
        if override.is_sweep_override():
            check_searchable(override.get_key_element(), line)
            space[override.get_key_element()] = distribution_from_sweep(line, override.value())
        else:
            fixed.append(line)
            space.pop(override.get_key_element(), None)
    if not space:
        raise ConfigError(
            "the search space is empty: give it in hydra.sweeper.params or on the command line, e.g. "
            "'algo.learning_rate=tag(log, interval(1e-5, 1e-2))'"
        )
    return space, fixed


def check_searchable(key: str, where: str) -> None:
    """Refuse a search-space key that places runs or configures Hydra (one line naming ``where``)."""
    bare = key.lstrip("+~")
    if bare in PLACEMENT_KEYS or bare.split(".")[0] == "hydra":
        raise ConfigError(
            f"{where}: {bare} is not a hyperparameter ({', '.join(PLACEMENT_KEYS)} and hydra.* place runs); "
            f"search the algorithm's or env's keys"
        )


def _holds(distribution: BaseDistribution, value: Any) -> bool:
    """Whether ``value`` is one ``distribution`` can give: its type (no bool for a number) and its range / step."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if isinstance(distribution, CategoricalDistribution):
        return any(type(value) is type(choice) and value == choice for choice in distribution.choices)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if isinstance(distribution, IntDistribution):
        low, high, step = distribution.low, distribution.high, distribution.step
        return number and float(value).is_integer() and low <= value <= high and (int(value) - low) % step == 0
    if isinstance(distribution, FloatDistribution):
        on_step = distribution.step is None or math.isclose(
            (value - distribution.low) / distribution.step, round((value - distribution.low) / distribution.step)
        )
        return number and distribution.low <= value <= distribution.high and on_step
    return False


def checked_trial(trial: Any, space: Mapping[str, BaseDistribution] | None, seeds: list[int]) -> list[int]:
    """Check a trial read from the study's storage (a journal or database others may write: data, never a command
    line); returns its seeds. Each param must be a searchable key, hold no interpolation (``${...}`` would be
    resolved by Hydra) and, with ``space`` (a trial about to run), be a key of the search space with a value of its
    distribution; its seeds must be integers. Anything else is one line naming the trial and the param."""
    where = f"study trial {trial.number}"
    for key, value in trial.params.items():
        said = f"{where}: param {key}={value!r}"
        check_searchable(str(key), said)
        if isinstance(value, str) and "${" in value:
            raise ConfigError(f"{said} is an interpolation; a trial's params are values, never resolved")
        if space is None:
            continue
        if key not in space:
            raise ConfigError(f"{said} is not in the search space ({', '.join(space)}); use another study_name")
        if not _holds(space[key], value):
            raise ConfigError(f"{said} is not a value of the search space's {space[key]}; use another study_name")
    own = trial.user_attrs.get("seeds", seeds)
    if not isinstance(own, list) or not own or not all(type(s) is int for s in own):
        raise ConfigError(f"{where}: user attr seeds={own!r} is not a list of integer seeds; use another study_name")
    return own


def override_value(value: Any) -> str:
    """A sampled value as a Hydra override value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value)
    return text if text.replace("_", "").replace(".", "").replace("-", "").isalnum() else repr(text)


def default_storage(sweep_dir: Path) -> str:
    """A journal file in the sweep directory: safe for parallel trials on one machine (or a shared file system)."""
    return str(sweep_dir / f"optuna{JOURNAL_SUFFIX}")


def open_storage(url: str) -> optuna.storages.BaseStorage:
    """``*.journal`` (a path): Optuna's journal file; anything else: an RDB URL (``sqlite:///x.db``,
    ``postgresql://...``)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    if url.endswith(JOURNAL_SUFFIX) and "://" not in url:
        Path(url).parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.JournalStorage(JournalFileBackend(url))
    return optuna.storages.RDBStorage(url)


def check_aggregate(name: str) -> str:
    if name not in SEED_AGGREGATES:
        raise ConfigError(f"hpo.aggregate={name}: choose one of {', '.join(SEED_AGGREGATES)}")
    return name


# ---- a trial's job: its evaluations reported to the study, stopped when the pruner says so

_prune_requested_at: int | None = None  # env step of the evaluation after which the pruner stopped this run


class Pruned(BaseException):
    """Raised at a checkpoint boundary after the pruner said stop (not an Exception, as ``Interrupted``)."""

    def __init__(self, step: int) -> None:
        self.step = step
        super().__init__(f"pruned after the evaluation at {step} env steps")


def prune_requested() -> int | None:
    return _prune_requested_at


def stop_if_prune_requested() -> None:
    if _prune_requested_at is not None:
        raise Pruned(_prune_requested_at)


def _forget_prune_request() -> None:
    global _prune_requested_at
    _prune_requested_at = None


def trial_hooks(cfg: DictConfig, run_dir: RunDir) -> list[TrialReporter]:
    """The evaluation hooks of a trial's job (none outside an Optuna sweep)."""
    hpo = cfg.get("hpo")
    if hpo is None or hpo.get("trial") is None:
        return []
    _forget_prune_request()
    return [TrialReporter(cfg, run_dir)]


def _mean_return_at(run_dir: RunDir, step: int) -> float | None:
    for row in run_dir.eval_rows():
        if int(row["timesteps"]) == step:
            return float(row["mean_return"])
    return None


class TrialReporter:
    """``PeriodicEval`` hook: the trial's intermediate value at each evaluation, and the pruner's decision."""

    def __init__(self, cfg: DictConfig, run_dir: RunDir) -> None:
        import optuna
        from hydra.core.hydra_config import HydraConfig

        from lit_bench.config.identity import resolved, run_path

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.run_dir = run_dir
        self.storage = open_storage(str(cfg.hpo.storage))
        pruner_spec: Any = None
        with contextlib.suppress(ValueError):  # no Hydra (run() called from Python): no pruner known here
            pruner_spec = OmegaConf.to_container(HydraConfig.get().sweeper.get("pruner") or {})
        self.pruner = make_pruner(pruner_spec)
        self.study = optuna.load_study(study_name=str(cfg.hpo.study), storage=self.storage, pruner=self.pruner)
        self.trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study._study_id, int(cfg.hpo.trial))
        self.how = check_aggregate(str(cfg.hpo.aggregate))
        seeds = checked_trial(self.storage.get_trial(self.trial_id), None, [int(cfg.seed)])
        config = resolved(cfg)
        self.seeds = [RunDir(run_path({**config, "seed": s})) for s in seeds if s != int(cfg.seed)]

    def __call__(self, model: Any, row: dict[str, Any]) -> None:
        from optuna.trial import TrialState

        from lit_bench.stats import seeds_value

        global _prune_requested_at
        step = int(row["timesteps"])
        trial = self.storage.get_trial(self.trial_id)
        if trial.state != TrialState.RUNNING:
            return  # told already (e.g. another seed's job failed): nothing to report to
        values = [float(row["mean_return"])]
        values += [v for v in (_mean_return_at(r, step) for r in self.seeds) if v is not None]
        self.storage.set_trial_intermediate_value(self.trial_id, step, seeds_value(values, self.how))
        sibling_pruned = any((r.read_summary() or {}).get("status") == "pruned" for r in self.seeds)
        if sibling_pruned or self.pruner.prune(self.study, self.storage.get_trial(self.trial_id)):
            _prune_requested_at = step
