"""Regression benchmarks: run a named suite through the real harness, compare with committed thresholds.

    lit-bench regress --suite ci              # run lit_sb3, print measured vs threshold, exit 1 on regression
    lit-bench regress --suite ci --record     # run lit_sb3 and SB3 on 10 seeds, (re)write results/baselines/ci.csv
    lit-bench regress --suite nightly         # the longer suite (every algorithm at larger budgets)
    lit-bench regress --suite zoo_atari --launcher slurm   # a suite of SB3's reference table, on SLURM

Entries with the same algo, budget and overrides run as one ``lit-bench -m`` multirun over their envs and the suite's
seeds (joblib launcher: one process per core; ``--launcher`` picks another, e.g. slurm or ray_local); lit_sb3's
runs of them take the suite's ``seeds_per_process`` (batched seed groups where lit_sb3 batches the algorithm). An
entry without ``budget`` runs the budget its algo_env file sets (the RL Zoo's). A suite with ``reference: true`` and
no recorded thresholds is compared with SB3's reference scores in its report instead. The score is the final
evaluation return's IQM across seeds (``lit_bench.cli.report``).

``--record`` trains both backends on the suite's ``record_seeds`` (at least 10; a check's ``seeds`` among them) and
writes, per entry, the threshold a check of the suite's ``seeds`` must reach: the lower of the two backends'
``false_alarm`` quantiles (1%) of that check's IQM, resampled from the recorded seeds (``verdicts.thresholds``), so
a check with other seeds of either implementation fails it at most that often. Beside it go the evidence (both
backends' IQM and 95% CI, the estimated false-alarm rates, the rate at which it fails an agent that learned half as
much) and each seed's score (``results/baselines/<suite>_seeds.csv``). It refuses, writing nothing, a threshold from
fewer than 10 recorded or 5 checked seeds, reached by a random policy (``results/reference/random_scores.csv``), or
less than half the way from a random policy's score to what the seeds reach: such a threshold cannot tell a
regression from seed noise.

A suite's ``parity`` entries are exact-parity checks: lit_sb3 with ``parity=true`` (SB3's exact optimizer) and SB3
train with the same seeds (the suite's ``parity_seeds`` where given, else its ``seeds``), and every seed's final
evaluation must be identical (no threshold involved).

This module is the command line, running a suite's entries through the harness and the check / record flows; a
suite's config and options are in ``lit_bench.cli.regression.suites``, the scores, thresholds and parity verdicts in
``lit_bench.cli.regression.verdicts``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from lit_bench.analysis.load import load_runs
from lit_bench.analysis.write import write_report
from lit_bench.cli.regression.suites import (
    BACKENDS,
    dry_run,
    load_suite,
    only,
    report_dir,
    scale,
    seeds_of,
    sweep_dir_of,
)
from lit_bench.cli.regression.verdicts import (
    FALSE_ALARM,
    MIN_RECORD_SEEDS,
    MIN_SEEDS,
    compare,
    measured,
    parity_result,
    print_parity,
    print_table,
    selected,
    thresholds,
    toothless,
)
from lit_bench.config.resources import baselines_dir, source_checkout
from lit_bench.control import suite_plan
from lit_bench.control.sweep import TAG_ENV, read_records
from lit_bench.store.rundir import RunDir, atomic_write_text


def run_suite(
    suite: dict[str, Any], backend: str, out_dir: Path, launcher: str | None = None, kind: str = "entries"
) -> list[Path]:
    """Run every entry of the suite's ``kind`` list ("entries" or "parity") for ``backend`` (entries sharing algo,
    budget and overrides as one multirun); returns the run directories these runs wrote (runs of other configs left
    in the same sweep directory by earlier suite versions are neither touched nor measured). lit_sb3's entries take
    the suite's ``seeds_per_process``; parity entries run lit_sb3 with ``parity=true``, in sweeps of their own, each
    seed in its own process (the ordinary path, exactly), with the suite's ``parity_seeds`` where it gives them."""
    sweep = sweep_dir_of(suite, backend, out_dir, kind).name
    seeds = ",".join(str(s) for s in seeds_of(suite, kind))
    switch = []
    if backend == "lit" and kind == "parity":  # SB3's exact optimizer, each seed in its own process
        switch = ["parity=true", "seeds_per_process=1"]
    elif backend == "lit" and "seeds_per_process" in suite:  # batched where lit_sb3 batches the algorithm
        switch = [f"seeds_per_process={suite['seeds_per_process']}"]
    tag = f"regress-{uuid.uuid4().hex[:8]}"  # the multiruns' ids start with it: their job records name the runs
    groups: dict[tuple[str, Any, tuple[str, ...]], list[str]] = {}
    for entry in suite.get(kind, []):
        if not entry.get("skip"):
            key = (entry["algo"], entry.get("budget"), tuple(entry.get("overrides", [])))
            groups.setdefault(key, []).append(entry["env"])
    for (algo, budget, overrides), envs in groups.items():
        command = [
            sys.executable,
            "-m",
            "lit_bench.cli.bench",
            "-m",
            "--allow-no-learning",  # a suite's entries are fixed (and --scale shrinks them): its verdicts judge them
            f"algo={algo}",
            f"env={','.join(envs)}",
            f"seed={seeds}",
            *([f"budget={budget}"] if budget is not None else []),
            f"backend={backend}",
            f"sweep={sweep}",
            f"out_dir={out_dir}",
            f"eval.episodes={suite.get('eval_episodes', 5)}",
            *([] if suite.get("resume") else ["force=true"]),
            *([f"hydra/launcher={launcher}"] if launcher else []),
            *switch,
            *overrides,
        ]
        print(f"[regress] {' '.join(command[2:])}", flush=True)
        # failures are recorded per run and judged below
        subprocess.run(command, check=False, env={**os.environ, TAG_ENV: tag})
    return sorted({Path(r["run_dir"]) for r in read_records(out_dir / sweep, f"{tag}-*")})


def measure(
    suite: dict[str, Any], backend: str, out_dir: Path, launcher: str | None = None, *, report: bool = False
) -> pd.DataFrame:
    """Run the suite's entries on ``backend``; their summary table (and, with ``report``, the full report written to
    ``<sweep>/report``: the CI artifact; none for a suite, or an ``--only``, of parity entries alone)."""
    runs = run_suite(suite, backend, out_dir, launcher)
    if report and runs:
        write_report(runs, report_dir(suite, backend, out_dir))
    return measured(runs, suite)


def check_parity(suite: dict[str, Any], out_dir: Path, launcher: str | None = None) -> pd.DataFrame:
    """Run the suite's exact-parity entries on both backends (with the suite's launcher) and compare their final
    evaluations."""
    if not any(not e.get("skip") for e in suite.get("parity", [])):
        return parity_result(suite, pd.DataFrame(), pd.DataFrame())
    runs = {backend: load_runs(run_suite(suite, backend, out_dir, launcher, kind="parity")) for backend in BACKENDS}
    return parity_result(suite, runs["lit"], runs["sb3"])


def record(
    suite: dict[str, Any], baseline_file: Path, out_dir: Path, launcher: str | None = None, *, keep_others: bool = False
) -> int:
    """Measure both backends on the suite's ``record_seeds`` and (re)write the thresholds a check of its ``seeds``
    must reach, with their evidence beside them: each threshold's row holds both backends' IQM and 95% CI and the
    estimated false-alarm rates (``verdicts.thresholds``), ``<suite>_seeds.csv`` every recorded seed's score.
    ``keep_others``: entries not measured now keep theirs. Refused, writing nothing, when a threshold would not
    separate a regression from seed noise (``verdicts.toothless``)."""
    check_seeds, recorded = len(suite["seeds"]), [int(s) for s in suite.get("record_seeds", suite["seeds"])]
    if check_seeds < MIN_SEEDS:
        raise SystemExit(
            f"--record: suite {suite['name']!r} checks {check_seeds} seeds; a threshold judges the IQM of at least "
            f"{MIN_SEEDS} (its seeds: list)"
        )
    if len(recorded) < MIN_RECORD_SEEDS:
        raise SystemExit(
            f"--record: suite {suite['name']!r} records {len(recorded)} seeds; thresholds are recorded from at "
            f"least {MIN_RECORD_SEEDS} per backend (its record_seeds: list)"
        )
    runs = {backend: run_suite({**suite, "seeds": recorded}, backend, out_dir, launcher) for backend in BACKENDS}
    seeds = per_seed(runs, suite)
    scores = {backend: measured(paths, suite) for backend, paths in runs.items()}
    table = thresholds(scores, seeds, check_seeds, float(suite.get("false_alarm", FALSE_ALARM)))
    refused = toothless(table, list(BACKENDS))
    if refused:
        print("\n".join(f"refused: {line}" for line in refused))
        print(f"nothing written to {baseline_file}")
        return 1
    today = datetime.date.today().isoformat()
    budgets = {f"{e['algo']}:{e['env']}": e.get("budget") for e in suite["entries"]}
    table.insert(2, "budget", (table.algo + ":" + table.env).map(budgets))
    table["recorded"] = today
    table["command"] = f"lit-bench regress --suite {suite['name']} --record"
    seeds = seeds.assign(recorded=today)
    seeds_file = baseline_file.with_name(f"{baseline_file.stem}_seeds.csv")
    if keep_others:
        table = kept_alongside(table, baseline_file, suite)
        seeds = kept_alongside(seeds, seeds_file, suite)
    atomic_write_text(seeds_file, seeds.to_csv(index=False, float_format="%.3f"))
    atomic_write_text(baseline_file, table.to_csv(index=False, float_format="%.3f"))
    print(table.to_string(index=False))
    print(f"thresholds written to {baseline_file}, the seeds' scores to {seeds_file}")
    return 0


def per_seed(runs: dict[str, list[Path]], suite: dict[str, Any]) -> pd.DataFrame:
    """Every recorded run's final evaluation, and whether it trained in a batched seed group: the evidence a
    threshold comes from."""
    parts = []
    for backend, paths in runs.items():
        table = selected(load_runs(paths), suite) if paths else pd.DataFrame()
        if len(table):
            batched = [bool((RunDir(path).read_config() or {}).get("batched")) for path in table.run_dir]
            part = table[["algo", "env", "seed", "status", "final_mean_return", "budget"]]
            parts.append(part.assign(backend=backend, batched=batched))
    columns = ["algo", "env", "backend", "seed", "status", "final_mean_return", "budget", "batched"]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns].sort_values(columns[:4])


def kept_alongside(table: pd.DataFrame, recorded_file: Path, suite: dict[str, Any]) -> pd.DataFrame:
    """``table`` with the rows of ``recorded_file`` whose entries it does not hold (``--only``), of the suite's
    entries only (a row of an entry the suite no longer has goes)."""
    if not recorded_file.is_file():
        return table
    kept = pd.read_csv(recorded_file)
    names = kept.algo + ":" + kept.env
    entries = {f"{e['algo']}:{e['env']}" for e in suite["entries"]}
    kept = kept[names.isin(entries) & ~names.isin(table.algo + ":" + table.env)]
    columns = [*table.columns, *(c for c in kept.columns if c not in table.columns)]  # a kept row's own columns last
    both = pd.concat([kept, table], ignore_index=True)[columns].sort_values(["algo", "env"])
    counts = [c for c in table.columns if pd.api.types.is_integer_dtype(table[c])]  # (a kept row's blanks: no floats)
    return both.astype({c: "Int64" for c in counts})


def check(suite: dict[str, Any], baseline_file: Path, out_dir: Path, launcher: str | None = None) -> int:
    """Measure lit_sb3 against the recorded thresholds (and the exact-parity entries); 1 on any regression. A
    reference suite without thresholds is compared with SB3's reference scores instead."""
    if not baseline_file.is_file() and suite.get("reference"):
        table = measure(suite, "lit", out_dir, launcher, report=True)
        return against_references(suite, table, report_dir(suite, "lit", out_dir))
    if not baseline_file.is_file():
        raise SystemExit(f"baselines: {baseline_file} is missing; record it with --record")
    result = compare(measure(suite, "lit", out_dir, launcher, report=True), pd.read_csv(baseline_file), suite)
    print_table(result)
    print(f"report: {report_dir(suite, 'lit', out_dir)}")
    parity = check_parity(suite, out_dir, launcher)
    if len(parity):
        print_parity(parity)
    checks = pd.concat([result.passed, parity.passed], ignore_index=True).astype(bool)
    regressions = int((~checks).sum())
    print(f"{len(checks) - regressions} passed, {regressions} failed")
    return 1 if regressions else 0


def against_references(suite: dict[str, Any], table: pd.DataFrame, report: Path) -> int:
    """A reference suite: the report compares each entry with SB3's reference score; failed runs fail the suite."""
    print(table[["algo", "env", "seeds", "failed", "final_iqm", "sb3_reference"]].to_string(index=False))
    missing = sum(1 for e in suite["entries"] if not e.get("skip")) - len(table)
    failed = int(table.failed.sum()) + max(missing, 0)
    print(f"report: {report}\n{failed} failed or missing")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lit-bench regress", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="ci")
    parser.add_argument("--out-dir", type=Path, default=Path("results") / "runs")
    parser.add_argument("--record", action="store_true", help="measure both backends and rewrite the thresholds")
    parser.add_argument(
        "--baselines",
        type=Path,
        default=None,
        help="thresholds CSV (default: the shipped results/baselines/; --record from an installed "
        "wheel: ./results/baselines/)",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        metavar="ALGO:ENV",
        help="run only these entries (with --record: update only their thresholds)",
    )
    parser.add_argument(
        "--launcher",
        default=None,
        help="Hydra launcher for the runs (conf/hydra/launcher/: slurm, "
        "ray, ray_local, ...); default: joblib, one process per core",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the multiruns, their resources and the "
        "estimated core-hours (results/reference/suite_cost.csv); run nothing",
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply every budget by this factor (at least "
        f"{suite_plan.MIN_SCALED_BUDGET} steps), e.g. 0.001 to test the suite machinery end to end",
    )
    continuing = parser.add_mutually_exclusive_group()
    continuing.add_argument(
        "--resume",
        dest="resume",
        action="store_true",
        default=None,
        help="keep completed runs, resume interrupted and failed ones from their checkpoints "
        "(default for reference suites: zoo_*)",
    )
    continuing.add_argument(
        "--fresh",
        dest="resume",
        action="store_false",
        help="train every run again (force=true; default for threshold suites: ci, nightly)",
    )
    args = parser.parse_args(argv)
    suite = load_suite(args.suite)
    suite["resume"] = bool(suite.get("reference")) if args.resume is None else args.resume
    if args.only is not None:
        only(suite, args.only)
    if args.scale != 1:
        scale(suite, args.scale)
    if args.dry_run:
        return dry_run(suite, args.launcher)
    mode = (
        "resuming: completed runs are kept (--fresh trains all again)"
        if suite["resume"]
        else "fresh: every run trains again (--resume keeps completed runs)"
    )
    print(f"[regress] {mode}", flush=True)
    baseline_file = args.baselines or baselines_dir() / f"{suite['name']}.csv"
    if args.record and args.baselines is None and source_checkout() is None:
        baseline_file = Path("results") / "baselines" / f"{suite['name']}.csv"  # (never into an installed package)
    if args.record:
        return record(suite, baseline_file, args.out_dir, args.launcher, keep_others=args.only is not None)
    return check(suite, baseline_file, args.out_dir, args.launcher)


if __name__ == "__main__":
    sys.exit(main())
