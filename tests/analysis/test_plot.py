"""Plots render without a display and show the lines, bands and reference markers they promise."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lit_bench.analysis import plot


def _band(scale: float) -> pd.DataFrame:
    t = np.linspace(1000, 10000, 10)
    iqm = scale * t / 100
    return pd.DataFrame({"timesteps": t, "iqm": iqm, "ci_low": iqm - 5, "ci_high": iqm + 5, "n_runs": 3})


def test_learning_curves_have_lines_bands_and_reference(tmp_path):
    ax = plot.new_axes()
    ref_curve = pd.DataFrame({"timesteps": [2000, 8000], "mean_reward": [50.0, 90.0]})
    references = {"ppo/lit_sb3": plot.ReferenceMark(95.0, 10000, "SB3 ppo", ref_curve),
                  "a2c/lit_sb3": plot.ReferenceMark(80.0, 500_000, "SB3 a2c")}
    plot.learning_curves(ax, {"ppo/lit_sb3": _band(1.0), "ppo/sb3": _band(0.9), "a2c/lit_sb3": _band(0.5)},
                         references=references, threshold=80.0, title="CartPole-v1")
    labels = [line.get_label() for line in ax.get_lines()]
    assert "ppo/lit_sb3 (IQM, n=3)" in labels and "ppo/sb3 (IQM, n=3)" in labels
    assert "SB3 ppo: 95" in labels  # budget inside the plotted range: a star at the budget
    assert "SB3 a2c: 80 at 500,000" in labels  # budget beyond it: a level line naming the budget
    assert "SB3 ppo curve (1 seed)" in labels
    assert len(ax.collections) >= 2  # the CI bands
    ax.figure.savefig(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    plt.close(ax.figure)


def test_interval_and_throughput_plots():
    summary = pd.DataFrame({"label": ["a", "b"], "final_iqm": [1.0, 2.0], "ci_low": [0.5, 1.5],
                            "ci_high": [1.5, 2.5], "reference": [1.2, 1.2], "fps": [100.0, 200.0]})
    ax = plot.final_scores(plot.new_axes(), summary)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    plt.close(ax.figure)
    ax = plot.throughput(plot.new_axes(), summary)
    assert len(ax.patches) == 2
    plt.close(ax.figure)
