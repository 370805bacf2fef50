"""Budgets too small for what the algorithm needs, found before a run starts (kept apart from ``checks``, which
refuses malformed values: these budgets are valid, they only cannot show learning).

- No gradient step: an off-policy algorithm trains only once more than ``learning_starts`` env steps were collected
  (SB3's ``learn``); a budget at or below that ends with a random policy's score. Refused (:func:`no_learning`).
- Less than one rollout: an on-policy algorithm collects ``n_envs x n_steps`` env steps before its first update, so
  the run trains one whole rollout whatever the budget. Warned (:func:`budget_warnings`).
- No evaluation before the end: ``eval.every`` at or above the budget leaves only the final evaluation, no curve.
  Warned.
- Less than one ARS update: ARS plays ``2 x n_delta x n_eval_episodes`` whole episodes per update and stops only
  between updates (sb3-contrib's ``learn``), so a budget below what they may take can train many times more env
  steps than asked (the Zoo's Ant: 120 episodes, up to 120,000 steps). Warned where the env's episode limit is
  known (:func:`ars_update`).

Each message is one line naming the parameter and the smallest budget that would do what it lacks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from omegaconf import DictConfig, ListConfig

PLANNED_ENV = "LIT_BENCH_PLANNED"  # set by the command's plan once it printed these warnings: runs do not repeat them


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _steps_per_collect(algo: Any, n_envs: int) -> tuple[int, bool]:
    """Env steps one ``collect_rollouts`` of an off-policy algorithm gathers between training checks, and whether that
    is exact (``train_freq`` in steps) or a lower bound (``train_freq`` in episodes)."""
    freq = algo.get("train_freq", 1)
    if _int(freq) is not None:
        return max(int(freq), 1) * n_envs, True
    items = list(freq) if isinstance(freq, (list, tuple, ListConfig)) else []
    if len(items) == 2 and _int(items[0]) is not None and str(items[1]) == "step":  # SB3's (n, "step")
        return max(int(items[0]), 1) * n_envs, True
    return n_envs, False


def smallest_learning_budget(cfg: DictConfig) -> int | None:
    """The smallest budget with at least one gradient step of an off-policy algorithm (None: not off-policy).

    SB3 collects ``train_freq`` steps per env, then trains if more than ``learning_starts`` env steps were collected;
    the run stops at the first collect that reaches the budget. So a budget B trains iff the collect that ends at
    ``ceil(B / k) * k`` (``k`` the steps of one collect) exceeds ``learning_starts``."""
    starts = _int(cfg.algo.get("learning_starts"))
    if starts is None:
        return None
    k, _ = _steps_per_collect(cfg.algo, int(cfg.env.get("n_envs") or 1))
    return (max(starts, 0) // k) * k + 1


def no_learning(cfg: DictConfig, budget: int) -> str | None:
    """One line when the run would end without a single gradient step (else None)."""
    smallest = smallest_learning_budget(cfg)
    if smallest is None or budget >= smallest:
        return None
    starts = int(cfg.algo.learning_starts)
    _, exact = _steps_per_collect(cfg.algo, int(cfg.env.get("n_envs") or 1))
    least = f"budget={smallest}" if exact else f"budget>{starts} (plus one episode: train_freq is in episodes)"
    return (
        f"budget={budget}: {cfg.algo_name} on {cfg.env_name} makes no gradient step, as algo.learning_starts="
        f"{starts} env steps are collected first; the smallest budget that trains is {least} "
        f"(or lower algo.learning_starts)"
    )


def _rollout(cfg: DictConfig) -> int | None:
    """An on-policy config's env steps per rollout (``n_envs x n_steps``); None for any other algorithm."""
    n_steps = _int(cfg.algo.get("n_steps"))
    if n_steps is None or n_steps <= 0:
        return None
    return n_steps * int(cfg.env.get("n_envs") or 1)


def overshoot(cfg: DictConfig, budget: int) -> str | None:
    """One line when an on-policy budget is not a multiple of its rollout: the last rollout runs to its end (SB3's
    ``learn`` does the same; cutting it short would change the algorithm), so more env steps are trained than asked
    for. The summary's ``timesteps`` records them; the report labels and compares the run with them."""
    rollout = _rollout(cfg)
    if rollout is None or not budget % rollout:
        return None
    n_steps, n_envs = cfg.algo.n_steps, cfg.env.get("n_envs") or 1
    trained, _ = trained_steps(cfg, budget)
    return (
        f"budget={budget} is not a multiple of the {rollout} env steps of one rollout ({n_envs} envs x "
        f"n_steps={n_steps}): {cfg.algo_name} trains {trained} env steps, as SB3's learn does; the summary and the "
        f"report say {trained}"
    )


def trained_steps(cfg: DictConfig, budget: int) -> tuple[int, bool]:
    """The env steps a run of ``budget`` trains, and whether that is exact: an on-policy budget rounded up to whole
    rollouts (:func:`overshoot`); ARS's at least the budget, its last update's episodes running to their ends (how
    many steps they take is known only once played); any other algorithm's the budget."""
    rollout = _rollout(cfg)
    if rollout is not None:
        return -(-budget // rollout) * rollout, True
    return budget, _int(cfg.algo.get("n_delta")) is None


def episode_limit(env: Any) -> int | None:
    """The episode step limit of an env config (``kwargs.max_episode_steps``, else its id's registered limit), or
    None where it is not known without building the env (a ``make`` factory, an id not registered yet)."""
    import gymnasium  # (here: the plan of a command without ARS imports no env library)

    if env.get("make") is not None:
        return None
    limit = _int((env.get("kwargs") or {}).get("max_episode_steps"))
    if limit is not None:
        return limit
    try:
        return _int(gymnasium.spec(str(env.get("id"))).max_episode_steps)
    except gymnasium.error.Error:
        return None


class ArsUpdate(NamedTuple):
    """What one ARS update plays: ``2 x n_delta`` candidates, ``n_eval_episodes`` whole episodes each."""

    n_delta: int
    n_eval_episodes: int
    episode_limit: int

    @property
    def episodes(self) -> int:
        return 2 * self.n_delta * self.n_eval_episodes

    @property
    def most_steps(self) -> int:
        return self.episodes * self.episode_limit


def ars_update_of(cfg: DictConfig) -> ArsUpdate | None:
    """One ARS update of ``cfg`` (None: not ARS, or the env's episode limit is not known)."""
    n_delta = _int(cfg.algo.get("n_delta"))
    if n_delta is None:
        return None
    limit = episode_limit(cfg.env)
    if limit is None:
        return None
    return ArsUpdate(n_delta, _int(cfg.algo.get("n_eval_episodes")) or 1, limit)


def ars_update(cfg: DictConfig, budget: int) -> str | None:
    """One line when ARS's first update may play more env steps than the budget (else None)."""
    update = ars_update_of(cfg)
    if update is None or budget >= update.most_steps:
        return None
    return (
        f"budget={budget}: one update of {cfg.algo_name} plays 2 x algo.n_delta={update.n_delta} x "
        f"algo.n_eval_episodes={update.n_eval_episodes} = {update.episodes} episodes of up to {update.episode_limit} "
        f"env steps on {cfg.env_name} and stops only between updates, as sb3-contrib's learn does: the run may train "
        f"up to {update.most_steps} env steps; the summary and the report say how many it trained"
    )


def budget_warnings(cfg: DictConfig, budget: int) -> list[str]:
    """Lines for a budget that trains but shows little (less than one on-policy rollout, no evaluation before the
    end) or more than asked for (not a multiple of the rollout, less than one ARS update)."""
    found = []
    rollout = _rollout(cfg)
    if rollout is not None and budget < rollout:
        found.append(
            f"budget={budget} is less than one rollout of {cfg.algo_name} on {cfg.env_name} "
            f"({cfg.env.get('n_envs') or 1} envs x algo.n_steps={cfg.algo.n_steps}): it trains {rollout} env steps, "
            f"one update; budget={2 * rollout} is the smallest with two"
        )
    every = _int(cfg.eval.get("every"))
    if every is not None and every >= budget:
        found.append(
            f"eval.every={every} >= budget={budget}: the run is evaluated at its end only (no learning curve); "
            f"budget={2 * every} (or eval.every<={budget // 2}) gives one evaluation before it"
        )
    lines = (overshoot(cfg, budget), ars_update(cfg, budget))
    return found + [line for line in lines if line]


def next_boundary(steps: int, every: int) -> int:
    """The first multiple of ``every`` env steps after ``steps``: the next evaluation or checkpoint of a schedule."""
    return (steps // every + 1) * every
