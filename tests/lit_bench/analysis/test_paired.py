"""Paired comparisons of any two configs: a variant vs its base (automatic), ``--compare A B``, their table, figure
and one-line errors; the lit-vs-SB3 comparison is the same computation."""

from __future__ import annotations

import pytest

from lit_bench.analysis.markdown import markdown
from lit_bench.analysis.paired import CompareError, ConfigName
from lit_bench.analysis.tables import read_tables, tables
from lit_bench.cli import report

from ..helpers import write_run


def _sweep(root, n_seeds=5, *, variant_budget=20_000):
    """my_ppo (base ppo) = ppo + 10 + seed on every seed, ppo also on SB3 and with a second learning rate."""
    for seed in range(n_seeds):
        ppo = [100.0] * 9 + [400.0 + 10 * seed]
        write_run(root, "ppo", "CartPole", seed, "lit", ppo, every=2000, variant="budget=20000", config_id="p")
        write_run(
            root,
            "ppo",
            "CartPole",
            seed,
            "sb3",
            [r - 5 for r in ppo],
            every=2000,
            variant="budget=20000",
            config_id="p",
        )
        write_run(
            root,
            "ppo",
            "CartPole",
            seed,
            "lit",
            [r - 50 for r in ppo],
            every=2000,
            subdir="lr",
            variant="algo.learning_rate=0.001,budget=20000",
            config_id="q",
        )
        write_run(
            root,
            "my_ppo",
            "CartPole",
            seed,
            "lit",
            [r + 10 + seed for r in ppo],
            every=variant_budget // 10,
            variant="budget=20000",
            config_id="m",
            base="ppo",
        )
    return root


def test_a_variant_is_paired_with_its_base_and_gets_its_reference(tmp_path):
    _, summary, _ = tables([_sweep(tmp_path / "s", 6)])
    ablations = read_tables([tmp_path / "s"]).ablations
    row = ablations.iloc[0]
    assert len(ablations) == 1 and (row.kind, row.a, row.b) == (
        "variant vs base",
        "my_ppo[budget=20000] / lit",
        "ppo[budget=20000] / lit",
    )
    assert row.differences == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0] and row.n == 6 and row.verdict == "my_ppo better"
    # P(A > B) over all pairs of seeds (ties count half): (1.5 + 3 + 4 + 5 + 6 + 6) / 36; 6 positive differences:
    # the sign-flip test's p-value is 2 / 2^6
    assert row.ci_low > 0 and row.probability_of_improvement == pytest.approx(25.5 / 36)
    assert row.sign_flip_p_value == pytest.approx(2 / 64)
    variant = summary.set_index("algo").loc["my_ppo"]
    assert variant.base == "ppo" and variant.reference_at_budget == pytest.approx(500.0)  # ppo's SB3 reference
    text = markdown(summary)
    assert "SB3 ppo on CartPole-v1 at 20k" in text and "my_ppo on" not in text  # one footnote, the base's


def test_a_variant_at_another_budget_is_not_paired(tmp_path):
    ablations = read_tables([_sweep(tmp_path / "s", variant_budget=10_000)]).ablations
    assert ablations.empty


def test_compare_names_any_two_configs(tmp_path, capsys):
    root = _sweep(tmp_path / "s")
    report.main(
        [
            str(root),
            "--formats",
            "png",
            "--workers",
            "1",
            "--compare",
            "ppo[budget=20000]",
            "ppo[algo.learning_rate=0.001,budget=20000]",
            "--compare",
            "ppo[budget=20000]",
            "ppo@sb3",
        ]
    )
    out = capsys.readouterr().out
    assert (
        "| ppo[budget=20000] / lit | ppo[algo.learning_rate=0.001,budget=20000] / lit | CartPole | 5 | 420.0 | "
        "370.0 | 0: +50.0, 1: +50.0, 2: +50.0, 3: +50.0, 4: +50.0 | +50.0 [+50.0, +50.0] | 1.00 | n<6 |"
    ) in out  # (+50 on each of 5 seeds: the CI excludes 0, but no exact test over 5 seeds reaches 5%: no verdict)
    assert "| ppo[budget=20000] / lit | ppo[budget=20000] / sb3 | CartPole | 5 | 420.0 | 415.0 |" in out
    assert "| my_ppo[budget=20000] / lit | ppo[budget=20000] / lit |" in out  # the variant, without --compare
    assert {p.name for p in (root / "report").iterdir()} >= {"ablations.csv", "ablations.png", "comparison.png"}


def test_compare_names_that_match_nothing_or_several_configs_fail_in_one_line(tmp_path):
    root = _sweep(tmp_path / "s")
    with pytest.raises(
        SystemExit,
        match=r"^report: --compare a2c: no completed runs of that config; configs: "
        r"my_ppo\[budget=20000\], ppo@sb3\[budget=20000\], ppo\[algo",
    ):
        report.main([str(root), "--compare", "a2c", "ppo"])
    with pytest.raises(
        SystemExit,
        match=r"^report: --compare ppo: 2 configs on CartPole \(ppo\[algo.learning_rate"
        r"=0.001,budget=20000\], ppo\[budget=20000\]\); name one$",
    ):
        report.main([str(root), "--compare", "my_ppo", "ppo"])
    with pytest.raises(CompareError, match="name a config as ALGO"):
        ConfigName.parse("ppo[x")
    assert ConfigName.parse("ppo@sb3[a=1]") == ConfigName("ppo", "sb3", "a=1") and str(ConfigName("ppo")) == "ppo"


def test_each_pair_is_tabulated_and_drawn_once(tmp_path):
    """``--compare`` naming the variant and its base (paired already), the same pair again, or reversed: one row."""
    root = _sweep(tmp_path / "s")
    pairs = [("my_ppo", "ppo[budget=20000]"), ("my_ppo", "ppo[budget=20000]"), ("ppo[budget=20000]", "my_ppo")]
    ablations = read_tables([root], compare=pairs).ablations
    assert len(ablations) == 1 and ablations.kind.item() == "variant vs base"
    both = read_tables([root], compare=[*pairs, ("ppo[budget=20000]", "ppo@sb3")]).ablations
    assert len(both) == 2
