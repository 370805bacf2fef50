"""Periodic evaluation as an SB3 callback: the same object runs inside lit_sb3 (``rl_callback``) and SB3's ``learn``."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np
from sb3_contrib.common.maskable.evaluation import evaluate_policy as evaluate_masked_policy
from sb3_contrib.common.maskable.utils import is_masking_supported
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, sync_envs_normalization

from lit_bench.config.budget import next_boundary
from lit_bench.control import signals
from lit_bench.run.console import ConsoleProgress
from lit_bench.run.video import EvalVideo, recording
from lit_bench.store.rundir import RunDir

if TYPE_CHECKING:
    from stable_baselines3.common.base_class import BaseAlgorithm as SB3Algorithm

    from lit_sb3.common.base import BaseAlgorithm


def evaluate_episodes(model: BaseAlgorithm | SB3Algorithm, env: VecEnv, **kwargs: Any) -> Any:
    """SB3's ``evaluate_policy``; masked (sb3-contrib's) when the env has action masks and the model takes them."""
    if is_masking_supported(env) and "action_masks" in inspect.signature(model.predict).parameters:
        # sb3-contrib names its MaskablePPO; any model whose predict takes action_masks works
        return evaluate_masked_policy(model, env, use_masking=True, **kwargs)  # type: ignore[arg-type]
    return evaluate_policy(model, env, **kwargs)


def default_every(cfg: Any, budget: int) -> int:
    """``eval.every`` when unset: a tenth of the budget, rounded up to whole units of the algorithm's own work (one
    rollout of ``n_steps`` x ``n_envs`` on-policy; ``train_freq`` steps x ``n_envs`` off-policy), so that each
    evaluation measures a policy that trained since the previous one. Evaluating part-way through a rollout measures
    the same policy again, at the cost of whole episodes: PPO on CartPole with ``budget=64`` used to evaluate 32
    times (every 8-env vector step) for one 256-step rollout."""
    n_envs = int(cfg.env.get("n_envs") or 1)
    n_steps, train_freq = cfg.algo.get("n_steps"), cfg.algo.get("train_freq")
    if isinstance(train_freq, Sequence) and not isinstance(train_freq, str):  # SB3's (n, "step" | "episode")
        train_freq = int(train_freq[0]) if len(train_freq) == 2 and str(train_freq[1]) == "step" else None
    steps = n_steps if isinstance(n_steps, int) and not isinstance(n_steps, bool) else train_freq
    unit = n_envs * (steps if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0 else 1)
    tenth = max(budget // 10, 1)
    return -(-tenth // unit) * unit


class Diverged(ArithmeticError):
    """An evaluation with a non-finite mean return: the run fails (``failed``, its error starting ``diverged:``)
    instead of completing with a score that every statistic would have to drop."""


class PeriodicEval(BaseCallback):
    """Every ``every`` env steps, run ``episodes`` evaluation episodes and append a row to ``eval.csv``.

    Evaluations fall on multiples of ``every``, so a run resumed from a checkpoint continues the same grid.
    ``wall_time_s`` and ``fps`` continue from the checkpoint too; ``fps`` counts training time only. ``train_cpu_s``
    and ``cpu_fps`` are this process's CPU seconds of training (evaluations excluded) up to the latest evaluation and
    the env steps per CPU-second they trained: a speed that other processes' load changes far less. Every
    evaluation's per-episode returns and lengths also go to ``evaluations.npz`` (SB3's ``EvalCallback`` format), and
    its mean return, mean episode length and success rate to the run's loggers (``eval/mean_reward``, ...) at the
    env step, as SB3's ``EvalCallback`` logs them, with either backend.

    :param eval_env: one-env VecEnv (VecNormalize statistics are copied from the training env before each evaluation)
    :param run: the run directory
    :param every: env steps between evaluations
    :param episodes: episodes per evaluation
    :param deterministic: act deterministically
    :param wall_time_offset: wall time already spent before this process (resumed runs)
    :param seed: the evaluation env is reset with this seed before every evaluation, so that each evaluation sees
        the same episodes whatever ran before it (a resumed run scores exactly like an uninterrupted one)
    :param video: which evaluations record their first episode (None: none)
    :param on_evaluated: called with ``(model, row)`` after each evaluation (e.g. the best-model checkpoint)
    :param progress: the run's live console (told every env step and every evaluation)
    :param share: how many runs train in this process together (a batched seed group): each is counted this
        fraction of the process's CPU time
    """

    def __init__(
        self,
        eval_env: VecEnv,
        run: RunDir,
        every: int,
        episodes: int,
        deterministic: bool,
        wall_time_offset: float = 0.0,
        seed: int | None = None,
        video: EvalVideo | None = None,
        on_evaluated: Sequence[Callable[[Any, dict[str, Any]], None]] = (),
        progress: ConsoleProgress | None = None,
        share: int = 1,
    ) -> None:
        super().__init__(verbose=0)
        self.share = share
        self.eval_env = eval_env
        self.run = run
        self.every = every
        self.episodes = episodes
        self.deterministic = deterministic
        self.wall_time_offset = wall_time_offset
        self.seed = seed
        self.started = time.perf_counter()
        self.first_step_at: float | None = None  # perf_counter of the first env step (harness overhead)
        self.eval_seconds = 0.0
        self.cpu_started = time.process_time()
        self.first_step_cpu: float | None = None
        self.eval_cpu_seconds = 0.0
        self.train_cpu_s = 0.0
        self.cpu_fps = 0.0
        self.steps_at_start = 0
        self.next_eval = every
        self.last_row: dict[str, Any] | None = None
        self.video = video
        self.on_evaluated = list(on_evaluated)
        self.progress = progress
        # per-episode history, continued on resume for the evaluations eval.csv still holds (it was cut at the
        # checkpoint before this callback was made)
        kept = {float(r["timesteps"]) for r in run.eval_rows()}
        saved = run.read_evaluations()
        keep = [i for i, t in enumerate(saved.get("timesteps", [])) if float(t) in kept]
        self.history: dict[str, list[Any]] = {key: [saved[key][i].tolist() for i in keep] for key in saved}

    def _init_callback(self) -> None:
        self.start(self.model.num_timesteps)

    def start(self, timesteps: int) -> None:
        """Training starts (or resumes) at ``timesteps``: the next evaluation is at the next multiple of ``every``."""
        self.steps_at_start = timesteps
        self.next_eval = next_boundary(timesteps, self.every)
        if self.progress is not None:
            self.progress.start(timesteps)

    def first_step(self) -> None:
        """Start the training clocks at the first env step (once)."""
        if self.first_step_at is None:
            self.first_step_at = time.perf_counter()
            self.first_step_cpu = time.process_time()

    def _on_step(self) -> bool:
        self.first_step()
        if self.progress is not None:
            self.progress.step(self.num_timesteps)
        if self.num_timesteps >= self.next_eval:
            self.evaluate(self.model)
            self.next_eval = next_boundary(self.num_timesteps, self.every)
        return True

    def wall_time(self) -> float:
        return self.wall_time_offset + time.perf_counter() - self.started

    def fps(self, timesteps: int) -> float:
        train_seconds = time.perf_counter() - (self.first_step_at or self.started) - self.eval_seconds
        return (timesteps - self.steps_at_start) / max(train_seconds, 1e-9)

    def evaluate(self, model: BaseAlgorithm | SB3Algorithm) -> dict[str, Any]:
        """Evaluate ``model`` now and append the row (also called once after training for the final score)."""
        timesteps = int(model.num_timesteps)
        begin, cpu_begin = self.begin_evaluation(timesteps)
        training_env = model.get_env()
        if training_env is not None:
            sync_envs_normalization(training_env, self.eval_env)
        if self.seed is not None:
            self.eval_env.seed(self.seed)
        successes: list[float] = []

        def record_success(local: dict[str, Any], _globals: dict[str, Any]) -> None:
            signals.stop_if_pending()  # a signal stops a long evaluation at its next step (the checkpoint stays)
            if local.get("done") and "is_success" in local.get("info", {}):
                successes.append(float(local["info"]["is_success"]))

        video_path = self.video.path_for(timesteps) if self.video is not None else None
        with recording(video_path, self.eval_env) if video_path else nullcontext(self.eval_env) as env:
            returns, lengths = evaluate_episodes(
                model,
                env,
                n_eval_episodes=self.episodes,
                deterministic=self.deterministic,
                return_episode_rewards=True,
                callback=record_success,
            )
        self.end_evaluation(begin, cpu_begin)
        return self.write_row(model, timesteps, returns, lengths, successes)

    def begin_evaluation(self, timesteps: int) -> tuple[float, float]:
        """The training CPU time up to an evaluation at ``timesteps`` (this process's, over ``share``); the clocks
        at its start, for :meth:`end_evaluation`."""
        begin, cpu_begin = time.perf_counter(), time.process_time()
        process_cpu = cpu_begin - (self.first_step_cpu or self.cpu_started) - self.eval_cpu_seconds
        self.train_cpu_s = process_cpu / self.share
        self.cpu_fps = (timesteps - self.steps_at_start) / max(self.train_cpu_s, 1e-9)
        return begin, cpu_begin

    def end_evaluation(self, begin: float, cpu_begin: float) -> None:
        """Count the evaluation that began at ``begin`` / ``cpu_begin`` out of the training time."""
        self.eval_seconds += time.perf_counter() - begin
        self.eval_cpu_seconds += time.process_time() - cpu_begin

    def write_row(
        self,
        model: Any,
        timesteps: int,
        returns: Sequence[float],
        lengths: Sequence[int],
        successes: Sequence[float] = (),
    ) -> dict[str, Any]:
        """Record the evaluation at ``timesteps`` from its episodes' returns and lengths: ``eval.csv``'s row,
        ``evaluations.npz``, the loggers, the console and the hooks (``model``: what the hooks get). A batched group
        evaluates its seeds together and writes each seed's row here."""
        if not np.isfinite(np.mean(returns)):  # not written: eval.csv holds scores only
            raise Diverged(
                f"diverged: the evaluation at {timesteps} env steps has mean return {np.mean(returns)} "
                f"(non-finite rewards, or non-finite parameters); its last checkpoint is kept"
            )
        row = {
            "timesteps": timesteps,
            "wall_time_s": round(self.wall_time(), 3),
            "mean_return": float(np.mean(returns)),
            "std_return": float(np.std(returns)),
            "median_return": float(np.median(returns)),
            "mean_ep_length": float(np.mean(lengths)),
            "success_rate": float(np.mean(successes)) if successes else "",
            "fps": round(self.fps(timesteps), 1),
        }
        self._add_to_history(timesteps, list(returns), list(lengths), list(successes))
        self.run.record_evaluation(row, self.history)
        self._log(row, list(successes))
        self.last_row = row
        if self.progress is not None:
            self.progress.evaluated(row)
        for hook in self.on_evaluated:
            hook(model, row)
        return row

    def _add_to_history(self, timesteps: int, returns: list[float], lengths: list[int], successes: list[float]) -> None:
        entry = {"timesteps": timesteps, "results": list(returns), "ep_lengths": list(lengths)}
        if successes:
            entry["successes"] = successes
        for key, value in entry.items():
            self.history.setdefault(key, []).append(value)

    def _log(self, row: dict[str, Any], successes: list[float]) -> None:
        """Send the evaluation to the run's loggers at its env step, under SB3's ``EvalCallback`` names.

        Written straight to the SB3 logger's writers (its output formats, and Lightning's loggers with lit)
        rather than ``record`` + ``dump``, so that values a training loop recorded but has not dumped yet stay where
        they belong; excluded from CSV, whose record of the evaluations is ``eval.csv``.
        """
        model = getattr(self, "model", None)  # set by init_callback (SB3 declares it without a value)
        if model is None:  # never attached to a training run
            return
        values = {"eval/mean_reward": row["mean_return"], "eval/mean_ep_length": row["mean_ep_length"]}
        if successes:
            values["eval/success_rate"] = float(np.mean(successes))
        lightning = getattr(model.logger, "lightning_writer", None)  # lit: Lightning's loggers, beside SB3's formats
        for output in [*model.logger.output_formats, *([lightning] if lightning is not None else [])]:
            output.write(values, dict.fromkeys(values, ("csv",)), step=row["timesteps"])
