"""Drawing the report's figures and saving them: in this process, or in forked worker processes that take the next
figure from a shared queue (each figure whole in one process: the same files either way)."""

from __future__ import annotations

import ctypes
import gc
import multiprocessing as mp
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from lit_bench.analysis import pdf_fonts
from lit_bench.store.rundir import atomic_write

Drawing = Callable[[], "tuple[plt.Axes, str] | None"]  # a figure and its file name (None: no data to draw)

DPI = 120


def _save(named: tuple[plt.Axes, str] | None, out: Path, suffixes: Sequence[str]) -> list[Path]:
    """Write a figure as ``<out>/<name><suffix>`` and close it (nothing for None: a figure without data).

    The layout and the tight bounding box are computed once, for the PNG's resolution, and kept for every format
    (``savefig(bbox_inches="tight")`` lays the figure out again, in a dry-run draw, for each file; the layout engine
    alone gives the same layout at ~60% of the cost). PNGs are compressed lightly: the same pixels, encoded ~1.5x
    faster.
    """
    if named is None:
        return []
    ax, name = named
    figure = ax.get_figure(root=True)  # (the whole figure when ax is in a subfigure)
    assert figure is not None, f"{name}: drawn on no figure"
    figure.set_dpi(DPI)
    if (engine := figure.get_layout_engine()) is not None:
        engine.execute(figure)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]  # (Agg-based canvases have one)
    bbox = figure.get_tightbbox(renderer).padded(plt.rcParams["savefig.pad_inches"])
    figure.set_layout_engine("none")
    if ".pdf" in suffixes:
        pdf_fonts.share_subsets()  # (each font subset once per process, not once per PDF)
    paths: list[Path] = []
    for suffix in suffixes:
        path = out / f"{name}{suffix}"
        options: dict[str, Any] = {"pil_kwargs": {"compress_level": 1}} if suffix == ".png" else {}
        atomic_write(path, partial(figure.savefig, dpi=DPI, format=suffix[1:], bbox_inches=bbox, **options))
        paths.append(path)
    plt.close(figure)
    return paths


def draw(
    drawings: Sequence[Drawing], out: Path, suffixes: Sequence[str], *, workers: int, order: Sequence[int]
) -> list[Path]:
    """Draw and save every figure, their files in the order of ``drawings``. ``workers`` > 1 draws them in that many
    processes, this one and ``workers - 1`` forked ones, taking the figures in ``order`` (the largest first); a figure
    that fails, or a worker that dies, ends the report with an error."""
    workers = min(workers, len(drawings)) if "fork" in mp.get_all_start_methods() else 1
    if workers <= 1:
        return [path for drawing in drawings for path in _save(drawing(), out, suffixes)]
    fork = mp.get_context("fork")
    queue = _Queue(list(drawings), list(order), fork.Value("i"), out, tuple(suffixes))
    if ".pdf" in suffixes:
        pdf_fonts.share_subsets()
        pdf_fonts.warm()  # (the text font's subset made once, here: the workers inherit it)
    release_memory()  # (what the tables left behind is not copied into the workers' memory)
    gc.freeze()  # (what the workers share with this process stays out of their garbage collection: less copied)
    try:
        with ProcessPoolExecutor(workers - 1, mp_context=fork, initializer=_receive, initargs=(queue,)) as pool:
            others = [pool.submit(_drain) for _ in range(workers - 1)]
            try:
                written = queue.drain()  # this process draws too
            finally:
                queue.close()  # (after an error here: the workers stop after their current figure)
            for future in others:
                written.update(future.result())
    except BrokenProcessPool as error:
        raise SystemExit(f"report: a process drawing the figures died ({error}); the figures are incomplete") from None
    finally:
        gc.unfreeze()
    return [path for i in range(len(drawings)) for path in written[i]]


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # (glibc's)
    except (OSError, AttributeError):
        return None


_trim = _malloc_trim()


def release_memory() -> None:
    """Free what is unreachable and give the C heap's free pages back to the system (glibc keeps them otherwise:
    ~50 MB after the tables of 10,000 runs, a figure's canvas and temporaries after each figure)."""
    gc.collect()
    if _trim is not None:
        _trim(0)


@dataclass
class _Queue:
    """The report's figures, drawn one at a time by whichever process (this one or a forked worker) takes the next:
    ``taken`` counts the figures taken, in ``order``, across processes."""

    drawings: list[Drawing]
    order: list[int]
    taken: Any  # a multiprocessing Value("i")
    out: Path
    suffixes: tuple[str, ...]

    def drain(self) -> dict[int, list[Path]]:
        """Draw and save figures until none is left: their files by position in ``drawings``."""
        written: dict[int, list[Path]] = {}
        while True:
            with self.taken.get_lock():
                k, self.taken.value = self.taken.value, self.taken.value + 1
            if k >= len(self.order):
                return written
            i = self.order[k]
            written[i] = _save(self.drawings[i](), self.out, self.suffixes)
            release_memory()  # (each process keeps only what its next figure needs: their sum is the peak)

    def close(self) -> None:
        """No more figures for anyone."""
        with self.taken.get_lock():
            self.taken.value = len(self.order)


_queue: list[_Queue] = []  # in a figure worker: the report's queue (set by the pool's initializer, inherited by fork)


def _receive(queue: _Queue) -> None:
    _queue[:] = [queue]


def _drain() -> dict[int, list[Path]]:
    """In a figure worker: draw figures from the queue until none is left."""
    return _queue[0].drain()
