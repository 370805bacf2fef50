"""The report's PDFs share font subsets: each font subset once per process, still embedded as Type 42."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import pytest
from matplotlib.backends import _backend_pdf_ps as pdf_ps
from matplotlib.font_manager import FontProperties, findfont, get_font

from lit_bench.analysis import pdf_fonts

pytestmark = pytest.mark.skipif(not pdf_fonts.supported(), reason="matplotlib < 3.11 subsets by characters")


@pytest.fixture
def counted(monkeypatch):
    """Calls of matplotlib's own subsetter (from a fresh memory of subsets)."""
    pdf_fonts.share_subsets()
    calls: list[frozenset[int]] = []
    original = pdf_fonts._original[0]

    def counting(fontfile, glyphs):
        calls.append(frozenset(glyphs))
        return original(fontfile, glyphs)

    monkeypatch.setattr(pdf_fonts, "_original", [counting])
    monkeypatch.setattr(pdf_fonts, "_subsets", {})
    return calls


def _pdf(title: str) -> bytes:
    figure, ax = plt.subplots()
    ax.plot([0, 1], [-1, 2])
    ax.set_title(title)
    buffer = io.BytesIO()
    with plt.rc_context({"pdf.fonttype": 42}):
        figure.savefig(buffer, format="pdf")
    plt.close(figure)
    return buffer.getvalue()


def test_figures_with_different_text_share_one_subset_and_embed_type42(counted):
    first, second, third = _pdf("lit vs SB3"), _pdf("Pendulum-v1 (n=5 seeds)"), _pdf("quiet: 0.25 [0.1, 0.4]")
    for pdf in (first, second, third):
        assert b"/FontFile2" in pdf and b"/CIDFontType2" in pdf  # TrueType embedded as Type 42 (CID), not Type 3
        assert b"/Type3" not in pdf
    ascii_requests = [c for c in counted if len(c) > 10]
    assert len(ascii_requests) == 1  # the three figures' letters and digits: one subset
    # the tick labels' minus sign is a request of its own (not ASCII), made once too
    assert len(counted) == len(set(counted))


def test_a_remembered_subset_holds_every_requested_glyph(counted):
    fontfile = findfont(FontProperties(family=plt.rcParams["font.family"]))
    font = get_font(fontfile)
    wanted = {font.get_char_index(ord(c)) for c in "abc"}
    other = {font.get_char_index(ord(c)) for c in "xyz09"}
    with pdf_ps.get_glyphs_subset(fontfile, wanted) as a:
        data_a = pdf_ps.font_as_file(a.font).getvalue()
        assert wanted <= set(a.glyph_index_map)
    with pdf_ps.get_glyphs_subset(fontfile, other) as b:
        assert other <= set(b.glyph_index_map)
        assert pdf_ps.font_as_file(b.font).getvalue() == data_a  # the same (ASCII) subset, not made again
    assert len(counted) == 1
    with pdf_ps.get_glyphs_subset(fontfile, {font.get_char_index(0x2212)}) as minus:  # no ASCII: as it comes
        assert set(minus.glyph_index_map) >= {font.get_char_index(0x2212)}
    assert len(counted) == 2


def test_a_remembered_subset_is_the_same_bytes_whatever_the_clock(counted, monkeypatch):
    """Each copy of a remembered subset keeps the subset's own timestamp: fontTools stamps a font with the current
    second when it is saved, so on a busy machine two saves straddled a second and differed (the test above failed
    in the full suite, never alone)."""
    import itertools

    from fontTools.ttLib.tables import _h_e_a_d

    ticks = itertools.count(3_000_000_000)  # a clock that has moved on at every save
    monkeypatch.setattr(_h_e_a_d, "timestampNow", lambda: next(ticks))
    fontfile = findfont(FontProperties(family=plt.rcParams["font.family"]))
    wanted = {get_font(fontfile).get_char_index(ord(c)) for c in "abc"}
    saved = []
    for _ in range(2):
        with pdf_ps.get_glyphs_subset(fontfile, wanted) as subset:
            saved.append(pdf_ps.font_as_file(subset.font).getvalue())
    assert saved[0] == saved[1] and len(counted) == 1
