"""The report CLI on a fixture sweep: every file written, the table right, references found."""

from __future__ import annotations

import pandas as pd
import pytest

from lit_bench import report
from lit_bench.analysis.load import load_evaluations, load_runs
from lit_bench.analysis.reference import reference_curve, reference_score

from .fixtures import make_sweep


def test_reference_lookup_maps_env_versions():
    ref = reference_score("sac", "HalfCheetah-v5")
    assert ref is not None and ref.reference_env_id == "HalfCheetah-v3" and not ref.same_version
    assert ref.budget == 1_000_000 and ref.score == pytest.approx(9535, abs=1)
    assert reference_score("ppo", "CartPole-v1").same_version
    assert reference_score("ppo", "NoSuchEnv-v0") is None
    curve = reference_curve("ppo", "CartPole-v1")
    assert not curve.empty and curve.timesteps.is_monotonic_increasing


def test_report_cli_writes_every_file(tmp_path, capsys):
    make_sweep(tmp_path)
    out = tmp_path / "report"
    report.main([str(tmp_path / "fixture_sweep*"), "--out", str(out)])
    for name in ("summary.csv", "summary.md", "curves_CartPole.png", "curves_CartPole.pdf", "final_scores.png",
                 "throughput.png"):
        assert (out / name).stat().st_size > 0, name
    summary = pd.read_csv(out / "summary.csv").set_index(["algo", "backend"])
    ppo = summary.loc[("ppo", "lit_sb3")]
    # final score per seed = mean of the last 3 evaluations: 293.33, 310, 326.67; the IQM of 3 values is their mean
    assert ppo.final_iqm == pytest.approx(310.0)
    assert ppo.ci_low <= 310.0 <= ppo.ci_high
    assert ppo.seeds == 3 and ppo.solved_seeds == 3 and ppo.steps_to_threshold_median == 3000
    assert ppo.sb3_reference == pytest.approx(500.0) and ppo.ratio_to_reference == pytest.approx(ppo.final_iqm / 500)
    a2c = summary.loc[("a2c", "lit_sb3")]
    assert a2c.failed == 1 and a2c.incomplete == 1 and a2c.seeds == 0 and pd.isna(a2c.final_iqm)
    text = capsys.readouterr().out
    assert "| ppo | sb3 | CartPole | 3 (0) |" in text and "report written to" in text


def test_summary_md_links_videos_where_runs_have_one(tmp_path):
    sweep = make_sweep(tmp_path) / "fixture_sweep"
    out = tmp_path / "report"

    def table() -> list[str]:
        summary = report.summary_table(load_runs([sweep]), load_evaluations([sweep]))
        return report.markdown(summary, out).splitlines()

    assert "video" not in table()[0]  # no run has a video: no column
    video = sweep / "ppo" / "CartPole" / "seed_1" / "video" / "final.mp4"
    video.parent.mkdir()
    video.write_bytes(b"mp4")
    lines = table()
    assert lines[0].endswith("| video |")
    ppo = next(line for line in lines if line.startswith("| ppo |"))
    a2c = next(line for line in lines if line.startswith("| a2c |"))
    assert ppo.endswith("| [1](../fixture_sweep/ppo/CartPole/seed_1/video/final.mp4) |") and a2c.endswith("| - |")
