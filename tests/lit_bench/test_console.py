"""The live console (lit_bench.run.console): status lines with env steps / budget, env steps/s, the last evaluation
and the next, ETA; one line per evaluation in logs and in sweeps sharing a terminal; a heartbeat; a bar on a
terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_bench.config.checks import ConfigError, check_console
from lit_bench.run.console import ConsoleProgress, choose_mode
from tests.lit_bench.helpers import CHILD_ENV, REPO, TINY, compose_run

pytestmark = pytest.mark.harness
TWO_PROCESSES = ("hydra.launcher.n_jobs=2", "seeds_per_process=1")  # two jobs at once, a seed each
STATUS = re.compile(
    r"^\[ppo CartPole seed 0\] [\d,]+/512 env steps \(\d+%\) \| [\d,]+ steps/s \| eval -?[\d.]+ \+/- "
    r"[\d.]+ at [\d,]+( \| next eval at [\d,]+)? \| ETA \d+:\d\d:\d\d$"
)


def test_auto_is_a_bar_for_one_run_on_a_terminal_and_lines_elsewhere():
    assert choose_mode("auto", terminal=True, multirun=False, lightning_bar=False) == "bar"
    assert choose_mode("auto", terminal=True, multirun=True, lightning_bar=False) == "lines"  # joblib: no bars
    assert choose_mode("auto", terminal=False, multirun=False, lightning_bar=False) == "lines"  # logs
    assert choose_mode("auto", terminal=True, multirun=False, lightning_bar=True) == "off"  # Lightning's bar
    assert choose_mode("off", terminal=False, multirun=True, lightning_bar=False) == "off"
    with pytest.raises(ConfigError, match=r"console\.progress=loud: choose one of auto, bar, lines, off"):
        check_console("loud")  # (checked with the run's config, before training)


def test_a_run_prints_one_status_line_per_evaluation(capsys, monkeypatch):
    from lit_bench.run.train import run

    monkeypatch.setenv("LIT_BENCH_CONSOLE", "auto")  # the default outside the tests

    summary = run(compose_run(*TINY, "out_dir=runs"))  # stderr is no terminal here: lines
    assert summary["status"] == "completed"
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("[ppo CartPole seed 0]")]
    assert lines[0] == (
        "[ppo CartPole seed 0] training to 512 env steps; 2 evaluations, every 256 env steps, the first at 256"
    )
    assert len(lines) == 1 + 2 and all(STATUS.match(line) for line in lines[1:]), lines  # evaluations at 256, 512
    assert "next eval at 512" in lines[1] and lines[2].startswith("[ppo CartPole seed 0] 512/512 env steps (100%)")


def test_heartbeat_and_bar():
    out = io.StringIO()
    quiet = ConsoleProgress("x", 1000, 500, "lines", heartbeat_s=0.05, stream=out)
    quiet.start(0)
    quiet.step(10)
    assert "still training" not in out.getvalue()
    time.sleep(0.06)
    quiet.step(20)
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("[x] 20/1,000 env steps (2%) |") and last.endswith(" (still training)")
    assert "next eval at 500" in last

    bar = io.StringIO()
    live = ConsoleProgress("x", 1000, 500, "bar", stream=bar)
    live.start(0)
    live.step(100)
    live.evaluated({"timesteps": 500, "mean_return": 7.0, "std_return": 1.0})
    live.close()
    assert bar.getvalue().startswith("\r[x] 100/1,000") and "eval 7.0 +/- 1.0 at 500" in bar.getvalue()
    assert bar.getvalue().endswith("\n") and bar.getvalue().count("\n") == 1


def test_jobs_sharing_a_terminal_print_lines_not_bars(tmp_path: Path):
    main, terminal = pty.openpty()  # the sweep's stderr is a terminal, as in an interactive shell
    try:
        process = subprocess.Popen(
            [sys.executable, "run.py", "-m", *TINY, "seed=0,1", *TWO_PROCESSES, f"out_dir={tmp_path}"],
            cwd=REPO,
            env={**CHILD_ENV, "LIT_BENCH_CONSOLE": "auto"},
            stdout=subprocess.DEVNULL,
            stderr=terminal,
        )
        os.close(terminal)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal closed: every process writing to it has ended
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=600) == 0
    finally:
        os.close(main)
    shown = b"".join(chunks).decode()
    assert "\r[" not in shown  # no bar (a terminal turns "\n" into "\r\n": only that "\r" is there)
    for seed in (0, 1):
        evaluations = [
            line for line in shown.splitlines() if line.startswith(f"[ppo CartPole seed {seed}] ") and "steps/s" in line
        ]
        assert len(evaluations) == 2, shown[-3000:]
