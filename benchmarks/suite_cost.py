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
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import tempfile
import time
from pathlib import Path

import yaml

from lit_bench.config.checks import ConfigError
from lit_bench.config.hydra_versions import VERSION_BASE

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "conf" / "suite"
OUT = ROOT / "results" / "reference" / "suite_cost.csv"
OFF_POLICY = {"sac", "td3", "ddpg", "dqn", "qrdqn", "tqc", "crossq"}
FIELDS = ("algo", "family", "env", "cpu_s_per_step", "steps_measured", "measured", "host", "command")


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


def representatives(suite: str, wanted: set[str] | None, algos: set[str] | None = None) -> dict[tuple[str, str], str]:
    """(algo, family) -> the env of its first entry in ``suite`` (only ``wanted`` families and ``algos``)."""
    family_of = families()
    chosen: dict[tuple[str, str], str] = {}
    for entry in yaml.safe_load((SUITES / f"{suite}.yaml").read_text())["entries"]:
        family = family_of.get((entry["algo"], entry["env"]))
        if family is not None and (wanted is None or family in wanted) and (algos is None or entry["algo"] in algos):
            chosen.setdefault((entry["algo"], family), entry["env"])
    return chosen


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
    if n_steps is None or n_envs * int(n_steps) <= budgets(algo)[1]:
        return []
    batch = int(cfg.algo.get("batch_size") or 1)
    return [f"algo.n_steps={max(-(-batch // n_envs), 2048 // n_envs, 1)}"]


def cpu_of_run(algo: str, env: str, budget: int, out_dir: Path, more: list[str] | None = None) -> tuple[float, int]:
    """CPU seconds (user + system, this process) of one harness run training ``budget`` env steps, and the env
    steps it trained (a rollout-sized budget may round up). The run is the one ``run.py`` would make, in this
    process: imports are paid once for all measurements."""
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
        ],
    )
    started = time.process_time()
    summary = run(cfg)
    spent = time.process_time() - started
    if summary["status"] != "completed":
        raise RuntimeError(f"{algo} {env}: {summary['status']}: {summary.get('error')}")
    return spent, int(summary["timesteps"])


def budgets(algo: str) -> tuple[int, int]:
    """(B, D): B covers start-up and the first rollouts / learning_starts, D is the measured part."""
    return (300, 600) if algo in OFF_POLICY else (2_000, 6_000)


def measure(suite: str, wanted: set[str] | None, out: Path, algos: set[str] | None = None) -> None:
    for (algo, family), env in sorted(representatives(suite, wanted, algos).items()):
        first, more = budgets(algo)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                shorter = shorter_rollouts(algo, env)
                cpu_of_run(algo, env, first, Path(tmp) / "warm-up", shorter)  # one-time imports and compilation
                short, short_steps = cpu_of_run(algo, env, first, Path(tmp) / "short", shorter)
                long, long_steps = cpu_of_run(algo, env, first + more, Path(tmp) / "long", shorter)
            except (RuntimeError, ConfigError) as error:
                print(f"{algo:<8} {family:<9} {env:<24} not measured: {error}", flush=True)
                continue
        more = long_steps - short_steps
        if more <= 0 or long <= short:  # no span measured, or it cost less than the noise of one run's set-up
            print(
                f"{algo:<8} {family:<9} {env:<24} not measured: {more} more env steps cost no more CPU "
                f"({long:.2f} s vs {short:.2f} s); measure with larger budgets",
                flush=True,
            )
            continue
        per_step = (long - short) / more
        row = {
            "algo": algo,
            "family": family,
            "env": env,
            "cpu_s_per_step": f"{per_step:.6f}",
            "steps_measured": more,
            "measured": time.strftime("%Y-%m-%d"),
            "host": f"{platform.node()} ({os.cpu_count()} cores)",
            "command": f"python benchmarks/suite_cost.py --suite {suite}" + "".join(f" ({o})" for o in shorter),
        }
        print(f"{algo:<8} {family:<9} {env:<24} {per_step * 1e3:8.3f} ms CPU per env step", flush=True)
        rows = {(r["algo"], r["family"]): r for r in _read(out)}  # re-read: several measuring processes may share it
        rows[(algo, family)] = row
        _write(out, rows.values())


def _read(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open() as file:
        return list(csv.DictReader(file))


def _write(path: Path, rows: object) -> None:
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with temporary.open("w", newline="") as file:
        writer = csv.DictWriter(file, FIELDS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda r: (r["family"], r["algo"])))  # type: ignore[arg-type]
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="zoo_all")
    parser.add_argument("--families", nargs="*", default=None, help="only these (classic, mujoco, atari, ...)")
    parser.add_argument("--algos", nargs="*", default=None, help="only these algorithms")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    measure(
        args.suite, set(args.families) if args.families else None, args.out, set(args.algos) if args.algos else None
    )


if __name__ == "__main__":
    main()
