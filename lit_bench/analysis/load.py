"""Read run directories (any sweeps, globs, both backends) into tidy pandas tables.

``load_runs`` gives one row per run (status and summary numbers); ``load_evaluations`` gives the long table
``[algo, backend, env, env_id, seed, sweep, config_id, variant, status, run_dir, timesteps, metric, value]`` of every
evaluation. Runs are found at any depth; ``config_id`` (the config without its seed, ``lit_bench.config.identity``)
tells the configs of a sweep apart and ``variant`` names them ("" for the composed defaults). Failed, interrupted,
truncated and damaged runs are kept and marked, never dropped: a run without ``summary.json`` is ``incomplete``; one
still saying ``running`` (killed mid-run) is ``interrupted``; one whose ``summary.json`` or ``eval.csv`` cannot be
trusted is ``damaged`` (``problem`` names the file and the fault).

This module finds the runs, reads them through each sweep's cache and builds the tables; ``parse`` reads the files of
runs not cached, ``eval_csv`` their ``eval.csv``.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd  # (imported by the functions that use it: a training run imports this module, not pandas)

from lit_bench.analysis import cache
from lit_bench.analysis.eval_csv import METRICS
from lit_bench.analysis.parse import parse_runs
from lit_bench.config.identity import BATCHED
from lit_bench.store.format import EVAL_CSV, EVALUATIONS_NPZ, SUMMARY, sweep_dir
from lit_bench.store.rundir import RunDir, read_evaluations_npz

RUN_COLUMNS = ["algo", "backend", "env", "env_id", "seed", "sweep", "config_id", "variant", "status", "run_dir"]
# config keys that are no hyperparameters (a run's seed, paths and names): never a column of hyperparameter_columns
# names, places, and how seeds were launched (a batched seed is a seed of its config: lit_bench.analysis.parse)
NOT_HYPERPARAMETERS = {"seed", "out_dir", "sweep", "force", "algo_dir", "algo_name", "env_name", "hydra", BATCHED}
NOT_HYPERPARAMETERS |= {"seeds_per_process", "seed_group"}


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories under each path or glob (a directory holding ``summary.json`` or ``eval.csv``; a run holds no
    other run: what is below one is not looked at)."""
    found: dict[str, Path] = {}  # real path -> the first spelling of it: a run named twice is one run
    for pattern in paths:
        for match in glob.glob(str(pattern)) or [str(pattern)]:
            root = Path(match)
            if not root.exists():
                raise FileNotFoundError(f"runs: {root} does not exist")
            # one walk of the tree (two rglobs were ~1 s at 10,000 runs); as rglob, not into symlinked directories, so
            # below the root every directory is itself: its real path is the root's and its own names (one realpath
            # a run, a stat of each part of its path, was ~0.4 s at 10,000 runs)
            top, real = os.fspath(root), os.path.realpath(root)
            for d, subdirs, files in os.walk(top):
                if _MARKERS.intersection(files):
                    found.setdefault(os.path.join(real, d[len(top) :].lstrip(os.sep)), Path(d))
                    subdirs.clear()  # (a run holds no runs: its train/, checkpoints/, video/ are not walked)
    return sorted(found.values())


_MARKERS = {SUMMARY, EVAL_CSV}


def _load_sweep(root: Path | None, run_dirs: list[Path], workers: int = 1) -> cache.Parsed:
    """The runs of one sweep: unchanged ones from its cache, the others parsed (and the cache brought up to date)."""
    if root is None:
        return parse_runs(run_dirs, workers)
    cached = cache.read(root)
    index = {d: i for i, d in enumerate(cached.run_dirs)} if cached else {}
    reused, fresh = [], []
    for k, run_dir in enumerate(run_dirs):
        i = index.get(str(run_dir))
        if i is not None and cached is not None and cached.signatures[i].tolist() == cache.signature(run_dir):
            reused.append((k, i))
        else:
            fresh.append(k)
    if cached is not None and not fresh and len(cached.run_dirs) == len(run_dirs):
        return cached.take(np.array([i for _, i in reused], dtype=np.int64))
    parts = [parse_runs([run_dirs[k] for k in fresh], workers)]
    if cached is not None and reused:
        parts.insert(0, cached.take(np.array([i for _, i in reused], dtype=np.int64)))
    positions = [k for k, _ in reused] if cached is not None and reused else []
    parsed = cache.Parsed.concat(parts).take(np.argsort(positions + fresh, kind="stable"))
    cache.write(root, parsed)
    return parsed


def read_runs(paths: Iterable[str | Path], *, use_cache: bool = True, workers: int = 1) -> cache.Parsed:
    """Every run under ``paths`` (sorted by directory), from each sweep's cache where its files are unchanged (the
    others parsed by ``workers`` processes: ``parse_runs``)."""
    run_dirs = find_run_dirs(paths)
    sweeps: dict[Path | None, list[int]] = {}
    for k, run_dir in enumerate(run_dirs):
        sweeps.setdefault(sweep_dir(run_dir) if use_cache else None, []).append(k)
    if not sweeps:
        return cache.Parsed.empty(len(METRICS))
    parts = [_load_sweep(root, [run_dirs[k] for k in ks], workers) for root, ks in sweeps.items()]
    positions = [k for ks in sweeps.values() for k in ks]
    return cache.Parsed.concat(parts).take(np.argsort(positions, kind="stable"))


def runs_table(parsed: cache.Parsed) -> pd.DataFrame:
    """``load_runs``' table of parsed runs."""
    import pandas as pd

    frame = pd.DataFrame(parsed.rows)
    for column in RUN_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame[RUN_COLUMNS + [c for c in frame.columns if c not in RUN_COLUMNS]]


def evaluations_table(parsed: cache.Parsed, runs: pd.DataFrame, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """``load_evaluations``' long table of parsed runs, built in one reshape: per run, per metric, file order."""
    import pandas as pd

    unknown = sorted(set(metrics or ()) - set(METRICS))
    if unknown:
        raise ValueError(f"metrics: unknown {', '.join(unknown)}; choose from {', '.join(METRICS)}")
    names = [m for m in METRICS if metrics is None or m in metrics]
    usable = (runs.status != "damaged").to_numpy(bool)
    run_parts, code_parts, row_parts = [], [], []
    for position, metric in enumerate(names):
        column = METRICS.index(metric)
        rows = np.flatnonzero(parsed.present[parsed.eval_run, column] & usable[parsed.eval_run])
        run_parts.append(parsed.eval_run[rows])
        code_parts.append(np.full(rows.size, position))
        row_parts.append(rows)
    covered = np.zeros(len(runs), dtype=bool)
    for part in run_parts:
        covered[part] = True
    bare = np.flatnonzero(~covered)  # no evaluation: one row with NaN values
    run = np.concatenate([*run_parts, bare]).astype(np.int64)
    code = np.concatenate([*code_parts, np.full(bare.size, -1)]).astype(np.int64)
    row = np.concatenate([*row_parts, np.full(bare.size, -1)]).astype(np.int64)
    order = np.argsort(run * (len(names) + 1) + code + 1, kind="stable")
    run, code, row = run[order], code[order], row[order]
    has = row >= 0
    timesteps = np.where(has, parsed.timesteps[row], np.nan)
    value = np.full(row.size, np.nan)
    columns = np.array([METRICS.index(m) for m in names], dtype=np.int64)
    value[has] = parsed.values[row[has], columns[code[has]]]
    if has.all() and np.array_equal(timesteps, np.round(timesteps)):
        timesteps = timesteps.astype(np.int64)
    table = {c: runs[c].to_numpy()[run] for c in RUN_COLUMNS}
    table.update(timesteps=timesteps, metric=pd.Categorical.from_codes(code, categories=names), value=value)
    return pd.DataFrame(table)


def load_tables(
    paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None, use_cache: bool = True, workers: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(load_runs, load_evaluations)`` of ``paths`` from one pass over their files (``metrics``: only these; files
    not cached are parsed by ``workers`` processes)."""
    parsed = read_runs(paths, use_cache=use_cache, workers=workers)
    runs = runs_table(parsed)
    return runs, evaluations_table(parsed, runs, metrics)


def load_runs(paths: Iterable[str | Path], *, use_cache: bool = True, hyperparameters: bool = True) -> pd.DataFrame:
    """One row per run directory: identity, status and the summary's numbers (NaN where a run has none), and
    (``hyperparameters``) one column per hyperparameter whose value differs among these runs, parsed from their
    ``config.yaml`` (``algo.learning_rate``, ``env.n_envs``, ...: :func:`hyperparameter_columns`).

    A run whose ``summary.json`` or ``eval.csv`` is damaged gets status ``damaged`` and the reason in ``problem``.
    Runs written before the run-identity keys existed get ``config_id`` and ``variant`` "" (one config per sweep).
    """
    runs = runs_table(read_runs(paths, use_cache=use_cache))
    if not hyperparameters:
        return runs
    return runs.join(hyperparameter_columns(runs))


def load_evaluations(
    paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None, use_cache: bool = True
) -> pd.DataFrame:
    """The long table of every evaluation of every run (``metrics``: only these); a run with no evaluation keeps one
    row with NaN values (damaged runs too: their evaluations are not used)."""
    return load_tables(paths, metrics=metrics, use_cache=use_cache)[1]


def load_episode_returns(paths: Iterable[str | Path]) -> pd.DataFrame:
    """Every evaluation episode of every run from its ``evaluations.npz``:
    ``[<run identity>, timesteps, episode, return, length]``; runs without the file (or damaged ones) add nothing."""
    import pandas as pd

    frames = []
    for run in load_runs(paths, hyperparameters=False).itertuples(index=False):
        data = read_evaluations_npz(Path(run.run_dir) / EVALUATIONS_NPZ) if run.status != "damaged" else {}
        if not data:
            continue
        n_evals, n_episodes = data["results"].shape
        frames.append(
            pd.DataFrame(
                {
                    **{c: getattr(run, c) for c in RUN_COLUMNS},
                    "timesteps": np.repeat(data["timesteps"], n_episodes),
                    "episode": np.tile(np.arange(n_episodes), n_evals),
                    "return": data["results"].ravel(),
                    "length": data["ep_lengths"].ravel(),
                }
            )
        )
    columns = [*RUN_COLUMNS, "timesteps", "episode", "return", "length"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a config's leaves (lists as JSON text, so that they compare and fit a column)."""
    if not isinstance(config, dict):
        return {prefix: json.dumps(config) if isinstance(config, list) else config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def hyperparameter_columns(runs: pd.DataFrame) -> pd.DataFrame:
    """One column per hyperparameter whose value differs among ``runs`` (``load_runs``' table), parsed from each
    run's ``config.yaml`` (one read per config: its seeds share it), named by its dotted key (``algo.gamma``);
    ``NOT_HYPERPARAMETERS`` (seed, paths, names) left out. A run without a readable config gets NaN."""
    import pandas as pd

    if runs.empty:
        return pd.DataFrame(index=runs.index)
    per_config: dict[Any, dict[str, Any]] = {}
    keys = list(zip(runs.config_id, runs.backend))
    for key, run_dir in zip(keys, runs.run_dir):
        if key not in per_config:
            config = RunDir(Path(run_dir)).read_config() or {}
            per_config[key] = {
                k: v for k, v in flatten(config).items() if k.split(".", 1)[0] not in NOT_HYPERPARAMETERS
            }
    table = pd.DataFrame([per_config[k] for k in keys], index=runs.index)
    differing = [c for c in table.columns if table[c].astype(str).nunique(dropna=False) > 1 and c not in runs]
    return table[sorted(differing)]
