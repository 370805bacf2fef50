"""Normalized scores, so that envs can be aggregated: 0 = a uniformly random policy, 1 = a reference.

Atari: the published random and human scores (``results/reference/atari_human_random.csv``, with its citation):
human-normalized scores. Every other env: the random-policy return this project measured
(``results/reference/random_scores.csv``, written by ``benchmarks/random_scores.py``, command and versions in each
row) and the best RL Zoo benchmark score on the env (``sb3_reference_scores.csv``, one agent per algorithm; an older
env version is named). An env without a measured random score or a reference above it is not normalized.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from lit_bench.analysis.reference import REFERENCE_DIR, reference_env_ids

RANDOM_SCORES = "random_scores.csv"
ATARI = "atari_human_random.csv"


@dataclass(frozen=True)
class Normalizer:
    """``(score - low) / (high - low)``, and where ``low`` and ``high`` come from."""

    env_id: str
    low: float
    high: float
    kind: str  # "human-normalized" or "Zoo-normalized"
    low_source: str
    high_source: str

    def __call__(self, score: float | np.ndarray) -> np.ndarray:
        return (np.asarray(score, dtype=float) - self.low) / (self.high - self.low)


@cache
def _csv(name: str, reference_dir: Path) -> pd.DataFrame:
    path = reference_dir / name
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


@cache
def normalizer(env_id: str, reference_dir: Path = REFERENCE_DIR) -> Normalizer | None:
    """How scores on ``env_id`` are normalized; None when the tables have no random and reference score for it."""
    atari = _csv(ATARI, reference_dir)
    if not atari.empty and env_id in set(atari.env_id):
        row = atari[atari.env_id == env_id].iloc[0]
        return Normalizer(
            env_id,
            float(row.random),
            float(row.human),
            "human-normalized",
            f"random: {row.source}",
            f"human: {row.source}",
        )
    randoms = _csv(RANDOM_SCORES, reference_dir)
    measured = randoms[randoms.env_id == env_id] if not randoms.empty else randoms
    if measured.empty:
        return None
    low = measured.iloc[0]
    zoo = _csv("sb3_reference_scores.csv", reference_dir)
    for ref_id, same in reference_env_ids(env_id, reference_dir):
        rows = zoo[zoo.env_id == ref_id]
        if rows.empty:
            continue
        best = rows.loc[rows.mean_reward.idxmax()]
        if float(best.mean_reward) <= float(low.mean_return):
            return None
        version = "" if same else f" (trained on {ref_id})"
        return Normalizer(
            env_id,
            float(low.mean_return),
            float(best.mean_reward),
            "Zoo-normalized",
            f"random policy, {low.episodes} episodes, measured: {low.command}",
            f"best RL Zoo agent: {best.algo}, {best.mean_reward:g}{version} ({best.source})",
        )
    return None


def normalization_table(env_ids: list[str], reference_dir: Path = REFERENCE_DIR) -> pd.DataFrame:
    """One row per env id: ``env_id, kind, low, high, low_source, high_source`` (NaN / "not normalized")."""
    rows = []
    for env_id in sorted(set(env_ids)):
        found = normalizer(env_id, reference_dir)
        rows.append(
            {
                "env_id": env_id,
                "kind": found.kind if found else "not normalized",
                "low": found.low if found else np.nan,
                "high": found.high if found else np.nan,
                "low_source": found.low_source if found else "",
                "high_source": found.high_source if found else "",
            }
        )
    return pd.DataFrame(rows, columns=["env_id", "kind", "low", "high", "low_source", "high_source"])
