"""Bring old run directories up to date, once: ``lit-bench migrate <dir> [--dry-run]``.

Runs written while the config-facing modules sat in ``lit_bench.config`` (``lit_bench.config.noise.*``,
``lit_bench.config.wrappers.*``) name them by that path in their ``config.yaml``; they now live at ``lit_bench.noise``
and ``lit_bench.wrappers`` again, the path every config id was computed over. This rewrites those names (``RENAMED``)
in every run directory under ``<dir>`` (a run, a sweep or a whole ``out_dir``) and prints one line per change.

A rewritten config must hash to the ``config_hash`` its ``summary.json`` recorded (it was computed over the names
this writes), else the directory is left unchanged and said so. Each ``config.yaml`` is replaced atomically, after
its new version is written and checked: a failure leaves the original. A directory whose run is being written (its
lock held) is left alone. Exit status 1 when a directory could not be migrated.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from lit_bench.config.identity import config_hash
from lit_bench.store import format as fmt
from lit_bench.store.rundir import SAFE_LOADER, atomic_write_text, open_no_follow

#: old module -> its module now, for names in a run's ``config.yaml``
RENAMED = {"lit_bench.config.noise": "lit_bench.noise", "lit_bench.config.wrappers": "lit_bench.wrappers"}


class Refused(Exception):
    """A run directory this command leaves unchanged: one line saying why."""


def renamed(text: str) -> str:
    """``text`` with a module of ``RENAMED`` (as the whole string, or before ``.`` / ``:``) spelled as it is now."""
    for old, new in RENAMED.items():
        if text == old or text.startswith((f"{old}.", f"{old}:")):
            return new + text[len(old) :]
    return text


def rewrite(data: Any, where: str = "") -> tuple[Any, list[tuple[str, str, str]]]:
    """``data`` (a parsed config) with every renamed module path rewritten, and ``(node, old, new)`` per change."""
    changes: list[tuple[str, str, str]] = []
    if isinstance(data, dict):
        out: dict[Any, Any] = {}
        for key, value in data.items():
            out[key], found = rewrite(value, f"{where}.{key}" if where else str(key))
            changes += found
        return out, changes
    if isinstance(data, list):
        items = []
        for index, value in enumerate(data):
            item, found = rewrite(value, f"{where}[{index}]")
            items.append(item)
            changes += found
        return items, changes
    if isinstance(data, str) and renamed(data) != data:
        return renamed(data), [(where, data, renamed(data))]
    return data, changes


def configs(root: Path) -> list[Path]:
    """The ``config.yaml`` of every run directory under ``root`` (Hydra's own ``.hydra/`` copies are not runs')."""
    found = [root / fmt.CONFIG] if (root / fmt.CONFIG).is_file() else []
    found += (path for path in root.rglob(fmt.CONFIG) if path.parent != root and ".hydra" not in path.parts)
    return sorted(found)


@contextlib.contextmanager
def _unlocked(run: Path) -> Iterator[None]:
    """Hold the run's lock (``RunDir.lock``'s ``flock``) while migrating it; refuse a run another process writes."""
    lock = run / fmt.LOCK
    if not lock.exists():
        yield
        return
    with os.fdopen(open_no_follow(lock, os.O_RDWR), "r+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Refused("being written by a running run; left unchanged (migrate it when the run ends)") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _recorded_hash(run: Path) -> str | None:
    try:
        summary = json.loads((run / fmt.SUMMARY).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # a run without a readable summary: nothing to check the rewrite against
    found = summary.get("config_hash") if isinstance(summary, dict) else None
    return found if isinstance(found, str) else None


def migrate(path: Path, dry_run: bool) -> list[tuple[str, str, str]]:
    """Migrate one run's ``config.yaml`` (or only say what would change): its changes; ``Refused`` when it can't."""
    if path.is_symlink():
        raise Refused("is a symlink; left unchanged")
    try:
        data = yaml.load(path.read_text(), Loader=SAFE_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise Refused(f"unreadable ({type(error).__name__}); left unchanged") from None
    if not isinstance(data, dict):
        raise Refused("is not a mapping; left unchanged")
    new, changes = rewrite(data)
    if not changes:
        return []
    recorded = _recorded_hash(path.parent)
    if recorded is not None and config_hash(new) != recorded:
        raise Refused(
            f"rewritten, it hashes to {config_hash(new)}, not the config_hash {recorded} of {fmt.SUMMARY}; "
            f"left unchanged"
        )
    if not dry_run:
        with _unlocked(path.parent):
            atomic_write_text(path, yaml.safe_dump(new, sort_keys=False))  # (start.py writes config.yaml so)
    return changes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lit-bench migrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="a run directory, a sweep, or an out_dir (every run under it)")
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    root: Path = args.dir
    if not root.is_dir():
        sys.exit(f"lit-bench migrate: dir {str(root)!r} is not a directory (give a run, a sweep or an out_dir)")
    found = configs(root)
    if not found:
        sys.exit(f"lit-bench migrate: {root} holds no run directory (no {fmt.CONFIG} under it)")
    verb = "would change" if args.dry_run else "changed"
    migrated = refused = 0
    for path in found:
        try:
            changes = migrate(path, args.dry_run)
        except (Refused, OSError) as error:
            print(f"{path}: {error}", flush=True)
            refused += 1
            continue
        for node, old, new in changes:
            print(f"{path}: {node}: {verb} {old} -> {new}", flush=True)
        migrated += bool(changes)
    done = "to migrate" if args.dry_run else "migrated"
    print(
        f"{len(found)} run directories: {migrated} {done}, {len(found) - migrated - refused} up to date, {refused} not"
    )
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
