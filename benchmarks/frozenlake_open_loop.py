"""Map-blind baselines for the core grid's FrozenLake slice: what does a policy score that never reads the map?

    .venv/bin/python benchmarks/frozenlake_open_loop.py [--results lab/results/core] [--out FILE.json]

An *open-loop* policy writes the same ``<move>...</move>`` every turn, whatever the map shows. For every such
turn of 1 to ``moves_per_turn`` moves (4 + 16 + 64 = 84 of them at the grid's 3 moves a turn) this plays the
grid's 100 held-out maps through the environment itself (the same ``step`` the model's text goes through, so
parsing, holes, walls and the turn limit are the model's) and reports:

- the best open-loop turns and their held-out score: the bar a trained policy has to clear before its score
  says it reads the map;
- for every shipped FrozenLake cell (and the warm start), the open-loop turn (among those that solve at least
  one map) whose per-map outcome agrees most with the cell's greedy per-map outcome, on how many of the 100
  maps, and how many of the cell's solved maps it solves too. 100 of 100 does not prove the cell plays that
  turn, but these maps cannot tell the cell apart from it.

No model runs here; a few seconds on one core.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

from lab.compare.results import load_results
from reference_impls.envs import get_env

DIRECTIONS = ("left", "down", "right", "up")


def play_open_loop(task, problem, turn_text: str, options: dict) -> int:
    """1 if writing ``turn_text`` every turn solves ``problem`` under ``options``, else 0."""
    env = task.make(problem, **options)
    env.reset()
    for _ in range(options["max_turns"] + 1):  # the env ends the episode at its own turn limit
        result = env.step(turn_text)
        if result.done:
            return int(bool(result.info.get("correct")))
    raise RuntimeError(f"episode of {problem.uid} did not end after {options['max_turns'] + 1} turns")


def open_loop_turns(moves_per_turn: int) -> list[str]:
    return [f"<move>{' '.join(moves)}</move>" for n in range(1, moves_per_turn + 1)
            for moves in itertools.product(DIRECTIONS, repeat=n)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--results", default="lab/results/core",
                   help="exported results (lab/results/<grid>) or a grid folder: its grid.yaml and cells")
    p.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    root = Path(args.results)
    loaded = load_results(root, shipped=True)
    cells = [c for c in (loaded.cells if loaded else []) if c["env"] == "frozenlake"]
    if not cells:
        print(f"error: no finished frozenlake cell in {root / 'cells'} (or no grid.yaml in {root})", file=sys.stderr)
        return 2
    eval_seed = loaded.spec["eval"]["seed"]
    n = len(cells[0]["heldout_by_problem"])
    task = get_env("frozenlake")
    options = task.heldout_env_options(cells[0]["config"]["env_options"])  # as lab.compare evaluates
    problems = task.problems("heldout", n=n, seed=eval_seed, **options)

    outcomes = {t: [play_open_loop(task, pr, t, options) for pr in problems]
                for t in open_loop_turns(options["moves_per_turn"])}
    ranked = sorted(outcomes, key=lambda t: -sum(outcomes[t]))
    print(f"{len(outcomes)} open-loop turns on {n} held-out maps (eval seed {eval_seed}, options {options})")
    print("best open-loop turns:")
    for t in ranked[:5]:
        print(f"  {t:28s} {sum(outcomes[t]) / n:.2f}")

    rows = []
    named = [("warm start", loaded.warm["frozenlake"])] if "frozenlake" in loaded.warm else []
    named += [(c["cell"], c) for c in cells]
    solving = [t for t in ranked if sum(outcomes[t])]  # an all-fail turn "agrees" with any weak cell
    print("\n| cell | greedy held-out | closest open-loop turn | same outcome on | cell's solved maps it solves |"
          "\n|---|---|---|---|---|")
    for name, record in named:
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
        Path(args.out).write_text(json.dumps({"options": options, "eval_seed": eval_seed, "maps": n,
                                              "best": {t: sum(outcomes[t]) / n for t in ranked[:10]},
                                              "cells": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
