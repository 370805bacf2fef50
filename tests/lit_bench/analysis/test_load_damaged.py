"""Damaged result files: named on stderr in one line each and left out; no traceback, no silent change of a score."""

from __future__ import annotations

import json

import pytest

from lit_bench.analysis.load import load_runs
from lit_bench.analysis.tables import tables
from lit_bench.cli import report
from tests.lit_bench.helpers import write_run


def _sweep(root):
    """ppo / lit, 4 seeds with finals 410, 420, 430, 440."""
    return [write_run(root, "ppo", "CartPole", s, "lit", [100.0, 200.0, 300.0, 410.0 + 10 * s]) for s in range(4)]


def _report(capsys, *paths):
    _, summary, _ = tables(paths)
    return summary.set_index("backend").loc["lit"], capsys.readouterr().err.strip().splitlines()


def test_damaged_files_are_named_and_left_out(tmp_path, capsys):
    runs = _sweep(tmp_path / "s")
    (runs[0] / "summary.json").write_text('{"status": "comple')  # cut mid-write
    eval_csv = runs[1] / "eval.csv"
    eval_csv.write_text("\n".join(eval_csv.read_text().splitlines()[:3]) + "\n")  # last evaluations lost
    (runs[2] / "eval.csv").write_text("")
    lit, warnings = _report(capsys, tmp_path / "s")
    assert lit.seeds == 1 and lit.damaged == 3 and lit.final_iqm == 440.0  # only the healthy run's score
    assert len(warnings) == 3 and all(w.startswith("warning: ") and w.endswith("; run left out") for w in warnings)
    assert f"{runs[0] / 'summary.json'}: unreadable (JSONDecodeError" in warnings[0]
    assert f"{eval_csv}: ends at 2000 env steps but the run completed 4000 (truncated)" in warnings[1]
    assert f"{runs[2] / 'eval.csv'}: missing or empty although the run completed" in warnings[2]


def test_a_row_cut_short_or_disagreeing_with_the_summary_is_damage(tmp_path, capsys):
    runs = _sweep(tmp_path / "s")
    eval_csv = runs[0] / "eval.csv"
    eval_csv.write_text(eval_csv.read_text()[:-22])  # the last row loses its tail
    eval_csv = runs[1] / "eval.csv"
    eval_csv.write_text(eval_csv.read_text().replace("420.0", "999.0"))
    eval_csv = runs[2] / "eval.csv"
    eval_csv.write_text(eval_csv.read_text().replace("\n2000,2.0,200.0,", "\n2000,2.0,oops,"))
    lit, warnings = _report(capsys, tmp_path / "s")
    assert lit.seeds == 1 and lit.damaged == 3 and lit.final_iqm == 440.0
    assert f"{runs[0] / 'eval.csv'}: the last row is cut short (no line end)" in warnings[0]
    assert "last return 999 is not summary.json's final 420" in warnings[1]
    assert f"{eval_csv}: row 2 has no number for timesteps or mean_return" in warnings[2]


def test_runs_none_of_which_completed_is_one_line(tmp_path):
    write_run(tmp_path / "s", "ppo", "CartPole", 0, "lit", [], status="failed")
    write_run(tmp_path / "s", "ppo", "CartPole", 1, "lit", [10.0], status=None)
    with pytest.raises(SystemExit) as exit_info:
        report.main([str(tmp_path / "s"), "--out", str(tmp_path / "out")])
    message = str(exit_info.value)
    assert "\n" not in message and message.startswith("report: none of the 2 runs under")
    assert "(1 failed, 1 incomplete)" in message
    assert not (tmp_path / "out").exists()


def test_a_missing_path_is_one_line(tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        report.main([str(tmp_path / "nope")])
    assert str(exit_info.value) == f"report: runs: {tmp_path / 'nope'} does not exist"


def test_load_runs_keeps_damaged_runs_marked(tmp_path):
    runs = _sweep(tmp_path / "s")
    (runs[3] / "summary.json").write_text("[1, 2]")
    table = load_runs([tmp_path / "s"]).set_index("seed")
    assert table.loc[3, "status"] == "damaged" and "not a JSON object" in table.loc[3, "problem"]
    assert (table.loc[[0, 1, 2], "status"] == "completed").all() and table.loc[[0, 1, 2], "problem"].isna().all()


def test_a_completed_run_whose_eval_csv_is_not_the_one_it_wrote_is_damaged(tmp_path, capsys):
    """Format 3 records the evaluations and the checksum of eval.csv: rows deleted in the middle (the last kept) or a
    value changed there are damage, not a shorter curve."""
    import hashlib

    runs = _sweep(tmp_path / "s")
    for run in runs:
        data = (run / "eval.csv").read_bytes()
        summary = json.loads((run / "summary.json").read_text())
        summary.update(format=3, evaluations=4, eval_csv_sha256=hashlib.sha256(data).hexdigest())
        (run / "summary.json").write_text(json.dumps(summary))
    eval_csv = runs[0] / "eval.csv"
    lines = eval_csv.read_text().splitlines(keepends=True)
    eval_csv.write_text("".join(lines[:2] + lines[4:]))  # rows 2-3 gone, the final evaluation kept
    eval_csv = runs[1] / "eval.csv"
    eval_csv.write_text(eval_csv.read_text().replace(",200.0,", ",250.0,", 1))
    lit, warnings = _report(capsys, tmp_path / "s")
    assert lit.seeds == 2 and lit.damaged == 2
    assert f"{runs[0] / 'eval.csv'}: holds 2 evaluations, summary.json recorded 4" in warnings[0]
    assert (
        f"{runs[1] / 'eval.csv'}: not the file the run wrote (its checksum differs from summary.json's)"
        in (warnings[1])
    )
