"""The measured cost table, ``results/reference/suite_cost.csv`` (written by ``benchmarks/suite_cost.py``): CPU seconds
per env step of each algorithm and env family one process per seed, and of a seed in a batched group of N seeds,
read by the plans (``suite_plan``, ``run_plan``) and by ``seeds_per_process=auto`` (``seed_groups``)."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from lit_bench.config.resources import conf_dir, reference_dir

COSTS = reference_dir() / "suite_cost.csv"


def family_of() -> dict[tuple[str, str], str]:
    """(algo, env) -> env family, from the per-family suites ``conf/suite/zoo_<family>.yaml``."""
    found = {}
    for path in sorted((conf_dir() / "suite").glob("zoo_*.yaml")):
        suite = yaml.safe_load(path.read_text())
        if suite["name"] != "zoo_all":
            for entry in suite["entries"]:
                found[(entry["algo"], entry["env"])] = suite["name"].removeprefix("zoo_")
    return found


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open() as file:
        return list(csv.DictReader(file))


def cost_rows(path: Path = COSTS) -> dict[tuple[str, str], dict[str, str]]:
    """(algo, family) -> its row of the cost table for one process per seed (``cpu_s_per_step``, the ``env`` it
    was measured on, ...)."""
    return {(r["algo"], r["family"]): r for r in _rows(path) if not r.get("group_size")}


def costs(path: Path = COSTS) -> dict[tuple[str, str], float]:
    """(algo, family) -> measured CPU seconds per env step, one process per seed."""
    return {key: float(row["cpu_s_per_step"]) for key, row in cost_rows(path).items()}


GroupRatios = dict[tuple[str, str], dict[int, float]]


def group_cost_rows(path: Path = COSTS) -> dict[tuple[str, str], dict[int, dict[str, str]]]:
    """(algo, family) -> {group size: its row} of the cost table's batched groups (``group_size`` N: the group's
    CPU seconds per env step of one of its N seeds, and ``alone_cpu_s_per_step``: one process per seed on the same
    env, measured beside it)."""
    found: dict[tuple[str, str], dict[int, dict[str, str]]] = {}
    for row in _rows(path):
        if row.get("group_size") and row.get("alone_cpu_s_per_step"):
            found.setdefault((row["algo"], row["family"]), {})[int(row["group_size"])] = row
    return found


def ratios(rows: dict[int, dict[str, str]]) -> dict[int, float]:
    """{group size: a seed's CPU per env step in a batched group of that size over one process per seed's}."""
    return {size: float(r["cpu_s_per_step"]) / float(r["alone_cpu_s_per_step"]) for size, r in rows.items()}


def group_ratios(path: Path = COSTS) -> GroupRatios:
    """(algo, family) -> ``ratios`` of its batched groups' rows."""
    return {key: ratios(rows) for key, rows in group_cost_rows(path).items()}


def group_ratio(measured: dict[int, float], size: int) -> float | None:
    """A seed's CPU per env step in a batched group of ``size`` seeds over one process per seed's: the ratio
    measured at the largest group size up to ``size`` (None where none is that small). A group shares its per-step
    Python work among its seeds, which a larger group should make cheaper per seed; the table's measurements
    (docs/benchmarks.md) do not all show it (one measurement per size, on a busy machine), so the direction of the
    error is not known."""
    sizes = [n for n in measured if n <= size]
    return measured[max(sizes)] if sizes else None
