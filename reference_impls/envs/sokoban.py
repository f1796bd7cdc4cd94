"""Sokoban as a multi-turn text game (planning): push every box onto a target.

Grid: ``#`` wall, ``_`` floor, ``.`` target, ``$`` box, ``*`` box on a target, ``@`` you, ``+`` you on a
target. You push a box by walking into it (never pull; two boxes or a box and a wall cannot move).
Moves and tags as in ``gridgames`` (``<move>up left</move>``, the grid back in ``<state>``).

Generator (our own; why not a package: gym-sokoban needs a rendering stack and is unmaintained, and
reasoning-gym's generator brings a large dependency tree for one puzzle; a reverse-play generator with
an exact solver is short and makes solvability a property we test, not trust):
    1. a walled room of the level's size, with a few random inner walls (the floor stays connected);
    2. the solved state: boxes on random targets, the player on a random free floor cell;
    3. *reverse play*: random player moves in which the player may *pull* the box behind it; every pull
       is a push played backwards, so the reached state is solvable by construction;
    4. a breadth-first solver over (player, boxes) with a node budget finds a shortest move plan; the
       state is kept only if the solver succeeds and the plan length is within the level's range (the
       plan is the SFT demonstration, and a test re-plays it for every generated puzzle).
Levels (room incl. walls, boxes, inner walls, plan length): 1 = 6x6, 1 box, 0-1 walls, 3-10 moves;
2 = 7x7, 1 box, 1-3 walls, 6-16 moves; 3 = 7x7, 2 boxes, 0-2 walls, 8-24 moves.
Splits: a puzzle is ``train`` or ``heldout`` by a stable hash of its start grid (one in four held out).
Progress (for the shaping switch): the fraction of boxes on targets. Deadlocks are not detected: a
stuck episode runs until ``max_turns``.
"""
from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, replace

from ..options import option
from . import EnvSpec
from .gridgames import DIRECTIONS, GridGameEnv, GridGameOptions, plan_demonstration, push, split_of

# room size incl. walls, boxes, inner walls (lo, hi), plan length (lo, hi), reverse-play steps
LEVELS = {1: (6, 1, (0, 1), (3, 10), 30), 2: (7, 1, (1, 3), (6, 16), 50), 3: (7, 2, (0, 2), (8, 24), 80)}
NODE_BUDGET = 200_000

SYSTEM_PROMPT = (
    "Play Sokoban. Push every box $ onto a target . by walking into it (you are @; # is a wall, _ floor, "
    "* a box on a target, + you on a target). Boxes cannot be pulled. Write one or a few moves as "
    "<move>up left</move> (up, down, left, right); the new grid comes back in <state>...</state>. "
    "The episode ends when every box is on a target."
)

Pos = tuple[int, int]


@dataclass(frozen=True)
class Problem:
    walls: frozenset  # wall cells
    targets: frozenset
    boxes: frozenset
    player: Pos
    size: int
    plan: tuple[str, ...]  # a shortest solution (BFS), for the demonstration
    level: int
    family: str
    split: str
    uid: str


def _add(p: Pos, d: tuple[int, int]) -> Pos:
    return p[0] + d[0], p[1] + d[1]


def render(size, walls, targets, boxes, player) -> str:
    rows = []
    for r in range(size):
        row = []
        for c in range(size):
            p = (r, c)
            if p in walls:
                row.append("#")
            elif p == player:
                row.append("+" if p in targets else "@")
            elif p in boxes:
                row.append("*" if p in targets else "$")
            else:
                row.append("." if p in targets else "_")
        rows.append("".join(row))
    return "\n".join(rows)


def solve(walls, targets, boxes, player, budget: int = NODE_BUDGET) -> list[str] | None:
    """A shortest move list that puts every box on a target (breadth-first over (player, boxes)), or None
    when there is none or more than ``budget`` states would be expanded."""
    start = (player, frozenset(boxes))
    prev = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        if state[1] == targets:
            path = []
            while prev[state] is not None:
                state, mv = prev[state]
                path.append(mv)
            return path[::-1]
        if len(prev) > budget:
            return None
        for mv in DIRECTIONS:
            out = push(walls, state[1], state[0], mv)
            if out is not None:
                nxt = (out[1], out[0])
                if nxt not in prev:
                    prev[nxt] = (state, mv)
                    queue.append(nxt)
    return None


def _connected(floor: set) -> bool:
    if not floor:
        return False
    first = next(iter(floor))
    seen, queue = {first}, deque([first])
    while queue:
        cur = queue.popleft()
        for d in DIRECTIONS.values():
            nxt = _add(cur, d)
            if nxt in floor and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen) == len(floor)


def _candidate(rng: random.Random, level: int):
    size, n_boxes, (w_lo, w_hi), _, steps = LEVELS[level]
    walls = {(r, c) for r in range(size) for c in range(size) if r in (0, size - 1) or c in (0, size - 1)}
    floor = {(r, c) for r in range(1, size - 1) for c in range(1, size - 1)}
    for _ in range(rng.randint(w_lo, w_hi)):
        cell = rng.choice(sorted(floor))
        if _connected(floor - {cell}):
            floor.discard(cell)
            walls.add(cell)
    cells = sorted(floor)
    targets = frozenset(rng.sample(cells, n_boxes))
    boxes = set(targets)
    player = rng.choice([c for c in cells if c not in boxes])
    for _ in range(steps):  # reverse play: move, possibly pulling the box behind
        d = DIRECTIONS[rng.choice(sorted(DIRECTIONS))]
        nxt = _add(player, d)
        if nxt not in floor or nxt in boxes:
            continue
        behind = (player[0] - d[0], player[1] - d[1])
        if behind in boxes and rng.random() < 0.6:
            boxes.discard(behind)
            boxes.add(player)
        player = nxt
    return size, frozenset(walls), targets, frozenset(boxes), player


def make_problem(split: str, seed: int, level: int, index: int) -> Problem:
    rng = random.Random(f"sokoban/{split}/{seed}/{level}/{index}")
    lo, hi = LEVELS[level][3]
    for _ in range(100_000):
        size, walls, targets, boxes, player = _candidate(rng, level)
        if boxes == targets:
            continue
        if split_of("sokoban/" + render(size, walls, targets, boxes, player)) != split:
            continue
        plan = solve(walls, targets, boxes, player)
        if plan is not None and lo <= len(plan) <= hi:
            return Problem(walls, targets, boxes, player, size, tuple(plan), level, f"level{level}", split,
                           f"{split}-{seed}-{level}-{index}")
    raise RuntimeError("no Sokoban puzzle found")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3)) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    levels = tuple(levels)
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


@dataclass
class SokobanConfig(GridGameOptions):
    """Sokoban's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2), "Puzzle levels: 1 = 6x6 one box, 2 = 7x7 one box with inner walls, "
                                     "3 = 7x7 two boxes.", choices=(1, 2, 3))
    moves_per_turn: int = option(4, "Moves played from one <move> tag; more are ignored.", low=1, high=64)


class _Board:
    def __init__(self, p: Problem):
        self.p = p
        self.boxes, self.player = p.boxes, p.player

    def move(self, direction: str) -> str:
        out = push(self.p.walls, self.boxes, self.player, direction)
        if out is None:
            return "blocked"
        self.boxes, self.player = out
        return "won" if self.solved else "ok"

    @property
    def solved(self) -> bool:
        return self.boxes == self.p.targets

    def progress(self) -> float:
        return len(self.boxes & self.p.targets) / len(self.p.targets)

    def plan(self) -> list[str] | None:
        from .plansearch import sokoban_search

        return sokoban_search(self.p.walls, self.p.targets, self.boxes, self.player, budget=20_000)[0]

    def render(self) -> str:
        return render(self.p.size, self.p.walls, self.p.targets, self.boxes, self.player)


class SokobanEnv(GridGameEnv):
    system_prompt = SYSTEM_PROMPT

    def new_game(self):
        return _Board(self.problem)

    def goal_text(self) -> str:
        n = len(self.problem.targets)
        return f"Push the {'box' if n == 1 else f'{n} boxes'} onto the target{'s' if n > 1 else ''}."


def demonstration(problem: Problem, config: SokobanConfig | None = None) -> list[tuple[str, str]]:
    """The shortest plan, ``moves_per_turn`` moves a tag, with the run's hints if it has them; the turn limit is
    lifted so that the whole plan is shown."""
    env = SokobanEnv(problem, replace(config or SokobanConfig(), max_turns=64))
    return plan_demonstration(env, list(problem.plan))


def _problems(split: str, n: int, seed: int, config: SokobanConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("sokoban", SokobanConfig, _problems, SokobanEnv, demonstration,
               title="Sokoban as a text planning game", demonstration_takes_config=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation, PLANNING_NODES  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("sokoban-grpo", "GRPO planner on Sokoban (text)", "grpo", "sokoban", "A policy that pushes boxes onto targets over several turns of <move> tags, rewarded when "
                   "every box is placed.",
                   nodes=PLANNING_NODES,
                   changes="Keeps Sokoban's rules (push only, one box at a time, walls) and its success criterion. "
                           "Simplifies the puzzles to small rooms (6x6 or 7x7, one or two boxes) from our own "
                           "reverse-play generator, each checked by an exact breadth-first solver whose shortest plan "
                           "is the warm-start demonstration. Text grid, a few moves per turn; a shaping switch adds "
                           "the fraction of boxes on targets (at the end or per turn). Deadlocks are not detected."),
)
