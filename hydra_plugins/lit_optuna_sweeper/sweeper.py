"""The Optuna sweeper: asks the study for trials, launches each trial's jobs with the configured launcher, tells the
study how they ended.

Imported by Hydra in every process it starts (plugin discovery), so Optuna and lit_bench's study code are imported
only when a sweep runs. A trial is one job per seed (``hpo.seeds``); each job reports its evaluations to the study
itself (``lit_bench.control.study.TrialReporter``), so a pruner stops trials while they run, whichever launcher runs
them.
"""

import fcntl
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence  # noqa: UP035  (OmegaConf reads these annotations)

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


@dataclass
class LitOptunaSweeperConf:
    _target_: str = "hydra_plugins.lit_optuna_sweeper.sweeper.LitOptunaSweeper"
    direction: str = "maximize"
    n_trials: int = 20  # trials in the study in all: a rerun asks only the missing ones
    n_jobs: int = 2  # trials asked per batch (the launcher runs a batch's jobs in parallel)
    study_name: Optional[str] = None  # noqa: UP045  null: <sweep>/<algo dir>/<env>
    storage: Optional[str] = None  # noqa: UP045  null: <out_dir>/<sweep>/optuna.journal; or an RDB URL
    sampler: Dict[str, Any] = field(default_factory=lambda: {"name": "tpe"})  # noqa: UP006
    pruner: Dict[str, Any] = field(default_factory=lambda: {"name": "none"})  # noqa: UP006
    params: Dict[str, Any] = field(default_factory=dict)  # noqa: UP006  key: Hydra sweep syntax or Optuna spec


ConfigStore.instance().store(group="hydra/sweeper", name="lit_optuna", node=LitOptunaSweeperConf, provider="lit_bench")


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class LitOptunaSweeper(Sweeper):
    def __init__(
        self,
        direction: str,
        n_trials: int,
        n_jobs: int,
        study_name: Optional[str],  # noqa: UP045
        storage: str | None,
        sampler: Any,
        pruner: Any,
        params: Any,
    ) -> None:
        self.direction = direction
        self.n_trials = int(n_trials)
        self.n_jobs = max(int(n_jobs), 1)
        self.study_name = study_name
        self.storage = storage
        self.sampler = OmegaConf.to_container(sampler) if isinstance(sampler, DictConfig) else sampler
        self.pruner = OmegaConf.to_container(pruner) if isinstance(pruner, DictConfig) else pruner
        self.params = OmegaConf.to_container(params) if isinstance(params, DictConfig) else params
        self.job_idx = 0

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from lit_bench.config.checks import ConfigError

        try:
            return self._sweep(arguments)
        except ConfigError as error:
            print(f"Error: {error}", file=sys.stderr, flush=True)
            sys.exit(1)

    def _sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        import optuna

        from lit_bench.analysis.hpo import plot_study
        from lit_bench.config.checks import ConfigError
        from lit_bench.config.identity import sweep_path
        from lit_bench.control import study as studies
        from lit_bench.control.hpo_results import write_results

        if self.direction not in studies.DIRECTIONS:
            raise ConfigError(
                f"hydra.sweeper.direction={self.direction}: choose one of {', '.join(studies.DIRECTIONS)}"
            )
        if self.n_trials < 1:
            raise ConfigError(f"hydra.sweeper.n_trials={self.n_trials}: must be >= 1 (the study's trials in all)")
        space, fixed = studies.search_space(self.params, arguments)
        studies.make_pruner(self.pruner)  # a mistake in the pruner is found before any trial runs
        seeds = int(self.config.hpo.seeds)
        if seeds < 1:
            raise ConfigError(f"hpo.seeds={seeds}: must be >= 1")
        how = studies.check_aggregate(str(self.config.hpo.aggregate))
        seed_list = [int(self.config.seed) + k for k in range(seeds)]
        sweep_dir = sweep_path(self.config)
        url = self.storage or studies.default_storage(sweep_dir)
        name = self.study_name or self._default_study_name()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = studies.open_storage(url)
        with _study_lock(sweep_dir, name):
            study = optuna.create_study(study_name=name, storage=storage, direction=self.direction, load_if_exists=True)
            if study.direction.name.lower() != self.direction:
                raise ConfigError(
                    f"hydra.sweeper.direction={self.direction}: study {name} in {url} was created "
                    f"to {study.direction.name.lower()}; use another study_name or sweep="
                )
            study = optuna.load_study(
                study_name=name,
                storage=storage,
                sampler=studies.make_sampler(self.sampler, offset=len(study.trials)),
                pruner=studies.make_pruner(self.pruner),
            )
            returns = self._run(study, space, fixed, seed_list, how, url)
            rows, found = write_results(study, sweep_dir, url=url, metric=str(self.config.objective.metric), how=how)
            plot_study(rows, found, self.direction, sweep_dir / "report")
        return returns

    def _default_study_name(self) -> str:
        """``<sweep>/<algo dir>/<env>`` (the layout's names; Hydra's resolvers are not set up in the sweeper)."""
        from lit_bench.config.identity import algo_dir

        choices = self.config.hydra.runtime.choices
        algo = algo_dir(str(choices.get("algo")), str(self.config.backend), bool(self.config.parity))
        return f"{self.config.sweep}/{algo}/{choices.get('env')}"

    def _run(
        self,
        study: Any,
        space: dict[str, Any],
        fixed: list[str],
        seeds: List[int],  # noqa: UP006
        how: str,
        url: str,
    ) -> List[Sequence[JobReturn]]:  # noqa: UP006
        """Keep ``n_jobs`` trials running: a new one starts as soon as one ends (a pruned trial frees its worker at
        once). The basic launcher runs jobs in this process, one batch of ``n_jobs`` trials after the other."""
        from optuna.trial import TrialState

        from lit_bench.control import signals
        from lit_bench.control.study import checked_trial

        resumed = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))  # a killed sweep's trials
        for trial in study.get_trials(deepcopy=False):  # the storage is input: checked before anything runs
            checked_trial(trial, space if trial.state == TrialState.RUNNING else None, seeds)
        done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)))
        print(
            f"study {study.study_name} ({url}): {done} trials finished, {len(resumed)} to resume from their "
            f"checkpoints, {max(self.n_trials - done - len(resumed), 0)} new",
            flush=True,
        )
        lock = threading.Lock()
        state = {"started": done, "stopped": False}
        returns: List[Sequence[JobReturn]] = []  # noqa: UP006

        def take() -> Any:
            """The next trial to run (a resumed one first), or None when the study has all it needs."""
            if state["stopped"] or signals.pending() is not None or state["started"] >= self.n_trials:
                return None
            state["started"] += 1
            if resumed:
                return resumed.pop(0)
            trial = study.ask(space)
            study._storage.set_trial_user_attr(trial._trial_id, "seeds", seeds)
            return study._storage.get_trial(trial._trial_id)

        def launch(batch: List[Any]) -> None:  # noqa: UP006
            overrides = [
                self._overrides(fixed, trial, seed, len(seeds) > 1, study.study_name, url)
                for trial in batch
                for seed in checked_trial(trial, space, seeds)
            ]
            with lock:
                if self.job_idx == 0:
                    self.validate_batch_is_legal(overrides)
                first, self.job_idx = self.job_idx, self.job_idx + len(overrides)
            launched = self.launcher.launch(overrides, initial_job_idx=first)
            with lock:
                returns.append(launched)
                at = 0
                for trial in batch:
                    count = len(checked_trial(trial, space, seeds))
                    if not _tell(study, trial, launched[at : at + count], how):
                        state["stopped"] = True  # interrupted: it resumes from its checkpoint next time
                    at += count

        if type(self.launcher).__name__ == "BasicLauncher":
            while batch := [t for t in (take() for _ in range(self.n_jobs)) if t is not None]:
                launch(batch)
            return returns
        if hasattr(self.launcher, "ray_cfg"):  # Ray starts once, before the threads that launch on it
            from hydra_plugins.hydra_ray_launcher._launcher_util import start_ray

            start_ray(self.launcher.ray_cfg.init)

        def worker() -> None:
            while True:
                with lock:
                    trial = take()
                if trial is None:
                    return
                launch([trial])

        with ThreadPoolExecutor(max_workers=self.n_jobs) as pool:
            futures = [pool.submit(worker) for _ in range(self.n_jobs)]
            while wait(futures, timeout=0.5).not_done:  # (a timeout: signal handlers run in this thread)
                pass
            for future in futures:
                future.result()
        return returns

    @staticmethod
    def _overrides(
        fixed: list[str],
        trial: Any,
        seed: int,
        seeded: bool,
        study: str,
        url: str,
    ) -> List[str]:  # noqa: UP006
        from lit_bench.control.study import override_value

        keys = (
            {*trial.params, "seed", "hpo.study", "hpo.storage", "hpo.trial"}
            if seeded
            else {*trial.params, "hpo.study", "hpo.storage", "hpo.trial"}
        )
        kept = [line for line in fixed if line.split("=", 1)[0].lstrip("+~") not in keys]
        chosen = [f"{key}={override_value(value)}" for key, value in trial.params.items()]
        seed_override = [f"seed={seed}"] if seeded else []
        return [
            *kept,
            *chosen,
            *seed_override,
            f"hpo.study={_quoted(study)}",
            f"hpo.storage={_quoted(url)}",
            f"hpo.trial={trial.number}",
        ]


def _run_dir(ret: JobReturn) -> Optional[str]:  # noqa: UP045
    """The job's run directory: Hydra's output directory of the job (hydra.job.chdir is off)."""
    return None if ret.hydra_cfg is None else OmegaConf.select(ret.hydra_cfg, "hydra.runtime.output_dir")


def _tell(study: Any, trial: Any, returns: Sequence[JobReturn], how: str) -> int:
    """Tell the study how the trial's jobs ended; 1 when told, 0 when a job was interrupted (left running)."""
    from optuna.trial import TrialState

    from lit_bench.control.sweep import RunPruned
    from lit_bench.stats import seeds_value

    storage = study._storage
    storage.set_trial_user_attr(trial._trial_id, "run_dirs", [_run_dir(r) for r in returns])
    values, failed, pruned = [], False, None
    for ret in returns:
        result = ret._return_value
        if ret.status == JobStatus.FAILED:
            if isinstance(result, RunPruned):
                pruned = result.step
            else:
                failed = True
                storage.set_trial_user_attr(trial._trial_id, "error", str(result)[:500])
        elif result is None:
            return 0  # stopped by a signal (or the sweep was): resumed next time
        else:
            values.append(float(result))
    if failed:
        study.tell(trial.number, state=TrialState.FAIL)
    elif pruned is not None:
        storage.set_trial_user_attr(trial._trial_id, "pruned_at", pruned)
        study.tell(trial.number, state=TrialState.PRUNED)
    else:
        value = seeds_value(values, how)
        if value != value:  # NaN: a run without an evaluation has no score
            study.tell(trial.number, state=TrialState.FAIL)
        else:
            storage.set_trial_user_attr(trial._trial_id, "seed_values", values)
            study.tell(trial.number, value)
    return 1


class _study_lock:
    """One sweep at a time per study: a second one would resume the first one's running trials."""

    def __init__(self, sweep_dir: Path, name: str) -> None:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        self.path = sweep_dir / f".study-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.lock"
        self.name = name

    def __enter__(self) -> None:
        from lit_bench.config.checks import ConfigError

        self.handle = self.path.open("a")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.close()
            raise ConfigError(
                f"study {self.name}: another sweep is running it ({self.path} is locked); wait for "
                f"it or set hydra.sweeper.study_name"
            ) from None

    def __exit__(self, *exc: Any) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
