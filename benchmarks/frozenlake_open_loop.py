"""Map-blind baselines for FrozenLake: what does a policy score that never reads the map?

    .venv/bin/python benchmarks/frozenlake_open_loop.py [--grid core | --results results/core-first] [--out FILE.json]

A *map-blind* policy writes a fixed sequence of ``<move>...</move>`` turns, whatever the map shows. Two kinds:
the same turn every turn, for every turn of 1 to ``moves_per_turn`` moves (4 + 16 + 64 = 84 at the grid's 3
moves a turn), and 8 *sweeps* (a snake over the board: e.g. right x5, down, left x5, down, ..., cut into turns).
Each plays the maps through the environment itself (the same ``step`` the model's text goes through, so parsing,
holes, walls and the turn limit are the model's). Reported:

- the policy chosen on the grid's **validation** maps (``validation: {n, seed}`` of the grid file; none of them a
  test map) and its score on the **test** maps: the bar the issue sets (at most 10% for a map distribution that
  can tell a map-reading policy from a blind one);
- the best policies on the test maps themselves (an upper bound of any blind policy, chosen with hindsight):
  ``best`` in the JSON, the bar the Compare page draws;
- with ``--results``, for every shipped FrozenLake cell (and the warm start), the blind policy (among those that
  solve at least one map) whose per-map outcome agrees most with the cell's greedy per-map outcome, on how many
  maps, and how many of the cell's solved maps it solves too. 100 of 100 does not prove the cell plays that
  policy, but these maps cannot tell the cell apart from it.

No model runs here; seconds to a minute on one core.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from lab.compare.cell_options import cell_config
from lab.compare.grid import Grid
from lab.compare.results import load_results
from reference_impls.envs import get_env
from reference_impls.measure.evaluate import validation_problems

DIRECTIONS = ("left", "down", "right", "up")
OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up"}


def play_open_loop(task, problem, turns: tuple[str, ...] | str, options: dict) -> int:
    """1 if writing ``turns`` (one turn text, or a sequence played in order and then repeated) solves ``problem``
    under ``options``, else 0."""
    turns = (turns,) if isinstance(turns, str) else tuple(turns)
    env = task.make(problem, **options)
    env.reset()
    for i in range(options["max_turns"] + 1):  # the env ends the episode at its own turn limit
        result = env.step(turns[i % len(turns)])
        if result.done:
            return int(bool(result.info.get("correct")))
    raise RuntimeError(f"episode of {problem.uid} did not end after {options['max_turns'] + 1} turns")


def open_loop_turns(moves_per_turn: int) -> list[str]:
    return [f"<move>{' '.join(moves)}</move>" for n in range(1, moves_per_turn + 1)
            for moves in itertools.product(DIRECTIONS, repeat=n)]


def sweeps(moves_per_turn: int, width: int = 8) -> dict[str, tuple[str, ...]]:
    """name -> turns of a snake over a board up to ``width`` wide: ``width - 1`` moves along a row (walls
    block the extra ones), one across, back, ... in each of the 8 (along, across) directions."""
    out = {}
    for along in DIRECTIONS:
        for across in DIRECTIONS:
            if across in (along, OPPOSITE[along]):
                continue
            moves, way = [], along
            for _ in range(width):
                moves += [way] * (width - 1) + [across]
                way = OPPOSITE[way]
            turns = tuple(f"<move>{' '.join(moves[i:i + moves_per_turn])}</move>"
                          for i in range(0, len(moves), moves_per_turn))
            out[f"sweep {along}/{across}"] = turns
    return out


def blind_policies(moves_per_turn: int) -> dict[str, tuple[str, ...]]:
    return {**{t: (t,) for t in open_loop_turns(moves_per_turn)}, **sweeps(moves_per_turn)}


def grid_maps(grid: Grid, run_options: dict | None = None) -> tuple[dict, list, list]:
    """The held-out env options of the grid's FrozenLake cells (``run_options``: a finished cell's, else the
    grid's recipe as it is now), its test maps and its validation maps."""
    task = get_env("frozenlake")
    if run_options is None:
        impl = next((i for i in grid.implementations if i.startswith("frozenlake-")), None)
        if impl is None:
            raise SystemExit(f"error: grid {grid.name} has no frozenlake implementation")
        run_options = cell_config(grid, impl, grid.seeds[0], "warm-start")["env_options"]
    options = task.heldout_env_options(run_options)  # as lab.compare evaluates
    test = task.problems("heldout", n=grid.eval_n, seed=grid.eval_seed, **options)
    val = (validation_problems(task, grid.validation_n, grid.validation_seed, grid.eval_n, grid.eval_seed, **options)
           if grid.validation_n else [])
    return options, test, val


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group()
    src.add_argument("--grid", default=None, help="a grid file or name (lab/recipes/grids): its maps, no cells")
    src.add_argument("--results", default=None,
                     help="exported results (results/<grid>) or a grid folder: its grid.yaml and cells "
                          "(default results/core-first, the first core grid, when --grid is not given)")
    p.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    task = get_env("frozenlake")
    cells, loaded = [], None
    if args.grid:
        grid = Grid.load(args.grid)
    else:
        root = Path(args.results or "results/core-first")
        loaded = load_results(root, shipped=True)
        cells = [c for c in (loaded.cells if loaded else []) if c["env"] == "frozenlake"]
        if not cells:
            print(f"error: no finished frozenlake cell in {root / 'cells'} (or no grid.yaml in {root})", file=sys.stderr)
            return 2
        grid = Grid.from_dict(loaded.spec, str(root / "grid.yaml"))
    options, problems, val = grid_maps(grid, cells[0]["config"]["env_options"] if cells else None)
    if cells and len(cells[0]["heldout_by_problem"]) != len(problems):
        print(f"error: the cells were scored on {len(cells[0]['heldout_by_problem'])} maps, the grid names "
              f"{len(problems)}", file=sys.stderr)
        return 2
    n = len(problems)
    policies = blind_policies(options["moves_per_turn"])
    outcomes = {name: [play_open_loop(task, pr, turns, options) for pr in problems] for name, turns in policies.items()}
    ranked = sorted(outcomes, key=lambda t: -sum(outcomes[t]))
    print(f"{len(outcomes)} map-blind policies on {n} test maps (eval seed {grid.eval_seed}, options {options})")
    print("best on the test maps (hindsight):")
    for t in ranked[:5]:
        print(f"  {t:28s} {sum(outcomes[t]) / n:.2f}")
    chosen = None
    if val:
        on_val = {name: sum(play_open_loop(task, pr, turns, options) for pr in val) / len(val)
                  for name, turns in policies.items()}
        pick = max(on_val, key=lambda t: (on_val[t], -list(policies).index(t)))
        chosen = {"policy": pick, "validation": on_val[pick], "validation_maps": len(val),
                  "validation_seed": grid.validation_seed, "test": sum(outcomes[pick]) / n}
        print(f"chosen on {len(val)} validation maps (seed {grid.validation_seed}): {pick} "
              f"(validation {on_val[pick]:.2f}) -> test {chosen['test']:.2f}")

    rows = []
    named = [("warm start", loaded.warm["frozenlake"])] if loaded and "frozenlake" in loaded.warm else []
    named += [(c["cell"], c) for c in cells]
    solving = [t for t in ranked if sum(outcomes[t])]  # an all-fail policy "agrees" with any weak cell
    if named and solving:
        print("\n| cell | greedy held-out | closest map-blind policy | same outcome on | cell's solved maps it solves |"
              "\n|---|---|---|---|---|")
    for name, record in (named if solving else []):
        mine = record["heldout_by_problem"]
        best = max(solving, key=lambda t: sum(a == b for a, b in zip(outcomes[t], mine)))
        agree = sum(a == b for a, b in zip(outcomes[best], mine))
        shared = sum(a and b for a, b in zip(outcomes[best], mine))
        rows.append({"cell": name, "heldout": record["heldout"], "closest_open_loop": best,
                     "open_loop_heldout": sum(outcomes[best]) / n, "agreement": agree,
                     "solved": sum(mine), "solved_by_both": shared})
        print(f"| {name} | {record['heldout']:.2f} | `{best}` ({sum(outcomes[best]) / n:.2f}) | {agree} of {n} maps "
              f"| {shared} of {sum(mine)} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"options": options, "eval_seed": grid.eval_seed, "maps": n,
                                              "best": {t: sum(outcomes[t]) / n for t in ranked[:10]},
                                              "chosen_on_validation": chosen, "cells": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
