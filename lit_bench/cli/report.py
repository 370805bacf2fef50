"""Summary table, lit-vs-SB3 comparison and figures of one or more sweeps, against SB3's runs of the same configs.

    python -m lit_bench.cli.report results/runs/<sweep> [more runs or globs] [--out DIR] [--formats png pdf]
        [--style screen|paper] [--x steps|wall] [--train-metrics METRIC ...] [--compare A B ...]

Writes ``summary.csv``, ``summary.md``, ``comparison.csv`` (when both backends ran), ``ablations.csv`` (variants vs
their base, ``--compare`` pairs: ``lit_bench.analysis.paired``) and the figures ``curves_<env>``, ``training_<env>``
(from ``train/metrics.csv``), ``final_scores``, ``throughput``, ``comparison``, ``ablations`` and, over two or more
envs, ``suite`` with ``suite.csv`` and ``normalization.csv`` (.png, and .pdf with ``--style paper``, or ``--formats``),
in one visual language (``analysis.style``). The ratio to SB3 is against the config's own ``backend=sb3`` runs (n
seeds), else the RL Zoo benchmark at its own budget (``summarize.with_ratio``). "Final" is the last evaluation, at the
end of the budget, as on the console and in the sweep table. Scores are deterministic evaluation returns; the point
estimate across seeds is the IQM with a stratified-bootstrap 95% CI (fixed seed, so reports are reproducible), flagged
under ``stats.MIN_SEEDS_FOR_CI`` seeds. Runs are grouped by (sweep, algo, backend, env, config), never by seed
number alone; damaged run files are named on stderr and left out.

This module is the command line; the report is the package ``lit_bench.analysis`` (``tables``, ``markdown``,
``figures``, ``pool``: drawing them in processes, ``write``).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
from collections.abc import Sequence
from pathlib import Path

from lit_bench.analysis import style
from lit_bench.analysis.markdown import ablations_section, markdown
from lit_bench.analysis.write import FORMATS, X_AXES, usable_cpus, write


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="lit-bench report", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, sweep directories or globs")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: <first run path>/report)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap")
    parser.add_argument(
        "--formats",
        nargs="+",
        choices=FORMATS,
        default=None,
        help="file formats of the figures (default: png; png and pdf with --style paper)",
    )
    parser.add_argument(
        "--workers",
        type=_positive,
        default=usable_cpus(),
        help="processes drawing the figures (default: the usable CPUs; 1: all in this process)",
    )
    parser.add_argument(
        "--style",
        choices=list(style.STYLES),
        default="screen",
        help="figure sizes and fonts: screen, or paper (one column of a two-column paper)",
    )
    parser.add_argument(
        "--x",
        choices=list(X_AXES),
        default="steps",
        help="x-axis of the learning curves: env steps, or wall-clock seconds of training",
    )
    parser.add_argument(
        "--train-metrics",
        nargs="+",
        default=[],
        metavar="METRIC",
        help="train/metrics.csv columns drawn in training_<env> (default: the rollout return and "
        "the main losses present; none: no training figures)",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        action="append",
        default=[],
        metavar=("A", "B"),
        help="pair two configs by seed, each named ALGO[@BACKEND][[VARIANT]] (e.g. my_ppo ppo, "
        "ppo ppo@sb3); repeatable. Variants (base: <algo>) are paired with their base without it",
    )
    args = parser.parse_args(argv)
    out = args.out or Path(str(args.runs[0]).rstrip("*/")) / "report"
    writable_out(out)
    try:
        summary, comparison, ablations = write(
            args.runs,
            out,
            seed=args.seed,
            formats=args.formats,
            workers=args.workers,
            x=X_AXES[args.x],
            look=args.style,
            train_metrics=args.train_metrics,
            compare=args.compare,
        )
    except OSError as error:  # e.g. the disk filled while the figures were written
        raise SystemExit(
            f"report: cannot write the report to {out} ({error.strerror or error}); "
            f"choose another folder with --out DIR"
        ) from None
    print(markdown(summary, comparison) + ablations_section(ablations))
    print(f"report written to {out}/ (summary.csv, summary.md, {'comparison.csv, ' if len(comparison) else ''}figures)")


def writable_out(out: Path) -> None:
    """Exit with one line unless ``out`` is a folder this process can write in, or can be made in one: checked before
    the runs are read."""
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())  # (nothing is made before the runs)
    if not existing.is_dir():
        raise SystemExit(f"report: --out {out}: {existing} is a file, not a folder; choose a folder with --out DIR")
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        raise SystemExit(
            f"report: cannot write the report to {out} ({error.strerror or error}); "
            f"choose a writable folder with --out DIR"
        ) from None


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number >= 1 (processes)")
    return int(text)


if __name__ == "__main__":
    # the garbage collector leaves alone what lives to the end: the modules imported (their objects were walked by
    # each full collection while the runs were read) and, at the exit, everything (~0.35 s at 10,000 runs)
    gc.freeze()
    main()
    gc.freeze()
