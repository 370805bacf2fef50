"""SB3 / RL Zoo reference scores and curves (``results/reference/``), looked up by our env ids."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from lit_bench.config.resources import reference_dir

REFERENCE_DIR = reference_dir()


@dataclass(frozen=True)
class Reference:
    """SB3's published result for one (algo, env): one trained agent, evaluated at ``budget`` env steps."""

    score: float
    std: float
    budget: int
    reference_env_id: str
    same_version: bool
    source: str


@cache
def _table(name: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    return pd.read_csv(reference_dir / name)


def reference_env_ids(env_id: str, reference_dir: Path = REFERENCE_DIR) -> list[tuple[str, bool]]:
    """Reference env ids recorded for our ``env_id`` (with whether the version is the same)."""
    mapping = _table("env_version_map.csv", reference_dir)
    rows = mapping[mapping.env_id == env_id]
    if rows.empty:
        return [(env_id, True)]
    return [(r.reference_env_id, bool(r.same_version)) for r in rows.itertuples()]


@cache  # (the files are read once per process too: a lookup per config of a report is a filter of the whole table)
def reference_score(algo: str, env_id: str, reference_dir: Path = REFERENCE_DIR) -> Reference | None:
    """The Zoo benchmark row for ``algo`` on ``env_id`` (or its older version), if one exists."""
    scores = _table("sb3_reference_scores.csv", reference_dir)
    for ref_id, same in reference_env_ids(env_id, reference_dir):
        row = scores[(scores.algo == algo) & (scores.env_id == ref_id)]
        if not row.empty:
            r = row.iloc[0]
            return Reference(float(r.mean_reward), float(r.std_reward), int(r.n_timesteps), ref_id, same, str(r.source))
    return None


def reference_curve(algo: str, env_id: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    """The Zoo agent's periodic deterministic evaluations (``timesteps``, ``mean_reward``); empty when none."""
    return _reference_curve(algo, env_id, reference_dir).copy()  # (a copy: the caller may change it)


@cache
def _reference_curve(algo: str, env_id: str, reference_dir: Path) -> pd.DataFrame:
    curves = _table("sb3_reference_curves.csv", reference_dir)
    for ref_id, _ in reference_env_ids(env_id, reference_dir):
        rows = curves[(curves.algo == algo) & (curves.env_id == ref_id) & (curves.kind == "eval")]
        if not rows.empty:
            return rows[["timesteps", "mean_reward", "source"]].sort_values("timesteps").reset_index(drop=True)
    return pd.DataFrame(columns=["timesteps", "mean_reward", "source"])


@dataclass(frozen=True)
class BudgetReference:
    """SB3's reference value at a given budget, and where it comes from (for a ratio taken at equal budgets)."""

    score: float
    budget: float
    how: str  # e.g. "Zoo benchmark at 100k" or "Zoo eval curve (1 seed) interpolated between 10k and 20k"
    source: str


@cache
def reference_at_budget(
    algo: str, env_id: str, budget: float, reference_dir: Path = REFERENCE_DIR
) -> BudgetReference | None:
    """SB3's value at exactly ``budget`` env steps: the benchmark score when its budget is ours, else the Zoo agent's
    eval curve interpolated linearly at ``budget``; None when the curve does not cover ``budget`` (no extrapolation).
    """
    ref = reference_score(algo, env_id, reference_dir)
    if ref is not None and ref.budget == budget:
        return BudgetReference(ref.score, budget, f"Zoo benchmark at {_steps(budget)}", ref.source)
    curve = reference_curve(algo, env_id, reference_dir)
    if curve.empty or not curve.timesteps.iloc[0] <= budget <= curve.timesteps.iloc[-1]:
        return None
    t, v = curve.timesteps.to_numpy(float), curve.mean_reward.to_numpy(float)
    after = int(np.searchsorted(t, budget))
    if t[after] == budget:
        how = f"Zoo eval curve (1 seed) at {_steps(budget)}"
    else:
        how = f"Zoo eval curve (1 seed) interpolated between {_steps(t[after - 1])} and {_steps(t[after])}"
    return BudgetReference(float(np.interp(budget, t, v)), budget, how, str(curve.source.iloc[after]))


def _steps(value: float) -> str:
    return f"{value / 1e6:g}M" if value >= 1e6 else f"{value / 1e3:g}k" if value >= 1e3 else f"{value:g}"
