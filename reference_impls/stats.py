"""Statistics for comparing runs: the unbiased pass@k estimator, the intervals and paired tests the
comparison grid draws its verdicts from, Holm's correction, the smallest detectable effect, and the one
function that words a verdict. Pure functions of numbers (numpy, scipy), so the comparison runner, its report
and the explorer page all compute the same figures.

pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1): with n samples of
a problem of which c are correct, the probability that at least one of k samples drawn without
replacement is correct is

    pass@k = 1 - C(n - c, k) / C(n, k)

computed as a running product (no large binomials), then averaged over problems.

The grid's design. A configuration's results are a matrix Y (seeds x problems) of 0/1 greedy held-out
results, on the *same* problems for every seed and every configuration; seed s draws the same training
problems for every algorithm, so algorithm A's seed s pairs with algorithm B's seed s, and the warm start
is one deterministic row. A verdict is about the algorithm on the environment, so it must cover both
sources of variation: another training run (seeds) and another draw of held-out problems from the
environment's generator (problems). ``compare`` therefore models the paired differences D = Y_A - Y_B
(or Y_A - warm row) as a two-way crossed random-effects table, D[s, j] = mu + a_s + b_j + e_sj, whose
mean has variance sigma_a^2/S + sigma_b^2/P + sigma_e^2/(SP). From the ANOVA mean squares (MS_seed,
MS_problem, MS_residual) that variance is estimated by (MS_seed + MS_problem) / (S P): the unbiased
estimate is (MS_seed + MS_problem - MS_residual) / (S P); leaving out the negative term errs on the
conservative side by sigma_e^2/(SP) and keeps Satterthwaite's degrees of freedom
(MS_seed + MS_problem)^2 / (MS_seed^2/(S-1) + MS_problem^2/(P-1)) well defined. The test is a t-test of
mean(D) = 0 with those degrees of freedom, the interval its t-interval. A test over seeds alone (a t over
the per-seed mean differences) ignores the problem draw: against the fixed warm-start row it rejected a true
null 9-43% of the time in the simulations (tests/reference_impls/test_stats_simulation.py, docs/compare.md
"Statistics"), because the warm row's luck on these 100 problems is shared by every seed.

One seed a side (both rows single runs): the exact McNemar test on the discordant problems (a two-sided
binomial test of the problems only A solves against those only B solves), or a paired t over problems
when the values are not 0/1 (per-problem pass@k). It speaks about those two runs, not the algorithms.

``config_interval`` is the same crossed estimate for one configuration's mean success, within problem
families where they are named and with a t on S - 1 degrees of freedom (exact Clopper-Pearson bounds when the
figure cannot be estimated otherwise: one run of 0/1s, or all results equal).

A grid's verdicts: Holm over the grid's tests (``holm``), "better" / "worse" only where the adjusted p is
below 0.05 (``relation``), the effect each comparison could have detected (``detectable_effect``), worded
once by ``verdict_sentence``. Planning a grid: ``detectable_at`` / ``seeds_for_detectable`` project the
detectable effect to other seed and problem counts from a pilot's differences.

The older two-level percentile bootstrap (``bootstrap_interval``) stays for the callers that resample the
problems of one run (a record's own interval, a value search's success rates); its paired form is gone, and
the grid's verdicts no longer use it: at 3 seeds it under-covered (0.86-0.89 for a nominal 0.95) and its paired
form rejected a true null 7-12% of the time with 4-5 discordant problems.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one problem with ``c`` correct out of ``n`` samples (requires k <= n)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_curve(correct_counts, n: int, ks=None) -> dict[int, float]:
    """Mean pass@k over problems for every k in ``ks`` (default 1..n)."""
    ks = list(range(1, n + 1)) if ks is None else list(ks)
    counts = list(correct_counts)
    if not counts:
        raise ValueError("pass_at_k_curve needs at least one problem")
    return {k: float(np.mean([pass_at_k(n, c, k) for c in counts])) for k in ks}


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def as_dict(self) -> dict:
        return {"mean": self.mean, "low": self.low, "high": self.high}


def _matrix(rows) -> np.ndarray:
    m = np.asarray(rows, dtype=float)
    if m.ndim != 2 or m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"expected a non-empty seeds x problems matrix, got shape {m.shape}")
    return m


def bootstrap_interval(rows, draws: int = 2000, level: float = 0.95, seed: int = 0) -> Interval:
    """Mean of a seeds x problems matrix and its two-level bootstrap interval (module docstring)."""
    m = _matrix(rows)
    rng = np.random.default_rng(seed)
    s, p = m.shape
    seeds = rng.integers(0, s, size=(draws, s))
    problems = rng.integers(0, p, size=(draws, p))
    # mean over the resampled seeds of each seed row's mean over the resampled problems
    means = np.array([m[seeds[d]][:, problems[d]].mean() for d in range(draws)])
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return Interval(float(m.mean()), float(lo), float(hi))


# -- the grid's tests: crossed seeds x problems, exact McNemar for one run, Holm, detectable effect, wording --

LEVEL = 0.95  # every interval the grid reports
ALPHA = 0.05  # the family-wise error rate Holm's correction holds over a grid's tests
POWER = 0.8  # the power at which the smallest detectable effect is stated


def _binary(m: np.ndarray) -> bool:
    return bool(np.isin(m, (0.0, 1.0)).all())


def _strata(families, problems: int) -> tuple[np.ndarray, int]:
    """Problem -> stratum index (all 0 without families) and the number of strata."""
    if families is None:
        return np.zeros(problems, dtype=int), 1
    labels = list(families)
    if len(labels) != problems:
        raise ValueError(f"families names {len(labels)} problems, the matrix has {problems}")
    names = {name: i for i, name in enumerate(dict.fromkeys(labels))}
    if problems - len(names) < 1:
        raise ValueError(f"a variance within families needs more problems ({problems}) than families ({len(names)})")
    return np.array([names[x] for x in labels]), len(names)


def crossed_moments(stack, families=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised over leading axes: for each seeds x problems matrix of ``stack`` (shape ``(..., S, P)``), its
    mean, the conservative crossed random-effects variance of that mean (module docstring) and Satterthwaite's
    degrees of freedom. ``families`` (one label per problem) stratifies the problems: the environment draws a
    fixed share of each family, so only the variation *within* families is problem-draw variance (P - F degrees
    of freedom). One row (S = 1): the problems' variance of the mean alone. Where nothing varies the variance
    is 0 (degrees of freedom S - 1, or P - F for one row)."""
    m = np.asarray(stack, dtype=float)
    s, p = m.shape[-2:]
    if p < 2:
        raise ValueError(f"a variance over problems needs at least 2 problems, got {p}")
    stratum, n_strata = _strata(families, p)
    grand = m.mean(axis=(-2, -1))
    columns = m.mean(axis=-2)
    counts = np.bincount(stratum, minlength=n_strata)
    sums = np.stack([columns[..., stratum == k].sum(axis=-1) for k in range(n_strata)], axis=-1)
    centre = (sums / counts)[..., stratum]  # each problem's family mean (the grand mean without families)
    ms_problem = s * ((columns - centre) ** 2).sum(axis=-1) / (p - n_strata)
    if s == 1:
        return grand, ms_problem / p, np.full(grand.shape, float(p - n_strata))
    ms_seed = p * ((m.mean(axis=-1) - grand[..., None]) ** 2).sum(axis=-1) / (s - 1)
    total = ms_seed + ms_problem
    denominator = ms_seed ** 2 / (s - 1) + ms_problem ** 2 / (p - n_strata)
    df = np.where(total > 0, total ** 2 / np.where(denominator > 0, denominator, 1.0), float(s - 1))
    return grand, total / (s * p), df


def crossed_test(stack, level: float = LEVEL, families=None) -> tuple[np.ndarray, ...]:
    """Vectorised crossed t-test of mean = 0 for each seeds x problems matrix of differences in ``stack``
    (``families``: see ``crossed_moments``): (mean, low, high, p, se, df), the interval at ``level``. A matrix
    of equal entries has se 0: p is 1 when they are 0 and 0 otherwise, and the interval collapses to the mean
    (``compare`` words the all-zero case)."""
    from scipy.stats import t

    mean, var, df = crossed_moments(stack, families)
    se = np.sqrt(var)
    safe = np.where(se > 0, se, 1.0)
    p = np.where(se > 0, 2 * t.sf(np.abs(mean) / safe, df), np.where(mean == 0, 1.0, 0.0))
    half = t.ppf(1 - (1 - level) / 2, df) * se
    return mean, mean - half, mean + half, p, se, df


def crossed_variance(matrix, families=None) -> tuple[float, float, float]:
    """``crossed_moments`` of one seeds x problems matrix: (mean, variance of the mean, degrees of freedom)."""
    mean, var, df = crossed_moments(_matrix(matrix), families)
    return float(mean), float(var), float(df)


def _clopper_pearson(successes: int, n: int, level: float) -> tuple[float, float]:
    from scipy.stats import beta

    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high


def config_interval(rows, level: float = LEVEL, families=None) -> Interval:
    """One configuration's mean success over seeds x problems with its ``level`` interval: the crossed
    random-effects variance (another training run and another held-out draw; ``families``: the variation
    within families only, see ``crossed_moments``) with a t on S - 1 degrees of freedom (the seeds are the
    scarcest units: with Satterthwaite's df the interval within families covered 0.91 at 3 seeds in the
    simulations), clipped to [0, 1] for 0/1 results. One run of 0/1s, or every result equal: exact
    Clopper-Pearson over the problems (the only units that could have come out otherwise)."""
    from scipy.stats import t

    m = _matrix(rows)
    mean, var, df = crossed_variance(m, families)
    if _binary(m) and (m.shape[0] == 1 or var == 0):
        low, high = _clopper_pearson(int(round(m.mean(axis=0).sum())), m.shape[1], level)
        return Interval(mean, low, high)
    if m.shape[0] > 1:
        df = m.shape[0] - 1
    half = float(t.ppf(1 - (1 - level) / 2, df)) * var ** 0.5
    low, high = mean - half, mean + half
    if _binary(m):
        low, high = max(0.0, low), min(1.0, high)
    return Interval(mean, float(low), float(high))


@dataclass(frozen=True)
class Comparison:
    """Configuration a against b on the same problems (a - b, in fractions of the problems)."""

    difference: float
    low: float  # the LEVEL interval of the difference
    high: float
    p_value: float  # two-sided, uncorrected: a verdict uses the Holm-adjusted one (``holm``)
    test: str  # the test's name, as the verdict sentence names it
    seeds: int  # paired seeds (1: a single run a side)
    problems: int
    se: float  # standard error of the difference (0 for the exact test)
    df: float  # the t's degrees of freedom (inf for the exact test)
    one_run: bool  # a side is a single training run: an observation about the run, not the algorithm
    gained: int | None = None  # one run of 0/1s: problems only a solves
    lost: int | None = None  # ... and problems only b solves

    def as_dict(self) -> dict:
        """Plain JSON values (an infinite df, the normal limit, is None: strict JSON has no Infinity)."""
        return {"difference": self.difference, "low": self.low, "high": self.high, "p_raw": self.p_value,
                "test": self.test, "seeds": self.seeds, "problems": self.problems, "se": self.se,
                "df": self.df if np.isfinite(self.df) else None, "one_run": self.one_run, "gained": self.gained,
                "lost": self.lost}


CROSSED = "paired t-test, seeds x problems crossed random effects (Satterthwaite df)"
MCNEMAR = "exact McNemar test on the discordant problems"
PAIRED_T = "paired t-test over problems"


def mcnemar_exact(gained: int, lost: int) -> float:
    """Two-sided exact McNemar p: a binomial test of ``gained`` against ``lost`` discordant problems at 1/2
    (1.0 with none discordant)."""
    from scipy.stats import binom

    n = gained + lost
    if n == 0:
        return 1.0
    return float(min(1.0, 2 * binom.cdf(min(gained, lost), n, 0.5)))


def _wilson(successes: int, n: int, z: float) -> tuple[float, float]:
    p = successes / n
    centre, half = p + z * z / (2 * n), z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def paired_proportions_interval(both: int, only_a: int, only_b: int, neither: int,
                                level: float = LEVEL) -> tuple[float, float]:
    """Interval of p_a - p_b for two 0/1 results on the same n problems (Newcombe 1998, "Improved confidence
    intervals for the difference between binomial proportions based on paired data", method 10: each side's
    Wilson interval, combined with the phi correlation of the pairs). Unlike an interval conditional on the
    number of discordant problems, it allows for that number being chance too; with none discordant and all
    solved it is +-z^2 / (n + z^2)."""
    from scipy.stats import norm

    n = both + only_a + only_b + neither
    if n == 0:
        raise ValueError("paired_proportions_interval needs at least one problem")
    z = float(norm.ppf(1 - (1 - level) / 2))
    p_a, p_b = (both + only_a) / n, (both + only_b) / n
    (l_a, u_a), (l_b, u_b) = _wilson(both + only_a, n, z), _wilson(both + only_b, n, z)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / margins ** 0.5 if margins else 0.0
    diff = p_a - p_b
    low = diff - max(0.0, (p_a - l_a) ** 2 - 2 * phi * (p_a - l_a) * (u_b - p_b) + (u_b - p_b) ** 2) ** 0.5
    high = diff + max(0.0, (u_a - p_a) ** 2 - 2 * phi * (u_a - p_a) * (p_b - l_b) + (p_b - l_b) ** 2) ** 0.5
    return max(-1.0, low), min(1.0, high)


def compare(a_rows, b_rows, level: float = LEVEL) -> Comparison:
    """Configuration a against b, evaluated on the same problems (columns aligned). Rows are seeds: with
    several rows a side they must be the same seeds in the same order (seed s pairs with seed s); a single
    row on one side (the warm start, the untrained model) is the fixed reference every seed of the other is
    paired with. Several seeds: the crossed seeds x problems t-test (module docstring). One row a side: the
    exact McNemar test for 0/1 results (its interval: ``paired_proportions_interval``), else a paired t over
    problems."""
    from scipy.stats import t

    a, b = _matrix(a_rows), _matrix(b_rows)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"paired comparison needs the same problems: {a.shape[1]} vs {b.shape[1]} columns")
    if a.shape[0] > 1 and b.shape[0] > 1 and a.shape[0] != b.shape[0]:
        raise ValueError(f"paired comparison needs the same seeds on both sides: {a.shape[0]} vs {b.shape[0]} rows "
                         f"(pair the common seeds, or compare with a single reference row)")
    d = a - b  # broadcasts a single reference row over the other side's seeds
    seeds, problems = d.shape
    one_run = seeds == 1
    if one_run and _binary(a) and _binary(b):
        gained, lost = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        both = int(((a == 1) & (b == 1)).sum())
        low, high = paired_proportions_interval(both, gained, lost, problems - both - gained - lost, level)
        return Comparison(float(d.mean()), low, high, mcnemar_exact(gained, lost), MCNEMAR, 1, problems, 0.0,
                          float("inf"), True, gained, lost)
    mean, low, high, p_value, se, df = (float(x) for x in crossed_test(d, level))
    if se == 0 and mean == 0:
        # no problem differs in any seed (GSPO's cells equal GRPO's when its ratio is 1): the exact bound on the
        # share of problems that could differ, none of P observed, stands in for the interval
        half = _clopper_pearson(0, problems, level)[1]
        se, df, low, high = half / float(t.ppf(1 - (1 - level) / 2, float("inf"))), float("inf"), -half, half
    if _binary(a) and _binary(b):
        low, high = max(-1.0, low), min(1.0, high)
    return Comparison(mean, low, high, p_value, PAIRED_T if one_run else CROSSED, seeds, problems, se, df, one_run)


SEED_PAIRED_T = "paired t-test over seeds (one summary per seed and arm)"


def compare_seed_summaries(a_values, b_values, level: float = LEVEL) -> Comparison:
    """Two arms of a paired experiment, one summary number per seed a side (seed s of a pairs with seed s of b:
    the same warm start, problems and sampling seeds), e.g. a claim's metric averaged over the last quarter of
    its steps. The differences d_s = a_s - b_s get a paired t-test over the S seeds: mean(d), se = sd(d) /
    sqrt(S), S - 1 degrees of freedom, and its t-interval. Needs at least 2 seeds; the Comparison's
    ``problems`` is 1 (a summary is one number per run) and ``one_run`` is False."""
    from scipy.stats import t

    a, b = np.asarray(list(a_values), dtype=float), np.asarray(list(b_values), dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"compare_seed_summaries needs one number per seed a side, paired: {a.shape} vs {b.shape}")
    if a.size < 2:
        raise ValueError(f"compare_seed_summaries needs at least 2 paired seeds, got {a.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("compare_seed_summaries needs finite numbers")
    d = a - b
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se, df = sd / n ** 0.5, float(n - 1)
    if se == 0:  # every seed differs by the same amount: no spread to test against
        p_value = 1.0 if mean == 0 else 0.0
        return Comparison(mean, mean, mean, p_value, SEED_PAIRED_T, n, 1, 0.0, df, False)
    half = float(t.ppf(1 - (1 - level) / 2, df)) * se
    p_value = float(2 * t.sf(abs(mean) / se, df))
    return Comparison(mean, mean - half, mean + half, p_value, SEED_PAIRED_T, n, 1, se, df, False)


def seeds_for_seed_summaries(differences, effect: float, tests: int = 1, max_seeds: int = 50,
                             alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The fewest seed pairs (2..max_seeds) at which ``compare_seed_summaries`` would detect ``effect`` (in the
    summary's units) with ``power`` at alpha / tests, taking the spread of the pilot's paired ``differences``
    (at least 2) as the population's; None when ``max_seeds`` do not reach it."""
    d = np.asarray(list(differences), dtype=float)
    if d.size < 2 or effect <= 0:
        raise ValueError(f"seeds_for_seed_summaries needs at least 2 pilot differences and effect > 0; got "
                         f"{d.size}, {effect}")
    sd = float(d.std(ddof=1))
    return next((n for n in range(2, max_seeds + 1)
                 if detectable_effect(sd / n ** 0.5, n - 1, alpha / max(tests, 1), power) <= effect), None)


def holm(p_values) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the i-th smallest of m is multiplied by
    m - i + 1, made non-decreasing along that order, and capped at 1. Rejecting where the adjusted p is below
    alpha holds the family-wise error rate at alpha over the m tests."""
    ps = np.asarray(list(p_values), dtype=float)
    if ps.size == 0:
        return []
    if np.isnan(ps).any() or (ps < 0).any() or (ps > 1).any():
        raise ValueError(f"holm needs p-values in [0, 1], got {ps.tolist()}")
    order = np.argsort(ps, kind="stable")
    m = ps.size
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * ps[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return adjusted.tolist()


def detectable_effect(se: float, df: float = float("inf"), alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference a two-sided level-``alpha`` t-test with this standard error and degrees of
    freedom detects with probability ``power``: (t_{1 - alpha/2, df} + t_{power, df}) * se. With se = 0.02 and
    df = inf, (1.960 + 0.842) * 0.02 = 0.056."""
    from scipy.stats import t

    if se < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"detectable_effect needs se >= 0, 0 < alpha < 1, 0 < power < 1; got {se}, {alpha}, {power}")
    return float((t.ppf(1 - alpha / 2, df) + t.ppf(power, df)) * se)


def detectable_after_holm(comparison: Comparison, tests: int, alpha: float = ALPHA) -> float:
    """The smallest difference ``comparison`` would detect with 80% power at alpha / tests, the level of Holm's
    first step over ``tests`` tests (so a conservative figure: later steps test at larger levels)."""
    return detectable_effect(comparison.se, comparison.df, alpha / max(tests, 1))


def detectable_at(differences, seeds: int, tests: int = 1, problems: int | None = None, alpha: float = ALPHA,
                  power: float = POWER) -> float:
    """The smallest detectable effect (``detectable_effect`` at alpha / tests) that ``compare`` would report with
    ``seeds`` seeds and ``problems`` held-out problems (default: the pilot's), projected from a pilot table of
    paired differences (seeds x problems, at least 2 x 2): the crossed variance components are estimated from
    its mean squares (sigma_e^2 = MS_residual, sigma_seed^2 = (MS_seed - MS_residual) / P, sigma_problem^2 =
    (MS_problem - MS_residual) / S, each at least 0), and the mean squares expected at the new sizes go back
    into the conservative estimate and Satterthwaite's df. At the pilot's own sizes (no component clipped at 0)
    it is the pilot comparison's own figure. More seeds cannot shrink the problem term sigma_problem^2 / P: that
    floor takes more problems."""
    from scipy.stats import t

    d = _matrix(differences)
    s, p = d.shape
    n_problems = p if problems is None else problems
    if s < 2 or p < 2 or seeds < 2 or n_problems < 2:
        raise ValueError(f"detectable_at needs a pilot of at least 2 seeds x 2 problems and seeds, problems >= 2; "
                         f"got {s} x {p}, seeds={seeds}, problems={n_problems}")
    grand, rows, cols = d.mean(), d.mean(axis=1), d.mean(axis=0)
    ms_seed = p * ((rows - grand) ** 2).sum() / (s - 1)
    ms_problem = s * ((cols - grand) ** 2).sum() / (p - 1)
    ms_error = ((d - rows[:, None] - cols[None, :] + grand) ** 2).sum() / ((s - 1) * (p - 1))
    var_seed, var_problem = max(0.0, (ms_seed - ms_error) / p), max(0.0, (ms_problem - ms_error) / s)
    expected_seed, expected_problem = ms_error + n_problems * var_seed, ms_error + seeds * var_problem
    total = expected_seed + expected_problem
    if total == 0:  # the pilot's differences are all equal: nothing varies to project
        return 0.0
    df = total ** 2 / (expected_seed ** 2 / (seeds - 1) + expected_problem ** 2 / (n_problems - 1))
    se = (total / (seeds * n_problems)) ** 0.5
    return float((t.ppf(1 - alpha / tests / 2, df) + t.ppf(power, df)) * se)


def seeds_for_detectable(differences, effect: float, tests: int = 1, problems: int | None = None,
                         max_seeds: int = 50, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The fewest seeds (2..max_seeds) at which ``detectable_at`` is at most ``effect`` (a fraction: 0.10 for
    10 points), or None when even ``max_seeds`` do not reach it (the problem term's floor: see
    ``detectable_at``)."""
    return next((n for n in range(2, max_seeds + 1)
                 if detectable_at(differences, n, tests, problems, alpha, power) <= effect), None)


def relation(comparison: Comparison, p_adjusted: float | None, alpha: float = ALPHA) -> str:
    """"better" / "worse" only when the Holm-adjusted test rejects at ``alpha``; "one run" for a single
    training run a side (an observation, never a verdict on the algorithm); else "no difference detected"."""
    if comparison.one_run:
        return "one run"
    if p_adjusted is not None and p_adjusted < alpha:
        return "better" if comparison.difference > 0 else "worse"
    return "no difference detected"


ONE_SEED = "one seed: an observation about this run, not the algorithm"


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def conditional_clause(warm_starts: int) -> str:
    """What a comparison whose seeds share ``warm_starts`` warm starts speaks about. The crossed test counts
    seeds as independent draws; seeds that share a warm start are not, and the warm-start level has only
    ``warm_starts - 1`` degrees of freedom, so the test's size holds for these warm starts only (in a simulation
    matched to the core grid, a warm-start population null was rejected 28-30% of the time; issue 60)."""
    plural = "s" if warm_starts != 1 else ""
    return (f"conditional on these {warm_starts} warm start{plural} (each shared by several seeds; the test does "
            f"not count the variation between warm starts, so it says nothing about a new one)")


def verdict_sentence(comparison: Comparison, against: str, p_adjusted: float | None, tests: int,
                     alpha: float = ALPHA, warm_starts: int | None = None,
                     simultaneous: tuple[float, float, int] | None = None) -> str:
    """The one wording of a comparison, for the page, the report and the docs. "better than" / "worse than"
    only when the Holm-adjusted p (over ``tests`` tests) is below ``alpha``; otherwise "no difference detected"
    with what the interval could not rule out and the effect the comparison could have detected (80% power at
    alpha / tests, Holm's strictest step); a single run a side is "one seed: ..." with no p and no verdict. A p is
    never printed without its correction.

    ``warm_starts``: the number of warm starts the paired seeds came from, when fewer than the seeds (seeds
    share them): the sentence then ends with ``conditional_clause``. ``simultaneous``: (low, high, m), the
    Bonferroni interval over the m comparisons of its kind; what the sentence says cannot be ruled out names
    both intervals, the one read alone and the one read together with the other m - 1."""
    c = comparison
    condition = f"; {conditional_clause(warm_starts)}" if warm_starts is not None else ""
    size = f"{c.seeds} seed{'s' if c.seeds != 1 else ''} x {c.problems} problems"
    if c.one_run:
        differ = (f"; {c.gained + c.lost} problems differ: {c.gained} solved only by this run, {c.lost} only by "
                  f"{against}" if c.gained is not None else "")
        return (f"{ONE_SEED}: {_pts(c.difference)} points against {against} on the same {c.problems} problems "
                f"({int(100 * LEVEL)}% interval {_pts(c.low)} to {_pts(c.high)}{differ})")
    rel = relation(c, p_adjusted, alpha)
    def shown(p: float) -> str:
        return "< 0.001" if p < 0.001 else f"= {p:.3f}"

    stats = (f"{_pts(c.difference)} points, {int(100 * LEVEL)}% interval {_pts(c.low)} to {_pts(c.high)}; "
             f"{c.test}, Holm-adjusted p {shown(p_adjusted)} over {tests} test{'s' if tests != 1 else ''} "
             f"(uncorrected p {shown(c.p_value)}); {size}")
    if rel in ("better", "worse"):
        return f"{rel} than {against} ({stats}{condition})"
    bound = 100 * max(abs(c.low), abs(c.high))
    detectable = 100 * detectable_after_holm(c, tests, alpha)
    detectable_text = (f"detectable with {int(100 * POWER)}% power: {detectable:.1f} points" if detectable < 100 else
                       f"no effect within +-100 points is detectable with {int(100 * POWER)}% power")
    unruled = f"could not rule out +-{bound:.1f} points"
    if simultaneous is not None:
        low, high, m = simultaneous
        unruled = (f"read alone, its interval could not rule out +-{bound:.1f} points; read with the other {m - 1} "
                   f"of its kind (Bonferroni over {m}), {_pts(low)} to {_pts(high)}")
    return f"no difference detected from {against}; {unruled}; {detectable_text} ({stats}{condition})"
