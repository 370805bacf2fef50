"""A regression suite as ``regress`` runs it: the suite's config (``conf/suite/``), narrowed to some entries
(``--only``) or with scaled budgets (``--scale``), its sweep and report directories, and what it would run
(``--dry-run``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lit_bench.config.sources import find_config, group_options
from lit_bench.control import cost_table, suite_plan

BACKENDS = {"lit": "lit", "sb3": "sb3"}


def load_suite(name: str) -> dict[str, Any]:
    path = find_config("suite", name)  # a user's config directory may add suites (lit_bench.config.sources)
    if path is None:
        raise SystemExit(f"suite: unknown suite {name!r}; available: {', '.join(group_options('suite'))}")
    return yaml.safe_load(path.read_text())


def only(suite: dict[str, Any], wanted: list[str]) -> None:
    """Mark every entry (and parity entry) not named ``algo:env`` in ``wanted`` as skipped."""
    entries = suite["entries"] + suite.get("parity", [])
    unknown = set(wanted) - {f"{e['algo']}:{e['env']}" for e in entries}
    if unknown:
        raise SystemExit(f"--only: {sorted(unknown)} not in suite {suite['name']!r}")
    for entry in entries:
        entry["skip"] = f"{entry['algo']}:{entry['env']}" not in wanted


def scale(suite: dict[str, Any], factor: float) -> None:
    """Multiply the budgets of the suite's entries and parity entries by ``factor`` (``--scale``)."""
    for kind in ("entries", "parity"):
        kept = {id(e) for e in suite.get(kind, []) if not e.get("skip")}
        budgets = iter(entry.budget for entry in suite_plan.scaled(suite.get(kind, []), factor))
        for entry in suite.get(kind, []):
            if id(entry) in kept:
                entry["budget"] = next(budgets)


def seeds_of(suite: dict[str, Any], kind: str = "entries") -> list[int]:
    """The seeds the suite's ``kind`` list ("entries" or "parity") runs: parity entries take ``parity_seeds`` where
    the suite gives them (an exact comparison needs no more seeds to be conclusive), else the suite's ``seeds``."""
    if kind not in ("entries", "parity"):
        raise ValueError(f"kind: {kind!r} is not a suite list; valid: entries, parity")
    key = "parity_seeds" if kind == "parity" and "parity_seeds" in suite else "seeds"
    return [int(seed) for seed in suite[key]]


def dry_run(suite: dict[str, Any], launcher: str | None) -> int:
    """Print what the suite would run (``--dry-run``): multiruns, resources per run, estimated core-hours."""
    for kind, backends in (("entries", ["lit"]), ("parity", list(BACKENDS))):
        entries = suite_plan.scaled(suite.get(kind, []), 1.0)
        if not entries:
            continue
        seeds = seeds_of(suite, kind)
        result = suite_plan.plan(
            entries, len(seeds) * len(backends), launcher, cost_table.costs(), batchable=kind == "entries"
        )
        print(f"{suite['name']} {kind} ({', '.join(backends)}; seeds {seeds}):")
        print(suite_plan.describe(result))
    return 0


def sweep_dir_of(suite: dict[str, Any], backend: str, out_dir: Path, kind: str = "entries") -> Path:
    return out_dir / f"regress_{suite['name']}_{'parity_' if kind == 'parity' else ''}{backend}"


def report_dir(suite: dict[str, Any], backend: str, out_dir: Path) -> Path:
    return sweep_dir_of(suite, backend, out_dir) / "report"
