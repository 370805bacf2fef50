"""Paired comparisons of two configs on the same seeds: lit vs SB3, a variant vs its base, any A vs B of a sweep.

One row per (A, B, env): the per-seed differences of the final scores, the IQM difference with its paired stratified
bootstrap 95% CI, P(A > B) and a verdict withheld under ``stats.MIN_SEEDS_FOR_VERDICT`` seeds (``stats``'s
``paired_comparison``, the same rule for every kind of pair).

Pairs come from two places: every **variant** (an algo config with ``base: <algo>``, ``lit_bench.config.sources``)
is paired with its base's config of the same sweep, env, backend and budget, automatically; and ``--compare A B``
names two configs, each as ``ALGO[@BACKEND][[VARIANT]]``: ``my_ppo``, ``ppo@sb3``, ``ppo[algo.learning_rate=0.001]``
(the variant as the report's run column shows it; without one, the algo must have one config per env).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lit_bench import stats


class CompareError(ValueError):
    """A ``--compare`` name that matches no config, or several: one line."""


def paired_columns(a: pd.DataFrame, b: pd.DataFrame, *, seed: int = 0, name: str = "lit") -> dict[str, Any] | None:
    """The comparison's columns for two configs' runs (``seed``, ``final``, ``fps`` columns; one run per seed each);
    None when they share no seed. ``name``: A's, for the verdict ("<name> better")."""
    a, b = a.set_index("seed"), b.set_index("seed")
    result = stats.paired_comparison(a.final.to_dict(), b.final.to_dict(), seed=seed, name=name)
    if result is None:
        return None
    clock, fps = speed_clock(a, b)
    fps_ratio = stats.ratio_spread(a[fps].to_dict(), b[fps].to_dict())
    return {
        "n": len(result.seeds),
        "seeds": result.seeds,
        "a_iqm": result.a_iqm,
        "b_iqm": result.b_iqm,
        "differences": result.differences,
        "iqm_difference": result.iqm_difference,
        "ci_low": result.ci_low,
        "ci_high": result.ci_high,
        "ci_flagged": result.ci_flagged,
        "probability_of_improvement": result.probability_of_improvement,
        "sign_flip_p_value": result.sign_flip_p_value,
        "verdict": result.verdict,
        "fps_ratio_median": fps_ratio[0],
        "fps_ratio_min": fps_ratio[1],
        "fps_ratio_max": fps_ratio[2],
        "fps_clock": clock,
    }


def speed_clock(a: pd.DataFrame, b: pd.DataFrame) -> tuple[str, str]:
    """Which speed two configs' runs are compared by, and its column: per CPU-second when every run of both
    recorded its CPU time (``run_table``'s ``fps_clock``), else wall-clock for both (never one of each)."""
    if all("fps_clock" in side and (side.fps_clock == "cpu").all() for side in (a, b)):
        return "cpu", "fps"
    return "wall", "fps_wall" if all("fps_wall" in side for side in (a, b)) else "fps"


def one_run_per_seed(runs: pd.DataFrame) -> bool:
    return not runs.seed.duplicated().any()


@dataclass(frozen=True)
class ConfigName:
    """``ALGO[@BACKEND][[VARIANT]]``: one config of a sweep, as ``--compare`` names it."""

    algo: str
    backend: str = "lit"
    variant: str | None = None  # None: whichever config the algo has on each env (one)

    @classmethod
    def parse(cls, text: str) -> ConfigName:
        match = re.fullmatch(r"(?P<algo>[^@\[\]]+)(@(?P<backend>[^@\[\]]+))?(\[(?P<variant>.*)\])?", text.strip())
        if match is None:
            raise CompareError(
                f"--compare {text}: name a config as ALGO[@BACKEND][[VARIANT]], e.g. ppo, ppo@sb3, "
                f"ppo[algo.learning_rate=0.001]"
            )
        return cls(match["algo"], match["backend"] or "lit", match["variant"])

    def __str__(self) -> str:
        return (
            self.algo
            + ("" if self.backend == "lit" else f"@{self.backend}")
            + (f"[{self.variant}]" if self.variant else "")
        )

    def select(self, per_run: pd.DataFrame) -> pd.DataFrame:
        chosen = (per_run.algo == self.algo) & (per_run.backend == self.backend)
        if self.variant is not None:
            chosen &= per_run.variant == self.variant
        return per_run[chosen]


def label(runs: pd.DataFrame) -> str:
    """``algo[variant] / backend`` of one config's runs (the report's run column)."""
    first = runs.iloc[0]
    return f"{first.algo}{f'[{first.variant}]' if first.variant else ''} / {first.backend}"


def _row(kind: str, a: pd.DataFrame, b: pd.DataFrame, seed: int) -> dict[str, Any] | None:
    if not (one_run_per_seed(a) and one_run_per_seed(b)):
        print(
            f"warning: {label(a)} vs {label(b)} on {a.env.iloc[0]}: several runs per seed; not compared",
            file=sys.stderr,
        )
        return None
    columns = paired_columns(a, b, seed=seed, name=str(a.algo.iloc[0]))
    if columns is None:
        return None
    return {
        "kind": kind,
        "a": label(a),
        "b": label(b),
        "sweep": a.sweep.iloc[0],
        "env": a.env.iloc[0],
        "env_id": a.env_id.iloc[0],
        **columns,
    }


def _configs(runs: pd.DataFrame) -> list[pd.DataFrame]:
    return [group for _, group in runs.groupby(["sweep", "config_id"], sort=True)]


def variant_pairs(per_run: pd.DataFrame, *, seed: int = 0) -> list[dict[str, Any]]:
    """Each variant config with its base's config of the same sweep, env, backend and budget (the one with the same
    ``variant`` slug when the base has several; none when that still leaves several)."""
    rows = []
    variants = per_run[per_run.base.notna() & (per_run.base != per_run.algo)]
    for a in _configs(variants):
        first = a.iloc[0]
        same = (
            (per_run.algo == first.base)
            & (per_run.sweep == first.sweep)
            & (per_run.env == first.env)
            & (per_run.backend == first.backend)
            & (per_run.budget == first.budget)
        )
        candidates = _configs(per_run[same])
        if len(candidates) > 1:
            candidates = [c for c in candidates if c.variant.iloc[0] == first.variant]
        if len(candidates) == 1:
            rows.append(_row("variant vs base", a, candidates[0], seed))
        elif per_run[same].size:
            print(
                f"warning: {label(a)} on {first.env}: several configs of its base {first.base} at budget "
                f"{first.budget:g}; name one with --compare",
                file=sys.stderr,
            )
    return [r for r in rows if r is not None]


def named_pairs(
    per_run: pd.DataFrame, a_name: ConfigName, b_name: ConfigName, *, seed: int = 0
) -> list[dict[str, Any]]:
    """``a_name`` vs ``b_name`` on every env both ran; one line when a name matches nothing or several configs."""
    sides = [name.select(per_run) for name in (a_name, b_name)]
    for name, runs in zip((a_name, b_name), sides):
        if runs.empty:
            known = sorted({str(ConfigName(r.algo, r.backend, r.variant or None)) for r in per_run.itertuples()})
            raise CompareError(f"--compare {name}: no completed runs of that config; configs: {', '.join(known)}")
    rows = []
    for env in sorted(set(sides[0].env) & set(sides[1].env)):
        configs = [_configs(runs[runs.env == env]) for runs in sides]
        for name, found in zip((a_name, b_name), configs):
            if len(found) > 1:
                variants = ", ".join(f"{name.algo}[{c.variant.iloc[0]}]" for c in found)
                raise CompareError(f"--compare {name}: {len(found)} configs on {env} ({variants}); name one")
        rows.append(_row(f"{a_name} vs {b_name}", configs[0][0], configs[1][0], seed))
    return [r for r in rows if r is not None]


def ablation_table(
    runs: pd.DataFrame, per_run: pd.DataFrame, *, compare: list[tuple[str, str]] | None = None, seed: int = 0
) -> pd.DataFrame:
    """Variant-vs-base pairs, then the ``compare`` pairs (names as ``ConfigName``), from ``summarize.run_table``'s
    per-run table and the runs table (for ``base`` and ``budget``)."""
    extra = runs.drop_duplicates("run_dir").set_index("run_dir").reindex(columns=["base", "budget"])
    finals = per_run.dropna(subset=["final"])
    finals = finals.assign(
        base=extra.base.reindex(finals.run_dir).to_numpy(),
        budget=pd.to_numeric(extra.budget.reindex(finals.run_dir), errors="coerce").to_numpy(),
    )
    rows = variant_pairs(finals, seed=seed)
    for a, b in compare or []:
        rows += named_pairs(finals, ConfigName.parse(a), ConfigName.parse(b), seed=seed)
    # each pair once: a --compare of a variant and its base (paired already), repeated, or reversed
    unique: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        unique.setdefault((row["sweep"], row["env"], frozenset((row["a"], row["b"]))), row)
    return pd.DataFrame(list(unique.values()))


SEEDS_SHOWN = 10  # per-seed differences in a table cell (the CSV has them all)


def per_seed_text(seeds: Sequence[Any], differences: Sequence[float], csv: str, at_most: int = SEEDS_SHOWN) -> str:
    """``0: +1.5, 1: -0.3`` for a table cell: the first ``at_most`` seeds, then how many more are in ``csv`` (500
    seeds made a cell of kilobytes)."""
    shown = ", ".join(f"{s}: {d:+.1f}" for s, d in zip(list(seeds)[:at_most], differences))
    more = len(seeds) - at_most
    return shown + (f", ... {more} more: {csv}" if more > 0 else "")


def ablation_markdown(table: pd.DataFrame) -> str:
    """The table as Markdown: one row per pair and env."""
    lines = [
        f"## Paired comparisons (final = {stats.FINAL})",
        "",
        "| A | B | env | n | A IQM | B IQM | A - B per seed | IQM(A) - IQM(B) [95% CI] | P(A > B) | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        per_seed = per_seed_text(r.seeds, r.differences, "ablations.csv")
        ci = f" [{r.ci_low:+.1f}, {r.ci_high:+.1f}]{'‡' if r.ci_flagged else ''}" if np.isfinite(r.ci_low) else ""
        lines.append(
            f"| {r.a} | {r.b} | {r.env} | {r.n} | {r.a_iqm:.1f} | {r.b_iqm:.1f} | {per_seed} | "
            f"{r.iqm_difference:+.1f}{ci} | {r.probability_of_improvement:.2f} | {r.verdict} |"
        )
    lines += [
        "",
        "Same seeds on both sides; the CI resamples seeds jointly (a paired, stratified bootstrap); the "
        "verdict reads it (better / worse when it excludes 0 and the paired sign-flip test of the per-seed "
        f"differences rejects at 5%; else indistinguishable) and is withheld under {stats.MIN_SEEDS_FOR_VERDICT} "
        f"seeds, where that test cannot reject; ‡ = a CI over fewer than {stats.MIN_SEEDS_FOR_CI} seeds. A variant "
        "(base: <algo>) is paired with its base's runs of the same sweep, env and budget; --compare A B pairs any two "
        "configs.",
    ]
    return "\n".join(lines)


def ablation_figure(table: pd.DataFrame | None) -> tuple[Any, str] | None:
    """``ablations``: A - B per pair and env (each seed, the IQM difference with its 95% CI); None without pairs."""
    if table is None or table.empty:
        return None
    from lit_bench.analysis import plot

    rows = table.assign(
        label=[f"A: {r.a}\nB: {r.b}\n{r.env}" for r in table.itertuples()],
        note=[f"n={r.n}\nP(A>B)={r.probability_of_improvement:.2f}\n{r.verdict}" for r in table.itertuples()],
    )
    ax = plot.paired_differences(plot.new_axes(width=10.0, height=1.8 + 0.9 * len(rows)), rows, names=("A", "B"))
    return ax, "ablations"
