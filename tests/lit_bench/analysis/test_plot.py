"""Plots render without a display and show the lines, bands and reference markers they promise, nothing else."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lit_bench import stats
from lit_bench.analysis import plot, style


def _band(scale: float, n: int = 10) -> pd.DataFrame:
    t = np.linspace(1000, 10000, n)
    iqm = scale * t / 100
    return pd.DataFrame({"timesteps": t, "iqm": iqm, "ci_low": iqm - 5, "ci_high": iqm + 5, "n_runs": 3})


def _texts(ax) -> str:
    """What the figure says besides its lines: the legend's heading (notes) and texts on the axes, as one line (notes
    are wrapped to the figure's width)."""
    figure = ax.get_figure(root=True)
    return " ".join(
        " ".join([t.get_text() for t in ax.texts] + [lg.get_title().get_text() for lg in figure.legends]).split()
    )


def _legend(ax) -> list[str]:
    return [t.get_text() for lg in ax.get_figure(root=True).legends for t in lg.get_texts()]


def test_learning_curves_have_lines_bands_and_near_references(tmp_path):
    ax = plot.new_axes()
    ref_curve = pd.DataFrame({"timesteps": [2000, 8000, 50000], "mean_reward": [50.0, 90.0, 500.0]})
    references = {
        "ppo": plot.ReferenceMark(95.0, 10000, "RL Zoo ppo", ref_curve),
        "a2c": plot.ReferenceMark(80.0, 500_000, "RL Zoo a2c"),
    }
    styles = {"ppo / lit": plot.backend_style("lit", "tab:blue"), "ppo / sb3": plot.backend_style("sb3", "tab:blue")}
    plot.learning_curves(
        ax,
        {"ppo / lit": _band(1.0), "ppo / sb3": _band(0.9), "a2c / lit": _band(0.5)},
        styles=styles,
        references=references,
        threshold=80.0,
        title="CartPole-v1",
    )
    lines = {line.get_label(): line for line in ax.get_lines()}
    # the Zoo's curve and score are labelled as what they are: one seed, one agent
    assert {
        "ppo / lit (n=3)",
        "ppo / sb3 (n=3)",
        "RL Zoo ppo: 95 at 10k steps (1 agent)",
        "solved (80)",
        "RL Zoo ppo eval curve, 1 seed",
    } <= set(lines)
    # the algorithm's colour; SB3 at a glance: dashed, a darker shade, its band hatched
    lit, sb3 = lines["ppo / lit (n=3)"], lines["ppo / sb3 (n=3)"]
    assert lit.get_color() != sb3.get_color() and lit.get_linestyle() != sb3.get_linestyle()
    assert sb3.get_color() == style.backend_color("tab:blue", "sb3") and lit.get_color() == "tab:blue"
    hatched = [c for c in ax.collections if c.get_hatch()]
    assert len(hatched) == 1  # SB3's band only: the two bands are told apart where they overlap
    # no markers on the curves: their points are a grid, not the evaluations, and would read as data
    assert all(line.get_marker() in (None, "None", "", " ") for line in (lit, sb3))
    # the reference budget beyond the runs' steps is a note, not a legend entry with nothing drawn
    assert not [label for label in lines if "a2c" in label and "Zoo" in label]
    assert "not drawn, beyond these runs' budget: RL Zoo a2c: 80 at 500k steps (1 agent)" in _texts(ax)
    legend = _legend(ax)
    assert legend and all(label in lines for label in legend)
    assert not ax.get_legend()  # the figure's legend, under the plot: the plot keeps the figure's width
    assert len(ax.collections) >= 3  # the CI bands
    ax.figure.savefig(tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    plt.close(ax.figure)


def test_axis_fits_the_data_and_far_levels_become_notes():
    ax = plot.learning_curves(
        plot.new_axes(),
        {"ppo / lit": _band(0.1)},  # returns 1 to 10
        references={"ppo": plot.ReferenceMark(500.0, 5000, "RL Zoo ppo")},
        threshold=475.0,
    )
    low, high = ax.get_ylim()
    assert high < 50 and low > -10  # not 0-500 because of the reference
    notes = _texts(ax)
    assert "RL Zoo ppo: 500 at 5k steps (1 agent) (off the scale)" in notes
    assert "solved threshold 475 (off the scale)" in notes
    assert [line.get_label() for line in ax.get_lines()] == ["ppo / lit (n=3)"]
    plt.close(ax.figure)


def test_coinciding_curves_are_said_to_coincide():
    styles = {"ppo / lit": plot.backend_style("lit", "C0"), "ppo / sb3": plot.backend_style("sb3", "C0")}
    ax = plot.learning_curves(
        plot.new_axes(), {"ppo / lit": _band(1.0, 50), "ppo / sb3": _band(1.0, 50)}, styles=styles
    )
    assert "ppo / lit and ppo / sb3: the same curve" in _texts(ax)
    lit, sb3 = ax.get_lines()
    assert lit.get_color() != sb3.get_color()  # both visible: SB3 dashed over lit in a darker shade
    plt.close(ax.figure)


def test_interval_throughput_and_comparison_plots():
    summary = pd.DataFrame(
        {
            "label": ["a", "b"],
            "final_iqm": [1.0, 2.0],
            "ci_low": [0.5, 1.5],
            "ci_high": [1.5, 2.5],
            "reference": [np.nan, np.nan],
            "fps": [100.0, 200.0],
            "fps_low": [90.0, 150.0],
            "fps_high": [120.0, 260.0],
            "note": ["= 0.50x SB3", ""],
        }
    )
    ax = plot.final_scores(plot.new_axes(), summary)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert ax.get_legend() is None  # no reference drawn, no legend entry for it
    plt.close(ax.figure)
    ax = plot.throughput(plot.new_axes(), summary)
    assert len(ax.patches) == 2
    assert [t.get_text() for t in ax.texts] == ["100/s  = 0.50x SB3", "200/s"]  # the numbers on the bars
    assert ax.get_xlim()[1] > 260  # whiskers (min-max over seeds) and numbers fit
    plt.close(ax.figure)
    comparisons = pd.DataFrame(
        {
            "label": ["ppo / CartPole"],
            "differences": [[1.0, -2.0, 3.0]],
            "iqm_difference": [0.7],
            "ci_low": [-2.0],
            "ci_high": [3.0],
            "ci_flagged": [True],
            "note": ["n=3"],
        }
    )
    ax = plot.paired_differences(plot.new_axes(), comparisons)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ppo / CartPole"]
    assert "under 5 seeds" in " ".join(t.get_text() for t in ax.get_legend().get_texts())
    plt.close(ax.figure)


def test_long_notes_are_wrapped_to_the_figure_width():
    """A note longer than the figure is wide is broken between words (one long note made the suite page ~36 in
    wide); short ones stay whole."""
    style.use("screen")
    ax = plot.new_axes()
    ax.plot([0, 1], [0, 1], label="run")
    long = "left out: " + ", ".join(f"algo_{i} / lit (sweep_{i})" for i in range(40))
    plot.place_legend(ax, ax.get_lines(), ["short note", long])
    title = ax.get_figure(root=True).legends[0].get_title().get_text()
    lines = title.split("\n")
    assert lines[0] == "short note" and len(lines) > 3
    assert " ".join(lines[1:]) == long
    assert max(len(line) for line in lines) < 130  # 8 in at 8.3 pt
    ax.get_figure(root=True).canvas.draw()
    renderer = ax.get_figure(root=True).canvas.get_renderer()
    assert ax.get_figure(root=True).get_tightbbox(renderer).width <= ax.get_figure(root=True).get_figwidth()
    plt.close(ax.get_figure(root=True))


def test_references_beyond_the_budget_make_one_note_not_one_each():
    """A short sweep of two algorithms: their Zoo scores far beyond its budget are one line under the plot (in the
    paper style they took a third of a one-column figure)."""
    references = {a: plot.ReferenceMark(500.0, 10**6, f"RL Zoo {a}") for a in ("a2c", "ppo")}
    ax = plot.learning_curves(plot.new_axes(), {"ppo / lit": _band(1.0)}, references=references)
    text = _texts(ax)
    assert text.count("beyond these runs' budget") == 1 and "RL Zoo a2c" in text and "RL Zoo ppo" in text
    plt.close(ax.figure)


def test_a_curve_has_markers_only_where_its_points_are_evaluations():
    at_evaluations, on_a_grid = _band(1.0), _band(0.5)
    at_evaluations.attrs[stats.AT_EVALUATIONS] = True
    styles = {"ppo / lit": plot.backend_style("lit", "tab:blue"), "ppo / sb3": plot.backend_style("sb3", "tab:blue")}
    sb3 = at_evaluations.copy()
    sb3.attrs[stats.AT_EVALUATIONS] = True
    ax = plot.learning_curves(
        plot.new_axes(), {"ppo / lit": at_evaluations, "ppo / sb3": sb3, "a2c / lit": on_a_grid}, styles=styles
    )
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["ppo / lit (n=3)"].get_marker() == "o" and lines["ppo / sb3 (n=3)"].get_marker() == "o"
    assert lines["ppo / sb3 (n=3)"].get_markerfacecolor() == "white"  # SB3's open, lit's filled
    assert lines["ppo / lit (n=3)"].get_markerfacecolor() != "white"
    assert lines["a2c / lit (n=3)"].get_marker() in ("None", None, "")  # a grid over runs: no markers
    plt.close("all")
