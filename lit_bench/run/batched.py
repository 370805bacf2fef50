"""A group's seeds trained together as ONE batched model (lit_sb3's ``SeedGroup``), each in its own run directory.

``refusal(cfg)`` says in one line why a config's seeds cannot be trained batched (None: they can);
``lit_bench.run.group`` then trains the group batched: each seed is opened as ``lit_bench.run.train.run`` opens a
run (its checks, lock, skip / resume / fresh, ``running`` summary: ``train.open_run``), the seeds that train are
built into one ``SeedGroup`` with the harness's envs (each seed's monitor files in its own directory) and algorithm
arguments, and :func:`train_together` trains them. Each seed gets what its own run writes: ``eval.csv`` and
``evaluations.npz`` (one batched evaluation of all seeds at every boundary, each seed's row written by its own
``PeriodicEval``, with the success rate where the env reports ``is_success``), ``train/metrics.csv``
(``SeedGroup.metrics``), its checkpoint (``checkpoints/last_seed_state.pt``: the seed's ``SeedGroup.seed_state`` and
VecNormalize statistics, tensors only), its best model (``checkpoints/best.ckpt``, as a run's: ``SeedGroup.model``
saved as the Trainer saves a model), ``summary.json`` and its place in the sweep's table. A seed that fails on its
own is recorded failed and the others train on without it (:func:`train_together`).

A batched seed draws the random numbers of the seed in its own process, but its batched kernels round differently
(``lit_sb3.seeds``): it is that run to float32 rounding, not to the last bit, so its config records ``batched: true``
(part of its identity; absent from it when false, so every other run keeps its id), and it resumes only in a group
(``lit_bench.run.checkpointing.other_kind_of_checkpoint``). It is the same run in any group: a seed's
numbers do not depend on the group's other seeds, so the seeds of a group that resume at different steps train as
one group per step, one after another, and a group whose other seeds completed trains the rest alone.

``cpu_time_s`` / ``cpu_fps`` of a batched seed: the group's process CPU time over its seeds (``cpu_time_note``).
Refused (not batched yet): videos, TensorBoard / W&B loggers (``lit_bench.control.seed_groups.config_refusal``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import lightning as L
import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, sync_envs_normalization

from lit_bench.config.budget import next_boundary
from lit_bench.config.checks import ConfigError, algorithm_class, check_spaces
from lit_bench.config.envs import make_envs, make_seed_envs
from lit_bench.control.seed_groups import config_refusal
from lit_bench.control.study import trial_hooks
from lit_bench.run.checkpointing import (
    BestCheckpoint,
    LitCheckpoint,
    install_checkpoint,
    resume_point,
    save_vecnormalize,
)
from lit_bench.run.console import ConsoleProgress, console_mode
from lit_bench.run.evaluation import Diverged, PeriodicEval, default_every
from lit_bench.run.outcome import failed, results
from lit_bench.run.stopping import LitStopOnSignal
from lit_bench.run.watchdog import EnvTimeout, StepWatchdog
from lit_bench.store.format import BATCHED_CHECKPOINT
from lit_bench.store.rundir import RunDir
from lit_sb3.common.seeding import EVAL_SEED_OFFSET
from lit_sb3.seeds.classic_envs import ClassicVecEnv

CPU_NOTE = "trained in a batched seed group of {n}: cpu_time_s and cpu_fps count the group's CPU time over its seeds"


def refusal(cfg: DictConfig) -> str | None:
    """Why seeds of ``cfg``'s config cannot be trained as one batched model, in one line naming the setting (None:
    they can): the config's own reasons first (``seed_groups.config_refusal``, which the launcher checked without
    importing lit_sb3), then lit_sb3's: the algorithm class, and a one-seed ``SeedGroup`` built on the config's env
    for anything else it refuses (its one-line reason)."""
    why = config_refusal(cfg)
    if why is not None:
        return why
    from lit_sb3.seeds import SeedGroup
    from lit_sb3.seeds.group import BATCHED

    try:
        algo_cls = algorithm_class(str(cfg.algo._target_), "lit")
    except ConfigError as error:
        return str(error)
    if not SeedGroup.batched(algo_cls):
        return f"algo={cfg.algo_name}: seed groups batch {', '.join(BATCHED)}, not {algo_cls.__name__}"
    return _probe(cfg, algo_cls)


def _probe(cfg: DictConfig, algo_cls: type) -> str | None:
    """What lit_sb3 refuses of this config: a one-seed group built on its env and algorithm arguments."""
    from lit_sb3.seeds import SeedGroup

    try:
        train_env, eval_env = make_envs(cfg.env, str(cfg.env_name), int(cfg.seed), cfg.algo.get("gamma"))
    except Exception as error:  # the run itself reports a broken env, in its own directory
        return f"env={cfg.env_name}: cannot be built ({type(error).__name__}: {error})"
    try:
        SeedGroup(algo_cls, seeds=[int(cfg.seed)], env=[train_env], **_algorithm_kwargs(cfg, train_env))
    except (ValueError, ConfigError) as error:
        return str(error).splitlines()[0]
    finally:
        train_env.close()
        eval_env.close()
    return None


def _algorithm_kwargs(cfg: DictConfig, env: VecEnv) -> dict[str, Any]:
    """The harness's algorithm arguments (``backends.algorithm_kwargs``) for a group's seeds."""
    from lit_bench.run.backends import algorithm_kwargs_for

    kwargs = algorithm_kwargs_for(cfg.algo, env.action_space, "lit")  # (parity=true: refused, never batched)
    kwargs.pop("verbose", None)
    return kwargs


@dataclass
class Seat:
    """One seed of a batched group: its config, run directory and how it starts (``train.Opened``'s fields)."""

    cfg: DictConfig
    run_dir: RunDir
    budget: int
    resume: bool
    started: float


class SeedsFailed(Exception):
    """Seeds of a batched group that failed on their own (their place in the group -> the one-line error, and the
    traceback of an unexpected error): the group stops there, and :func:`train_together` trains the others on
    without them."""

    def __init__(self, errors: dict[int, str], cause: BaseException | None = None) -> None:
        super().__init__("; ".join(f"seed #{i}: {error}" for i, error in errors.items()))
        self.errors = errors
        self.traceback = "".join(traceback.format_exception(cause)) if cause is not None else None


def _line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


class SeedEnv(VecEnvWrapper):
    """One seed's training env as its group steps it: an error in it fails that seed (``SeedsFailed``), not the
    group (the env watchdog's time-out stays the group's: it stops the process's training)."""

    def __init__(self, venv: VecEnv, index: int) -> None:
        super().__init__(venv)
        self.index = index

    def reset(self) -> Any:
        return self._as_the_seeds(self.venv.reset)

    def step_wait(self) -> Any:
        return self._as_the_seeds(self.venv.step_wait)

    def _as_the_seeds(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except EnvTimeout:
            raise
        except Exception as error:
            raise SeedsFailed({self.index: _line(error)}, error) from error


class Successes(VecEnvWrapper):
    """A seed's evaluation env, keeping the ``is_success`` of every episode end (as SB3's ``EvalCallback``: the
    env's info where ``done``). The group steps a seed's one-env evaluation env only while its episodes count, so
    these are its evaluation's."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.successes: list[float] = []

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        for done, info in zip(dones, infos):
            if done and "is_success" in info:
                self.successes.append(float(info["is_success"]))
        return obs, rewards, dones, infos


class GroupEval(BaseCallback):
    """The group's periodic evaluation (an SB3 callback of the ``SeedGroup``): at every multiple of ``every`` env
    steps, one batched evaluation of every seed, each seed's row written by its own ``PeriodicEval``. A seed whose
    evaluation is not finite (``Diverged``) fails alone (``SeedsFailed``), after every seed's row is written."""

    def __init__(self, evaluators: Sequence[PeriodicEval], eval_envs: Sequence[VecEnv], train_envs: Sequence[VecEnv]):
        super().__init__(verbose=0)
        self.evaluators = list(evaluators)
        # classic array envs report no is_success (their infos hold fixed keys); left unwrapped, the group plays
        # their evaluation episodes side by side (SeedGroup.evaluate)
        self.recorders = [None if isinstance(env.unwrapped, ClassicVecEnv) else Successes(env) for env in eval_envs]
        self.eval_envs = [env if recorder is None else recorder for env, recorder in zip(eval_envs, self.recorders)]
        self.inner_envs = list(eval_envs)
        self.train_envs = list(train_envs)
        first = self.evaluators[0]
        self.every, self.episodes, self.deterministic = first.every, first.episodes, first.deterministic
        self.next_eval = self.every

    def _init_callback(self) -> None:
        self.start(self.model.num_timesteps)

    def start(self, timesteps: int) -> None:
        self.next_eval = next_boundary(timesteps, self.every)
        for evaluator in self.evaluators:
            evaluator.start(timesteps)

    def _on_step(self) -> bool:
        for evaluator in self.evaluators:
            evaluator.first_step()
            if evaluator.progress is not None:
                evaluator.progress.step(self.num_timesteps)
        if self.num_timesteps >= self.next_eval:
            self.evaluate(self.model)
            self.next_eval = next_boundary(self.num_timesteps, self.every)
        return True

    def evaluate(self, group: Any) -> list[dict[str, Any]]:
        """Evaluate every seed of ``group`` now (batched) and write each seed's row."""
        from lit_bench.control import signals

        signals.stop_if_pending()  # a signal stops before a long evaluation (the checkpoint stays)
        timesteps = int(group.num_timesteps)
        clocks = [evaluator.begin_evaluation(timesteps) for evaluator in self.evaluators]
        for evaluator, train_env, env, recorder in zip(
            self.evaluators, self.train_envs, self.inner_envs, self.recorders
        ):
            if recorder is not None:
                recorder.successes = []
            sync_envs_normalization(train_env, env)
            if evaluator.seed is not None:
                env.seed(evaluator.seed)  # each evaluation sees the same episodes (as PeriodicEval's)
        results = group.evaluate(self.eval_envs, self.episodes, self.deterministic)
        rows, diverged = [], {}
        for evaluator, (begin, cpu_begin) in zip(self.evaluators, clocks):
            evaluator.end_evaluation(begin, cpu_begin)
        for i, (evaluator, recorder, (returns, lengths)) in enumerate(zip(self.evaluators, self.recorders, results)):
            try:
                successes = [] if recorder is None else recorder.successes
                rows.append(evaluator.write_row(None, timesteps, returns, lengths, successes))
            except Diverged as error:
                diverged[i] = str(error)
        if diverged:
            raise SeedsFailed(diverged)
        return rows


class GroupCheckpoint(LitCheckpoint):
    """Every seed's checkpoint at every multiple of ``every`` env steps (after the round's update) and at the end
    (``LitCheckpoint``'s boundaries): ``checkpoints/last_seed_state.pt`` (its ``seed_state`` and VecNormalize
    statistics), then ``state.json``; its training metrics so far go to ``train/metrics.csv`` at the same time."""

    def __init__(
        self,
        runs: Sequence[RunDir],
        envs: Sequence[VecEnv],
        every: int,
        wall_times: Sequence[Callable[[], float]],
        metrics: Callable[[], None],
    ) -> None:
        super().__init__(runs[0], every, wall_times[0])
        self.runs, self.envs, self.wall_times, self.metrics = list(runs), list(envs), list(wall_times), metrics

    def save(self, trainer: L.Trainer, pl_module: Any) -> None:
        from lit_sb3.common.resume import vecnormalize_state

        if pl_module.num_timesteps == self.saved_at:
            return
        self.metrics()
        for i, (run, env, wall_time) in enumerate(zip(self.runs, self.envs, self.wall_times)):
            state = {"seed_state": pl_module.seed_state(i), "vecnormalize": vecnormalize_state(env)}
            install_checkpoint(
                run, BATCHED_CHECKPOINT, functools.partial(torch.save, state), pl_module.num_timesteps, wall_time()
            )
            save_vecnormalize(env, run)
        self.saved_at = pl_module.num_timesteps


def read_checkpoint(run: RunDir) -> dict[str, Any]:
    """A batched seed's checkpoint, tensors and plain data only (``weights_only``)."""
    checkpoint: dict[str, Any] = torch.load(run.checkpoints / BATCHED_CHECKPOINT, weights_only=True)
    return checkpoint


def train_together(seats: Sequence[Seat]) -> list[dict[str, Any]]:
    """Train ``seats`` (one config's seeds, all starting at the same env step) as one ``SeedGroup`` to the budget,
    evaluating and checkpointing on the way and at the end; each seed's results for its summary, in order.

    A seed that fails on its own (an error in its env, an evaluation or training metrics that are not finite, an
    error with its parameters alone not finite) is recorded failed, its last checkpoint kept; the others train on
    without it from their last checkpoints (a seed's numbers do not depend on the seeds beside it: they end as if it
    had never been there). An error that cannot be told to one seed's fails them all."""
    cfg = seats[0].cfg
    watchdog = StepWatchdog(float(cfg.step_timeout_s)) if cfg.get("step_timeout_s") else None
    with watchdog or contextlib.nullcontext():
        return _train_surviving(seats, watchdog)


def _train_surviving(seats: Sequence[Seat], watchdog: StepWatchdog | None) -> list[dict[str, Any]]:
    try:
        return _train_together(seats, watchdog)
    except SeedsFailed as failure:
        kept = [i for i in range(len(seats)) if i not in failure.errors]
        for i, error in failure.errors.items():
            others = f"{len(kept)} other seed(s) train on from their last checkpoints" if kept else "no other seed left"
            print(f"seed {seats[i].cfg.seed}: failed in its batched group ({error}); {others}", flush=True)
        again = dict(zip(kept, _train_surviving([_restarted(seats[i]) for i in kept], watchdog) if kept else []))
        return [again.get(i) or failed({}, failure.errors[i], failure.traceback) for i in range(len(seats))]


def _restarted(seat: Seat) -> Seat:
    """A seed whose group stopped for another seed, made ready to train again: its directory cut back to its last
    checkpoint (to nothing without one), as a resumed run's."""
    step = resume_point(seat.run_dir, "lit", batched=True)
    seat.run_dir.truncate_eval(step or 0)
    seat.run_dir.stash_metrics(step or 0)
    seat.run_dir.truncate_monitor(step or 0, int(seat.cfg.env.n_envs))
    return Seat(seat.cfg, seat.run_dir, seat.budget, resume=step is not None, started=seat.started)


def _non_finite(group: Any) -> list[int]:
    """The seeds of ``group`` whose parameters are not all finite (none where that cannot be read)."""
    found = []
    for i in range(group.n_seeds):
        try:
            parameters = list(group.model(i).policy.parameters())
        except Exception:  # a group broken mid-update: nothing can be told
            return []
        if not all(bool(torch.isfinite(p).all()) for p in parameters):
            found.append(i)
    return found


def _train_together(seats: Sequence[Seat], watchdog: StepWatchdog | None) -> list[dict[str, Any]]:
    from lit_bench.run.backends import MetricsCSV
    from lit_sb3 import RLTrainer
    from lit_sb3.common.resume import set_vecnormalize_state
    from lit_sb3.seeds import SeedGroup

    cfg, budget, resume = seats[0].cfg, seats[0].budget, seats[0].resume
    every = int(cfg.eval.every or default_every(cfg, budget))
    algo_cls = algorithm_class(str(cfg.algo._target_), "lit")
    envs = make_seed_envs(
        cfg.env,
        str(cfg.env_name),
        [int(s.cfg.seed) for s in seats],
        cfg.algo.get("gamma"),
        monitor_dirs=[str(s.run_dir.monitor) for s in seats],
        append_monitor=resume,
        outer=watchdog.wrap if watchdog is not None else None,
    )
    train_envs, eval_envs = [e[0] for e in envs], [e[1] for e in envs]
    progresses: list[ConsoleProgress] = []
    try:
        check_spaces(algo_cls, str(cfg.algo_name), str(cfg.env_name), cfg.algo.get("policy"), train_envs[0])
        evaluators = []
        for s, eval_env in zip(seats, eval_envs):
            progresses.append(
                ConsoleProgress(
                    f"{s.cfg.algo_name} {s.cfg.env_name} seed {s.cfg.seed}",
                    budget,
                    every,
                    console_mode(s.cfg),
                    float((s.cfg.get("console") or {}).get("heartbeat_s", 60)),
                )
            )
            evaluators.append(
                PeriodicEval(
                    eval_env,
                    s.run_dir,
                    every,
                    int(s.cfg.eval.episodes),
                    bool(s.cfg.eval.deterministic),
                    wall_time_offset=s.run_dir.checkpoint_wall_time() if resume else 0.0,
                    seed=int(s.cfg.seed) + EVAL_SEED_OFFSET,
                    on_evaluated=trial_hooks(s.cfg, s.run_dir),
                    progress=progresses[-1],
                    share=len(seats),
                )
            )
        group = SeedGroup(
            algo_cls,
            seeds=[int(s.cfg.seed) for s in seats],
            env=[SeedEnv(env, i) for i, env in enumerate(train_envs)],
            **_algorithm_kwargs(cfg, train_envs[0]),
        )
        for i, (s, evaluator, eval_env) in enumerate(zip(seats, evaluators, eval_envs)):  # as a run's (fit.py)
            best = BestCheckpoint(s.run_dir, "lit", eval_env, model_of=functools.partial(group.model, i))
            evaluator.on_evaluated.insert(0, best)
        if cfg.get("log_interval") is not None:
            group.log_interval = int(cfg.log_interval)
        if resume:
            checkpoints = [read_checkpoint(s.run_dir) for s in seats]
            group.load_seed_states([c["seed_state"] for c in checkpoints])
            for env, saved in zip(train_envs, checkpoints):  # after the replay, which moved them
                set_vecnormalize_state(env, saved["vecnormalize"])
        csvs = [MetricsCSV(s.run_dir) for s in seats]

        def write_metrics() -> None:
            diverged: dict[int, str] = {}
            for i, csv in enumerate(csvs):
                kept = False
                for step, row in group.metrics(i):
                    kept = csv.add(row, {}, step) or kept
                    bad = not_finite(row)
                    if bad and i not in diverged:
                        diverged[i] = (
                            f"training diverged at env step {step}: {bad}; try a lower learning_rate or max_grad_norm"
                        )
                if kept:  # the rows of the boundary in one write (a write per row was quadratic in the file's rows)
                    csv.flush()
            if diverged:  # (before any checkpoint of this boundary is written)
                raise SeedsFailed(diverged)

        evaluation = GroupEval(evaluators, eval_envs, train_envs)
        checkpoint = GroupCheckpoint(
            [s.run_dir for s in seats],
            train_envs,
            int(cfg.checkpoint.every or every),
            [e.wall_time for e in evaluators],
            write_metrics,
        )
        trainer_node = OmegaConf.to_container(cfg.trainer, resolve=True)
        assert isinstance(trainer_node, dict)
        trainer_kwargs = {str(k): v for k, v in trainer_node.items()}
        trainer_kwargs.update(logger=False, enable_progress_bar=False)
        trainer = RLTrainer(
            max_steps=budget,
            rl_callback=evaluation,
            callbacks=[checkpoint, LitStopOnSignal(checkpoint)],
            default_root_dir=str(seats[0].run_dir.root),
            **trainer_kwargs,
        )
        try:
            trainer.fit(group)
        except SeedsFailed:
            raise
        except Exception as error:
            culprits = _non_finite(group)  # an error of seeds whose parameters alone are not finite: theirs
            if culprits and len(culprits) < len(seats):
                errors = {i: f"{_line(error)} (its parameters are not finite)" for i in culprits}
                raise SeedsFailed(errors, error) from error
            raise
        write_metrics()
        for s in seats:
            s.run_dir.merge_metrics()
        kept = [e.last_row for e in evaluators]
        lasts = [row for row in kept if row is not None and int(row["timesteps"]) >= group.num_timesteps]
        if len(lasts) < len(kept):
            lasts = evaluation.evaluate(group)  # the final score is always measured at the end of the budget
        return [
            _results(s, e, row, int(group.num_timesteps), len(seats))
            for s, e, row in zip(seats, evaluators, lasts, strict=True)
        ]
    finally:
        for progress in progresses:
            progress.close()
        for train_env, eval_env in envs:
            train_env.close()
            eval_env.close()


def not_finite(row: dict[str, Any]) -> dict[str, float]:
    """A seed's training metrics (one row) that are not finite, as SB3 names them; ``train/explained_variance`` is
    NaN whenever the returns do not vary (SB3's), so it is left out."""
    return {
        key: value
        for key, value in row.items()
        if key.startswith("train/")
        and key != "train/explained_variance"
        and isinstance(value, float)
        and not math.isfinite(value)
    }


def _results(seat: Seat, evaluator: PeriodicEval, last: Any, timesteps: int, n_seeds: int) -> dict[str, Any]:
    """One seed's results for its summary, as ``train.train_and_score`` gives a run's (and the CPU time's note)."""
    found = results(seat.cfg, seat.run_dir, evaluator, last, timesteps, seat.budget, seat.started)
    return {**found, "cpu_time_note": CPU_NOTE.format(n=n_seeds)} if found["status"] == "completed" else found
