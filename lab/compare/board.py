"""Statistics over a grid's records: pure functions from result dicts to rows (no files, no models).

``grid_tests``: every comparison a grid draws (per environment, each implementation against the baseline
algorithm's implementation and against the warm start; the warm start against the untrained model), tested
with ``reference_impls.stats.compare`` (seed s paired with seed s; the untrained model is one fixed row, and so is
the warm start of a grid with one; with several ``warm_seeds`` each seed is paired with its own warm start's row,
the one its record names in ``warm_start``) and
corrected with Holm over the grid's whole family of tests; the verdicts are worded by
``stats.verdict_sentence`` only. ``leaderboard``: per environment, each implementation's held-out success with
its interval, its comparisons and results per problem family; ``progression``: untrained -> SFT -> SFT + RL,
each stage paired with the one it starts from; ``passk_comparison``: each model of a pass@k record against the
one before it (every seed of the implementation the grid named in advance against the warm start).
"""
from __future__ import annotations

from reference_impls.stats import (ALPHA, ONE_SEED, Comparison, compare, config_interval, detectable_after_holm,
                                   holm, mcnemar_exact, relation, verdict_sentence)

from .folder import split_warm_name

__all__ = ["ONE_SEED", "PASSK_LEGACY", "WARM", "UNTRAINED", "grid_tests", "leaderboard", "progression",
           "passk_comparison", "passk_groups", "family_results"]

WARM = "SFT (warm start)"  # the label of the warm start as a stage and as what a cell is compared with
UNTRAINED = "untrained"


def _by_env_impl(cells: list[dict]) -> dict[str, dict[str, dict[int, list[int]]]]:
    """env -> implementation -> seed -> held-out 0/1s (cells without per-problem results are left out: a
    record of an older format has its mean only, which nothing can be paired on)."""
    out: dict[str, dict[str, dict[int, list[int]]]] = {}
    for c in cells:
        if "heldout_by_problem" in c:
            out.setdefault(c["env"], {}).setdefault(c["implementation"], {})[c["seed"]] = c["heldout_by_problem"]
    return out


def _warm_names(cells: list[dict]) -> dict[tuple[str, str, int], str]:
    """(env, implementation, seed) -> the name of the warm start the cell started from (its record's
    ``warm_start``; a record without one, every record before ``warm_seeds``, started from ``warm/<env>``)."""
    return {(c["env"], c["implementation"], c["seed"]): c.get("warm_start") or c["env"] for c in cells}


def _warm_rows(warm: dict[str, dict] | None) -> dict[str, dict[str, list[int]]]:
    """env -> warm-start name -> its held-out 0/1s (names as ``folder.warm_name`` writes them: the grid's first warm
    start ``<env>``, then ``<env>@w<seed>`` by seed); records without per-problem results are left out."""
    out: dict[str, dict[str, list[int]]] = {}
    for name in sorted(warm or {}, key=lambda n: (split_warm_name(n)[1] is not None, split_warm_name(n)[1] or 0)):
        row = _row(warm[name])
        if row is not None:
            out.setdefault(split_warm_name(name)[0], {})[name] = row
    return out


def _against_warm(seeds: dict[int, list[int]], own: dict[int, str], rows: dict[str, list[int]]
                  ) -> tuple[list[int], list[list[int]]] | None:
    """(the seeds, the warm rows they pair with) for an implementation's RL rows against the warm start: each seed
    with the row of its own warm start (``own``: seed -> name), one fixed row when they all share one (as ``compare``
    takes a reference); seeds whose warm start has no row of their width are left out; None when none is left."""
    width = len(next(iter(seeds.values())))
    usable = [s for s in sorted(seeds) if len(rows.get(own[s]) or ()) == width]
    if not usable:
        return None
    names = list(dict.fromkeys(own[s] for s in usable))
    return usable, ([rows[names[0]]] if len(names) == 1 else [rows[own[s]] for s in usable])


def _is_plain(impl_id: str, algo: str) -> bool:
    """Whether the implementation is ``algo`` itself (no variant switches), e.g. calculator-grpo for grpo."""
    from reference_impls.registry import by_id

    impl = by_id().get(impl_id)
    return impl is not None and impl.algo == algo and not impl.algo_options


def _baseline_of(impls, baseline: str) -> str | None:
    return next((impl for impl in impls if _is_plain(impl, baseline)), None)


def _row(record: dict) -> list[int] | None:
    return record.get("heldout_by_problem") if record else None


def _shared_warm_starts(names: list[str]) -> int | None:
    """The number of warm starts behind a comparison's paired seeds (``names``: each seed's), when the seeds share
    them (fewer warm starts than seeds, more than one seed): the comparison is then conditional on them
    (``stats.conditional_clause``); None when every seed has its own (the warm-start variance is in the seeds')."""
    distinct = len(set(names))
    return distinct if len(names) > 1 and distinct < len(names) else None


def grid_tests(cells: list[dict], baseline: str = "grpo", warm: dict[str, dict] | None = None,
               base: dict[str, dict] | None = None) -> dict[tuple[str, str, str], dict]:
    """Every comparison of the grid, keyed (env, subject, against): the statistics of ``compare`` (``as_dict``),
    ``p_holm`` (Holm over all the grid's tests with several seeds; None for a single run a side, which gives no
    verdict), ``tests`` (the family's size), ``relation``, ``detectable`` (80% power at Holm's strictest level)
    and ``verdict`` (the sentence). Subjects: implementation ids and ``WARM``; against: the baseline's
    implementation, ``WARM`` or ``UNTRAINED``.

    Also, per comparison: ``warm_starts`` (how many warm starts its seeds share, or None when each seed has its
    own: a comparison over shared warm starts is conditional on them, and its verdict says so);
    ``simultaneous`` (the Bonferroni interval over the environment's comparisons of the same kind: every
    implementation against the baseline, or every one against the warm start; None where there is one); and, for
    an implementation against the warm start, ``by_warm_start``: its effect from each warm start on its own (the
    seeds that started from it against its row), Holm over all of the environment's per-warm-start tests.
    An effect that reverses between warm starts is averaged away in the pooled test; this is where it shows."""
    base = base or {}
    warm_rows, own = _warm_rows(warm), _warm_names(cells)
    found: dict[tuple[str, str, str], Comparison] = {}
    rows_of: dict[tuple[str, str, str], tuple[list, list]] = {}
    shared: dict[tuple[str, str, str], int | None] = {}
    per_warm: dict[tuple[str, str], dict[str, tuple[list, list]]] = {}  # (env, impl) -> warm name -> (rows, row)
    for env, impls in _by_env_impl(cells).items():
        reference = _baseline_of(impls, baseline)
        for impl, seeds in impls.items():
            if reference is not None and impl != reference:
                common = sorted(set(seeds) & set(impls[reference]))
                if common:
                    key = (env, impl, reference)
                    rows_of[key] = ([seeds[s] for s in common], [impls[reference][s] for s in common])
                    found[key] = compare(*rows_of[key])
                    shared[key] = _shared_warm_starts([own[(env, impl, s)] for s in common])
            names = {s: own[(env, impl, s)] for s in seeds}
            paired = _against_warm(seeds, names, warm_rows.get(env, {}))
            if paired is not None:
                key = (env, impl, WARM)
                rows_of[key] = ([seeds[s] for s in paired[0]], paired[1])
                found[key] = compare(*rows_of[key])
                shared[key] = _shared_warm_starts([names[s] for s in paired[0]])
                groups: dict[str, list[int]] = {}
                for s in paired[0]:
                    groups.setdefault(names[s], []).append(s)
                if len(groups) > 1:
                    per_warm[(env, impl)] = {name: ([seeds[s] for s in ss], [warm_rows[env][name]])
                                             for name, ss in groups.items()}
    for env, named in warm_rows.items():  # every warm start of the environment (a seed each) against the one base row
        base_row = _row(base.get(env, {}))
        rows = [r for r in named.values() if base_row is not None and len(r) == len(base_row)]
        if rows:
            found[(env, WARM, UNTRAINED)] = compare(rows, [base_row])
    family = [key for key, c in found.items() if not c.one_run]
    adjusted = dict(zip(family, holm([found[k].p_value for k in family])))
    kinds: dict[tuple[str, bool], list] = {}  # (env, against the warm start?) -> the keys of that kind
    for key in rows_of:
        if not found[key].one_run:
            kinds.setdefault((key[0], key[2] == WARM), []).append(key)
    simultaneous = {}
    for keys in kinds.values():
        if len(keys) > 1:
            level = 1 - ALPHA / len(keys)
            for key in keys:
                c = compare(*rows_of[key], level=level)
                simultaneous[key] = {"low": c.low, "high": c.high, "level": level, "over": len(keys)}
    by_warm: dict[tuple[str, str], list[dict]] = {}
    for env in {env for env, _ in per_warm}:  # Holm over the environment's per-warm-start tests, all warm starts
        tested = [(impl, name, compare(*groups[name])) for (e, impl), groups in per_warm.items() if e == env
                  for name in warm_rows.get(env, {}) if name in groups]
        tested = [(impl, name, c) for impl, name, c in tested if not c.one_run]
        for (impl, name, c), p in zip(tested, holm([c.p_value for _, _, c in tested])):
            seed = (warm or {}).get(name, {}).get("seed")
            by_warm.setdefault((env, impl), []).append(
                {"warm_start": name, "label": f"warm seed {seed}" if isinstance(seed, int) else f"warm/{name}",
                 "heldout_warm": sum(warm_rows[env][name]) / len(warm_rows[env][name]),
                 **c.as_dict(), "p_holm": p, "tests": len(tested), "relation": relation(c, p)})
    out = {}
    for key, c in found.items():
        p_holm = adjusted.get(key)
        sim = simultaneous.get(key)
        out[key] = {"env": key[0], "subject": key[1], "against": key[2], **c.as_dict(), "p_holm": p_holm,
                    "tests": len(family), "alpha": ALPHA, "relation": relation(c, p_holm),
                    "detectable": None if c.one_run else detectable_after_holm(c, len(family)),
                    "warm_starts": shared.get(key), "simultaneous": sim,
                    "verdict": verdict_sentence(c, key[2], p_holm, len(family), warm_starts=shared.get(key),
                                                simultaneous=(sim["low"], sim["high"], sim["over"]) if sim else None)}
        if key[2] == WARM and (key[0], key[1]) in by_warm:
            out[key]["by_warm_start"] = by_warm[(key[0], key[1])]
    return out


def _difference(test: dict | None) -> dict | None:
    """A test's difference in the shape the page reads (mean, low, high)."""
    return None if test is None else {"mean": test["difference"], "low": test["low"], "high": test["high"]}


def family_results(matrix: list[list[int]], families: list[str] | None,
                   against: list[list[int]] | None = None) -> dict[str, dict]:
    """Held-out success per problem family (mean over seeds and the family's problems, with its interval over
    seeds x problems) and, with ``against`` (rows paired as in ``compare``), the paired difference with its
    interval. Descriptive: no family-level verdict is drawn (they are not in the Holm family, and a family has
    about 11 problems)."""
    if not families or len(families) != len(matrix[0]):
        return {}
    out = {}
    for name in dict.fromkeys(families):
        cols = [j for j, f in enumerate(families) if f == name]
        rows = [[r[j] for j in cols] for r in matrix]
        entry = {"problems": len(cols), **_interval(rows)}
        if against is not None and len(cols) > 1:
            c = compare(rows, [[r[j] for j in cols] for r in against])
            entry["vs"] = {"mean": c.difference, "low": c.low, "high": c.high}
        out[name] = entry
    return out


def _interval(rows, families=None) -> dict:
    iv = config_interval(rows, families=families) if len(rows[0]) > 1 else None
    mean = sum(map(sum, rows)) / (len(rows) * len(rows[0]))
    return {"heldout": mean, "low": iv.low if iv else mean, "high": iv.high if iv else mean}


def _families_for(families: dict[str, list[str]] | None, env: str, width: int) -> list[str] | None:
    """The env's problem families when they fit its ``width`` problems and every family has at least two (a
    variance within families needs them; a tiny grid's 4 problems in 4 families are read pooled)."""
    labels = (families or {}).get(env)
    if not labels or len(labels) != width:
        return None
    return labels if min(labels.count(name) for name in set(labels)) >= 2 else None


def leaderboard(cells: list[dict], baseline: str = "grpo", warm: dict[str, dict] | None = None,
                base: dict[str, dict] | None = None, families: dict[str, list[str]] | None = None,
                tests: dict | None = None) -> dict[str, list[dict]]:
    """Per environment, one row per implementation: held-out success over seeds and problems with its 95%
    interval (``config_interval``; within families where ``families`` names them), the comparison with the
    baseline algorithm's implementation (``vs_baseline``, ``verdict``) and with the warm start (``vs_warm``,
    ``verdict_warm``), each test's statistics (``tests``), results per problem family, and cost. ``tests``:
    ``grid_tests`` of the same records, when the caller has it already."""
    tests = grid_tests(cells, baseline, warm, base) if tests is None else tests
    matrices, warm_rows, own = _by_env_impl(cells), _warm_rows(warm), _warm_names(cells)
    by_env: dict[str, dict[str, list[dict]]] = {}
    for c in cells:
        if "heldout_by_problem" in c:  # see _by_env_impl
            by_env.setdefault(c["env"], {}).setdefault(c["implementation"], []).append(c)
    board = {}
    for env, impls in by_env.items():
        reference = _baseline_of(impls, baseline)
        rows = []
        for impl, rs in impls.items():
            seeds = matrices[env][impl]
            matrix = [seeds[s] for s in sorted(seeds)]
            labels = _families_for(families, env, len(matrix[0]))
            vs_base, vs_warm = tests.get((env, impl, reference)), tests.get((env, impl, WARM))
            row = {"implementation": impl, "algo": rs[0]["algo"], "env": env, "seeds": len(rs),
                   **_interval(matrix, labels),
                   "train_s": sum(r.get("train_s", 0.0) for r in rs) / len(rs),
                   "tokens": sum(r.get("tokens", 0) for r in rs) / len(rs),
                   "peak_rss_mb": max(r.get("peak_rss_mb", 0.0) for r in rs),
                   "vs_baseline": _difference(vs_base), "verdict": "",
                   "vs_warm": _difference(vs_warm), "verdict_warm": vs_warm["verdict"] if vs_warm else "",
                   "tests": {k: t for k, t in (("baseline", vs_base), ("warm", vs_warm)) if t is not None},
                   "by_family": {}}
            if vs_base is not None:
                row["verdict"] = vs_base["verdict"]
            elif impl == reference:
                row["verdict"] = "baseline"
            if labels:
                paired = _against_warm(seeds, {s: own[(env, impl, s)] for s in seeds}, warm_rows.get(env, {}))
                row["by_family"] = family_results(matrix, labels, paired[1] if paired and paired[0] == sorted(seeds)
                                                  else None)
                ref_seeds = matrices[env][reference] if reference is not None and impl != reference else {}
                common = sorted(set(seeds) & set(ref_seeds))
                if common:
                    paired = family_results([seeds[s] for s in common], labels, [ref_seeds[s] for s in common])
                    for name, entry in paired.items():
                        row["by_family"][name]["vs_baseline"] = entry.get("vs")
            rows.append(row)
        board[env] = sorted(rows, key=lambda r: -r["heldout"])
    return board


def progression(cells: list[dict], base: dict[str, dict], warm: dict[str, dict], baseline: str = "grpo",
                families: dict[str, list[str]] | None = None, tests: dict | None = None) -> dict[str, list[dict]]:
    """Per environment, what each stage of training adds on the same held-out problems: the untrained
    model, the warm start (SFT only) and each implementation's RL cells. Each stage is compared, paired on
    the problems, with the stage it starts from (SFT with the untrained model, RL with the warm start), with the
    same tests (and the same Holm family) as ``leaderboard``. ``base`` / ``warm``: env -> held-out record."""
    tests = grid_tests(cells, baseline, warm, base) if tests is None else tests
    matrices, warm_rows = _by_env_impl(cells), _warm_rows(warm)
    envs = list(dict.fromkeys([c["env"] for c in cells] + [*base] + [split_warm_name(name)[0] for name in warm]))
    out = {}
    for env in envs:
        stages: list[tuple[str, str | None, list[list[int]], dict | None]] = []
        if _row(base.get(env, {})) is not None:
            stages.append((UNTRAINED, None, [base[env]["heldout_by_problem"]], None))
        if warm_rows.get(env):  # one row per warm start (per warm seed)
            stages.append((WARM, None, list(warm_rows[env].values()), tests.get((env, WARM, UNTRAINED))))
        for impl, seeds in matrices.get(env, {}).items():
            stages.append((f"SFT + RL ({impl})", impl, [seeds[s] for s in sorted(seeds)], tests.get((env, impl, WARM))))
        rows = []
        for label, impl, matrix, test in stages:
            labels = _families_for(families, env, len(matrix[0]))
            rows.append({"stage": label, "implementation": impl, "seeds": len(matrix), **_interval(matrix, labels),
                         "vs": _difference(test), "vs_stage": test["against"] if test else None,
                         "verdict": test["verdict"] if test else "", "test": test})
        out[env] = rows
    return out


#: what a pass@k record made before the method of issue 41 says of itself (it has no ``method`` field)
PASSK_LEGACY = ("chosen on test problems under the old method (the RL cell with the highest held-out score, one "
                "seed; its label may name a cell that no longer scores highest); see issue 42")


def passk_groups(passk: dict) -> list[tuple[str, list[str]]]:
    """The models a pass@k record compares, in order, each with the curve labels it pools (one per seed): a
    record of the declared method (``method`` present) has the untrained model, the warm start and the named
    implementation's complete cells (seed rows); an older record has one curve per model. A record of a grid with
    several warm starts pools their curves as one model, "warm start" (its RL cells name theirs in ``warm_curve``)."""
    curves = passk.get("curves", {})
    if passk.get("method") is None:
        return [(label, [label]) for label in curves]
    cells = passk.get("cells", {})
    rl = [label for label in curves if cells.get(label, {}).get("in_verdicts")]
    warm = [label for label in curves if label in {c.get("warm_curve") for c in cells.values()}]
    groups = []
    for label in curves:
        if label in warm:
            if label == warm[0]:
                groups.append(("warm start", warm))
        elif label not in cells:
            groups.append((label, [label]))
    if rl:
        groups.append((f"RL ({passk['implementation']}, {len(rl)} seed{'s' if len(rl) != 1 else ''})", rl))
    return groups


def passk_comparison(passk: dict) -> list[dict]:
    """Each model of a pass@k record against the one before it (warm start vs the untrained model, RL vs warm
    start) at each tested k: per-problem pass@k paired over the same problems with ``stats.compare`` (the RL
    seeds against the fixed warm-start row, or each against its own warm start's row where the record has several
    (``warm_curve``): the crossed seeds x problems test; one checkpoint a side: a paired t
    over problems, or McNemar where the values are 0/1). Holm over the record's tests; ``verdict`` is "better" /
    "worse" only where the Holm-adjusted p is below 0.05, and ``sentence`` is ``stats.verdict_sentence``'s.

    A record of the declared method (``method``: the grid named the implementation in advance, every seed
    sampled) tests at its ``k``; one checkpoint a side is an observation ("one run", out of the Holm family, as
    in ``grid_tests``). An older record (no ``method``: the best RL cell was picked on the test problems) is
    read as it always was (k = 1 and k = samples, Holm over its 4 tests) and every row carries ``method`` =
    ``PASSK_LEGACY``, which the reading prints first. Empty for records without per-problem counts.

    Each row also counts the seeds whose own mean moved up and down (``seeds_up``, ``seeds_down``) with the exact
    two-sided sign test over them (``sign_p``): a seed-level reading that ignores the problem draw, so it is shown
    beside the crossed test, never in its place."""
    from reference_impls.stats import pass_at_k

    n, curves = passk.get("samples"), passk.get("curves", {})
    if not n or not curves or any("correct_counts" not in c for c in curves.values()):
        return []
    legacy = passk.get("method") is None
    ks = sorted({1, n}) if legacy else list(passk.get("k") or sorted({1, n}))
    groups = passk_groups(passk)
    found = []
    cells = passk.get("cells", {})
    for (before, b_labels), (after, a_labels) in zip(groups, groups[1:]):
        own = [cells.get(label, {}).get("warm_curve") for label in a_labels]
        shared = None
        if len(b_labels) > 1 and all(o in b_labels for o in own):  # RL seeds, each against its own warm start
            b_labels = own if len(set(own)) > 1 else own[:1]
            shared = _shared_warm_starts(own)
        for k in ks:
            a = [[pass_at_k(n, c, k) for c in curves[label]["correct_counts"]] for label in a_labels]
            b = [[pass_at_k(n, c, k) for c in curves[label]["correct_counts"]] for label in b_labels]
            found.append((after, before, k, a, b, compare(a, b), shared))
    family = [i for i, row in enumerate(found) if legacy or not row[5].one_run]
    adjusted = dict(zip(family, holm([found[i][5].p_value for i in family])))
    rows = []
    for i, (after, before, k, a, b, c, shared) in enumerate(found):
        p_holm = adjusted.get(i)
        if legacy:  # one checkpoint a side, read with Holm's p as it always was; the method field says why
            rejected = p_holm < ALPHA and c.difference != 0
            verdict = ("better" if c.difference > 0 else "worse") if rejected else "no difference detected"
        else:
            verdict = relation(c, p_holm)
        per_seed = [sum(ra) / len(ra) - sum(rb) / len(rb) for ra, rb in zip(a, b if len(b) == len(a) else b * len(a))]
        up, down = sum(d > 0 for d in per_seed), sum(d < 0 for d in per_seed)
        rows.append({"model": after, "against": before, "k": k, "value": float(sum(map(sum, a)) / (len(a) * len(a[0]))),
                     "seeds_up": up, "seeds_down": down, "sign_p": mcnemar_exact(up, down) if up + down else 1.0,
                     "before": float(sum(map(sum, b)) / (len(b) * len(b[0]))),
                     "difference": {"mean": c.difference, "low": c.low, "high": c.high}, "p_raw": c.p_value,
                     "test": c.test, "se": c.se, "df": c.as_dict()["df"], "seeds": c.seeds, "one_run": c.one_run,
                     "p_holm": p_holm, "tests": len(family), "correction": "Holm", "verdict": verdict,
                     "warm_starts": shared,
                     "sentence": verdict_sentence(c, before, p_holm, len(family), warm_starts=shared),
                     "method": PASSK_LEGACY if legacy else passk["method"]})
    return rows


def sampled_support(passk: dict, cells: list[dict]) -> dict | None:
    """Where RL's greedy answers come from, for a pass@k record of the declared method: over the record's problems
    (the first ``problems`` of the held-out draw, as ``passk_stage`` samples them) and every seed's RL cell, the
    (seed, problem) pairs the cell answers right greedily (``greedy_right``), and how many of those its own warm
    start never answered right in its ``samples`` samples (``never_sampled``). Few never-sampled pairs mean RL
    moved greedy decoding toward answers the warm start could already sample. None for other records."""
    record_cells = passk.get("cells") or {}
    if passk.get("method") is None or not record_cells:
        return None
    by_cell = {c.get("cell"): c for c in cells}
    curves, n = passk.get("curves", {}), passk.get("problems")
    right = never = seeds = 0
    for cell in record_cells.values():
        greedy = (by_cell.get(cell.get("cell")) or {}).get("heldout_by_problem")
        counts = curves.get(cell.get("warm_curve"), {}).get("correct_counts")
        if not greedy or not counts or not n or len(counts) != n or len(greedy) < n:
            continue
        seeds += 1
        for solved, count in zip(greedy[:n], counts):
            right += solved == 1
            never += solved == 1 and count == 0
    return {"seeds": seeds, "problems": n, "samples": passk.get("samples"), "greedy_right": right,
            "never_sampled": never} if seeds else None
