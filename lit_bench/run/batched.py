"""A group's seeds trained together as ONE batched model (lit_sb3's ``SeedGroup``), each in its own run directory.

``refusal(cfg, n_seeds)`` says in one line why a group of a config's seeds cannot be trained batched (None: it can);
``lit_bench.run.group`` then trains the group batched: each seed is opened as ``lit_bench.run.train.run`` opens a
run (its checks, lock, skip / resume / fresh, ``running`` summary: ``train.open_run``), the seeds that train are
built into one ``SeedGroup`` with the harness's envs (each seed's monitor files in its own directory) and algorithm
arguments, and :func:`train_together` trains them. Each seed gets what its own run writes: ``eval.csv`` and
``evaluations.npz`` (one batched evaluation of all seeds at every boundary, each seed's row written by its own
``PeriodicEval``), ``train/metrics.csv`` (``SeedGroup.metrics``), its checkpoint (``checkpoints/last_seed_state.pt``:
the seed's ``SeedGroup.seed_state`` and VecNormalize statistics, tensors only), ``summary.json`` and its place in
the sweep's table.

A batched seed is another run than the seed in its own process (the group's random streams: ``lit_sb3.seeds``), so
its config records ``batched: true`` (part of its identity; absent from it when false, so every other run keeps its
id), and it resumes only in a group (:func:`other_kind_of_checkpoint`). It is the same run in any group: a seed's
numbers do not depend on the group's other seeds, so the seeds of a group that resume at different steps train as
one group per step, one after another, and a group whose other seeds completed trains the rest alone.

``cpu_time_s`` / ``cpu_fps`` of a batched seed: the group's process CPU time over its seeds (``cpu_time_note``).
Refused (not batched yet): videos, TensorBoard / W&B loggers. Not written yet: the best-model checkpoint
(``checkpoints/best.*``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import lightning as L
import torch
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

from lit_bench.config.budget import next_boundary
from lit_bench.config.checks import ConfigError, algorithm_class, check_spaces
from lit_bench.config.envs import make_envs
from lit_bench.run.checkpointing import LitCheckpoint, install_checkpoint, save_vecnormalize
from lit_bench.run.console import ConsoleProgress, console_mode
from lit_bench.run.evaluation import PeriodicEval, default_every
from lit_bench.run.outcome import results
from lit_bench.run.stopping import LitStopOnSignal
from lit_bench.run.trial import trial_hooks
from lit_bench.run.watchdog import StepWatchdog
from lit_bench.store.format import BATCHED_CHECKPOINT, LAST_FILES
from lit_bench.store.rundir import RunDir
from lit_sb3.common.seeding import EVAL_SEED_OFFSET

CPU_NOTE = "trained in a batched seed group of {n}: cpu_time_s and cpu_fps count the group's CPU time over its seeds"


def refusal(cfg: DictConfig, n_seeds: int) -> str | None:
    """Why a group of ``n_seeds`` seeds of ``cfg``'s config cannot be trained as one batched model, in one line
    naming the setting (None: it can). Cheap checks first; then a one-seed ``SeedGroup`` is built on the config's
    env, for anything else lit_sb3's seed groups refuse (its one-line reason)."""
    if n_seeds < 2:
        return f"seeds: a batched group trains 2 or more seeds of a config, this one has {n_seeds}"
    if str(cfg.backend) != "lit":
        return f"backend={cfg.backend}: seed groups batch lit_sb3's models (backend=lit)"
    trainer = cfg.get("trainer") or {}
    if str(trainer.get("accelerator", "cpu")) != "cpu" or trainer.get("devices", 1) not in (1, "1", "auto"):
        return (
            f"trainer.accelerator={trainer.get('accelerator')}, trainer.devices={trainer.get('devices')}: seed "
            f"groups train on one CPU (trainer.accelerator=cpu, trainer.devices=1)"
        )
    if str(trainer.get("precision", "32-true")) not in ("32-true", "32", "None"):
        return f"trainer.precision={trainer.get('precision')}: seed groups train in float32 (32-true)"
    from lit_sb3.seeds import SeedGroup
    from lit_sb3.seeds.group import BATCHED

    try:
        algo_cls = algorithm_class(str(cfg.algo._target_), "lit")
    except ConfigError as error:
        return str(error)
    if not SeedGroup.batched(algo_cls):
        return f"algo={cfg.algo_name}: seed groups batch {', '.join(BATCHED)}, not {algo_cls.__name__}"
    if str(cfg.algo.get("policy", "MlpPolicy")) != "MlpPolicy":
        return f"algo.policy={cfg.algo.policy}: seed groups batch MlpPolicy (CNN and multi-input policies: not yet)"
    if cfg.algo.get("use_sde"):
        return "algo.use_sde=true: seed groups do not batch gSDE exploration yet"
    if cfg.eval.get("video") or cfg.eval.get("video_every"):
        return "eval.video / eval.video_every: a batched group records no videos yet"
    extra = (cfg.get("logger") or {}).get("extra") or {}
    if extra:
        return f"logger={','.join(str(k) for k in extra)}: a batched group writes CSV metrics only (logger=csv)"
    if cfg.algo.get("buffer_size") is not None and not cfg.checkpoint.get("replay_buffer", True):
        return "checkpoint.replay_buffer=false: a batched seed's checkpoint always holds its replay buffer"
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

    kwargs = algorithm_kwargs_for(cfg.algo, env.action_space, "lit")
    if cfg.get("parity"):
        from lit_sb3 import sb3_parity

        kwargs["policy_kwargs"] = sb3_parity(kwargs.get("policy_kwargs"))
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


def other_kind_of_checkpoint(run_dir: RunDir, batched: bool) -> str | None:
    """The line refusing a checkpoint of the other kind (None: none there): a batched seed's checkpoint never
    resumes ungrouped, an ungrouped run's never resumes in a group (their random streams differ)."""
    theirs = [LAST_FILES["lit"], LAST_FILES["sb3"]] if batched else [BATCHED_CHECKPOINT]
    found = [name for name in theirs if (run_dir.checkpoints / name).exists()]
    if not found:
        return None
    kind = "an ungrouped run" if batched else "a seed trained in a batched group"
    way = "in its own process (seeds_per_process=1)" if batched else "in a batched group (seeds_per_process)"
    return (
        f"{run_dir.root}: holds the checkpoint of {kind} (checkpoints/{found[0]}), which resumes only {way}; "
        f"nothing was changed: move it, or force=true to train it again"
    )


class GroupEval(BaseCallback):
    """The group's periodic evaluation (an SB3 callback of the ``SeedGroup``): at every multiple of ``every`` env
    steps, one batched evaluation of every seed, each seed's row written by its own ``PeriodicEval``."""

    def __init__(self, evaluators: Sequence[PeriodicEval], eval_envs: Sequence[VecEnv], train_envs: Sequence[VecEnv]):
        super().__init__(verbose=0)
        self.evaluators = list(evaluators)
        self.eval_envs = list(eval_envs)
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
        for evaluator, train_env, eval_env in zip(self.evaluators, self.train_envs, self.eval_envs):
            sync_envs_normalization(train_env, eval_env)
            if evaluator.seed is not None:
                eval_env.seed(evaluator.seed)  # each evaluation sees the same episodes (as PeriodicEval's)
        results = group.evaluate(self.eval_envs, self.episodes, self.deterministic)
        rows = []
        for evaluator, (begin, cpu_begin) in zip(self.evaluators, clocks):
            evaluator.end_evaluation(begin, cpu_begin)
        for evaluator, (returns, lengths) in zip(self.evaluators, results):
            rows.append(evaluator.write_row(None, timesteps, returns, lengths))
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
    evaluating and checkpointing on the way and at the end; each seed's results for its summary, in order."""
    cfg = seats[0].cfg
    watchdog = StepWatchdog(float(cfg.step_timeout_s)) if cfg.get("step_timeout_s") else None
    with watchdog or contextlib.nullcontext():
        return _train_together(seats, watchdog)


def _train_together(seats: Sequence[Seat], watchdog: StepWatchdog | None) -> list[dict[str, Any]]:
    from lit_bench.run.backends import MetricsCSV
    from lit_sb3 import RLTrainer
    from lit_sb3.common.resume import set_vecnormalize_state
    from lit_sb3.seeds import SeedGroup

    cfg, budget, resume = seats[0].cfg, seats[0].budget, seats[0].resume
    every = int(cfg.eval.every or default_every(cfg, budget))
    algo_cls = algorithm_class(str(cfg.algo._target_), "lit")
    envs = [
        make_envs(
            s.cfg.env,
            str(s.cfg.env_name),
            int(s.cfg.seed),
            s.cfg.algo.get("gamma"),
            monitor_dir=str(s.run_dir.monitor),
            append_monitor=resume,
            outer=watchdog.wrap if watchdog is not None else None,
        )
        for s in seats
    ]
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
            algo_cls, seeds=[int(s.cfg.seed) for s in seats], env=train_envs, **_algorithm_kwargs(cfg, train_envs[0])
        )
        if cfg.get("log_interval") is not None:
            group.log_interval = int(cfg.log_interval)
        if resume:
            checkpoints = [read_checkpoint(s.run_dir) for s in seats]
            group.load_seed_states([c["seed_state"] for c in checkpoints])
            for env, saved in zip(train_envs, checkpoints):  # after the replay, which moved them
                set_vecnormalize_state(env, saved["vecnormalize"])
        csvs = [MetricsCSV(s.run_dir) for s in seats]

        def write_metrics() -> None:
            for i, csv in enumerate(csvs):
                for step, row in group.metrics(i):
                    csv.write(row, {}, step)

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
        trainer.fit(group)
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


def _results(seat: Seat, evaluator: PeriodicEval, last: Any, timesteps: int, n_seeds: int) -> dict[str, Any]:
    """One seed's results for its summary, as ``train.train_and_score`` gives a run's (and the CPU time's note)."""
    found = results(seat.cfg, seat.run_dir, evaluator, last, timesteps, seat.budget, seat.started)
    return {**found, "cpu_time_note": CPU_NOTE.format(n=n_seeds)} if found["status"] == "completed" else found
