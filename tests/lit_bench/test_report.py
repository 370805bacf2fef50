"""The report on fixture sweeps: every file written, one "final", references at equal budgets, small-sample flags,
runs grouped by sweep and config, and the paired lit-vs-SB3 comparison."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pandas as pd
import pytest
import yaml
from PIL import Image

from lit_bench.analysis import pool
from lit_bench.analysis.markdown import markdown
from lit_bench.analysis.pool import DPI
from lit_bench.analysis.reference import reference_at_budget, reference_curve, reference_score
from lit_bench.analysis.tables import tables
from lit_bench.cli import report
from lit_bench.config.identity import config_id as id_of
from tests.lit_bench.helpers import make_sweep, write_run


def test_reference_lookup_maps_env_versions():
    ref = reference_score("sac", "HalfCheetah-v5")
    assert ref is not None and ref.reference_env_id == "HalfCheetah-v3" and not ref.same_version
    assert ref.budget == 1_000_000 and ref.score == pytest.approx(9535, abs=1)
    assert reference_score("ppo", "CartPole-v1").same_version
    assert reference_score("ppo", "NoSuchEnv-v0") is None
    curve = reference_curve("ppo", "CartPole-v1")
    assert not curve.empty and curve.timesteps.is_monotonic_increasing


def test_reference_at_the_runs_budget():
    # the Zoo's PPO CartPole eval curve: 214.8 at 10k, 500 from 20k on; its benchmark: 500 at 100k
    at_20k = reference_at_budget("ppo", "CartPole-v1", 20_000)
    assert at_20k.score == pytest.approx(500.0) and at_20k.how == "Zoo eval curve (1 seed) at 20k"
    assert "rl-trained-agents" in at_20k.source and "evaluations.npz" in at_20k.source
    at_15k = reference_at_budget("ppo", "CartPole-v1", 15_000)
    assert at_15k.score == pytest.approx((214.8 + 500.0) / 2) and "between 10k and 20k" in at_15k.how
    benchmark = reference_at_budget("ppo", "CartPole-v1", 100_000)
    assert benchmark.score == pytest.approx(500.0) and benchmark.how.startswith("Zoo benchmark")
    assert reference_at_budget("ppo", "CartPole-v1", 3_000) is None  # before the curve's first point: no value
    assert reference_at_budget("a2c", "CartPole-v1", 20_000).score == pytest.approx(203.2)


def test_report_cli_writes_every_file(tmp_path, capsys):
    make_sweep(tmp_path)
    out = tmp_path / "report"
    report.main([str(tmp_path / "fixture_sweep*"), "--out", str(out)])
    for name in (
        "summary.csv",
        "summary.md",
        "comparison.csv",
        "curves_CartPole.png",
        "final_scores.png",
        "throughput.png",
        "comparison.png",
    ):
        assert (out / name).stat().st_size > 0, name
    assert not list(out.glob("*.pdf"))  # the screen style's figures are PNGs; PDFs come with --style paper
    summary = pd.read_csv(out / "summary.csv").set_index(["algo", "backend"])
    ppo = summary.loc[("ppo", "lit")]
    # final = the last evaluation: 480, 490, 500; the IQM of 3 values is their mean
    assert ppo.final_iqm == pytest.approx(490.0) and ppo.ci_low <= 490.0 <= ppo.ci_high
    # 475 is reached only at the last evaluation, never held for three: not "solved"
    assert ppo.seeds == 3 and ppo.solved_seeds == 0 and pd.isna(ppo.steps_to_threshold_median)
    # the ratio is against the same config's SB3 runs (n=3), not the Zoo's benchmark at another budget
    assert ppo.sb3_reference == pytest.approx(500.0) and ppo.ratio_to_reference == pytest.approx(490.0 / 470.0)
    assert ppo.ratio_against == "SB3 runs of this config" and ppo.ratio_n == 3
    sb3 = summary.loc[("ppo", "sb3")]  # a 3k-step run: no Zoo value at its budget, no ratio
    assert pd.isna(sb3.ratio_to_reference) and sb3.ratio_n == 0
    a2c = summary.loc[("a2c", "lit")]
    assert a2c.failed == 1 and a2c.incomplete == 1 and a2c.seeds == 0 and pd.isna(a2c.final_iqm)
    text = capsys.readouterr().out
    assert "Final = the last evaluation, at the end of the budget" in text
    assert "| ppo / sb3 | CartPole | 3 | 470.0 [470.0, 470.0]‡ | - | none at 3k | 500.0 @ 100k |" in text
    assert "| ppo / lit | CartPole | 3 | 490.0 [480.0, 500.0]‡ | 1.04 (SB3 runs, n=3) | none at 3k |" in text
    assert "| a2c / lit | CartPole | 0 (1 failed, 1 incomplete) |" in text
    assert "## lit vs SB3, paired by seed" in text and "report written to" in text


def test_report_figures_in_the_formats_asked(tmp_path, capsys):
    make_sweep(tmp_path)
    out = tmp_path / "report"
    report.main([str(tmp_path / "fixture_sweep"), "--out", str(out), "--formats", "png", "--style", "paper"])
    assert (out / "curves_CartPole.png").is_file() and not list(out.glob("*.pdf"))
    report.main([str(tmp_path / "fixture_sweep"), "--out", str(tmp_path / "paper"), "--style", "paper"])
    for name in ("curves_CartPole", "final_scores", "comparison"):  # the paper style: png and pdf
        assert (tmp_path / "paper" / f"{name}.png").is_file() and (tmp_path / "paper" / f"{name}.pdf").is_file()
    report.main([str(tmp_path / "fixture_sweep"), "--out", str(tmp_path / "both"), "--formats", "png", "pdf"])
    assert (tmp_path / "both" / "curves_CartPole.pdf").is_file()
    with pytest.raises(SystemExit):
        report.main([str(tmp_path / "fixture_sweep"), "--formats", "svg"])
    assert "argument --formats: invalid choice: 'svg'" in capsys.readouterr().err


needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="figure workers fork")


def _two_env_sweep(root):
    sweep = make_sweep(root) / "fixture_sweep"
    for seed in range(2):
        write_run(sweep, "sac", "Pendulum", seed, "lit", [-900.0, -400.0 + seed], env_id="Pendulum-v1")
    return sweep


@needs_fork
def test_figures_drawn_by_workers_are_the_ones_drawn_in_process(tmp_path, capsys):
    sweep = _two_env_sweep(tmp_path)
    for workers in (1, 3):
        report.main([str(sweep), "--out", str(tmp_path / f"w{workers}"), "--workers", str(workers)])
    serial, parallel = tmp_path / "w1", tmp_path / "w3"
    names = sorted(p.name for p in serial.iterdir())
    assert names == sorted(p.name for p in parallel.iterdir()) and "curves_Pendulum.png" in names
    for name in names:
        if name.endswith(".png"):  # the same pixels
            assert np.array_equal(np.asarray(Image.open(serial / name)), np.asarray(Image.open(parallel / name))), name
        elif not name.endswith(".pdf"):  # (a PDF holds its creation time)
            assert (serial / name).read_bytes() == (parallel / name).read_bytes(), name


def _fails():  # (pool._drain: what the forked workers run, and only they)
    raise ZeroDivisionError("in a figure worker")


def _dies():
    os._exit(3)  # as a worker killed mid-figure (out of memory, a signal)


@needs_fork
def test_a_failing_figure_worker_fails_the_report(tmp_path, monkeypatch, capsys):
    sweep = _two_env_sweep(tmp_path)
    monkeypatch.setattr(pool, "_drain", _fails)  # (the workers fork from this process: they inherit the patch)
    with pytest.raises(ZeroDivisionError, match="in a figure worker"):  # raised here, with the worker's traceback
        report.main([str(sweep), "--out", str(tmp_path / "a"), "--workers", "2", "--formats", "png"])
    monkeypatch.setattr(pool, "_drain", _dies)
    with pytest.raises(SystemExit, match=r"report: a process drawing the figures died .*the figures are incomplete"):
        report.main([str(sweep), "--out", str(tmp_path / "b"), "--workers", "2", "--formats", "png"])
    with pytest.raises(SystemExit):
        report.main([str(sweep), "--workers", "0"])
    assert "argument --workers: '0': a whole number >= 1" in capsys.readouterr().err


def _equal_budget_sweep(root, n_seeds, *, budget=20_000, **identity):
    for seed in range(n_seeds):
        returns = [100.0] * 9 + [400.0 + 10 * seed]
        write_run(root, "ppo", "CartPole", seed, "lit", returns, every=budget // 10, **identity)
        write_run(root, "ppo", "CartPole", seed, "sb3", [r - 5 for r in returns], every=budget // 10, **identity)
    return root


def _tables(*paths):
    _, summary, comparison = tables(paths)
    return summary, comparison, markdown(summary, comparison)


def test_ratio_is_taken_at_the_runs_own_budget(tmp_path):
    summary, _, md = _tables(_equal_budget_sweep(tmp_path / "s", 5))
    lit, sb3 = summary.set_index("backend").loc["lit"], summary.set_index("backend").loc["sb3"]
    assert lit.budget == 20_000 and lit.reference_at_budget == pytest.approx(500.0)
    # the Zoo's single seed at 20k (below its 100k budget) is shown, never the ratio's denominator: SB3's runs are
    assert lit.ratio_to_reference == pytest.approx(lit.final_iqm / sb3.final_iqm) and lit.ratio_n == 5
    assert pd.isna(sb3.ratio_to_reference)
    assert lit.reference_at_budget_how == "Zoo eval curve (1 seed) at 20k"
    assert "[1] SB3 ppo on CartPole-v1 at 20k: Zoo eval curve (1 seed) at 20k (DLR-RM/rl-trained-agents@" in md
    # both backends' rows cite the one reference they share, and only existing footnotes are cited
    assert md.count("| 500.0 [1] |") == 2 and "[2]" not in md


def test_small_samples_are_flagged_and_single_runs_have_no_interval(tmp_path):
    flagged, comparison, md = _tables(_equal_budget_sweep(tmp_path / "three", 3))
    assert flagged.ci_flagged.all() and comparison.ci_flagged.all() and (comparison.verdict == "n<6").all()
    assert "| 3 | 410.0 [400.0, 420.0]‡ |" in md and "+5.0 [+5.0, +5.0]‡ | 0.67 | n<6 |" in md
    enough, comparison, md = _tables(_equal_budget_sweep(tmp_path / "five", 5))
    assert "]‡" not in md  # no interval flagged
    # lit = SB3 + 5 on every seed: the CI is [5, 5], but 5 seeds' sign-flip test cannot reject (p = 2/32): the
    # verdict is withheld until 6 seeds, while the CI is no longer flagged
    assert not enough.ci_flagged.any() and comparison.verdict.item() == "n<6"
    assert comparison.sign_flip_p_value.item() == pytest.approx(2 / 32) and comparison.ci_low.item() > 0
    _, comparison, _ = _tables(_equal_budget_sweep(tmp_path / "six", 6))
    assert comparison.verdict.item() == "lit better" and comparison.sign_flip_p_value.item() == pytest.approx(2 / 64)
    single, comparison, md = _tables(_equal_budget_sweep(tmp_path / "one", 1))
    assert single.ci_low.isna().all() and single.seeds.eq(1).all() and comparison.ci_low.isna().all()
    assert "| 1 | 400.0 | 1.01 (SB3 runs, n=1) | 500.0 [1] |" in md and "| 0: +5.0 | +5.0 | 1.00 | n<6 |" in md


def test_paired_comparison_table(tmp_path):
    _, comparison, text = _tables(_equal_budget_sweep(tmp_path / "cmp", 6))
    row = comparison.iloc[0]
    # sb3 = lit - 5 on every seed: the paired difference is exactly 5, so is its whole CI, and 6 seeds of the same
    # sign are the sign-flip test's rarest pattern (p = 2/64): lit better
    assert row.n == 6 and row.iqm_difference == pytest.approx(5.0)
    assert row.ci_low == pytest.approx(5.0) and row.ci_high == pytest.approx(5.0) and row.verdict == "lit better"
    assert row.probability_of_improvement > 0.5 and row.fps_ratio_median == pytest.approx(1.0)
    assert (
        "| ppo | CartPole | 6 | 425.0 | 420.0 | 0: +5.0, 1: +5.0, 2: +5.0, 3: +5.0, 4: +5.0, 5: +5.0 | "
        "+5.0 [+5.0, +5.0] |"
        in text
        and "| lit better | 1.00x wall-clock |" in text  # the fixture runs recorded no CPU time
    )


def test_sweeps_and_configs_are_never_merged_by_seed(tmp_path):
    # two sweeps with the same algo / env / seeds, and one sweep with two configs in nested variant dirs
    _equal_budget_sweep(tmp_path / "A", 2, sweep="A")
    _equal_budget_sweep(tmp_path / "B", 2, sweep="B")
    for config_id, variant in (("c1", ""), ("c2", "learning_rate=0.001")):
        for seed in range(2):
            write_run(
                tmp_path / "hp",
                "ppo",
                "CartPole",
                seed,
                "lit",
                [1.0, 2.0 if config_id == "c1" else 3.0],
                subdir=variant or "default",
                sweep="hp",
                config_id=config_id,
                variant=variant,
            )
    summary, comparison, md = _tables(tmp_path / "A", tmp_path / "B", tmp_path / "hp")
    assert len(summary) == 2 + 2 + 2 and summary.seeds.eq(2).all()  # never 4 "seeds" from two sweeps
    hp = summary[summary.sweep == "hp"].set_index("variant")
    assert hp.loc["", "final_iqm"] == 2.0 and hp.loc["learning_rate=0.001", "final_iqm"] == 3.0
    assert "| ppo[learning_rate=0.001] / lit (hp) |" in md and "| ppo / sb3 (A) |" in md
    assert sorted(comparison.sweep) == ["A", "B"] and comparison.n.eq(2).all()


def test_seeds_trained_in_batched_groups_are_seeds_of_their_config(tmp_path):
    """lit seeds trained in a batched group (their own directory variant ``batched=true,...``) pair with SB3's by
    seed and read as ordinary runs of their config: one row, the config's label, no ``batched`` variant or column;
    one note says which configs' seeds trained batched. Seed 0 trained in its own process (an older run of the same
    config) and a seed killed before its summary (read from its config.yaml) join the same row."""
    root = tmp_path / "s"
    config = {"algo": {"learning_rate": 0.0003}, "env": {"id": "CartPole-v1"}, "budget": 3000}
    plain = {"config_id": id_of(config), "variant": "budget=3000"}
    batched = {"config_id": "bad9e00002", "variant": "batched=true,budget=3000"}
    ungrouped = {"unbatched_config_id": plain["config_id"], "unbatched_variant": plain["variant"]}
    for seed in range(5):
        returns = [100.0, 400.0 + 10 * seed]
        write_run(
            root, "ppo", "CartPole", seed, "sb3", [r - 5 for r in returns], subdir="budget=3000-5b35b35b35", **plain
        )
        if seed == 0:
            write_run(root, "ppo", "CartPole", seed, "lit", returns, subdir="budget=3000-c0ffee0001", **plain)
        else:
            write_run(
                root, "ppo", "CartPole", seed, "lit", returns, subdir="batched=true,budget=3000-bad9e00002",
                **batched, **ungrouped,
            )  # fmt: skip
    killed = write_run(
        root, "ppo", "CartPole", 5, "lit", [100.0], status=None, subdir="batched=true,budget=3000-bad9e00002"
    )
    (killed / "config.yaml").write_text(yaml.safe_dump({**config, "seed": 5, "batched": True}))
    summary, comparison, md = _tables(root)
    lit = summary[summary.backend == "lit"]
    assert len(lit) == 1 and lit.variant.iloc[0] == "budget=3000" and lit.seeds.iloc[0] == 5
    assert lit.batched_seeds.iloc[0] == 4 and lit.incomplete.iloc[0] == 1
    (pair,) = comparison.itertuples()
    # (5 seeds, each +5: the CI excludes 0, the sign-flip test cannot at n=5: no verdict)
    assert pair.n == 5 and pair.iqm_difference == pytest.approx(5.0) and pair.verdict == "n<6"
    assert md.count("batched") == 1 and "Seeds trained in batched seed groups" in md
    assert "ppo[budget=3000] / lit on CartPole (4 of 5)" in md


def test_summary_md_links_videos_where_runs_have_one(tmp_path):
    sweep = make_sweep(tmp_path) / "fixture_sweep"
    out = tmp_path / "report"

    def table() -> list[str]:
        _, summary, _ = tables([sweep])
        return [line for line in markdown(summary, None, out).splitlines() if line.startswith("|")]

    assert "video" not in table()[0]  # no run has a video: no column
    video = sweep / "ppo" / "CartPole" / "seed_1" / "video" / "final.mp4"
    video.parent.mkdir()
    video.write_bytes(b"mp4")
    lines = table()
    assert lines[0].endswith("| video |")
    ppo = next(line for line in lines if line.startswith("| ppo / lit |"))
    a2c = next(line for line in lines if line.startswith("| a2c / lit |"))
    assert ppo.endswith("| [1](../fixture_sweep/ppo/CartPole/seed_1/video/final.mp4) |") and a2c.endswith("| - |")


def test_ratio_without_sb3_runs_is_the_zoo_benchmark_at_its_own_budget_only(tmp_path):
    # lit alone at 20k: the Zoo's single-seed curve (500 at 20k) is shown but is no denominator
    for seed in range(2):
        write_run(tmp_path / "short", "ppo", "CartPole", seed, "lit", [100.0] * 9 + [400.0], every=2_000)
        write_run(tmp_path / "full", "ppo", "CartPole", seed, "lit", [100.0] * 9 + [450.0], every=10_000)
    short, _, md = _tables(tmp_path / "short")
    assert short.reference_at_budget.item() == pytest.approx(500.0) and pd.isna(short.ratio_to_reference.item())
    assert "| 400.0 [400.0, 400.0]‡ | - | 500.0 [1] |" in md
    # at the Zoo's own 100k budget: its benchmark (one agent, n=1) is the denominator, and says so
    full, _, md = _tables(tmp_path / "full")
    assert full.ratio_to_reference.item() == pytest.approx(450.0 / 500.0) and full.ratio_n.item() == 1
    assert "| 0.90 (Zoo benchmark, n=1) |" in md


def test_suite_and_training_pages_over_several_envs(tmp_path, capsys):
    from tests.lit_bench.helpers import make_mixed_sweeps

    make_mixed_sweeps(tmp_path)
    out = tmp_path / "report"
    report.main([str(tmp_path / "fixture_*"), "--out", str(out), "--formats", "png", "--style", "paper"])
    for name in ("suite.png", "suite.csv", "normalization.csv", "training_CartPole.png", "training_Acrobot.png"):
        assert (out / name).stat().st_size > 0, name
    aggregates = pd.read_csv(out / "suite.csv")
    # the two learning-rate configs ran on both envs (2 runs each on Acrobot): the suite; ppo of fixture_sweep did not
    assert set(aggregates.name) == {"ppo learning_rate=0.001 / lit", "ppo learning_rate=0.0003 / lit"}
    assert set(aggregates.tasks) == {2} and set(aggregates.runs) == {2}
    assert set(pd.read_csv(out / "normalization.csv").env_id) == {"Acrobot-v1", "CartPole-v1"}
    with Image.open(out / "suite.png") as image:
        assert image.width >= 0.95 * 7.0 * DPI  # the paper style's page width (7 in), not a column's


def test_a_figure_left_out_is_named_with_why(tmp_path, capsys):
    """No run wrote train/metrics.csv (runs shorter than one log_interval): training_<env> is not drawn, and the
    report says so (console and summary.md) instead of leaving it out without a word."""
    make_sweep(tmp_path)
    out = tmp_path / "report"
    report.main([str(tmp_path / "fixture_sweep"), "--out", str(out), "--formats", "png", "--workers", "1"])
    assert not (out / "training_CartPole.png").exists()
    note = "training_CartPole not drawn: no run on CartPole has training metrics to draw (train/metrics.csv)"
    assert note in capsys.readouterr().out and note in (out / "summary.md").read_text()
    assert "log_interval=" in (out / "summary.md").read_text()


def test_runs_with_other_versions_pooled_in_a_row_are_flagged(tmp_path):
    """A run copied in from elsewhere (torch 1.13, SB3 1.8) is flagged in the table and its footnotes, not silently
    pooled; a version a run did not record (numpy, before format 3) is no difference."""
    today = {"lit_sb3": "0.1.0", "stable-baselines3": "2.9.2", "torch": "2.13.0", "numpy": "2.4.6"}
    old = {"lit_sb3": "0.1.0", "stable-baselines3": "1.8.0", "torch": "1.13.0"}
    for seed in range(3):
        write_run(tmp_path / "s", "ppo", "CartPole", seed, "lit", [100.0, 480.0], versions=today)
    write_run(tmp_path / "s", "ppo", "CartPole", 3, "lit", [100.0, 480.0], versions=old)
    write_run(tmp_path / "s", "a2c", "CartPole", 0, "lit", [100.0, 480.0], versions=old)
    summary, _, text = _tables(tmp_path / "s")
    versions = summary.set_index("algo").versions
    assert versions["ppo"] == "stable-baselines3 1.8.0 (1) / 2.9.2 (3); torch 1.13.0 (1) / 2.13.0 (3)"
    assert versions["a2c"] == ""
    assert "| ppo / lit ¶ |" in text and "| a2c / lit |" in text
    assert "¶ ppo / lit on CartPole: its runs were trained with different versions (stable-baselines3" in text
