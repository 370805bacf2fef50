"""The visual language: colours fixed per algorithm across figures, line style per backend, short labels."""

from __future__ import annotations

import matplotlib as mpl
import pandas as pd
import pytest

from lit_bench.analysis import style


def test_colours_markers_and_line_styles():
    look = style.Look([("s", "sac", ""), ("s", "td3", ""), ("s", "ppo", "")])
    sac_lit, sac_sb3, td3 = (
        look.line("s", "sac", "", "lit"),
        look.line("s", "sac", "", "sb3"),
        look.line("s", "td3", "", "lit"),
    )
    assert sac_lit.color != td3.color  # one colour per algorithm; SB3 a darker shade of it, dashed, its band hatched
    assert sac_sb3.color == style.backend_color(sac_lit.color, "sb3") != sac_lit.color
    assert sac_lit.linestyle == "-" and sac_sb3.linestyle == "--" and sac_lit.marker != td3.marker
    assert sac_lit.hatch is None and sac_sb3.hatch
    # the same configs in another order (another figure of the report) get the same colours
    again = style.Look([("s", "td3", ""), ("s", "ppo", ""), ("s", "sac", "")])
    assert again.line("s", "sac", "", "lit") == sac_lit
    # one algorithm's 12 configs: 12 distinct colours; several algorithms' configs: shades of each one's colour
    sweep = style.Look([("hp", "ppo", f"algo.gamma={g}") for g in range(12)])
    assert len({sweep.line("hp", "ppo", f"algo.gamma={g}", "lit").color for g in range(12)}) == 12
    mixed = style.Look([("s", "ppo", ""), ("s", "ppo", "algo.gamma=0.9"), ("s", "a2c", "")])
    assert mixed.line("s", "ppo", "", "lit").color != mixed.line("s", "ppo", "algo.gamma=0.9", "lit").color


def test_short_labels_keep_only_what_differs():
    rows = [("s", "sac", "algo.learning_starts=500,budget=2000"), ("s", "td3", "algo.learning_starts=500,budget=2000")]
    assert style.short_labels(rows) == ["sac", "td3"]  # the same overrides in every row: left out
    rows = [
        ("s", "ppo", "algo.learning_rate=0.001,budget=2000"),
        ("s", "ppo", "budget=2000"),
        ("t", "ppo", "algo.learning_rate=0.01,budget=2000,env.learning_rate=2"),
    ]
    assert style.short_labels(rows, with_sweep=True) == [
        "ppo algo.learning_rate=0.001 env.learning_rate=default (s)",
        "ppo algo.learning_rate=default env.learning_rate=default (s)",
        "ppo algo.learning_rate=0.01 env.learning_rate=2 (t)",
    ]
    assert style.short_labels([("s", "ppo", "algo.gamma=0.9"), ("s", "ppo", "")]) == [
        "ppo gamma=0.9",
        "ppo gamma=default",
    ]
    # a value with commas in it (a mapping's slug) stays one value
    assert style.split_variant("budget=2000,hpo=_seeds_1,_aggregate_,+2") == {
        "budget": "2000",
        "hpo": "_seeds_1,_aggregate_",
        "+2": "",
    }


def test_styles_set_sizes_and_fonts():
    paper = style.use("paper")
    assert mpl.rcParams["font.size"] == 8 and paper.width < 3.5  # one column of a two-column paper
    assert style.current() is paper
    style.use("screen")
    assert mpl.rcParams["font.size"] == 10
    with pytest.raises(ValueError, match="choose from paper, screen"):
        style.use("poster")
    assert isinstance(style.Look.of(pd.DataFrame({"sweep": ["s"], "algo": ["ppo"], "variant": [None]})), style.Look)


def test_a_legend_below_is_never_wider_than_its_figure():
    from lit_bench.analysis import plot

    style.use("screen")
    labels = [
        f"ppo ent_coef={e} learning_rate={lr} n_steps={n}" for e in (0, 0.01) for lr in (1e-4, 3e-4) for n in (32, 128)
    ]
    ax = plot.new_axes()
    handles = [ax.plot([0, 1], [0, k], label=t)[0] for k, t in enumerate(labels)]
    plot.place_legend(ax, handles)
    figure = ax.get_figure(root=True)
    figure.canvas.draw()
    legend = figure.legends[0].get_window_extent()
    assert legend.width <= figure.bbox.width  # (two columns of these were 0.15 in wider than the figure)
    assert style.legend_columns(labels[:2], 20.0) == 2 and style.legend_columns(labels, 0.5) == 1
    widths = style.text_widths(["mmmm", "iiii", "mmmm"], 10.0)
    assert len(widths) == 2 and widths[0] > 2 * widths[1] > 0  # measured glyphs, not a count of characters


def test_a_sweep_beyond_the_palette_repeats_no_colour_and_keeps_its_order():
    configs = [("hp", "ppo", f"algo.learning_rate={1e-5 * (k + 1):.4g}") for k in range(30)]
    look = style.Look(reversed(configs))
    colours = [look.line(*c, "lit").color for c in configs]
    assert len(set(colours)) == 30  # (the palette's 12 repeated: lr=1e-05 and lr=0.00013 were both blue)
    assert look.configs == configs  # numeric order: 1e-05, 2e-05, ..., 0.0001, 0.00011, ... (not by name)
    assert colours[0] == "#440154" and len(set(style.PALETTE)) == 12  # viridis' dark end first


def test_no_two_palette_colours_are_close():
    import numpy as np
    from matplotlib import colors

    def lab(colour: str) -> np.ndarray:  # CIE L*a*b* (D65) of an sRGB colour
        rgb = np.array(colors.to_rgb(colour))
        linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
        f = np.cbrt(np.maximum(xyz / [0.95047, 1.0, 1.08883], 0.008856**3))  # (no colour here is that dark)
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    points = [lab(c) for c in style.PALETTE]
    closest = min(np.linalg.norm(a - b) for i, a in enumerate(points) for b in points[i + 1 :])
    assert closest > 20  # (delta E; tab10's olive and Okabe-Ito's yellow were 16)
