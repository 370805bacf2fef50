"""The report's speeds (lit_bench.analysis.summarize / paired, the report's tables and throughput figure): env steps
per CPU-second when the runs recorded their CPU time, so a busy machine does not change the lit / SB3 ratio; the
wall-clock speed of older runs is labelled as such; the spread over seeds is shown."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from lit_bench.analysis import plot
from lit_bench.analysis.markdown import markdown
from lit_bench.analysis.tables import tables
from tests.lit_bench.helpers import write_run


def _pair_sweep(root, *, lit_cpu=(1200.0, 1100.0, 1300.0), sb3_cpu=(1000.0, 1000.0, 1000.0)):
    """lit's wall-clock speed halved by another process's load, its CPU speed 1.1-1.3x SB3's."""
    for seed in range(3):
        returns = [100.0, 200.0, 400.0 + seed]
        lit_extra = {} if lit_cpu is None else {"cpu_fps": lit_cpu[seed]}
        sb3_extra = {} if sb3_cpu is None else {"cpu_fps": sb3_cpu[seed]}
        write_run(root, "ppo", "CartPole", seed, "lit", returns, fps=500.0, **lit_extra)
        write_run(root, "ppo", "CartPole", seed, "sb3", returns, fps=1000.0, **sb3_extra)
    return root


def test_the_lit_over_sb3_speed_is_per_cpu_second_with_its_spread(tmp_path):
    _, summary, comparison = tables([_pair_sweep(tmp_path / "s")])
    row = comparison.iloc[0]
    assert row.fps_ratio_median == pytest.approx(1.2) and row.fps_ratio_min == pytest.approx(1.1)
    assert row.fps_ratio_max == pytest.approx(1.3) and row.fps_clock == "cpu"
    lit = summary.set_index("backend").loc["lit"]
    assert lit.fps_median == pytest.approx(1200.0) and lit.fps_clock == "cpu"
    text = markdown(summary, comparison)
    assert "| 1.20x (1.10-1.30) |" in text
    assert "env steps per CPU-second" in text  # what the speeds measure is said


def test_runs_without_cpu_time_compare_wall_clock_and_say_so(tmp_path):
    _, summary, comparison = tables([_pair_sweep(tmp_path / "old", lit_cpu=None)])
    row = comparison.iloc[0]
    assert row.fps_ratio_median == pytest.approx(0.5) and row.fps_clock == "wall"
    text = markdown(summary, comparison)
    assert "| 0.50x wall-clock |" in text


def test_the_throughput_axis_reads_plain_numbers_not_si_prefixes():
    import pandas as pd

    ax = plot.new_axes()
    plot.throughput(ax, pd.DataFrame({"label": ["a", "b"], "fps": [0.5, 0.7], "fps_clock": ["cpu", "cpu"]}))
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks and not any(t.endswith(("m", "k", "µ")) for t in ticks), ticks
    assert "per CPU-second" in ax.get_xlabel()
    plt.close(ax.figure)
    ax = plot.throughput(plot.new_axes(), pd.DataFrame({"label": ["a"], "fps": [900.0], "fps_clock": ["wall"]}))
    assert "wall-clock" in ax.get_xlabel()
    plt.close(ax.figure)
