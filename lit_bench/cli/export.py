"""Lay out completed runs as the RL Zoo's log folder, so that the Zoo's own plot scripts read them unchanged.

    lit-bench export results/runs/default --out zoo_logs
    python -m rl_zoo3.plots.all_plots -a ppo -e CartPole-v1 -f zoo_logs/lit zoo_logs/sb3 -l lit sb3 -o zoo_logs/all
    python -m rl_zoo3.plots.plot_from_file -i zoo_logs/all.pkl -o zoo_logs/all.svg
    python -m rl_zoo3.plots.plot_train -a ppo -e CartPole-v1 -f zoo_logs/lit

(it prints these commands for the exported runs; the plots need ``pip install -e '.[zoo-plots]'``).

Each completed run becomes ``<out>/<group>/<algo>/<EnvId>_<seed + 1>/`` holding links (relative symlinks, not copies)
to its ``evaluations.npz`` (SB3's ``EvalCallback`` file) and its training envs' ``<i>.monitor.csv`` (SB3's
``Monitor`` files); a file that is a symlink leading outside its run is left out with one line (a run whose
``evaluations.npz`` does is not exported). ``<group>`` is one of the Zoo's experiment folders (``-f``): runs that
differ in anything but the seed never share one -- the backend (``lit``, ``sb3``, ``lit+parity``), the variant
(``lit_budget=3000``) when the config is not the composed default, and the sweep when the runs come from several. A
link that is already there pointing at the same file is kept; one pointing elsewhere stops the export with one line
(nothing is overwritten).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lit_bench.analysis.load import find_run_dirs
from lit_bench.store.format import EVALUATIONS_NPZ
from lit_bench.store.rundir import RunDir


class ExportError(ValueError):
    """Something the export cannot do without overwriting or guessing (the message is one line)."""


@dataclass(frozen=True)
class Exported:
    run_dir: Path
    folder: Path  # <out>/<group>/<algo>/<EnvId>_<n>
    group: str
    algo: str
    env_id: str


def _group(summary: dict, run_dir: Path, several_sweeps: bool) -> str:
    backend = str(summary.get("backend") or "lit")
    parity = run_dir.parents[2 if summary.get("variant") else 1].name.endswith("+parity")
    name = backend + ("+parity" if parity else "")
    if summary.get("variant"):
        name += f"_{summary['variant']}"  # path-safe; two configs that share one stop the export (see export())
    if several_sweeps:
        name = f"{summary.get('sweep')}_{name}"
    return name


def plan(paths: Sequence[str | Path], out: Path) -> tuple[list[Exported], int]:
    """Where each completed run under ``paths`` goes, and how many runs were left out (not completed)."""
    runs = [(d, RunDir(d).read_summary()) for d in find_run_dirs(paths)]
    completed = [(d, s) for d, s in runs if s and s.get("status") == "completed" and (d / EVALUATIONS_NPZ).is_file()]
    several = len({s.get("sweep") for _, s in completed}) > 1
    exported = []
    for run_dir, summary in completed:
        env_id = str(summary.get("env_id") or summary["env"])
        group = _group(summary, run_dir, several)
        folder = out / group / str(summary["algo"]) / f"{env_id}_{int(summary['seed']) + 1}"
        exported.append(Exported(run_dir, folder, group, str(summary["algo"]), env_id))
    return exported, len(runs) - len(completed)


def _link(target: Path, link: Path) -> None:
    relative = os.path.relpath(target.resolve(), link.parent.resolve())
    if link.is_symlink() or link.exists():
        if link.is_symlink() and (link.parent / os.readlink(link)).resolve() == target.resolve():
            return
        raise ExportError(
            f"--out: {link} exists and is not a link to {target}; nothing was overwritten: choose another --out"
        )
    link.symlink_to(relative)


def export(paths: Sequence[str | Path], out: Path) -> tuple[list[Exported], int]:
    """Link every completed run under ``paths`` into ``out`` (see the module docstring)."""
    exported, left_out = plan(paths, out)
    folders = [e.folder for e in exported]
    if len(set(folders)) != len(folders):  # two configs with one shortened variant name: never merge their runs
        raise ExportError(
            "runs of two configs map to the same Zoo folder (their variant names are shortened alike); "
            "export them one at a time, each with its own --out"
        )
    linked = []
    for entry in exported:
        if _outside(entry.run_dir, entry.run_dir / EVALUATIONS_NPZ):
            continue  # (said): the run has no evaluations of its own to plot
        entry.folder.mkdir(parents=True, exist_ok=True)
        _link(entry.run_dir / EVALUATIONS_NPZ, entry.folder / EVALUATIONS_NPZ)
        for monitor in RunDir(entry.run_dir).monitor_files():
            if not _outside(entry.run_dir, monitor):
                _link(monitor, entry.folder / monitor.name)
        linked.append(entry)
    return linked, left_out


def _outside(run_dir: Path, path: Path) -> bool:
    """Whether ``path`` of a run is a symlink leading out of the run (it is left out, in one line: the export links
    a run's own files, never what its links point at)."""
    target = path.resolve()
    if target.is_relative_to(run_dir.resolve()):
        return False
    print(f"export: {path} points outside its run ({target}); left out", file=sys.stderr)
    return True


def commands(exported: list[Exported], out: Path) -> list[str]:
    """The RL Zoo's plot commands for the exported tree."""
    groups = sorted({e.group for e in exported})
    algos = sorted({e.algo for e in exported})
    envs = sorted({e.env_id for e in exported})
    folders = " ".join(str(out / g) for g in groups)
    return [
        f"python -m rl_zoo3.plots.all_plots -a {' '.join(algos)} -e {' '.join(envs)} -f {folders} "
        f"-l {' '.join(groups)} -o {out / 'all_plots'} --no-display",  # (it adds .pkl)
        f"python -m rl_zoo3.plots.plot_from_file -i {out / 'all_plots.pkl'} -o {out / 'all_plots.svg'}",
        *(
            f"python -m rl_zoo3.plots.plot_train -a {algo} -e {' '.join(envs)} -f {out / g}"
            for g in groups
            for algo in algos
        ),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lit-bench export", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, sweep directories or globs")
    parser.add_argument("--out", type=Path, required=True, help="the Zoo log folder to create (links only)")
    parser.add_argument("--json", action="store_true", help="print the exported runs as JSON lines")
    args = parser.parse_args(argv)
    try:
        exported, left_out = export(args.runs, args.out)
    except (ExportError, FileNotFoundError) as error:
        sys.exit(str(error))
    if args.json:
        for e in exported:
            print(json.dumps({"run_dir": str(e.run_dir), "folder": str(e.folder)}))
    skipped = f"; {left_out} not completed, left out" if left_out else ""
    print(f"{len(exported)} completed runs linked into {args.out}/ (the RL Zoo's layout){skipped}. Plot them with:")
    for command in commands(exported, args.out) if exported else []:
        print(f"  {command}")


if __name__ == "__main__":
    main()
