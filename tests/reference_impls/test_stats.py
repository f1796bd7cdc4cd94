"""reference_impls/stats.py against hand values: the crossed variance, the exact McNemar test, Holm, the
smallest detectable effect, the single-configuration interval, and the verdict sentence's wording rules.
(pass@k and the bootstrap's hand values are in tests/test_compare.py; the simulations in
test_stats_simulation.py.)"""
import re

import pytest

from reference_impls.stats import (CROSSED, MCNEMAR, ONE_SEED, PAIRED_T, compare, config_interval, crossed_variance,
                                   detectable_at, detectable_effect, holm, mcnemar_exact, paired_proportions_interval,
                                   relation, seeds_for_detectable, verdict_sentence)


def test_crossed_variance_by_hand():
    # D = [[1, 0], [0, 0]]: mean 1/4; seed means 1/2, 0 -> MS_seed = 2 * (1/16 + 1/16) / 1 = 1/4; problem means
    # likewise -> MS_problem = 1/4; variance (1/4 + 1/4) / (2 * 2) = 1/8; df (1/2)^2 / (1/16 + 1/16) = 2
    mean, var, df = crossed_variance([[1, 0], [0, 0]])
    assert (mean, var, df) == (0.25, 0.125, 2.0)
    # one row: the problems' variance of the mean, P - 1 degrees of freedom: var([1, 0, 0, 0], ddof=1) / 4
    assert crossed_variance([[1, 0, 0, 0]]) == (0.25, pytest.approx(0.25 / 4), 3.0)
    # within families: [1, 0 | 1, 1] in families a, b -> problem means centred on their family's: 1/2, -1/2, 0, 0
    # -> MS_problem = (1/4 + 1/4) / (4 - 2) = 1/4, variance 1/16, df 2
    assert crossed_variance([[1, 0, 1, 1]], families=["a", "a", "b", "b"]) == (0.75, 0.0625, 2.0)
    with pytest.raises(ValueError, match="families names 3 problems"):
        crossed_variance([[1, 0, 1, 1]], families=["a", "a", "b"])
    with pytest.raises(ValueError, match="at least 2 problems"):
        crossed_variance([[1], [0]])


def test_mcnemar_exact_by_hand():
    assert mcnemar_exact(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)  # 2 P(X <= 2), X ~ Bin(10, 1/2)
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)  # 5 of 5 discordant one way is not below 0.05
    assert mcnemar_exact(2, 1) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_holm_by_hand():
    # sorted 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> kept at 0.06)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []
    with pytest.raises(ValueError, match="p-values in"):
        holm([0.5, 1.5])


def test_detectable_effect_by_hand():
    assert detectable_effect(0.02) == pytest.approx((1.959964 + 0.841621) * 0.02, abs=1e-6)
    # with few degrees of freedom the t quantiles are wider: t(0.975, 4) = 2.776, t(0.8, 4) = 0.941
    assert detectable_effect(0.02, df=4) == pytest.approx((2.776445 + 0.940965) * 0.02, abs=1e-6)
    # a stricter level (Holm's first step over 10 tests) needs a larger effect
    assert detectable_effect(0.02, alpha=0.005) > detectable_effect(0.02)
    with pytest.raises(ValueError):
        detectable_effect(-1.0)


def test_paired_proportions_interval_by_hand():
    z2 = 1.959964 ** 2
    # all 100 solved by both: each side's Wilson interval is [100 / (100 + z^2), 1], phi 0 -> +-z^2 / (100 + z^2)
    low, high = paired_proportions_interval(100, 0, 0, 0)
    assert (low, high) == (pytest.approx(-z2 / (100 + z2)), pytest.approx(z2 / (100 + z2)))
    # swapping the sides mirrors the interval; a run that lost 9 problems and gained none: the interval lies below 0
    # but, unlike one conditional on the 9 discordant problems, reaches below -9 points
    lost = paired_proportions_interval(65, 0, 9, 26)
    assert paired_proportions_interval(65, 9, 0, 26) == pytest.approx((-lost[1], -lost[0]))
    assert lost[0] < -0.09 < lost[1] < 0
    with pytest.raises(ValueError):
        paired_proportions_interval(0, 0, 0, 0)


def test_compare_one_run_uses_the_exact_test():
    c = compare([[1, 1, 1, 0, 0]], [[0, 0, 1, 0, 1]])  # two problems only a solves, one only b
    assert (c.difference, c.gained, c.lost, c.test, c.one_run) == (pytest.approx(0.2), 2, 1, MCNEMAR, True)
    assert c.p_value == 1.0 and c.low < 0 < c.high
    # per-problem values that are not 0/1 (pass@k): a paired t over problems
    t = compare([[0.5, 0.25, 1.0]], [[0.25, 0.25, 0.5]])
    assert t.test == PAIRED_T and t.one_run and t.difference == pytest.approx(0.25)


def test_compare_pairs_seeds_and_a_reference_row():
    a = [[1, 1, 0, 0] * 25, [1, 1, 1, 0] * 25, [1, 0, 0, 0] * 25]
    warm = [[1, 0, 0, 0] * 25]
    c = compare(a, warm)  # each seed paired with the fixed warm-start row
    assert c.test == CROSSED and c.seeds == 3 and c.problems == 100 and not c.one_run
    mean, var, df = crossed_variance([[x - w for x, w in zip(row, warm[0])] for row in a])
    assert (c.difference, c.se, c.df) == (pytest.approx(mean), pytest.approx(var ** 0.5), pytest.approx(df))
    with pytest.raises(ValueError, match="same seeds"):
        compare(a, a[:2])
    with pytest.raises(ValueError, match="same problems"):
        compare([[1, 0]], [[1, 0, 1]])


def test_no_problem_differing_still_bounds_the_difference():
    """Two configurations that agree on every problem in every seed (GSPO's cells equal GRPO's when its
    ratio is 1): no difference detected, and the interval is the exact bound 1 - 0.025^(1/100) = 3.6 points,
    not a zero-width interval."""
    same = [[1, 0] * 50] * 3
    c = compare(same, same)
    assert c.p_value == 1.0 and c.high == pytest.approx(1 - 0.025 ** (1 / 100)) and c.low == -c.high


def test_config_interval_by_hand():
    one = config_interval([[1] * 10 + [0] * 10])  # one run: Clopper-Pearson, 10 of 20
    assert (one.mean, round(one.low, 4), round(one.high, 4)) == (0.5, 0.272, 0.728)
    none = config_interval([[0] * 100] * 3)  # nothing solved anywhere: exact bound over the 100 problems
    assert (none.low, none.high) == (0.0, pytest.approx(1 - 0.025 ** (1 / 100)))
    rows = [[1, 0, 0, 1] * 25, [1, 1, 0, 0] * 25, [1, 1, 1, 0] * 25]
    iv = config_interval(rows)
    mean, var, _ = crossed_variance(rows)  # t on S - 1 = 2 degrees of freedom: 4.303
    assert iv.mean == pytest.approx(7 / 12) and iv.high - iv.mean == pytest.approx(4.302653 * var ** 0.5)


def _p_mentions(text):
    return re.findall(r"\bp\b", text)


def test_verdict_sentence_wording():
    c = compare([[1, 1, 1, 0] * 25, [1, 1, 0, 1] * 25, [1, 1, 1, 1] * 25], [[1, 0, 0, 0] * 25])
    better = verdict_sentence(c, "the warm start", p_adjusted=0.004, tests=39)
    assert better.startswith("better than the warm start (+") and "Holm-adjusted p = 0.004 over 39 tests" in better
    worse = verdict_sentence(compare([[1, 0, 0, 0] * 25] * 2, [[1, 1, 1, 0] * 25] * 2), "grpo", 0.0001, 3)
    assert worse.startswith("worse than grpo") and "Holm-adjusted p < 0.001" in worse
    # not rejected after Holm: no verdict, what is not ruled out, what was detectable (at 0.05 / tests)
    warm = [1, 0] * 50
    seeds = [[1 - x if j in flips else x for j, x in enumerate(warm)] for flips in ({1, 3, 5}, {7, 9, 0}, {11, 13, 2})]
    close = compare(seeds, [warm])  # each seed differs from the warm start on 3 problems (+2 -1)
    unsure = verdict_sentence(close, "the warm start", p_adjusted=1.0, tests=39)
    bound = 100 * max(abs(close.low), abs(close.high))
    assert unsure.startswith(f"no difference detected from the warm start; could not rule out +-{bound:.1f} points")
    detectable = 100 * detectable_effect(close.se, close.df, 0.05 / 39)
    assert detectable < 100 and f"detectable with 80% power: {detectable:.1f} points" in unsure
    # three seeds that disagree this much leave no effect below 100 points detectable: said so, not "127.5 points"
    assert 100 * detectable_effect(c.se, c.df, 0.05 / 39) > 100
    assert "no effect within +-100 points is detectable with 80% power" in verdict_sentence(c, "x", 0.3, 39)
    assert relation(c, 0.3) == "no difference detected" and relation(c, 0.01) == "better"
    # one run a side: an observation, never a verdict, and no p
    one = verdict_sentence(compare([[1, 1, 1, 0, 0]], [[0, 0, 1, 0, 1]]), "SFT", None, 39)
    assert one.startswith(ONE_SEED) and "better" not in one and not _p_mentions(one)
    assert "3 problems differ: 2 solved only by this run, 1 only by SFT" in one
    # every p printed says which correction it went through (Holm, or none: the raw p beside it says so);
    # "equal" and "significant" are never written
    assert f"(uncorrected p = {c.p_value:.3f})" in better
    for text in (better, worse, unsure, one):
        assert len(_p_mentions(text)) == text.count("Holm-adjusted p") + text.count("uncorrected p")
        assert text.count("Holm-adjusted p") == text.count("uncorrected p")
        assert "equal" not in text and "significant" not in text


def test_detectable_effect_projected_to_other_seed_counts():
    """At the pilot's own size the projection is the pilot comparison's own detectable effect (no variance
    component clipped at 0 here); more seeds shrink it, and seeds_for_detectable finds the first count at or
    below the target."""
    rows = [[1 if (j * (s + 2)) % 7 < 3 + s else 0 for j in range(60)] for s in range(4)]
    ref = [[1 if j % 3 == 0 else 0 for j in range(60)]]
    c = compare(rows, ref)
    d = [[x - r for x, r in zip(row, ref[0])] for row in rows]
    assert detectable_at(d, 4, tests=5) == pytest.approx(detectable_effect(c.se, c.df, 0.05 / 5))
    assert detectable_at(d, 12, tests=5) < detectable_at(d, 6, tests=5) < detectable_at(d, 4, tests=5)
    target = detectable_at(d, 9, tests=5)
    n = seeds_for_detectable(d, target, tests=5)
    assert n <= 9 and detectable_at(d, n, tests=5) <= target < detectable_at(d, n - 1, tests=5)
    assert seeds_for_detectable(d, 0.001, tests=5, max_seeds=20) is None  # the problem term's floor
    with pytest.raises(ValueError, match="at least 2 seeds"):
        detectable_at([[1, 0, 1]], 5)
