"""The report's tables, read from run directories once: the runs, their returns, the summary (with each config's
videos), the lit-vs-SB3 comparison, the per-run scores and the paired ablations; damaged runs named on stderr and left
out, one line when there is nothing to report."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from lit_bench.analysis.cache import Parsed
from lit_bench.analysis.load import evaluations_table, read_runs, runs_table
from lit_bench.analysis.paired import CompareError, ablation_table
from lit_bench.analysis.summarize import (
    GROUP,
    PAIR,
    Returns,
    comparison_table,
    group_key,
    run_table,
    summary_table,
)
from lit_bench.store.rundir import RunDir


class Tables(NamedTuple):
    """Everything the report is made of (``ablations``: ``lit_bench.analysis.paired``, variants vs their bases and
    the ``--compare`` pairs)."""

    parsed: Parsed
    runs: pd.DataFrame
    returns: Returns
    summary: pd.DataFrame
    comparison: pd.DataFrame
    per_run: pd.DataFrame
    ablations: pd.DataFrame


def warn_damaged(runs: pd.DataFrame) -> None:
    """One line per damaged run file on stderr: named, and left out of every statistic."""
    for problem in runs.loc[runs.status == "damaged", "problem"]:
        print(f"warning: {problem}; run left out", file=sys.stderr)


def tables(
    paths: Sequence[str | Path], *, seed: int = 0, workers: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(evals, summary, comparison)`` of the runs under ``paths``; damaged runs named on stderr and left out (run
    files not cached are parsed by ``workers`` processes).

    Exits with one line when a path is missing, there are no runs, or none of them completed.
    """
    found = read_tables(paths, seed=seed, workers=workers)
    return (
        evaluations_table(found.parsed, found.runs, ["mean_return"]),
        found.summary,
        found.comparison,
    )  # (the report uses the returns only)


def read_tables(
    paths: Sequence[str | Path], *, seed: int = 0, workers: int = 1, compare: Sequence[tuple[str, str]] = ()
) -> Tables:
    """``tables`` without the long table, and with what the figures read (``compare``: pairs of config names)."""
    where = ", ".join(map(str, paths))
    try:
        parsed = read_runs(paths, workers=workers)  # one pass over the files
    except FileNotFoundError as error:
        raise SystemExit(f"report: {error}") from None
    runs = runs_table(parsed)
    if runs.empty:
        raise SystemExit(f"report: no run directories under {where}")
    warn_damaged(runs)
    if not (runs.status == "completed").any():
        counts = ", ".join(f"{n} {status}" for status, n in runs.status.value_counts().sort_index().items())
        raise SystemExit(f"report: none of the {len(runs)} runs under {where} completed ({counts}); nothing to report")
    returns = Returns.of_parsed(parsed, runs)
    per_run = run_table(runs, None, returns=returns)  # once for both tables
    summary = summary_table(runs, None, seed=seed, per_run=per_run)
    try:
        ablations = ablation_table(runs, per_run, compare=list(compare), seed=seed)
    except CompareError as error:
        raise SystemExit(f"report: {error}") from None
    return Tables(
        parsed,
        runs,
        returns,
        with_sb3_commands(with_videos(summary, runs), runs),
        comparison_table(runs, None, seed=seed, per_run=per_run, summary=summary),
        per_run,
        ablations,
    )


def with_videos(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The summary with a ``videos`` column: each config's runs' ``video/final.mp4`` files, space separated."""
    video = str(RunDir("").final_video)  # the file's path inside a run directory
    dirs_of = {group_key(key): group.run_dir for key, group in runs.groupby(GROUP, sort=False, dropna=False)}

    def videos(row: pd.Series) -> str:  # (str paths: Path objects were most of the time at 10,000 runs)
        paths = (os.path.join(d, video) for d in dirs_of.get(group_key(tuple(row[k] for k in GROUP)), ()))
        return " ".join(v for v in paths if os.path.isfile(v))

    return summary.assign(videos=[videos(row) for _, row in summary.iterrows()] if len(summary) else [])


JOB_KEYS = ("algo", "env", "seed", "backend")  # what the suggested command sweeps itself


def with_sb3_commands(summary: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The summary with an ``sb3_command`` column: for a lit config without SB3 runs of the same config, the command
    that adds them to its sweep (``python run.py -m algo=... env=... seed=... <its other overrides> backend=sb3``,
    from its runs' ``overrides.yaml``; configs sharing the other overrides share one command); '' elsewhere."""
    paired = {tuple(r) for r in summary.loc[summary.backend == "sb3", PAIR].itertuples(index=False)}
    alone = np.array([tuple(r) not in paired for r in summary[PAIR].itertuples(index=False)], dtype=bool)
    lonely = summary[(summary.backend == "lit").to_numpy() & alone]
    if lonely.empty:
        return summary.assign(sb3_command="")
    completed = runs[runs.status == "completed"]
    dirs_of = {group_key(key): group for key, group in completed.groupby(GROUP, sort=False, dropna=False)}
    commands: dict[tuple[str, ...], dict[str, set[str]]] = {}
    key_of: dict[int, tuple[str, ...]] = {}
    for index, row in lonely.iterrows():
        group = dirs_of.get(group_key(tuple(row[k] for k in GROUP)))
        if group is None or group.empty:
            continue
        words = _overrides(group.run_dir.iloc[0])
        if words is None or "parity=true" in words:  # no command line to repeat; parity runs pair otherwise
            continue
        rest = tuple(w for w in words if w.split("=", 1)[0].lstrip("+~") not in JOB_KEYS)
        values = commands.setdefault(rest, {"algo": set(), "env": set(), "seed": set()})
        values["algo"].add(str(row.algo))
        values["env"].add(str(row.env))
        values["seed"].update(str(int(s)) for s in group.seed)
        key_of[index] = rest
    text = {
        rest: "python run.py -m "
        + " ".join(f"{k}={','.join(sorted(v, key=_natural))}" for k, v in values.items())
        + "".join(f" {w}" for w in rest)
        + " backend=sb3"
        for rest, values in commands.items()
    }
    return summary.assign(sb3_command=[text[key_of[i]] if i in key_of else "" for i in summary.index])


def _natural(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (0, value)


def _overrides(run_dir: str) -> list[str] | None:
    """A run's command-line overrides (``overrides.yaml``), None when unreadable."""
    import yaml

    try:
        words = yaml.safe_load(RunDir(run_dir).overrides.read_text())
    except (OSError, yaml.YAMLError):
        return None
    return [str(w) for w in words] if isinstance(words, list) else None
