"""The per-sweep cache of parsed run files: the tables of reading every file, never stale, never trusted blindly."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lit_bench.analysis import cache, parse
from lit_bench.analysis.load import load_runs, load_tables
from lit_bench.store.rundir import atomic_write_text

from ..helpers import make_sweep, write_run

ROOT = Path(__file__).resolve().parents[3]


def _sweep(tmp_path: Path) -> Path:
    """The fixture sweep plus damaged runs of every kind the loader names."""
    make_sweep(tmp_path)
    sweep = tmp_path / "fixture_sweep"
    cut = write_run(sweep, "dqn", "CartPole", 0, "lit", [10.0, 20.0, 30.0])
    (cut / "eval.csv").write_text((cut / "eval.csv").read_text()[:-10])
    bad_summary = write_run(sweep, "dqn", "CartPole", 1, "lit", [10.0, 20.0])
    (bad_summary / "summary.json").write_text('{"status": "compl')
    no_number = write_run(sweep, "dqn", "CartPole", 2, "lit", [10.0, 20.0, 30.0])
    text = (no_number / "eval.csv").read_text()
    (no_number / "eval.csv").write_text(text.replace("\n2000,2.0,20.0,", "\n2000,2.0,x,"))
    ragged = write_run(sweep, "dqn", "CartPole", 3, "lit", [10.0, 20.0, 30.0])  # one row long, one short: same commas
    lines = (ragged / "eval.csv").read_text().splitlines()
    lines[1], lines[2] = lines[1].rsplit(",", 1)[0], lines[2] + ",1"
    (ragged / "eval.csv").write_text("\n".join(lines) + "\n")
    return sweep


def _tables(sweep: Path, use_cache: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_tables([sweep], use_cache=use_cache)


def _assert_same(sweep: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cached path gives exactly the tables of reading every file."""
    cached = _tables(sweep, True)
    for got, want in zip(cached, _tables(sweep, False)):
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    return cached


def test_cached_tables_are_the_uncached_ones(tmp_path):
    sweep = _sweep(tmp_path)
    first = _assert_same(sweep)  # builds the cache
    assert (sweep / cache.CACHE_FILE).is_file()
    before = (sweep / cache.CACHE_FILE).stat().st_mtime_ns
    second = _assert_same(sweep)  # reads it, and leaves it alone
    assert (sweep / cache.CACHE_FILE).stat().st_mtime_ns == before
    runs, evals = second
    pd.testing.assert_frame_equal(runs, first[0])
    problems = runs.set_index(["algo", "seed"]).problem
    assert "the last row is cut short" in problems[("dqn", 0)] and "unreadable (JSONDecodeError" in problems[("dqn", 1)]
    assert "row 2 has no number for timesteps or mean_return" in problems[("dqn", 2)]
    assert "unreadable (ParserError)" in problems[("dqn", 3)]
    damaged = evals[evals.algo == "dqn"]
    assert len(damaged) == 4 and damaged.value.isna().all()  # one row each, no evaluations used


def test_a_changed_added_or_removed_run_is_read_again(tmp_path):
    sweep = _sweep(tmp_path)
    _assert_same(sweep)
    run = sweep / "ppo" / "CartPole" / "seed_0"
    eval_csv = run / "eval.csv"
    stat = eval_csv.stat()
    with eval_csv.open("r+") as file:  # in place, same size, mtime put back: only the ctime tells
        text = file.read()
        file.seek(0)
        file.write(text.replace("100.0", "101.0"))
    os.utime(eval_csv, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    runs, evals = _assert_same(sweep)
    ret = evals[(evals.run_dir == str(run)) & (evals.metric == "mean_return")]
    assert ret.value.iloc[0] == 101.0
    summary = json.loads((run / "summary.json").read_text())
    atomic_write_text(run / "summary.json", json.dumps({**summary, "status": "failed"}))  # an atomic rewrite
    runs, _ = _assert_same(sweep)
    assert runs.set_index("run_dir").status[str(run)] == "failed"
    added = write_run(sweep, "ppo", "CartPole", 7, "lit", [1.0, 2.0, 3.0])
    runs, _ = _assert_same(sweep)
    assert str(added) in set(runs.run_dir)
    shutil.rmtree(added)
    shutil.rmtree(run)
    runs, evals = _assert_same(sweep)
    assert not {str(added), str(run)} & (set(runs.run_dir) | set(evals.run_dir))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_sweep"])
def test_a_damaged_or_foreign_cache_is_rebuilt(tmp_path, damage):
    sweep = _sweep(tmp_path)
    _assert_same(sweep)
    path = sweep / cache.CACHE_FILE
    if damage == "garbage":
        path.write_bytes(b"not a cache\n" * 10)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:  # another sweep's cache copied here: its paths are not this sweep's
        other = tmp_path / "other"
        shutil.copytree(sweep, other / "fixture_sweep")
        shutil.copy(path, other / "fixture_sweep" / cache.CACHE_FILE)
        sweep = other / "fixture_sweep"
        path = sweep / cache.CACHE_FILE
    assert cache.read(sweep) is None
    _assert_same(sweep)
    assert cache.read(sweep) is not None  # rebuilt


def test_a_failed_cache_write_leaves_the_old_cache(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path)
    _assert_same(sweep)
    old = (sweep / cache.CACHE_FILE).read_bytes()

    def fail(file, **arrays):
        file.write(b"half a cache")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", fail)
    write_run(sweep, "ppo", "CartPole", 8, "lit", [1.0, 2.0, 3.0])
    _assert_same(sweep)  # still right, without a cache it could write
    assert (sweep / cache.CACHE_FILE).read_bytes() == old
    assert [p.name for p in sweep.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="parsing workers fork")
def test_runs_parsed_by_several_processes_are_the_ones_parsed_in_one(tmp_path, monkeypatch):
    sweep = _sweep(tmp_path)  # (damaged runs of every kind among them)
    monkeypatch.setattr(parse, "SPLIT_FROM", 2)  # split even these few runs: 3 parts
    one = load_tables([sweep], use_cache=False)
    for use_cache in (False, True, True):  # files, then the cache written from the parts, then the cache read
        for got, want in zip(load_tables([sweep], use_cache=use_cache, workers=3), one):
            pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (sweep / cache.CACHE_FILE).is_file() and len(one[0]) > 3


def test_synthetic_runs_load_like_harness_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("synthetic_runs", ROOT / "benchmarks" / "synthetic_runs.py")
    synthetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synthetic)
    sweeps = synthetic.generate(tmp_path, 120, n_configs=4, n_evals=20)
    runs, evals = _assert_same(tmp_path)
    assert len(runs) == 120 and set(runs.sweep) == {s.name for s in sweeps}
    assert set(runs.status) <= {"completed", "failed", "interrupted", "damaged"} and (runs.status == "completed").any()
    completed = runs[runs.status == "completed"]
    assert len(evals[evals.run_dir.isin(completed.run_dir)]) == 20 * 7 * len(completed)


def test_copies_of_a_real_run_hold_all_its_files_and_load_as_distinct_runs(tmp_path):
    """benchmarks/report_scale.py --from-run: its runs are copies of a real run directory (every file), each its own
    seed and config to the analysis."""
    spec = importlib.util.spec_from_file_location("synthetic_runs", ROOT / "benchmarks" / "synthetic_runs.py")
    synthetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synthetic)
    source = write_run(tmp_path / "real", "ppo", "CartPole", 0, "lit", [10.0, 20.0, 30.0])
    (source / "checkpoints").mkdir()
    (source / "checkpoints" / "last.ckpt").write_bytes(b"\0" * 64)  # the files the report never reads are copied too
    (source / "monitor").mkdir()
    (source / "monitor" / "0.monitor.csv").write_text("#\nr,l,t\n")
    sweep = synthetic.copies(source, tmp_path / "copies", 12, n_configs=3)
    runs = load_runs([sweep])
    assert len(runs) == 12 and (runs.status == "completed").all()
    assert runs.config_id.nunique() == 3 and runs.groupby("config_id").seed.nunique().eq(4).all()
    for run_dir in runs.run_dir:
        files = {p.relative_to(run_dir) for p in Path(run_dir).rglob("*") if p.is_file()}
        assert files == {p.relative_to(source) for p in source.rglob("*") if p.is_file()}
