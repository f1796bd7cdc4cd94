"""Statistics over a grid's records: pure functions from result dicts to rows (no files, no models).

``leaderboard``: per environment, each implementation against the baseline algorithm; ``progression``:
untrained -> SFT -> SFT + RL, each stage paired with the one it starts from; ``passk_comparison``: each model
of a pass@k record against the one before it. Verdicts are worded here (``ONE_SEED`` flags a one-seed side).
"""
from __future__ import annotations

from reference_impls.stats import bootstrap_interval, paired_difference


def leaderboard(cells: list[dict], baseline: str = "grpo") -> dict[str, list[dict]]:
    """Per environment, one row per implementation: held-out success over seeds and problems with its
    95% interval, the paired difference to the baseline algorithm's implementation, a verdict, and cost."""
    by_env: dict[str, dict[str, list[dict]]] = {}
    for c in cells:
        by_env.setdefault(c["env"], {}).setdefault(c["implementation"], []).append(c)
    board = {}
    for env, impls in by_env.items():
        base = next((rs for impl, rs in impls.items() if _is_plain(impl, baseline)), None)
        rows = []
        for impl, rs in impls.items():
            matrix = [r["heldout_by_problem"] for r in sorted(rs, key=lambda r: r["seed"])]
            iv = bootstrap_interval(matrix)
            row = {"implementation": impl, "algo": rs[0]["algo"], "env": env, "seeds": len(rs),
                   "heldout": iv.mean, "low": iv.low, "high": iv.high,
                   "train_s": sum(r["train_s"] for r in rs) / len(rs), "tokens": sum(r["tokens"] for r in rs) / len(rs),
                   "peak_rss_mb": max(r["peak_rss_mb"] for r in rs), "vs_baseline": None, "verdict": ""}
            if base is not None and rs is not base:
                paired = paired_difference(matrix, [r["heldout_by_problem"] for r in base])
                row["vs_baseline"] = paired.difference.as_dict()
                row["verdict"] = _verdict_text(paired, base[0]["implementation"], one_seed=min(len(rs), len(base)) < 2)
            elif rs is base:
                row["verdict"] = "baseline"
            rows.append(row)
        board[env] = sorted(rows, key=lambda r: -r["heldout"])
    return board


ONE_SEED = "one seed: the interval leaves out seed-to-seed variation"


def _verdict_text(paired, against: str, one_seed: bool = False) -> str:
    """A paired comparison in words, e.g. "better than calculator-grpo (p < 0.01)" (rather than a rounded
    "p = 0.00"). ``one_seed``: a side was trained with a single seed, so the bootstrap could resample only the
    problems; the verdict says so, because one algorithm's seeds can differ by more than the interval's width
    (the core grid's search-grpo: 0.14 and 0.53)."""
    relation = {"better": "better than", "worse": "worse than"}.get(paired.verdict, "no significant difference from")
    p = "p < 0.01" if paired.p_value < 0.005 else f"p = {paired.p_value:.2f}"
    return f"{relation} {against} ({p}{'; ' + ONE_SEED if one_seed else ''})"


def _is_plain(impl_id: str, algo: str) -> bool:
    """Whether the implementation is ``algo`` itself (no variant switches), e.g. calculator-grpo for grpo."""
    from reference_impls.registry import by_id

    impl = by_id().get(impl_id)
    return impl is not None and impl.algo == algo and not impl.algo_options


def progression(cells: list[dict], base: dict[str, dict], warm: dict[str, dict]) -> dict[str, list[dict]]:
    """Per environment, what each stage of training adds on the same held-out problems: the untrained
    model, the warm start (SFT only) and each implementation's RL cells. Each stage is compared, paired on
    the problems, with the stage it starts from (SFT with the untrained model, RL with the warm start), so
    "did RL help beyond SFT?" gets an interval and a verdict. ``base`` / ``warm``: env -> held-out record."""
    envs = list(dict.fromkeys([c["env"] for c in cells] + [e for e in (*base, *warm)]))
    out = {}
    for env in envs:
        # (label, implementation or None, held-out matrix: one row per seed, the stage it starts from)
        stages = []
        if "heldout" in base.get(env, {}):
            stages.append(("untrained", None, [base[env]["heldout_by_problem"]], None))
        if "heldout" in warm.get(env, {}):
            stages.append(("SFT (warm start)", None, [warm[env]["heldout_by_problem"]], "untrained"))
        by_impl: dict[str, list[dict]] = {}
        for c in cells:
            if c["env"] == env:
                by_impl.setdefault(c["implementation"], []).append(c)
        for impl, rs in by_impl.items():
            stages.append((f"SFT + RL ({impl})", impl,
                           [r["heldout_by_problem"] for r in sorted(rs, key=lambda r: r["seed"])], "SFT (warm start)"))
        rows = []
        for label, impl, matrix, start in stages:
            iv = bootstrap_interval(matrix)
            row = {"stage": label, "implementation": impl, "seeds": len(matrix), "heldout": iv.mean,
                   "low": iv.low, "high": iv.high, "vs": None, "vs_stage": None, "verdict": ""}
            before = next((m for lab, _, m, _ in stages if lab == start), None)
            if before is not None:
                paired = paired_difference(matrix, before)
                # an RL stage is one run per seed; the untrained model and the warm start are single references
                row.update(vs=paired.difference.as_dict(), vs_stage=start,
                           verdict=_verdict_text(paired, start, one_seed=impl is not None and len(matrix) < 2))
            rows.append(row)
        out[env] = rows
    return out


def passk_comparison(passk: dict) -> list[dict]:
    """Each model of a pass@k record against the one before it (warm start vs base, RL vs warm start) at k = 1
    and k = samples: per-problem pass@k, paired over the same problems (bootstrap), so "did RL sharpen or
    add?" gets intervals. Empty for records without per-problem counts."""
    from reference_impls.stats import pass_at_k

    n, curves = passk.get("samples"), passk.get("curves", {})
    if not n or not curves or any("correct_counts" not in c for c in curves.values()):
        return []
    labels = list(curves)
    rows = []
    for before, after in zip(labels, labels[1:]):
        for k in sorted({1, n}):
            a = [[pass_at_k(n, c, k) for c in curves[after]["correct_counts"]]]
            b = [[pass_at_k(n, c, k) for c in curves[before]["correct_counts"]]]
            paired = paired_difference(a, b)
            rows.append({"model": after, "against": before, "k": k, "value": float(sum(a[0]) / len(a[0])),
                         "before": float(sum(b[0]) / len(b[0])), "difference": paired.difference.as_dict(),
                         "p": paired.p_value, "verdict": paired.verdict})
    return rows
