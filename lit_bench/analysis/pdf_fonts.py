"""Font subsets shared by the report's PDFs: each font is subset once per process instead of once per PDF.

A PDF with Type 42 fonts (the ones papers accept) embeds a subset of each TrueType font it uses, made by fontTools:
~0.1 s a font, even for one glyph, because the whole font is parsed each time. The figures of one report use nearly
the same characters, so ``share_subsets`` makes matplotlib's subsetter remember its results: a request for the
glyphs of some printable ASCII characters asks for all of them (so every figure's text of letters and digits is one
request), and each distinct request is subset once; ``warm`` makes that subset before figure workers are forked, so
they share it. Each PDF still embeds a Type 42 subset of its fonts: a few kB larger (the ASCII glyphs it does not use).

Only matplotlib's subsetter of glyph indices (matplotlib >= 3.11) is wrapped; with another, nothing changes.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

import matplotlib as mpl
from matplotlib import font_manager
from matplotlib.backends import _backend_pdf_ps as pdf_ps

PRINTABLE_ASCII = [chr(c) for c in range(0x20, 0x7F)]
_original: list[Callable[..., Any]] = []  # matplotlib's subsetter, once wrapped
_subsets: dict[tuple[str, int, frozenset[int]], tuple[bytes, dict[int, int]]] = {}  # -> (font file, glyph map)
_ascii: dict[tuple[str, int], frozenset[int]] = {}  # a font's glyph indices of PRINTABLE_ASCII


def supported() -> bool:
    """Whether this matplotlib's PDF backend subsets fonts by glyph index into ``SubsetResults`` (3.11 and later)."""
    return hasattr(pdf_ps, "SubsetResults") and hasattr(pdf_ps, "get_glyphs_subset")


def share_subsets() -> None:
    """From now on in this process, subset each font for a set of glyphs once (idempotent; see the module)."""
    if _original or not supported():
        return
    _original.append(pdf_ps.get_glyphs_subset)
    pdf_ps.get_glyphs_subset = _shared_subset


def warm(font_files: Iterable[Any] | None = None) -> None:
    """Make the printable-ASCII subset of ``font_files`` (default: the font of the current rcParams' text) now, e.g.
    before forking processes that write PDFs."""
    if not _original:
        return
    files = font_files or [font_manager.findfont(font_manager.FontProperties(family=mpl.rcParams["font.family"]))]
    for fontfile in files:
        with _shared_subset(fontfile, _ascii_glyphs(font_manager.get_font(fontfile))):
            pass


def _ascii_glyphs(font: Any) -> frozenset[int]:
    key = (str(font.fname), int(getattr(font, "face_index", 0)))
    if key not in _ascii:
        _ascii[key] = frozenset(g for g in (font.get_char_index(ord(c)) for c in PRINTABLE_ASCII) if g)
    return _ascii[key]


def _shared_subset(fontfile: Any, glyphs: Iterable[int]) -> AbstractContextManager[Any]:
    """matplotlib's ``get_glyphs_subset``, remembered: the same ``SubsetResults`` (a fresh font object read from the
    subset's bytes, as the PDF backend closes it) for the same font and glyphs."""
    from fontTools.ttLib import TTFont

    font = font_manager.get_font(fontfile)
    wanted = frozenset(int(g) for g in glyphs)
    ascii_glyphs = _ascii_glyphs(font)
    if wanted & ascii_glyphs:  # text: one request for all of ASCII (glyphs of ligatures, symbols: as they come)
        wanted |= ascii_glyphs
    key = (str(font.fname), int(getattr(fontfile, "face_index", 0)), wanted)
    if key not in _subsets:
        with _original[0](fontfile, set(wanted)) as subset:
            _subsets[key] = (pdf_ps.font_as_file(subset.font).getvalue(), dict(subset.glyph_index_map))
    data, glyph_map = _subsets[key]
    # recalcTimestamp=False: the copy keeps the subset's timestamp when the PDF backend saves it (fontTools would
    # stamp the current second: two saves of one subset then differed, and so did the PDFs)
    return pdf_ps.SubsetResults(TTFont(io.BytesIO(data), recalcTimestamp=False), dict(glyph_map))._as_cm()
