"""The comparison grid: algorithms under one model, one warm start, one budget and several seeds.

    python -m lab.compare run    GRID [--dir DIR] [--max-cells N] [--env ENV] [--restore-by-heldout]
                                     # resumable: finished stages are kept
    python -m lab.compare status GRID [--dir DIR]
    python -m lab.compare report GRID [--dir DIR] [--json | --comparisons | --markdown]   # --json: cells, then tests
    python -m lab.compare passk  GRID --env ENV [--dir DIR]     # what the grid's passk names (run does it too)
    python -m lab.compare export GRID [--dir DIR] --to FOLDER [--env ENV]   # the small result files, to ship
    python -m lab.compare claims [--json | --markdown] [--spec FILE] [--dir DIR]   # each claim's verdict (issue 61)
    python -m lab.compare claims run [--claim ID ...] [--pilot] [--max-cells N]   # the paired experiments, resumable
    python -m lab.compare claims pilot [--json]      # does each mechanism's quantity move; seeds from a power plan
    python -m lab.compare claims status | export --to FOLDER

GRID is a grid file's name in ``lab/recipes/grids/`` or a path to one (see ``grid``); DIR is the grid folder
(see ``folder``; default: the data dir's ``compare/<grid name>``). A sweep grid (``sweep`` in its file: the
scaling grids) is run, reported, exported and shown point by point, each point a grid in ``DIR/points/<point>``
(see ``sweep``). The ``_warm``, ``_warmeval`` (each
``--warm-seed W``: one of the grid's ``warm_seeds``), ``_warmrestore`` (a warm start recorded without its
weights: trained again, kept if its digest is the recorded one or, with ``--restore-by-heldout``, if it answers
every held-out test problem as the recorded one did), ``_baseeval``, ``_trial`` (a learning-rate trial), ``_cell`` and ``_passk`` commands are the stages the driver
starts, each in its own process.

Owns the command line only: ``main`` parses it and calls the stages, the driver, the readers and the reports.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reference_impls.options import ConfigError

from .board import passk_comparison, sampled_support
from .folder import GridDir, bad_records, episode_counts
from .grid import Grid, cell_id
from .report import (export, lr_choices_text, passk_reading, progression_markdown, progression_text,
                     report_text)
from .results import load_results
from .cell import cell_stage
from .driver import run, stage_process, status, warm_status
from .heldout import LEGACY_HELDOUT_INTERVAL, base_eval_stage, warm_eval_stage
from .passk import passk_models, passk_stage
from .trial import trial_stage
from .warm import warm_restore_stage, warm_stage


#: what ``report --json`` prints of each cell (beside its held-out per family and the name of its stored interval):
#: its result and cost, the budget it actually spent, its diagnostics step by step, the learning rate it trained
#: with and how that was chosen, and the warm weights it started from; a record lacking one prints null
CELL_FIELDS = ("cell", "implementation", "algo", "env", "seed", "heldout", "heldout_interval", "train_s", "eval_s",
               "tokens", "peak_rss_mb", "steps_done", "stopped_by_wall_cap", "complete", "incomplete_reason",
               "budget", "diagnostics", "warm_weights_sha256")


def _report(grid: Grid, gdir: GridDir, args) -> int:
    """``report``: the grid's finished cells from a grid folder (cells/<id>/result.json) or an exported one
    (cells/<id>.json), with the references beside them."""
    for problem in bad_records(gdir):
        print(f"warning: bad record left out: {problem}", file=sys.stderr)
    loaded = load_results(gdir.path, shipped=False)
    if loaded is None:  # a folder without its grid.yaml: nothing was run there
        print(f"error: {gdir.path}: no grid.yaml (not a grid folder, or the grid has not run)", file=sys.stderr)
        return 2
    # the folder is reported as it was run (its own grid.yaml): a shipped grid stays readable after the grid's
    # file has moved on (the core grid of issue 42 is a new draw with other environments and seeds)
    try:
        ran = Grid.from_dict(loaded.spec, str(gdir.path / "grid.yaml"))
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if (ran.implementations, ran.seeds, ran.eval_n, ran.eval_seed) != (
            grid.implementations, grid.seeds, grid.eval_n, grid.eval_seed):
        print(f"note: {gdir.path} holds the grid as it was run (its grid.yaml), not {args.grid} as it is now",
              file=sys.stderr)
    wanted = {cell_id(impl, seed) for impl, seed in ran.cells()}
    loaded.cells = [c for c in loaded.cells if c.get("cell") in wanted]
    if args.json:
        families = loaded.families()
        for r in loaded.cells:
            labels = families.get(r["env"])
            by_family = {}
            for name, value in zip(labels or (), r.get("heldout_by_problem", ())):
                by_family.setdefault(name, []).append(value)
            # the warm start the cell started from, where its record names one (grids with warm_seeds; an older
            # record started from warm/<env> and prints as it always did)
            warm = {"warm_start": r["warm_start"]} if "warm_start" in r else {}
            choice = r.get("validation") if isinstance(r.get("validation"), dict) else None
            print(json.dumps({"record": "cell", **{k: r.get(k) for k in CELL_FIELDS}, **warm,
                              "lr": (r.get("config") or {}).get("lr"),
                              "lr_trials": None if choice is None else [
                                  {k: t.get(k) for k in ("lr", "validation", "complete")} for t in choice["trials"]],
                              "heldout_interval_method": r.get("heldout_interval_method", LEGACY_HELDOUT_INTERVAL),
                              "heldout_by_family": {n: sum(v) / len(v) for n, v in by_family.items()}}))
    if args.json or args.comparisons:  # every comparison: its Holm-adjusted verdict, detectable effect
        for test in loaded.tests().values():  # --json: after the cells, tagged as such
            print(json.dumps({"record": "comparison", **test} if args.json else test))
        if args.json:  # then each pass@k test (its own Holm family: the record's), tagged as such
            for env, record in loaded.passk.items():
                for row in passk_comparison(record):
                    print(json.dumps({"record": "passk", "env": env, **row}))
    elif args.markdown:
        print(progression_markdown(loaded.progression(), loaded.cells, loaded.warm))
    else:
        print(report_text(loaded.board()))
        print("Design: " + " ".join(ran.design()))
        counts = episode_counts(loaded.cells)
        if counts:  # beside the results: what each cell sampled and what its policy trained on
            print("Episodes per cell, sampled / trained on (mean over complete cells): " + "; ".join(
                f"{c['implementation']} {c['sampled']:g} / {c['trained']:g}"
                + (" pairs" if c["unit"] == "pairs" else "") for c in counts))
        choices = lr_choices_text(loaded.lr_choices())
        if choices:
            print(choices)
        stages = progression_text(loaded.progression(), loaded.warm)
        if stages:
            print(stages)
        for env, record in loaded.passk.items():
            reading = passk_reading(passk_comparison(record), sampled_support(record, loaded.cells))
            if reading:
                print(f"pass@k, {env}: {reading}")
    return 0


CLAIM_FIELDS = ("algorithm", "claim", "metric", "paper_ref", "seeds", "diff", "ci_low", "ci_high", "detectable",
                "verdict")


def _claims_main(argv: list[str]) -> int:
    """``claims``: the verdict of each claim (lab.compare.claims), running its paired experiments
    (lab.compare.claims_run), the pilot's report, status and export; ``_claimwarm`` and ``_claimarm`` are the
    stages ``claims run`` starts, each in its own process."""
    from .claim_results import claim_lines, pilot_lines
    from .claims import ClaimsSpec
    from . import claims_run

    p = argparse.ArgumentParser(prog="python -m lab.compare " + argv[0])
    if argv[0] == "claims":
        p.add_argument("action", nargs="?", default="report", choices=("report", "run", "pilot", "status", "export"))
        p.add_argument("--json", action="store_true", help="one JSON line per claim (report, pilot)")
        p.add_argument("--markdown", action="store_true", help="the table of docs/claims.md (report)")
        p.add_argument("--claim", action="append", default=None, help="only this claim (run; repeatable)")
        p.add_argument("--max-cells", type=int, default=None, help="run: stop after this many arm runs")
        p.add_argument("--to", default=None, help="export: a new or empty folder (e.g. results/claims)")
    else:
        p.add_argument("--claim", required=True)
        if argv[0] == "_claimwarm":
            p.add_argument("--warm-seed", type=int, required=True)
        else:
            p.add_argument("--arm", required=True, choices=("with", "without"))
            p.add_argument("--seed", type=int, required=True)
    p.add_argument("--spec", default=None, help="claims file: a name in lab/recipes/claims/ or a path (default core)")
    p.add_argument("--dir", default=None, help="claims folder (default: the data dir's claims/<name>)")
    p.add_argument("--pilot", action="store_true", help="the pilot's seeds and folder (pilot/ under the claims folder)")
    args = p.parse_args(argv[1:])
    try:
        spec = ClaimsSpec.load(args.spec)
        root = Path(args.dir) if args.dir else claims_run.default_root(spec)
        if argv[0] == "_claimwarm":
            claim = spec.claim(args.claim)
            claims_run.warm_stage(spec, claim, _claim_dir(root, claim, args.pilot), args.warm_seed, args.pilot)
            return 0
        if argv[0] == "_claimarm":
            claim = spec.claim(args.claim)
            claims_run.arm_stage(spec, claim, _claim_dir(root, claim, args.pilot), args.arm, args.seed, args.pilot)
            return 0
        if args.action == "run":
            return 1 if claims_run.run(spec, root, args.claim, pilot=args.pilot, max_cells=args.max_cells) else 0
        if args.action == "status":
            for row in claims_run.status(spec, root, args.pilot):
                where = "" if row["seed"] is None else f" seed {row['seed']} {row['arm']}"
                print(f"{row['claim']}{where}: {row['state']}")
            return 0
        if args.action == "export":
            if not args.to:
                raise ConfigError("claims export: --to FOLDER is required")
            print(f"{claims_run.export(spec, root, Path(args.to))} arm records exported to {args.to}")
            return 0
        if args.action == "pilot":
            for line in pilot_lines(spec, root):
                if args.json:
                    print(json.dumps(line))
                else:
                    moved = {True: "moves", False: "does NOT move", None: "not measured"}[line["moves"]]
                    print(f"{line['id']}: {line['check']}: {moved} {line['values']}; {line['plan']}")
            return 0
        lines = claim_lines(spec, root, pilot=args.pilot)
        if args.json:
            for line in lines:
                print(json.dumps({**{k: line[k] for k in CLAIM_FIELDS}, **line}))
        elif args.markdown:
            print(claims_markdown(lines))
        else:
            for line in lines:
                print(claim_text(line))
        return 0
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _claim_dir(root: Path, claim, pilot: bool) -> Path:
    from .claim_results import claim_folder

    return claim_folder(root, claim, pilot)


def claim_text(line: dict) -> str:
    """One claim's line of ``claims``'s text report."""
    head = f"{line['id']} ({line['algorithm']}): {line['verdict']}"
    if line["diff"] is None:
        return f"{head}. {line['why']}"
    interval = ("" if line["ci_low"] is None else
                f", 95% interval [{line['ci_low']:+.4g}, {line['ci_high']:+.4g}], detectable {line['detectable']:.4g}, "
                f"Holm-adjusted p {line['p_holm']:.3g} over {line['tests']}")
    return (f"{head}: {line['metric']} with - without {line['diff']:+.4g} ({line['seeds']} seed pairs{interval})"
            f"{'. ' + line['why'] if line['why'] else ''}")


def claims_markdown(lines: list[dict]) -> str:
    """The table of docs/claims.md: claim, paper ref, metric, direction, ablation, verdict."""
    def cell(text) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    out = ["| claim (implementation) | in one sentence | paper | metric (summary) | with - without, predicted | "
           "ablation | verdict |",
           "|---|---|---|---|---|---|---|"]
    for line in lines:
        ablation = ", ".join(f"{k}: {v}" for k, v in (line["ablation"] or {}).items()) or "-"
        metric = f"{line['metric']} ({line['summary'].replace('_', ' ')})" if line["summary"] else (line["metric"] or "-")
        found = line["verdict"]
        if line["diff"] is not None:
            found += f" ({line['seeds']} pairs, diff {line['diff']:+.3g})"
        if line["verdict"] == "no ablation switch yet":
            found += f": {line['why']}"
        out.append(f"| {cell(line['id'])} ({cell(line['algorithm'])}) | {cell(line['claim'])} | {cell(line['paper_ref'])} | {cell(metric)} | "
                   f"{line['direction']} | {cell(ablation)} | {cell(found)} |")
    return "\n".join(out)


def _sweep_main(grid: Grid, args) -> int:
    """``run``, ``status``, ``report`` and ``export`` of a sweep grid (``lab.compare.sweep``): point after point, each
    an ordinary grid in ``points/<point>`` of the sweep's folder."""
    from . import sweep

    root = Path(args.dir) if args.dir else sweep.default_root(grid)
    try:
        if args.command == "run":
            return 1 if sweep.run_sweep(grid, root, args.max_cells, env=args.env,
                                        restore_by_heldout=args.restore_by_heldout) else 0
        if args.command == "status":
            rows = sweep.sweep_status(grid, root)
            for r in rows:
                shown = "" if r["heldout"] is None else "{:.3f}".format(r["heldout"])
                print(f"{r['point']:<24} {r['cell']:<40} {r['state']:<8} {shown}")
            counts = {s: sum(r["state"] == s for r in rows) for s in ("done", "stale", "bad", "partial", "failed",
                                                                        "pending")}
            print(" ".join(f"{k} {v}" for k, v in counts.items()))
            return 0
        if args.command == "export":
            print(f"{sweep.export_sweep(grid, root, Path(args.to))} cells exported to {args.to}")
            return 0
        if args.command == "report":
            found = sweep.load_sweep(root, shipped=False)
            if found is None:
                print(f"error: {root}: no {sweep.SWEEP_FILE} (the sweep has not run there)", file=sys.stderr)
                return 2
            for point in found.points:
                if args.json:
                    print(json.dumps({"record": "point", "option": found.option, **point}))
                elif point["seeds"]:
                    print(f"{found.option} = {point['point']}: held-out {point['heldout']:.3f} "
                          f"[{point['low']:.3f}, {point['high']:.3f}] over {point['seeds']} seed(s)"
                          + ("" if point["train_s"] is None else f", training {point['train_s']:.0f} s per cell"))
                else:
                    print(f"{found.option} = {point['point']}: no complete cell yet")
            return 0
        raise ConfigError(f"{args.command}: not a command for a sweep (run, status, report, export); pass@k is run on "
                          f"one of its points' grid.yaml")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("claims", "_claimwarm", "_claimarm"):  # the claims have their own options (no GRID)
        return _claims_main(argv)
    p = argparse.ArgumentParser(prog="python -m lab.compare", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "status", "report", "passk", "export", "_warm", "_warmeval", "_warmrestore", "_baseeval",
                 "_trial", "_cell", "_passk"):
        s = sub.add_parser(name)
        s.add_argument("grid", help="grid name in lab/recipes/grids/ or a path to a grid file")
        s.add_argument("--dir", default=None, help="grid folder (default: the data dir's compare/<name>)")
        if name == "run":
            s.add_argument("--max-cells", type=int, default=None, help="stop after this many cells")
            s.add_argument("--env", default=None, help="only this environment's warm start and cells")
        if name == "report":
            s.add_argument("--json", action="store_true",
                           help="JSON lines: one per finished cell (\"record\": \"cell\": result, budget spent, "
                                "diagnostics, per-family held-out, learning rate), then one per comparison "
                                "(\"record\": \"comparison\": Holm-adjusted verdict, detectable effect)")
            s.add_argument("--comparisons", action="store_true",
                           help="one JSON record per comparison (statistics, Holm-adjusted p, verdict)")
            s.add_argument("--markdown", action="store_true",
                           help="the untrained / SFT / SFT + RL table as Markdown (grids with base: true)")
        if name in ("passk", "_passk", "_warm", "_warmeval", "_warmrestore", "_baseeval"):
            s.add_argument("--env", required=True)
        if name in ("run", "_warmrestore"):
            s.add_argument("--restore-by-heldout", action="store_true",
                           help="a warm start trained again with other weights than recorded (another CPU's "
                                "arithmetic) is kept if it answers every held-out test problem as the recorded one "
                                "did; done.json's 'restored' says so")
        if name in ("_warm", "_warmeval", "_warmrestore"):
            s.add_argument("--warm-seed", type=int, default=None,
                           help="which of the grid's warm_seeds (default: the first, warm/<env>)")
        if name == "export":
            s.add_argument("--to", required=True, help="destination folder, new or empty (e.g. results/<grid>)")
            s.add_argument("--env", default=None,
                           help="this environment only; the shipped grid.yaml then names only its implementations")
        if name == "_passk":
            s.add_argument("--seed", type=int, default=None,
                           help="count only this seed's cell (run does it right after the cell trains)")
        if name in ("_cell", "_trial"):
            s.add_argument("--impl", required=True)
        if name == "_cell":
            s.add_argument("--seed", type=int, required=True)
        if name == "_trial":
            s.add_argument("--lr", type=float, required=True)
            s.add_argument("--seed", type=int, default=None, help="one of the grid's lr_trials seeds")
    args = p.parse_args(argv)
    try:
        grid = Grid.load(args.grid)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if grid.sweep and not args.command.startswith("_"):  # a sweep's points are grids; a stage is given a point's
        return _sweep_main(grid, args)
    gdir = GridDir(args.dir) if args.dir else GridDir.default(grid)
    if (args.command in ("_warm", "_warmeval", "_warmrestore") and args.warm_seed is not None
            and args.warm_seed not in grid.warm_seeds):
        print(f"error: --warm-seed {args.warm_seed}: not one of the grid's warm_seeds {list(grid.warm_seeds)}",
              file=sys.stderr)
        return 2
    try:  # a grid folder is data: a link in it is refused before any stage reads or writes there
        gdir.refuse_links()
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.command == "_warm":
        warm_stage(grid, gdir, args.env, args.warm_seed)
    elif args.command == "_warmrestore":
        try:  # a refusal (weights that differ, no digest) is a reason for the log, not a traceback
            warm_restore_stage(grid, gdir, args.env, args.warm_seed, by_heldout=args.restore_by_heldout)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    elif args.command == "_warmeval":
        warm_eval_stage(grid, gdir, args.env, args.warm_seed)
    elif args.command == "_baseeval":
        base_eval_stage(grid, gdir, args.env)
    elif args.command == "_trial":
        try:
            trial_stage(grid, gdir, args.impl, args.lr, args.seed)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    elif args.command == "_cell":
        cell_stage(grid, gdir, args.impl, args.seed)
    elif args.command == "_passk":
        passk_stage(grid, gdir, args.env, seeds=None if args.seed is None else [args.seed])
    elif args.command == "run":
        try:
            return 1 if run(grid, gdir, args.max_cells, grid_arg=args.grid, env=args.env,
                            restore_by_heldout=args.restore_by_heldout) else 0
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    elif args.command == "status":
        several = len(grid.warm_seeds) > 1
        if several:  # each warm start on its own line (warm/<env>@w<seed>); a grid of one reads as it always did
            for w in warm_status(grid, gdir):
                shown = "" if w["heldout"] is None else "{:.3f}".format(w["heldout"])
                print(f"{'warm/' + w['warm']:<30} {w['state']:<8} {shown}")
        rows = status(grid, gdir)
        for r in rows:
            shown = "" if r["heldout"] is None else "{:.3f}".format(r["heldout"])
            why = "" if not r["changed"] else (
                f"  (bad record: {r['changed'][0]}; move it away to re-run the cell)" if r["state"] == "bad" else
                f"  (trained with other {', '.join(r['changed'])}: move the cell folder away to re-run it)")
            start = f"  from warm/{r['warm_start']}" if several else ""
            print(f"{r['cell']:<30} {r['state']:<8} {shown}{start}{why}")
        counts = {s: sum(r["state"] == s for r in rows) for s in ("done", "stale", "bad", "partial", "failed", "pending")}
        print(" ".join(f"{k} {v}" for k, v in counts.items()))
    elif args.command == "report":
        return _report(grid, gdir, args)
    elif args.command == "passk":
        try:  # refused before a process starts: the grid names no implementation, or a seed's cell is missing
            passk_models(grid, gdir, args.env)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return stage_process(["_passk", args.grid, "--dir", str(gdir.path), "--env", args.env],
                             gdir.path / f"passk-{args.env}.log")
    elif args.command == "export":
        try:
            print(f"{export(grid, gdir, Path(args.to), env=args.env)} cells exported to {args.to}")
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    return 0
