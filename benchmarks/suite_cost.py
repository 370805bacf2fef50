"""CPU cost per env step of every (algorithm, env family) of a regression suite, for planning cluster runs.

    python benchmarks/suite_cost.py --suite zoo_all [--families classic mujoco atari box2d] [--out FILE]

For each (algo, family) of the suite, the first of its entries is trained twice by the harness (``run.py``'s run in
this process: the algorithm's RL Zoo settings for that env, one torch thread, evaluation only at the end), with
budgets B and B + D, after a warm-up run (one-time imports, first env builds); the difference of the two runs' CPU
times over D is the CPU seconds per env step of training there (env and model set-up and the final evaluation
cancel out). Off-policy algorithms start learning after 100
steps (``learning_starts`` only delays the first update; the cost per step after it is what the budget pays for).
CPU time, unlike wall time, hardly depends on what else the machine runs, so a measurement on a busy machine still
estimates core-hours.
The table (``results/reference/suite_cost.csv``) feeds ``lit-bench regress --dry-run``.

    python benchmarks/suite_cost.py --suite zoo_all --families classic mujoco --group-sizes 2 5

measures the same for the seeds ``seeds_per_process=auto`` trains as one batched model (lit_sb3's ``SeedGroup``,
``lit_bench.run.group``): each run is a batched group of N seeds (seeds 0..N-1), and its row (``group_size`` N) holds
the group's CPU seconds per env step of ONE seed, (CPU(B + D) - CPU(B)) / (N x D), and beside it
(``alone_cpu_s_per_step``) one process per seed's, measured first in the same command on the same env: the planner
prices a group by their ratio (``lit_bench.control.cost_table.group_ratio``), which a busy machine's slower CPU
time, and an env other than the pair's one-process-per-seed row's, leave alone. Each pair is measured on its first
entry in the suite whose seeds batch (``lit_bench.run.batched.refusal``; named in the row). Rows without a
``group_size`` are one process per seed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from lit_bench.config.budget import ars_update_of
from lit_bench.config.checks import ConfigError
from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.store.format import SUMMARY

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "conf" / "suite"
OUT = ROOT / "results" / "reference" / "suite_cost.csv"
OFF_POLICY = {"sac", "td3", "ddpg", "dqn", "qrdqn", "tqc", "crossq"}
FIELDS = (
    "algo",
    "family",
    "env",
    "group_size",
    "cpu_s_per_step",
    "alone_cpu_s_per_step",
    "steps_measured",
    "measured",
    "host",
    "command",
)


def families() -> dict[tuple[str, str], str]:
    """(algo, env) -> family, from the per-family suites (zoo_<family>.yaml)."""
    found = {}
    for path in sorted(SUITES.glob("zoo_*.yaml")):
        suite = yaml.safe_load(path.read_text())
        if suite["name"] == "zoo_all":
            continue
        for entry in suite["entries"]:
            found[(entry["algo"], entry["env"])] = suite["name"].removeprefix("zoo_")
    return found


def representatives(
    suite: str, wanted: set[str] | None, algos: set[str] | None = None, batched: bool = False
) -> dict[tuple[str, str], str]:
    """(algo, family) -> the env of its first entry in ``suite`` (only ``wanted`` families and ``algos``; with
    ``batched``, only entries whose seeds train as one batched model)."""
    family_of = families()
    chosen: dict[tuple[str, str], str] = {}
    for entry in yaml.safe_load((SUITES / f"{suite}.yaml").read_text())["entries"]:
        family = family_of.get((entry["algo"], entry["env"]))
        if family is None or (wanted is not None and family not in wanted) or (algos and entry["algo"] not in algos):
            continue
        if (entry["algo"], family) in chosen or (batched and not batches(entry["algo"], entry["env"])):
            continue
        chosen[(entry["algo"], family)] = entry["env"]
    return chosen


def batches(algo: str, env: str) -> bool:
    """Whether the seeds of ``algo`` on ``env`` (the RL Zoo's settings) train as one batched model."""
    from lit_bench.run.batched import refusal

    try:
        return refusal(_compose(algo, env, [])) is None
    except Exception:  # an env whose extra is not installed here
        return False


def _compose(algo: str, env: str, overrides: list[str]):  # type: ignore[no-untyped-def]
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    with initialize_config_dir(config_dir=str(ROOT / "conf"), **VERSION_BASE):
        cfg = compose("config", return_hydra_config=True, overrides=[f"algo={algo}", f"env={env}", *overrides])
    HydraConfig.instance().set_config(cfg)
    return cfg


def shorter_rollouts(algo: str, env: str) -> list[str]:
    """``algo.n_steps=...`` for an on-policy run whose rollout (n_envs x n_steps) outgrows the measured span: a
    rollout of ~2,048 env steps (at least one minibatch). An update costs the same per env step whatever n_steps
    (n_epochs passes over each sample), so the cost per step is kept; the per-rollout overhead is paid more often
    (an upper bound)."""
    cfg = _compose(algo, env, [])
    n_steps, n_envs = cfg.algo.get("n_steps"), int(cfg.env.n_envs)
    if n_steps is None or n_envs * int(n_steps) <= budgets(algo, env)[1]:
        return []
    batch = int(cfg.algo.get("batch_size") or 1)
    return [f"algo.n_steps={max(-(-batch // n_envs), 2048 // n_envs, 1)}"]


def cpu_of_run(
    algo: str, env: str, budget: int, out_dir: Path, more: list[str] | None = None, group: int = 0
) -> tuple[float, int]:
    """CPU seconds (user + system, this process) of one harness run training ``budget`` env steps, and the env
    steps it trained (a rollout-sized budget may round up). The run is the one ``run.py`` would make, in this
    process: imports are paid once for all measurements. ``group``: a batched group of that many seeds instead
    (the job ``seeds_per_process=auto`` makes), its CPU time for all of them, its env steps per seed."""
    from lit_bench.run.train import run

    # learning after 100 steps; a buffer of 10,000 transitions (the run stores 900: a 1M buffer of Atari frames
    # would need 53 GB, and its size does not change the cost of a step)
    extra = ["algo.learning_starts=100", "algo.buffer_size=10000"] if algo in OFF_POLICY else []
    cfg = _compose(
        algo,
        env,
        [
            f"budget={budget}",
            f"eval.every={budget}",
            "eval.episodes=1",
            "threads=1",
            f"out_dir={out_dir}",
            "sweep=cost",
            "force=true",
            *extra,
            *(more or []),
            *([group_override(group)] if group else []),
        ],
    )
    started = time.process_time()
    summary = run_group(cfg, out_dir) if group else run(cfg)
    spent = time.process_time() - started
    if summary["status"] != "completed":
        raise RuntimeError(f"{algo} {env}: {summary['status']}: {summary.get('error')}")
    return spent, int(summary["timesteps"])


def group_override(size: int) -> str:
    """The ``seed_group`` a launcher gives the job of a batched group of seeds 0..size-1."""
    seeds = ",".join(str(seed) for seed in range(size))
    return f"seed_group={{seeds:[{seeds}],jobs:[{seeds}],batched:true}}"


def run_group(cfg: Any, out_dir: Path) -> dict[str, Any]:
    """Train a group's job in this process (``lit_bench.run.group``); its first seed's summary, or the first that
    did not complete."""
    from hydra.core.hydra_config import HydraConfig

    from lit_bench.control.seed_groups import set_job
    from lit_bench.run import group

    hydra = HydraConfig.instance().cfg.hydra  # type: ignore[union-attr]
    set_job(hydra, 0, [], str(out_dir / "job"))  # (a launcher's job has its directory)
    summaries = [json.loads((Path(str(r.run_dir)) / SUMMARY).read_text()) for r in group.run_group(cfg)]
    if len(summaries) != len(cfg.seed_group.seeds):
        raise RuntimeError(f"a group of {len(cfg.seed_group.seeds)} seeds returned {len(summaries)}")
    return next((s for s in summaries if s["status"] != "completed"), summaries[0])


def budgets(algo: str, env: str) -> tuple[int, int]:
    """(B, D): B covers start-up and the first rollouts / learning_starts, D is the measured part. ARS stops only
    between updates of whole episodes (``lit_bench.config.budget.ars_update``), so where an update may take more
    than these spans, B is one update's most env steps and D two more."""
    if algo in OFF_POLICY:
        return 300, 600
    update = ars_update_of(_compose(algo, env, [])) if algo == "ars" else None
    if update is not None and update.most_steps > 2_000:
        return update.most_steps, 2 * update.most_steps
    return 2_000, 6_000


def measure(
    suite: str, wanted: set[str] | None, out: Path, algos: set[str] | None = None, group_sizes: list[int] | None = None
) -> None:
    """Measure and write the rows of ``suite``'s (algo, family) pairs: one process per seed, or with
    ``group_sizes`` one process per seed on the env the groups train on (kept in their rows), then batched groups of
    each size (the sizes in turn, each over every pair)."""
    chosen = representatives(suite, wanted, algos, batched=bool(group_sizes))
    alone: dict[tuple[str, str], float] = {}
    warm: set[tuple[str, str, bool]] = set()  # one process per seed, or batched: each pays its one-time costs once
    for size in [0, *(group_sizes or [])]:
        for (algo, family), env in sorted(chosen.items()):
            if size and (algo, family) not in alone:
                continue
            label = f"{algo:<8} {family:<9} {env:<24}" + (f" group of {size:<3}" if size else "")
            row = _measured(suite, algo, family, env, size, label, warm_up=(algo, family, bool(size)) not in warm)
            warm.add((algo, family, bool(size)))
            if row is None:
                continue
            if not group_sizes:
                _keep(out, row)
            elif not size:
                alone[(algo, family)] = float(row["cpu_s_per_step"])
            else:
                _keep(out, {**row, "alone_cpu_s_per_step": f"{alone[(algo, family)]:.6f}"})


def _measured(
    suite: str, algo: str, family: str, env: str, size: int, label: str, warm_up: bool
) -> dict[str, Any] | None:
    """The row of ``algo`` on ``env`` (``size``: a batched group of that many seeds, 0: one process per seed), or
    None where it cannot be measured (printed). ``warm_up``: a run first, for one-time imports and compilation."""
    first, more = budgets(algo, env)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            shorter = shorter_rollouts(algo, env)
            if warm_up:
                cpu_of_run(algo, env, first, Path(tmp) / "warm-up", shorter, size)
            short, short_steps = cpu_of_run(algo, env, first, Path(tmp) / "short", shorter, size)
            long, long_steps = cpu_of_run(algo, env, first + more, Path(tmp) / "long", shorter, size)
        except (RuntimeError, ConfigError) as error:
            print(f"{label} not measured: {error}", flush=True)
            return None
    more = long_steps - short_steps
    if more <= 0 or long <= short:  # no span measured, or it cost less than the noise of one run's set-up
        print(
            f"{label} not measured: {more} more env steps cost no more CPU ({long:.2f} s vs {short:.2f} s); "
            f"measure with larger budgets",
            flush=True,
        )
        return None
    per_step = (long - short) / (more * max(size, 1))
    print(f"{label} {per_step * 1e3:8.3f} ms CPU per env step (of one seed)", flush=True)
    command = f"python benchmarks/suite_cost.py --suite {suite}" + (f" --group-sizes {size}" if size else "")
    return {
        "algo": algo,
        "family": family,
        "env": env,
        "group_size": size or "",
        "cpu_s_per_step": f"{per_step:.6f}",
        "steps_measured": more,
        "measured": time.strftime("%Y-%m-%d"),
        "host": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": command + "".join(f" ({o})" for o in shorter),
    }


def _keep(out: Path, row: dict[str, Any]) -> None:
    rows = {_key(r): r for r in _read(out)}  # re-read: several measuring processes may share it
    rows[_key(row)] = row
    _write(out, rows.values())


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["algo"], row["family"], str(row.get("group_size") or "")


def _read(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open() as file:
        return list(csv.DictReader(file))


def _order(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["family"], row["algo"], int(row.get("group_size") or 0)


def _write(path: Path, rows: object) -> None:
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with temporary.open("w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=_order))  # type: ignore[call-overload]
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="zoo_all")
    parser.add_argument("--families", nargs="*", default=None, help="only these (classic, mujoco, atari, ...)")
    parser.add_argument("--algos", nargs="*", default=None, help="only these algorithms")
    parser.add_argument(
        "--group-sizes", nargs="*", type=int, default=None, help="measure batched groups of these many seeds instead"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if any(size < 1 for size in args.group_sizes or []):
        parser.error(f"--group-sizes {args.group_sizes}: seeds per group, each 1 or more")
    families_wanted = set(args.families) if args.families else None
    algos = set(args.algos) if args.algos else None
    measure(args.suite, families_wanted, args.out, algos, args.group_sizes)


if __name__ == "__main__":
    main()
