"""Value-guided search over actions (the planning-external-guide node): best-first search whose
ordering comes from a value function, and the puzzles' adapters.

:func:`best_first` is weighted A*: it expands states in order of ``g + weight * h`` where ``g`` is the
cost so far and ``h = value(state)`` an estimate of the cost to go. With ``weight=1`` and a value that
never overestimates (an admissible heuristic) the first plan found is optimal; ``weight=0`` is
uniform-cost search (breadth-first for unit costs); a large weight is greedy best-first (fewer states,
plans may be longer). The value function is any callable ``state -> float``: the fixed heuristics below
(Manhattan distances) now; a learned value head (e.g. the PPO critic scoring the rendered state) can be
passed in its place later, at the price of optimality guarantees.

Where the env uses it: ``hint_moves > 0`` (an option of ``frozenlake`` and ``sokoban``) appends the
planner's next moves from the current state to every observation, so the policy is an LLM guided by an
external planner (the ``*-guided`` implementation rows).
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable, Hashable, Iterable

from .gridgames import DIRECTIONS, push


def best_first(start: Hashable, successors: Callable[[Hashable], Iterable[tuple[str, Hashable, float]]],
               is_goal: Callable[[Hashable], bool], value: Callable[[Hashable], float], weight: float = 1.0,
               budget: int = 200_000) -> tuple[list[str] | None, int]:
    """``(plan, expanded)``: a list of actions from ``start`` to a goal state (None if none was found
    within ``budget`` expansions) and the number of states expanded."""
    tie = itertools.count()
    best_g = {start: 0.0}
    parent: dict[Hashable, tuple[Hashable, str] | None] = {start: None}
    frontier = [(weight * value(start), next(tie), 0.0, start)]
    expanded = 0
    closed = set()
    while frontier and expanded < budget:
        _, _, g, state = heapq.heappop(frontier)
        if state in closed:
            continue
        closed.add(state)
        if is_goal(state):
            plan = []
            while parent[state] is not None:
                state, action = parent[state]
                plan.append(action)
            return plan[::-1], expanded
        expanded += 1
        for action, nxt, cost in successors(state):
            ng = g + cost
            if nxt not in closed and ng < best_g.get(nxt, float("inf")):
                best_g[nxt] = ng
                parent[nxt] = (state, action)
                heapq.heappush(frontier, (ng + weight * value(nxt), next(tie), ng, nxt))
    return None, expanded


def _manhattan(a, b) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# ----------------------------------------------------------------------------------------------------
# FrozenLake: a state is the player's cell

def lake_search(grid, start=None, value: Callable | None = None, weight: float = 1.0, budget: int = 200_000):
    n_r, n_c = len(grid), len(grid[0])
    goal = next((r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "G")
    start = start or next((r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "S")

    def successors(p):
        for mv, (dr, dc) in DIRECTIONS.items():
            q = (p[0] + dr, p[1] + dc)
            if 0 <= q[0] < n_r and 0 <= q[1] < n_c and grid[q[0]][q[1]] != "H":
                yield mv, q, 1.0

    value = value or (lambda p: _manhattan(p, goal))
    return best_first(start, successors, lambda p: p == goal, value, weight, budget)


# ----------------------------------------------------------------------------------------------------
# Sokoban: a state is (player, boxes)

def box_distance(boxes, targets) -> int:
    """Sum over boxes of the Manhattan distance to the nearest target: every push moves one box one cell,
    so this never overestimates the moves left (admissible)."""
    return sum(min(_manhattan(b, t) for t in targets) for b in boxes)


def sokoban_search(walls, targets, boxes, player, value: Callable | None = None, weight: float = 1.0,
                   budget: int = 200_000):
    targets = frozenset(targets)

    def successors(state):
        for mv in DIRECTIONS:
            out = push(walls, state[1], state[0], mv)
            if out is not None:
                yield mv, (out[1], out[0]), 1.0

    value = value or (lambda s: box_distance(s[1], targets))
    return best_first((player, frozenset(boxes)), successors, lambda s: s[1] == targets, value, weight, budget)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("sokoban-grpo-guided", "GRPO on Sokoban guided by an external planner", "grpo", "sokoban",
                   "Sokoban where every observation carries the next moves of a value-guided best-first search "
                   "from the current state; the policy learns when to follow the planner.",
                   env_options={"levels": (2, 3), "hint_moves": 4}, nodes=("planning-external-guide",),
                   changes="The planner is weighted A* over (player, boxes) ordered by a value function: a fixed, "
                           "admissible heuristic (each box's distance to its nearest target), so its plans are "
                           "optimal; a learned value head can replace it (any callable): measure/value_search.py trains one "
                           "on the LM's hidden state and compares the two searches with the policy at equal model "
                           "calls, while these hints keep the heuristic. The LLM stays the actor: it sees the "
                           "planner's suggestion as text and writes the moves itself. The warm-start demonstrations "
                           "do not show the hint line."),
)
