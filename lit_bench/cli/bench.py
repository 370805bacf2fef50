"""``lit-bench [algo=ppo env=CartPole seed=0 budget=...]``, or ``-m`` to sweep: the harness's command (``run.py`` is
the same command). ``lit-bench <tool> ...`` runs one of the tools instead (``TOOLS``: ``lit-bench report --help``;
each is also ``python -m lit_bench.cli.<tool>``). It prints its plan first (runs, env steps, estimated CPU and wall
time: lit_bench.control.run_plan); ``--dry-run`` prints only that; ``--allow-no-learning`` runs a budget without a
gradient step.

Groups and options are the built-in ``conf/`` (shipped in the package) plus the user's config directories
(``--config-dir``, ``hydra.searchpath``, ``LIT_BENCH_CONFIG_PATH``: ``lit_bench.config.sources``). Each run writes its
own directory under ``<out_dir>/<sweep>/`` (``out_dir`` default ``results/runs``, relative to the current directory;
layout: lit_bench.config.identity) and returns its objective, so Hydra sweepers such as Optuna can use it.
"""

import importlib
import os
import sys
from typing import Any

from omegaconf import DictConfig

from lit_bench.config.hydra_versions import VERSION_BASE
from lit_bench.config.identity import sweep_path
from lit_bench.control import signals
from lit_bench.control.sweep import INVOCATION_ENV, job_result, record_job, report

# The tools of lit_bench.cli, each a module with ``main(argv)``; a Hydra override is never one bare word, so the first
# argument tells a tool from a run.
TOOLS = ("report", "regress", "enjoy", "coverage", "quickstart", "export", "migrate")


def task(cfg: DictConfig) -> float | list[Any] | None:
    """One job of the command: a run (or, in a sweep, one of its runs, or a group of its seeds' runs)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.get().mode == RunMode.MULTIRUN and signals.sweep_stopped():
        return None  # a joblib worker after the sweep was interrupted: start no new run
    signals.install()
    signals.watch_sweep()  # a joblib worker: stop when the sweep's process is gone
    with signals.job():
        if cfg.get("seed_group"):  # several seeds of one config in this process (lit_bench.control.seed_groups)
            from lit_bench.run.group import run_group

            return run_group(cfg)  # (the launcher hands back one result per seed)
        return _run_job(cfg)


def _run_job(cfg: DictConfig) -> float | None:
    # Imported here, not above: a joblib sweep's parent process only launches and reports, and never pays for
    # Lightning, SB3 and torch; its workers import them once each (loky reuses them for the following jobs).
    from lit_bench.run.outcome import describe
    from lit_bench.run.train import run

    summary = run(cfg)
    if "rank" in summary:  # a further process of a multi-process run: rank 0 reports the run
        from lit_bench.run.ranks import rank_exit_code

        sys.exit(rank_exit_code(summary))
    print(describe(summary), flush=True)
    if signals.pending() is None:
        return job_result(cfg, summary)  # a failed run: exit 1 (single run) or a failed job/trial (multirun)
    record_job(cfg, summary)  # interrupted: in the sweep table
    if signals.in_sweep_process():
        report([sweep_path(cfg)], os.environ.get(INVOCATION_ENV))  # sequential sweep: stop
    signals.finish()  # exits 130 / 143 (a joblib worker returns: its parent reports)
    return None


def _take_flag(flag: str) -> bool:
    """Whether ``flag`` is on the command line (removed from it)."""
    found = flag in sys.argv[1:]
    sys.argv[1:] = [arg for arg in sys.argv[1:] if arg != flag]
    return found


def main() -> None:
    """The console entry point: a tool (``lit-bench report ...``), or Hydra's command line, with the built-in configs
    and the user's."""
    if len(sys.argv) > 1 and sys.argv[1] in TOOLS:
        sys.exit(importlib.import_module(f"lit_bench.cli.{sys.argv[1]}").main(sys.argv[2:]))
    # A quiet Ctrl-C while Hydra and the rest import; here, not at the top: a joblib worker imports this module for
    # ``task`` and must keep the harness's own handler (lit_bench.control.signals), not this one.
    signals.quiet_while_importing()
    import hydra

    from lit_bench.config.algo_overrides import OverrideError, rewrite
    from lit_bench.config.hydra_versions import main_whitelist
    from lit_bench.config.resources import conf_dir
    from lit_bench.config.sources import UserConfigError, fold_command_line, install, user_config_dirs
    from lit_bench.config.trust import live_run_targets
    from lit_bench.control.run_plan import announce

    try:
        fold_command_line(sys.argv[1:])
        user_config_dirs()  # checked here: one line, before Hydra starts
    except UserConfigError as error:
        sys.exit(f"lit-bench: {error}")
    install()
    try:
        sys.argv[1:] = rewrite(sys.argv[1:])  # algo.<key>=... in an algorithm sweep: for each algorithm that has it
    except OverrideError as error:
        sys.exit(str(error))
    # Our own flags, taken off before Hydra parses the command line: the plan (cost, budgets) comes first.
    dry_run, allow_no_learning = (_take_flag(flag) for flag in ("--dry-run", "--allow-no-learning"))
    announce(sys.argv[1:], dry_run, allow_no_learning)
    whitelist = main_whitelist(live_run_targets(sys.argv[1:]))
    hydra.main(config_path=str(conf_dir()), config_name="config", **VERSION_BASE, **whitelist)(task)()


if __name__ == "__main__":
    main()
