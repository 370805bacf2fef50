"""The many-files CSV readers (``analysis.eval_csv``, ``analysis.metrics_csv``) parse files as the harness writes them
(``store.rundir.csv_text``: the csv module's ``\\r\\n`` line ends) together, in one parse, and still read any other
file on its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lit_bench.analysis import eval_csv, metrics_csv
from lit_bench.store.format import EVAL_FIELDS
from lit_bench.store.rundir import csv_text, unix_line_ends


def _eval_rows(seed: int) -> list[dict[str, Any]]:
    return [
        {**dict.fromkeys(EVAL_FIELDS, 1.0), "timesteps": step, "mean_return": seed * 10 + step, "success_rate": ""}
        for step in (100, 200, 300)
    ]


def test_unix_line_ends_rewrites_only_text_with_crlf_line_ends_throughout() -> None:
    assert unix_line_ends(b"a,b\r\n1,2\r\n") == b"a,b\n1,2\n"
    assert unix_line_ends(b"a,b\n1,2\n") == b"a,b\n1,2\n"
    assert unix_line_ends(b"a,b\r\n1,\r2\r\n") == b"a,b\r\n1,\r2\r\n"  # a stray \r: the file is read on its own


def test_eval_csvs_the_harness_writes_are_parsed_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = []
    for seed in range(3):
        path = tmp_path / f"seed_{seed}.csv"
        path.write_text(csv_text(EVAL_FIELDS, _eval_rows(seed)))  # (write_text keeps csv's \r\n)
        paths.append(path)
    assert b"\r\n" in paths[0].read_bytes()

    def one_by_one(*args: object) -> None:
        raise AssertionError("a file the harness wrote was read on its own")

    monkeypatch.setattr(eval_csv, "_read_one", one_by_one)
    evals = eval_csv.read_eval_csvs(paths)
    assert not evals.problems
    assert np.concatenate(evals.run).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    mean = EVAL_FIELDS.index("mean_return") - 1  # (values: every field after timesteps)
    assert np.concatenate(evals.values)[:, mean].tolist() == [100, 200, 300, 110, 210, 310, 120, 220, 320]


def test_metrics_csvs_the_harness_writes_are_parsed_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = []
    for seed in range(3):
        path = tmp_path / f"metrics_{seed}.csv"
        rows = [{"step": step, "train/loss": seed + step / 1000, "time/fps": ""} for step in (64, 128)]
        path.write_text(csv_text(["step", "time/fps", "train/loss"], rows))
        paths.append(path)
    calls = []
    parse = metrics_csv._parse

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("header"))
        return parse(*args, **kwargs)

    monkeypatch.setattr(metrics_csv, "_parse", counted)
    (rows,) = metrics_csv.read_metrics_csvs(paths, ["train/loss"])
    assert calls == [None]  # one parse of every file's rows together
    assert rows.run.tolist() == [0, 0, 1, 1, 2, 2]
    assert rows.values[:, 0].tolist() == [seed + step / 1000 for seed in range(3) for step in (64, 128)]
