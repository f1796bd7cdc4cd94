"""What a grid's results say, as text, and the small result files to ship.

Owns the text tables of ``python -m lab.compare report`` (``report_text``, ``progression_text``,
``progression_markdown``, ``lr_choices_text``), the pass@k sentence (``passk_reading``), durations in words
(``duration``), each warm start on its own (``each_warm_start``), each implementation's learning-rate choice
(``lr_choices``) and ``export`` (a grid folder's small files, with this machine's paths made relative, to
``results/<grid>``).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from reference_impls.stats import conditional_clause, config_interval

from .board import PASSK_LEGACY
from .folder import GridDir, atomic_json, split_warm_name
from .grid import Grid


def duration(seconds: float) -> str:
    """Seconds in words: ``1h05m``, or ``3m07s`` under an hour."""
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def passk_reading(rows: list[dict], support: dict | None = None) -> str | None:
    """A plain sentence on the last pair of ``passk_comparison`` (the RL model against the warm start): did RL
    raise pass@1 (the smallest tested k), and did it narrow (pass@k at the largest k fell), keep or widen what the
    model can sample? "rose" / "fell" only where the Holm-adjusted test rejects; otherwise "no difference
    detected" with what the interval could not rule out. A record of the declared method reads every seed of
    the named implementation (one seed: an observation, no verdict); an older record starts with
    ``PASSK_LEGACY`` (its RL cell was picked on the test problems) and says its models are single checkpoints.

    Where the largest k is not detected by the crossed test but the seeds' own means moved one way, the reading
    says how many seeds moved and the sign test over them (a seed-level figure, beside the verdict, never in its
    place: "not detected" is not "no difference"). ``support`` (``board.sampled_support``) adds where RL's greedy
    right answers come from: how many of them its warm start never sampled right."""
    if not rows:
        return None
    last = [r for r in rows if r["model"] == rows[-1]["model"]]
    one, top = last[0], last[-1]
    if one["k"] == top["k"]:
        return None

    def shown(r):
        d = r["difference"]
        return (f"pass@{r['k']} {100 * r['before']:.0f}% -> {100 * r['value']:.0f}% ({100 * d['mean']:+.0f} pts "
                f"[{100 * d['low']:+.0f}, {100 * d['high']:+.0f}])")

    def undetected(r):
        d = r["difference"]
        bound = 100 * max(-d["low"], d["high"])
        return f"no difference detected at pass@{r['k']} (could not rule out +-{bound:.0f} pts)"

    head = f"{one['model']} against the {one['against']}: {shown(one)}; {shown(top)}. "
    legacy = one.get("method", PASSK_LEGACY) == PASSK_LEGACY
    if legacy:
        head = f"{PASSK_LEGACY[0].upper()}{PASSK_LEGACY[1:]}. " + head
        tail = (f" (Paired over the same problems, {one['test']}; Holm over the record's {one['tests']} tests; one "
                f"checkpoint each: an observation about these runs, not the algorithm.)")
    else:
        condition = f"; {conditional_clause(one['warm_starts'])}" if one.get("warm_starts") else ""
        tail = (f" ({one['seeds']} seed{'s' if one['seeds'] != 1 else ''} of the implementation the grid named before "
                f"any result, paired over the same problems with the {one['against']}: {one['test']}; Holm over the "
                f"record's {one['tests']} tests{condition}.)")
    if not legacy and one["one_run"]:
        return head + "One seed: an observation about this run, not the algorithm." + tail
    n = top["k"]
    verdicts = (one["verdict"], top["verdict"])
    if verdicts == ("better", "worse"):
        text = (f"Sharpened and narrowed: more of the probability on answers it could already sample, "
                f"fewer problems solved in {n} tries.")
    elif top["verdict"] == "better":
        text = f"Added: it solves problems the {one['against']} did not solve in {n} tries."
    elif verdicts[0] == "better":
        text = f"Sharpened: pass@1 rose; {undetected(top)}."
    elif top["verdict"] == "worse":
        text = f"Narrowed: fewer problems solved in {n} tries" + (
            ", and pass@1 fell too." if verdicts[0] == "worse" else f"; {undetected(one)}.")
    elif verdicts[0] == "worse":
        text = f"pass@1 fell; {undetected(top)}."
    else:
        text = f"Neither sharpened nor widened at this sample size: {undetected(one)}; {undetected(top)}."
    for r in (one, top):
        moved = max(r.get("seeds_up", 0), r.get("seeds_down", 0))
        if r["verdict"] not in ("better", "worse") and r["seeds"] > 1 and moved:
            way = "rose" if r.get("seeds_up", 0) >= r.get("seeds_down", 0) else "fell"
            text += (f" Seed by seed, pass@{r['k']} {way} in {moved} of {r['seeds']} seeds (exact sign test over "
                     f"seeds, p {r['sign_p']:.3f}; it leaves out the problem draw, which the crossed test counts).")
    if support and support.get("greedy_right"):
        text += (f" Of the {support['greedy_right']} (seed, problem) pairs that RL answers right greedily on these "
                 f"{support['problems']} problems, {support['never_sampled']} were never answered right by the seed's "
                 f"warm start in {support['samples']} samples: RL moved greedy decoding toward answers the warm start "
                 f"could already sample.")
    return head + text + tail


def each_warm_start(warm: dict[str, dict], env: str) -> list[tuple[str, float, float, float]]:
    """``env``'s warm starts, each on its own: (name, held-out, low, high), the interval one run's over the problems.
    Empty for fewer than two: their pooled interval has one degree of freedom per warm start less one ([0, 1] for
    two), so a grid with several shows each instead."""
    records = [(name, r) for name, r in warm.items()
               if split_warm_name(name)[0] == env and r.get("heldout_by_problem")]
    if len(records) < 2:
        return []
    shown = []
    for name, r in records:
        ci = config_interval([r["heldout_by_problem"]])
        shown.append((f"warm seed {r['seed']}" if isinstance(r.get("seed"), int) else f"warm/{name}",
                      r["heldout"], ci.low, ci.high))
    return shown


def progression_text(prog: dict[str, list[dict]], warm: dict[str, dict] | None = None) -> str:
    """The stages table of ``progression`` as text (only environments with a reference stage measured). With the
    grid's ``warm`` records, several warm starts are each shown on its own line under the stage they make up."""
    lines = []
    for env, rows in prog.items():
        if not any(r["implementation"] is None for r in rows):
            continue
        lines.append(f"## {env}: untrained -> SFT -> SFT + RL")
        lines.append(f"{'stage':<40} {'held-out':>9} {'95% interval':>16} {'vs stage before':>24}  verdict")
        each = each_warm_start(warm or {}, env)
        for r in rows:
            several = each and r["stage"] == "SFT (warm start)"
            interval = "each below" if several else "[{:.3f}, {:.3f}]".format(r["low"], r["high"])
            vs = "" if r["vs"] is None else "{:+.3f} [{:+.3f}, {:+.3f}]".format(r["vs"]["mean"], r["vs"]["low"],
                                                                            r["vs"]["high"])
            lines.append(f"{r['stage']:<40} {r['heldout']:>9.3f} {interval:>16} {vs:>24}  {r['verdict']}")
            if several:
                for which, heldout, low, high in each:
                    lines.append(f"{'  ' + which:<40} {heldout:>9.3f} {f'[{low:.3f}, {high:.3f}]':>16}")
        lines.append("")
    return "\n".join(lines)


def progression_markdown(prog: dict[str, list[dict]], cells: list[dict], warm: dict[str, dict]) -> str:
    """One Markdown row per (environment, RL implementation) of a base / SFT / SFT + RL grid: the three
    held-out figures with intervals (several warm starts: each on its own), RL's paired difference to SFT (each
    seed against its own warm start), and what each stage cost."""
    def pct(r):
        return f"{100 * r['heldout']:.0f}% [{100 * r['low']:.0f}, {100 * r['high']:.0f}]" if r else "-"

    def each_warm(env: str) -> str | None:  # several warm starts: each on its own (None for one)
        return "; ".join(f"{100 * heldout:.0f}% [{100 * low:.0f}, {100 * high:.0f}] ({which})"
                         for which, heldout, low, high in each_warm_start(warm, env)) or None

    lines = ["| environment | untrained | SFT (warm start) | SFT + RL | RL - SFT, paired (pts) | verdict | "
             "SFT time | RL time (steps) |", "|---|---|---|---|---|---|---|---|"]
    for env, rows in prog.items():
        untrained = next((r for r in rows if r["stage"] == "untrained"), None)
        sft_row = next((r for r in rows if r["stage"] == "SFT (warm start)"), None)
        sft_shown = each_warm(env) or pct(sft_row)
        sft_s = warm.get(env, {}).get("wall_s")
        for r in [r for r in rows if r["implementation"] is not None] or [None]:
            mine = [c for c in cells if r and c["implementation"] == r["implementation"]]
            diff = (f"{100 * r['vs']['mean']:+.0f} [{100 * r['vs']['low']:+.0f}, {100 * r['vs']['high']:+.0f}]"
                    if r and r["vs"] else "-")
            verdict = r["verdict"] if r and r["verdict"] else "-"
            rl_time = (f"{duration(sum(c['train_s'] for c in mine) / len(mine))} "
                       f"({', '.join(str(c['steps_done']) for c in mine)}"
                       f"{', wall cap' if any(c.get('stopped_by_wall_cap') for c in mine) else ''})"
                       ) if mine and all("train_s" in c for c in mine) else "-"
            lines.append(f"| {env}{' (' + r['implementation'] + ')' if r else ''} | {pct(untrained)} | {sft_shown} "
                         f"| {pct(r)} | {diff} | {verdict} | {duration(sft_s) if sft_s else '-'} | {rl_time} |")
    return "\n".join(lines)


def report_text(board: dict[str, list[dict]]) -> str:
    """The leaderboard as text: per environment a table (held-out with its 95% interval over seeds x problems,
    cost), then each comparison's verdict sentence (``stats.verdict_sentence``) and the results per problem
    family."""
    lines = []
    for env, rows in board.items():
        lines.append(f"## {env}")
        lines.append(f"{'implementation':<24} {'seeds':>5} {'held-out':>9} {'95% interval':>16} {'time':>8} "
                     f"{'tokens':>9} {'peak MB':>8}")
        for r in rows:
            interval = "[{:.3f}, {:.3f}]".format(r["low"], r["high"])
            lines.append(f"{r['implementation']:<24} {r['seeds']:>5} {r['heldout']:>9.3f} "
                         f"{interval:>16} {duration(r['train_s']):>8} "
                         f"{r['tokens']:>9.0f} {r['peak_rss_mb']:>8.0f}")
        lines.append("")
        for r in rows:
            for test in r.get("tests", {}).values():
                lines.append(f"- {r['implementation']}: {test['verdict']}")
        each = warm_start_effects(rows)
        if each:
            lines.append("")
            lines.append("Each warm start's effect, RL minus the warm start it started from (points, 95% interval; "
                         "Holm over these tests; each conditional on its warm start)")
            for e in each:
                lines.append(f"- {e['implementation']} from {e['label']} ({100 * e['heldout_warm']:.1f}%): "
                             f"{100 * e['difference']:+.1f} [{100 * e['low']:+.1f}, {100 * e['high']:+.1f}], "
                             f"{e['seeds']} seeds, Holm p {e['p_holm']:.3f}: {e['relation']}")
        families = [name for r in rows for name in r.get("by_family", {})]
        if families:
            names = list(dict.fromkeys(families))
            lines.append("")
            lines.append("Per problem family, held-out % (problems in the family; descriptive: no verdict is drawn "
                         "per family)")
            lines.append(f"{'implementation':<24} " + " ".join(
                f"{name[:11]:>11}" for name in names))
            sizes = {n: e["problems"] for r in rows for n, e in r.get("by_family", {}).items()}
            lines.append(f"{'(problems)':<24} " + " ".join(f"{sizes[n]:>11}" for n in names))
            for r in rows:
                fam = r.get("by_family", {})
                lines.append(f"{r['implementation']:<24} " + " ".join(
                    f"{100 * fam[n]['heldout']:>11.0f}" if n in fam else f"{'-':>11}" for n in names))
            if any(e.get("vs") for r in rows for e in r.get("by_family", {}).values()):
                lines.append("")
                lines.append("Per problem family, change from the warm start in points (each seed against its own; "
                             "descriptive: a mean that moves little can hide families that move apart)")
                for r in rows:
                    fam = r.get("by_family", {})
                    lines.append(f"{r['implementation']:<24} " + " ".join(
                        f"{100 * fam[n]['vs']['mean']:>+11.0f}" if fam.get(n, {}).get("vs") else f"{'-':>11}"
                        for n in names))
        lines.append("")
    return "\n".join(lines)


def warm_start_effects(rows: list[dict]) -> list[dict]:
    """One environment's board rows -> each implementation's effect from each warm start on its own
    (``board.grid_tests``' ``by_warm_start``), flat, in the board's order: empty for a grid whose seeds have one
    warm start between them or each their own."""
    return [{"implementation": r["implementation"], **e} for r in rows
            for e in r.get("tests", {}).get("warm", {}).get("by_warm_start", [])]


def lr_choices(cells: list[dict]) -> list[dict]:
    """Each implementation's learning-rate choice as its cells record it (``validation``: the trials of
    ``trial.choose_lr``, scored on the validation split before any cell was tested), in the cells' order: one row
    per implementation with ``env``, ``implementation``, ``mu`` (policy updates per rollout batch), ``trials``
    ([{"lr", "validation", "complete"}] in the sweep's order), the ``chosen`` rate, ``edge`` ("smallest" or
    "largest" when the chosen rate is at that end of the sweep: the best rate may lie beyond it, "" otherwise),
    the validation ``split`` ({"n", "seed"}), and the ``seed`` whose warm start the trials started from. Cells
    without a choice (grids with no ``lr_sweep``) give none."""
    rows: dict[str, dict] = {}
    for c in cells:
        choice = c.get("validation")
        if not isinstance(choice, dict) or c.get("implementation") in rows or not choice.get("trials"):
            continue
        trials = [{"lr": t["lr"], "validation": t["validation"], "complete": bool(t.get("complete", True))}
                  for t in choice["trials"]]
        rates = [t["lr"] for t in trials]
        edge = ("" if len(rates) < 2 else "smallest" if choice["lr"] == min(rates)
                else "largest" if choice["lr"] == max(rates) else "")
        rows[c["implementation"]] = {"env": c.get("env"), "implementation": c["implementation"],
                                     "mu": (c.get("budget") or {}).get("mu"), "trials": trials,
                                     "chosen": choice["lr"], "edge": edge, "split": choice.get("split") or {},
                                     "seed": choice.get("seed")}
    return list(rows.values())


def lr_choices_text(rows: list[dict]) -> str:
    """``lr_choices`` as text, one line per implementation ("" when there are none)."""
    if not rows:
        return ""
    split = rows[0]["split"]
    lines = [f"Learning rates, chosen on validation ({split.get('n')} problems, seed {split.get('seed')}; highest "
             f"mean success among complete trials)"]
    for r in rows:
        tried = ", ".join(f"{t['lr']:g}: {t['validation']:.3f}" + ("" if t["complete"] else " (stopped)")
                          for t in r["trials"])
        edge = f"  (the sweep's {r['edge']} rate)" if r["edge"] else ""
        lines.append(f"- {r['implementation']} (mu {r['mu']}): {tried} -> {r['chosen']:g}{edge}")
    return "\n".join(lines) + "\n"


def export(grid: Grid, gdir: GridDir, dest: Path, env: str | None = None) -> int:
    """Copy the small files (grid.yaml, results, pass@k) to ``dest``, a new or empty folder (a folder with files,
    such as an earlier export, is refused: the two would mix); returns the number of cells. ``env``: that
    environment only, and the shipped grid.yaml names only its implementations (a grid run on fewer environments
    than its file plans), with a comment that says so.

    Each record is read, checked and written anew, never copied: a grid folder holding a link is refused
    (``GridDir.refuse_links``), a cell's file is named after the implementation and seed whose folder holds it (a
    record whose ``cell``, ``implementation`` or ``seed`` says otherwise is refused), and a record that is not a
    JSON object is refused. The export is written into a fresh folder beside ``dest`` and renamed to it at the end,
    so a refusal leaves nothing behind."""
    import tempfile

    from reference_impls.options import ConfigError

    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise ConfigError(f"--to {dest}: is a file or a link, not a folder; give a new or empty folder")
    if dest.exists() and any(dest.iterdir()):
        raise ConfigError(f"--to {dest}: the folder is not empty (an earlier export?); move it away first, so that "
                          f"its records and this grid's do not mix")
    if env is not None and env not in grid.envs():
        raise ConfigError(f"--env {env}: the grid has no cells on it; its environments: {', '.join(grid.envs())}")
    gdir.refuse_links()
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.export-", dir=dest.parent))
    try:
        os.chmod(staging, 0o755)  # mkdtemp's folder is private; the export is meant to be shared
        n = _export_into(grid, gdir, staging, env)
        os.replace(staging, dest)  # onto a missing or empty folder
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return n


def _read_exported(path: Path, keys: tuple[str, ...] = ()) -> dict | None:
    """A record to export (None when there is none); ConfigError naming it when it is not a record."""
    from reference_impls.options import ConfigError

    from .folder import BadRecord, read_record

    try:
        return read_record(path, keys, cell=True)
    except BadRecord as err:
        raise ConfigError(f"{err}; nothing was exported") from None


def _export_into(grid: Grid, gdir: GridDir, dest: Path, env: str | None) -> int:
    """``export``'s files, written into ``dest`` (a fresh, empty folder); the number of cells."""
    import yaml

    from reference_impls.options import ConfigError

    from .folder import CELL_KEYS
    from .cell_options import env_of
    from .grid import cell_id

    spec_path = gdir.path / "grid.yaml"
    if not spec_path.is_file():
        raise ConfigError(f"{gdir.path}: no grid.yaml (not a grid folder, or the grid has not run); nothing was exported")
    text = spec_path.read_text()
    try:
        ran = Grid.from_dict(yaml.safe_load(text), str(spec_path))
    except yaml.YAMLError as err:
        raise ConfigError(f"{spec_path}: is not valid YAML ({str(err).splitlines()[0]}); nothing was exported") from None
    if env is None:
        (dest / "grid.yaml").write_text(text)
    else:
        spec = ran.as_dict()
        left = [i for i in spec["implementations"] if env_of(i) != env]
        spec["implementations"] = [i for i in spec["implementations"] if env_of(i) == env]
        (dest / "grid.yaml").write_text(
            f"# {grid.name} as run, exported for {env} only (python -m lab.compare export {grid.name} --env {env}); "
            f"not run here: {', '.join(left) or 'nothing'}\n" + yaml.safe_dump(spec, sort_keys=False))
    n = 0
    for impl, seed in grid.cells():
        if env is not None and env_of(impl) != env:
            continue
        path = gdir.cell(impl, seed) / "result.json"
        r = _read_exported(path)
        if r is None or any(k not in r for k in CELL_KEYS):  # not finished (status names a bad record)
            continue
        name = cell_id(impl, seed)
        if (r.get("cell"), r.get("implementation"), r.get("seed")) != (name, impl, seed):
            raise ConfigError(f"{path}: the record names cell {r.get('cell')!r} (implementation "
                              f"{r.get('implementation')!r}, seed {r.get('seed')!r}) but sits in the folder of "
                              f"{name}; it was not written by this grid's runner; nothing was exported")
        if not isinstance(r.get("config"), dict):
            raise ConfigError(f"{path}: the record has no config (the options the cell trained with), which a "
                              f"shipped record carries; nothing was exported")
        (dest / "cells").mkdir(exist_ok=True)
        # the warm start's and the run's folders are this machine's; shipped, the config names them relative to
        # a grid folder (GridResults.reproduce says how to rebuild it) and the warm start's settings travel beside it
        # (its own warm start: warm/<env>, or warm/<env>@w<seed> in a grid with several)
        r = {**r, "config": {**r["config"], "model": f"warm/{r.get('warm_start') or r['env']}",
                             "out": f"cells/{name}/run"}}
        atomic_json(dest / "cells" / f"{name}.json", r)
        n += 1
    for each in [e for e in grid.envs() if env is None or e == env]:
        for _, name in gdir.warm_starts(grid, each):  # warm/<env>.json, warm/<env>@w<seed>.json
            record = _read_exported(gdir.warm(name) / "done.json")
            if record is not None:
                (dest / "warm").mkdir(exist_ok=True)
                atomic_json(dest / "warm" / f"{name}.json", record)
        record = _read_exported(gdir.base(each))
        if record is not None:
            (dest / "base").mkdir(exist_ok=True)
            atomic_json(dest / "base" / f"{each}.json", record)
    for p in sorted((gdir.path / "passk").glob("[!.]*.json")):  # not a stage's partial file
        if env is not None and p.stem != env:
            continue
        record = _read_exported(p)
        (dest / "passk").mkdir(exist_ok=True)
        curves = record.get("curves")
        for curve in (curves.values() if isinstance(curves, dict) else ()):  # this machine's folders, made relative
            if isinstance(curve, dict) and str(curve.get("model", "")).startswith(str(gdir.path) + os.sep):
                curve["model"] = os.path.relpath(curve["model"], gdir.path)
        atomic_json(dest / "passk" / p.name, record)
    return n
