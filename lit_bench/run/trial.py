"""The job's side of an Optuna trial: report every evaluation to the study as it happens, stop when pruned.

The sweeper (``hydra_plugins.lit_optuna_sweeper``) gives each trial's jobs ``hpo.study``, ``hpo.storage`` and
``hpo.trial``. After each evaluation :class:`TrialReporter` sets the trial's intermediate value at the env step (the
aggregate over the trial's seeds that have reached that step) and asks the study's pruner; a prune is acted on at the
next checkpoint boundary (``lit_bench.stopping``), like a signal: the checkpoint is written there and :class:`Pruned`
raised, which ``train.run`` records as status ``pruned``. Optuna is imported only by trial jobs.
"""

from __future__ import annotations

import contextlib
from typing import Any

from omegaconf import DictConfig, OmegaConf

from lit_bench.store.rundir import RunDir

_requested: int | None = None  # env step of the evaluation after which the pruner stopped this run


class Pruned(BaseException):
    """Raised at a checkpoint boundary after the pruner said stop (not an Exception, as ``Interrupted``)."""

    def __init__(self, step: int) -> None:
        self.step = step
        super().__init__(f"pruned after the evaluation at {step} env steps")


def requested() -> int | None:
    return _requested


def stop_if_requested() -> None:
    if _requested is not None:
        raise Pruned(_requested)


def reset() -> None:
    global _requested
    _requested = None


def trial_hooks(cfg: DictConfig, run_dir: RunDir) -> list[TrialReporter]:
    """The evaluation hooks of a trial's job (none outside an Optuna sweep)."""
    hpo = cfg.get("hpo")
    if hpo is None or hpo.get("trial") is None:
        return []
    reset()
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
        from lit_bench.control import study as studies

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.run_dir = run_dir
        self.storage = studies.open_storage(str(cfg.hpo.storage))
        pruner_spec: Any = None
        with contextlib.suppress(ValueError):  # no Hydra (run() called from Python): no pruner known here
            pruner_spec = OmegaConf.to_container(HydraConfig.get().sweeper.get("pruner") or {})
        self.pruner = studies.make_pruner(pruner_spec)
        self.study = optuna.load_study(study_name=str(cfg.hpo.study), storage=self.storage, pruner=self.pruner)
        self.trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study._study_id, int(cfg.hpo.trial))
        self.how = studies.check_aggregate(str(cfg.hpo.aggregate))
        seeds = studies.checked_trial(self.storage.get_trial(self.trial_id), None, [int(cfg.seed)])
        config = resolved(cfg)
        self.seeds = [RunDir(run_path({**config, "seed": s})) for s in seeds if s != int(cfg.seed)]

    def __call__(self, model: Any, row: dict[str, Any]) -> None:
        from optuna.trial import TrialState

        from lit_bench.stats import seeds_value

        global _requested
        step = int(row["timesteps"])
        trial = self.storage.get_trial(self.trial_id)
        if trial.state != TrialState.RUNNING:
            return  # told already (e.g. another seed's job failed): nothing to report to
        values = [float(row["mean_return"])]
        values += [v for v in (_mean_return_at(r, step) for r in self.seeds) if v is not None]
        self.storage.set_trial_intermediate_value(self.trial_id, step, seeds_value(values, self.how))
        sibling_pruned = any((r.read_summary() or {}).get("status") == "pruned" for r in self.seeds)
        if sibling_pruned or self.pruner.prune(self.study, self.storage.get_trial(self.trial_id)):
            _requested = step
