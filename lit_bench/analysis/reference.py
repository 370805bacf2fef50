"""SB3 / RL Zoo reference scores and curves (``results/reference/``), looked up by our env ids."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "results" / "reference"


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


def reference_score(algo: str, env_id: str, reference_dir: Path = REFERENCE_DIR) -> Reference | None:
    """The Zoo benchmark row for ``algo`` on ``env_id`` (or its older version), if one exists."""
    scores = _table("sb3_reference_scores.csv", reference_dir)
    for ref_id, same in reference_env_ids(env_id, reference_dir):
        row = scores[(scores.algo == algo) & (scores.env_id == ref_id)]
        if not row.empty:
            r = row.iloc[0]
            return Reference(float(r.mean_reward), float(r.std_reward), int(r.n_timesteps), ref_id, same,
                             str(r.source))
    return None


def reference_curve(algo: str, env_id: str, reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    """The Zoo agent's periodic deterministic evaluations (``timesteps``, ``mean_reward``); empty when none."""
    curves = _table("sb3_reference_curves.csv", reference_dir)
    for ref_id, _ in reference_env_ids(env_id, reference_dir):
        rows = curves[(curves.algo == algo) & (curves.env_id == ref_id) & (curves.kind == "eval")]
        if not rows.empty:
            return rows[["timesteps", "mean_reward"]].sort_values("timesteps").reset_index(drop=True)
    return pd.DataFrame(columns=["timesteps", "mean_reward"])
