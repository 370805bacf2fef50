"""Which of SB3's published reference scores this harness can run, and why not when it cannot.

    lit-bench coverage              # per-family counts, the rows that cannot run (with the reason)
    lit-bench coverage --all        # every reference row
    lit-bench coverage --csv c.csv  # the whole table as CSV
    lit-bench coverage --no-make    # skip building each env once (faster; misses envs that fail to build)

A reference row (algo, env id of the RL Zoo's benchmark) is runnable when ``results/reference/env_version_map.csv``
maps its env id to an id that an env group (``conf/env/<name>.yaml``) pins, ``conf/algo/<algo>.yaml`` exists, the
env's package imports (its extra is installed) and the env builds and resets. ``tuned`` says whether
``conf/algo_env/<algo>_<name>.yaml`` holds the Zoo's hyperparameters for the pair.
"""

from __future__ import annotations

import argparse
import csv
import sys
import traceback
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import gymnasium as gym
import yaml
from omegaconf import OmegaConf

from lit_bench.config.checks import ConfigError, require_package
from lit_bench.config.resources import conf_dir, reference_dir


@dataclass(frozen=True)
class Row:
    algo: str
    reference_env_id: str
    env_id: str
    same_version: bool
    env: str | None  # our env group
    family: str | None  # the extra that installs it; "core" for the base install
    tuned: bool
    runnable: bool
    reason: str


def env_groups(conf: Path | None = None) -> dict[str, tuple[str, dict]]:
    """Env id -> (group name, its config) for every ``conf/env/*.yaml`` that pins an id."""
    groups: dict[str, tuple[str, dict]] = {}
    for path in sorted(((conf or conf_dir()) / "env").glob("*.yaml")):
        config = yaml.safe_load(path.read_text())
        if config.get("id"):
            groups.setdefault(str(config["id"]), (path.stem, config))
    return groups


@cache
def build_problem(
    env_id: str, package: str | tuple[str, ...] | None, extra: str | None, name: str, make: bool
) -> str | None:
    """Why the env cannot be used here (missing extra, fails to build), or None."""
    try:
        require_package(
            OmegaConf.create({"package": list(package) if isinstance(package, tuple) else package, "extra": extra}),
            name,
        )
    except ConfigError as error:
        return str(error)
    if env_id not in gym.envs.registry:
        return f"gymnasium has no env {env_id} (after importing {package})"
    if not make:
        return None
    try:
        env = gym.make(env_id)
        env.reset(seed=0)
        env.close()
    except Exception as error:  # any failure to build means not runnable; say where it came from
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = "/".join(Path(frame.filename).parts[-3:])
        return f"{env_id} fails to build: {type(error).__name__} {error} at {where}:{frame.lineno}".replace("  ", " ")
    return None


def coverage(conf: Path | None = None, reference: Path | None = None, make: bool = True) -> list[Row]:
    """One row per reference score (``conf``, ``reference``: the built-in configs and reference data by default)."""
    conf, reference = conf or conf_dir(), reference or reference_dir()
    with (reference / "sb3_reference_scores.csv").open(newline="") as file:
        references = list(csv.DictReader(file))
    with (reference / "env_version_map.csv").open(newline="") as file:
        mapping = {r["reference_env_id"]: r for r in csv.DictReader(file)}
    groups = env_groups(conf)
    algos = {p.stem for p in (conf / "algo").glob("*.yaml")}
    rows = []
    for ref in references:
        algo, ref_id = ref["algo"], ref["env_id"]
        mapped = mapping.get(ref_id)
        env_id = mapped["env_id"] if mapped else ref_id
        same = mapped is None or mapped["same_version"].strip().lower() == "true"
        name, config = groups.get(env_id, (None, {}))
        family = config.get("extra") or ("core" if name else None)
        tuned = name is not None and (conf / "algo_env" / f"{algo}_{name}.yaml").is_file()
        if name is None:
            reason = f"no env group pins {env_id} (conf/env/*.yaml)"
        elif algo not in algos:
            reason = f"no algo config conf/algo/{algo}.yaml"
        else:
            package = config.get("package")
            package = tuple(package) if isinstance(package, list) else package
            reason = build_problem(env_id, package, config.get("extra"), name, make) or ""
        rows.append(Row(algo, ref_id, env_id, same, name, family, tuned, not reason, reason))
    return rows


def summary(rows: list[Row]) -> str:
    families: dict[str, list[Row]] = {}
    for row in rows:
        families.setdefault(row.family or "none", []).append(row)
    parts = [f"{name} {sum(r.runnable for r in fam)}/{len(fam)}" for name, fam in sorted(families.items())]
    runnable = sum(r.runnable for r in rows)
    tuned = sum(r.runnable and r.tuned for r in rows)
    return (
        f"{'; '.join(parts)}\ncoverage: {runnable}/{len(rows)} SB3 reference scores runnable "
        f"({tuned} with the Zoo's tuned hyperparameters)"
    )


def describe(row: Row) -> str:
    version = "" if row.same_version else f" (runs {row.env_id})"
    where = f"env={row.env}{', tuned' if row.tuned else ''}" if row.env else "no env group"
    status = "runnable" if row.runnable else f"NOT RUNNABLE: {row.reason}"
    return f"{row.algo:9s} {row.reference_env_id}{version} [{where}]: {status}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lit-bench coverage", description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="list every reference row, not only those that cannot run")
    parser.add_argument("--csv", type=Path, help="write the whole table to this CSV file")
    parser.add_argument("--no-make", action="store_true", help="do not build each env once")
    args = parser.parse_args(argv)
    rows = coverage(make=not args.no_make)
    for row in rows:
        if args.all or not row.runnable:
            print(describe(row))
    if args.csv:
        with args.csv.open("w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(asdict(rows[0])))
            writer.writeheader()
            writer.writerows(asdict(r) for r in rows)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
