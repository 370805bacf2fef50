"""The report's visual language: one colour and marker per algorithm, one line style per backend, readable labels
and sizes for a paper or a screen, the same in every figure of a report.

``Look.of(summary)`` decides the colours once from every config of the report (so ``ppo`` is the same colour in the
curves, the final scores and the throughput bars); figures ask it for a config's ``LineStyle`` and legend handles.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import matplotlib as mpl
import numpy as np
from matplotlib import colors as mcolors
from matplotlib import font_manager
from matplotlib.lines import Line2D

from lit_bench.analysis import variants
from lit_bench.analysis.variants import split_variant

# Okabe & Ito's colour-blind safe palette (black left out: it is the references' colour), then tab10's others and
# Tol's wine (in place of tab10's olive, which was hard to tell from the yellow)
PALETTE = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#8C564B",
    "#7F7F7F",
    "#882255",
    "#17BECF",
    "#9467BD",
]
SWEEP_MAP = mpl.colormaps["viridis"]  # one algorithm's configs beyond the palette's 12 (its yellow end left out)
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p"]
BACKEND_LINES = {"lit": "-", "sb3": "--"}  # SB3 dashed: equal curves both show
BACKEND_HATCH = {"sb3": "////"}  # SB3's band hatched, lit's filled: overlapping bands stay apart
SB3_DARKER = 0.4  # SB3's line a darker shade of its algorithm's colour: told apart at a glance, not by dashes alone
REFERENCE_COLOR = "0.25"  # the RL Zoo's single-seed curve and other published numbers: dark grey


@dataclass(frozen=True)
class Style:
    """Figure sizes (inches) and matplotlib settings of one output medium."""

    name: str
    width: float  # a figure with one plot
    height: float
    wide: float  # a figure spanning the page (a grid of plots)
    rc: dict[str, Any]


STYLES = {
    # a two-column paper: one column is ~3.3 in wide, the page ~7 in; 8 pt text as the body's footnotes
    "paper": Style(
        "paper",
        3.4,
        2.5,
        7.0,
        {
            "font.size": 8,
            "axes.titlesize": 8,
            "axes.labelsize": 8,
            "xtick.labelsize": 7,
            "ytick.labelsize": 7,
            "legend.fontsize": 7,
            "figure.titlesize": 9,
            "lines.linewidth": 1.3,
            "lines.markersize": 3.5,
            "axes.linewidth": 0.6,
            "grid.linewidth": 0.5,
            "legend.frameon": False,
            "font.family": "serif",
            "axes.spines.top": False,
            "axes.spines.right": False,
            "savefig.pad_inches": 0.02,
            "pdf.fonttype": 42,
            "text.hinting": "no_hinting",  # (hinting each glyph was ~25% of drawing a PNG's text, matplotlib 3.11)
        },
    ),
    "screen": Style(
        "screen",
        8.0,
        4.5,
        12.0,
        {
            "font.size": 10,
            "axes.titlesize": 11,
            "axes.labelsize": 10,
            "xtick.labelsize": 9,
            "ytick.labelsize": 9,
            "legend.fontsize": 9,
            "figure.titlesize": 12,
            "lines.linewidth": 1.8,
            "lines.markersize": 5,
            "legend.frameon": False,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "pdf.fonttype": 42,
            "text.hinting": "no_hinting",  # (hinting each glyph was ~25% of drawing a PNG's text, matplotlib 3.11)
        },
    ),
}
_current = ["screen"]


def use(name: str) -> Style:
    """Make ``name`` (``paper`` or ``screen``) the style of the figures drawn from now on in this process."""
    if name not in STYLES:
        raise ValueError(f"style: unknown {name!r}; choose from {', '.join(STYLES)}")
    _current[0] = name
    mpl.rcParams.update(cast(Any, STYLES[name].rc))  # (matplotlib types the keys as a Literal of every name)
    return STYLES[name]


def current() -> Style:
    return STYLES[_current[0]]


@dataclass(frozen=True)
class LineStyle:
    """How one config's line is drawn: the algorithm's colour and marker, the backend's line style."""

    color: str
    linestyle: str = "-"
    marker: str = "o"
    linewidth: float | None = None  # None: the style's
    hatch: str | None = None  # its band's hatch (None: filled)


def backend_color(color: str, backend: str) -> str:
    """The colour of a config's line on ``backend``: the algorithm's for lit, a darker shade of it for SB3."""
    if str(backend) != "sb3":
        return color
    red, green, blue = (float(v) * (1 - SB3_DARKER) for v in mcolors.to_rgb(color))
    return mcolors.to_hex((red, green, blue))


def shade(color: str, k: int, n: int) -> str:
    """The ``k``-th of ``n`` shades of ``color``, from darker to lighter (the colour itself in the middle)."""
    if n <= 1:
        return color
    rgb = np.array(mcolors.to_rgb(color))
    t = -0.45 + 0.9 * k / (n - 1)  # < 0: mixed with black, > 0: with white
    mixed = rgb * (1 + t) if t < 0 else rgb + (1 - rgb) * t
    red, green, blue = (float(v) for v in np.clip(mixed, 0, 1))
    return mcolors.to_hex((red, green, blue))


Config = tuple[str, str, str]  # (sweep, algo, variant): a config whatever its backend


class Look:
    """Colours, markers, order and labels of every config of a report, decided once from all of them.

    Each algorithm has a colour and a marker. The configs of one algorithm (its variants and sweeps) are shades of
    its colour, in the order of their hyperparameter values (``variants.order_key``); with a single algorithm they
    get the palette's distinct colours instead (a hyperparameter sweep), or beyond 12 configs a sequential colour map
    in that order. ``defaults``: per ``(sweep, algo, variant, env)``, the composed defaults the config keeps
    (``variants.kept_defaults``), which its labels show.
    """

    def __init__(
        self, configs: Iterable[Config], defaults: Mapping[tuple[str, str, str, str], str | None] | None = None
    ) -> None:
        self.kept: dict[Config, dict[str, str | None]] = {}  # config -> env -> its kept defaults
        for (sweep, algo, variant, env), text in sorted((defaults or {}).items(), key=lambda item: item[0]):
            self.kept.setdefault((sweep, algo, variant), {})[env] = text
        every = set(configs) | set(self.kept)
        keys = variants.keys_of(v for _, _, v in every)
        first = {c: next(iter(self.kept.get(c, {}).values()), None) for c in every}  # (its first env's, by name)
        self.configs = sorted(every, key=lambda c: (c[0], c[1], variants.order_key(c[2], first[c], keys), c[2]))
        self.rank = {config: k for k, config in enumerate(self.configs)}
        algos = sorted({algo for _, algo, _ in self.configs})
        self.marker = {algo: MARKERS[i % len(MARKERS)] for i, algo in enumerate(algos)}
        self.algo_color = {algo: PALETTE[i % len(PALETTE)] for i, algo in enumerate(algos)}
        self.color: dict[Config, str] = {}
        for algo in algos:
            own = [c for c in self.configs if c[1] == algo]
            for k, config in enumerate(own):
                if len(algos) > 1:
                    self.color[config] = shade(self.algo_color[algo], k, len(own))
                elif len(own) <= len(PALETTE):
                    self.color[config] = PALETTE[k]
                else:  # more configs than colours: a sequential map in the configs' (values') order, none repeated
                    self.color[config] = mcolors.to_hex(SWEEP_MAP(0.9 * k / (len(own) - 1)))

    @classmethod
    def of(cls, summary: Any) -> Look:
        """The look of a summary table's configs (``sweep``, ``algo``, ``variant`` columns; ``env`` and ``defaults``,
        ``summarize.summary_table``'s, for the labels' values)."""
        configs = list(zip(summary.sweep.astype(str), summary.algo.astype(str), summary.variant.fillna("").astype(str)))
        if "defaults" not in summary or "env" not in summary:
            return cls(configs)
        kept = [d if isinstance(d, str) else None for d in summary.defaults]
        return cls(configs, {(*c, str(e)): d for c, e, d in zip(configs, summary.env, kept)})

    def line(self, sweep: str, algo: str, variant: str, backend: str) -> LineStyle:
        config = (str(sweep), str(algo), str(variant or ""))
        color = self.color.get(config, self.algo_color.get(str(algo), PALETTE[0]))
        return LineStyle(
            backend_color(color, backend),
            BACKEND_LINES.get(str(backend), ":"),
            self.marker.get(str(algo), "o"),
            hatch=BACKEND_HATCH.get(str(backend)),
        )

    def kept_of(self, config: Config, env: str | None = None) -> str | None:
        """The defaults ``config`` keeps on ``env``; over all its envs when None (a value that differs between them
        as ``32/1024``); None when not known."""
        per_env = self.kept.get(config, {})
        if env is not None:
            return per_env.get(str(env))
        texts = [t for t in per_env.values() if t is not None]
        if not texts:
            return None
        values: dict[str, list[str]] = {}
        for text in texts:
            for key, value in split_variant(text).items():
                if value not in values.setdefault(key, []):
                    values[key].append(value)
        return ",".join(f"{key}={'/'.join(vs)}" for key, vs in values.items())

    def labels(
        self, configs: Sequence[Config], *, with_sweep: bool = False, envs: Sequence[str | None] | None = None
    ) -> list[str]:
        """``short_labels`` of ``configs`` (on ``envs``, one per config; None: over all its envs) with the values
        of the defaults they keep."""
        envs = list(envs) if envs is not None else [None] * len(configs)
        rows = [(str(s), str(a), str(v or "")) for s, a, v in configs]
        return short_labels(rows, with_sweep=with_sweep, defaults=[self.kept_of(c, e) for c, e in zip(rows, envs)])

    def sort(self, configs: Iterable[Config]) -> list[Config]:
        """``configs`` in the look's order (by algorithm, then hyperparameter values); unknown ones last."""
        return sorted(configs, key=lambda c: (self.rank.get(c, len(self.rank)), c))


def backend_handles(backends: Iterable[str]) -> list[Line2D]:
    """Legend entries saying which line style is which backend (only those present)."""
    names = {"lit": "lit_sb3", "sb3": "SB3"}  # (its darker shade and hatched band: docs/guides/analysis.md)
    return [
        Line2D([], [], color="0.3", ls=BACKEND_LINES.get(b, ":"), label=names.get(b, b))
        for b in sorted(set(backends), key=lambda b: (b != "lit", b))
    ]


def short_labels(
    rows: Sequence[tuple[str, str, str]], *, with_sweep: bool = False, defaults: Sequence[str | None] | None = None
) -> list[str]:
    """Readable labels of ``(sweep, algo, variant)`` rows shown together: the algorithm, then only the overrides
    whose values differ among these rows; the sweep when ``with_sweep``. Keys are shortened to their last part unless
    two would then read the same.

    A row that keeps the composed default of a key shows its value from ``defaults`` (per row: the values it keeps,
    ``variants.kept_defaults``; a key its config does not have is left out of its label), ``key=default`` when its
    entry is None (no readable config) or there are no ``defaults``."""
    parsed = [split_variant(v) for _, _, v in rows]
    kept = [None if d is None else split_variant(d) for d in (defaults or [None] * len(rows))]
    keys = sorted({k for p in parsed for k in p})
    differing = [k for k in keys if len({p.get(k) for p in parsed}) > 1]
    ends = [k.rsplit(".", 1)[-1] for k in differing]
    names = {k: (e if ends.count(e) == 1 else k) for k, e in zip(differing, ends)}
    labels = []
    for (sweep, algo, _), pairs, own in zip(rows, parsed, kept):
        values = {k: pairs.get(k, "default" if own is None else own.get(k)) for k in differing}
        parts = [f"{names[k]}={v}" for k, v in values.items() if v is not None]
        text = " ".join([str(algo), *parts])
        labels.append(f"{text} ({sweep})" if with_sweep else text)
    return labels


def legend_columns(labels: Sequence[str], width: float) -> int:
    """Columns of a legend under a plot ``width`` inches wide holding ``labels``: as many as fit its longest label
    as the legend's font draws it, with the handles and spacings (so the legend is never wider than the plot)."""
    points = legend_points()
    em = points / 72  # inches
    rc = mpl.rcParams
    entry = max(text_widths(labels, points), default=em) + em * (rc["legend.handlelength"] + rc["legend.handletextpad"])
    room = width - 2 * em * rc["legend.borderpad"] + em * rc["legend.columnspacing"]  # n entries, n - 1 spacings
    return max(1, min(len(labels), int(room // (entry + em * rc["legend.columnspacing"]))))


def text_widths(texts: Iterable[str], points: float) -> list[float]:
    """The widths in inches of lines of text in the default font at ``points``: the sum of their glyphs' advances
    (each glyph loaded once; laying out each line was ~2 ms), 5% added for what Agg's hinting adds."""
    font = font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))
    font.set_size(points, 72)
    texts = list(dict.fromkeys(texts))
    advance = {c: font.load_char(ord(c)).linearHoriAdvance for c in set("".join(texts))}  # (unhinted: 16.16)
    return [1.05 * sum(advance[c] for c in text) / 65536 / 72 for text in texts]


def legend_points() -> float:
    """The legend's font size in points."""
    return font_manager.FontProperties(size=mpl.rcParams["legend.fontsize"]).get_size_in_points()


def wrap_notes(notes: Sequence[str], width: float) -> list[str]:
    """``notes`` (a legend's heading, in its ``small`` font) as lines no wider than ``width`` inches: a long one is
    broken between words."""
    points = font_manager.FontProperties(size="small").get_size_in_points()
    chars = max(int(width * 72 / (0.55 * points)), 20)  # (0.55 em: a wide average character)
    return [line for note in notes for line in textwrap.wrap(note, chars, break_on_hyphens=False) or [""]]
