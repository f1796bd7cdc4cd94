"""Statistics for comparing runs: the unbiased pass@k estimator and bootstrap intervals over problems and
seeds. Pure functions of numbers (numpy), so the comparison runner, its report and the explorer page all
compute the same figures.

pass@k (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1): with n samples of
a problem of which c are correct, the probability that at least one of k samples drawn without
replacement is correct is

    pass@k = 1 - C(n - c, k) / C(n, k)

computed as a running product (no large binomials), then averaged over problems.

Success of a configuration is a matrix M (seeds x problems) of 0/1 held-out results on the *same*
problems for every seed and every configuration. Its interval is a two-level bootstrap: each draw
resamples seeds (with replacement) and, independently, problems (with replacement), and takes the mean of
the resampled sub-matrix; the 95% interval is the 2.5th and 97.5th percentiles of the draws. Resampling
problems captures how the figure would move on another held-out set, resampling seeds how it would move
on another training run. A comparison of two configurations resamples the problems *jointly* (they were
evaluated on the same problems: a paired design) and the seeds of each side independently.
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


@dataclass(frozen=True)
class Paired:
    difference: Interval  # mean(a) - mean(b) and its interval
    p_value: float  # two-sided bootstrap p: twice the smaller tail mass at 0
    verdict: str  # "better", "worse" or "no significant difference" (a is compared with b)


def paired_difference(a_rows, b_rows, draws: int = 2000, level: float = 0.95, seed: int = 0) -> Paired:
    """Compare configuration a with b evaluated on the same problems (columns aligned)."""
    a, b = _matrix(a_rows), _matrix(b_rows)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"paired comparison needs the same problems: {a.shape[1]} vs {b.shape[1]} columns")
    rng = np.random.default_rng(seed)
    p = a.shape[1]
    diffs = np.empty(draws)
    for d in range(draws):
        cols = rng.integers(0, p, size=p)
        sa = rng.integers(0, a.shape[0], size=a.shape[0])
        sb = rng.integers(0, b.shape[0], size=b.shape[0])
        diffs[d] = a[sa][:, cols].mean() - b[sb][:, cols].mean()
    lo, hi = np.quantile(diffs, [(1 - level) / 2, 1 - (1 - level) / 2])
    p_value = float(min(1.0, 2 * min((diffs <= 0).mean(), (diffs >= 0).mean())))
    verdict = "better" if lo > 0 else "worse" if hi < 0 else "no significant difference"
    return Paired(Interval(float(a.mean() - b.mean()), float(lo), float(hi)), p_value, verdict)
