"""FrozenLake as a multi-turn text game (planning): walk from S to G over the ice without falling into a hole.

The map generator and the dynamics are gymnasium's own (``gymnasium.envs.toy_text.frozen_lake``):
maps come from its ``generate_random_map(size, p, seed)`` and every move is a step of its
``FrozenLakeEnv`` (``is_slippery=False``: the deterministic lake, so that a plan can be checked and
demonstrated). What this module adds is the text interface (see ``gridgames``: ``<move>`` tags, the grid
in ``<state>`` tags), seeded splits and levels, a BFS solver, and the reward switches.

Grid: ``S`` start, ``F`` frozen (safe), ``H`` hole (the episode ends, lost), ``G`` goal (won), ``P`` you.
Moving off the edge leaves you in place (gymnasium's rule; the env says "blocked").

Levels (size, probability that a tile is frozen): 1 = 4x4, 0.85; 2 = 5x5, 0.8; 3 = 6x6, 0.75;
4 = 8x8, 0.75. Each problem's map is ``generate_random_map`` with a seed derived from
``(split, seed, level, index)``; maps whose shortest path is shorter than the level's minimum are
redrawn, and BFS confirms a path (gymnasium checks too).
Orientation: gymnasium always puts S in the top-left corner and G in the bottom-right, so a policy that
never reads the map ("down right" every turn) solves about 30% of the maps. ``orientation="any"`` turns
and mirrors each map by one of the 8 symmetries of the square (drawn with the map), so S and G sit in
any pair of opposite corners and a fixed move sequence no longer transfers between maps
(``benchmarks/frozenlake_open_loop.py`` measures the best map-blind policy). ``"fixed"`` (the default)
keeps gymnasium's layout.
Splits: a map is ``train`` or ``heldout`` by a stable hash of the map itself (one in four held out),
so no held-out map is ever trained on, under any seed.
Progress (for the shaping switch): ``1 - d(now) / d(start)`` with ``d`` the BFS distance to the goal
over safe tiles.
"""
from __future__ import annotations

import copy
import functools
import random
from collections import deque
from dataclasses import dataclass, replace

from ..options import option
from . import EnvSpec
from .gridgames import DIRECTIONS, TOOL, GridGameEnv, GridGameOptions, plan_demonstration, split_of

LEVELS = {1: (4, 0.85, 2), 2: (5, 0.8, 4), 3: (6, 0.75, 6), 4: (8, 0.75, 8)}  # size, p(frozen), min path
_GYM_ACTION = {"left": 0, "down": 1, "right": 2, "up": 3}

SYSTEM_PROMPT = (
    "You are on a frozen lake. Walk from S to G without stepping into a hole H. The grid shows you as P; "
    "F is safe ice. Write one or a few moves as <move>right down</move> (up, down, left, right); the new "
    "grid comes back in <state>...</state>. The episode ends when you reach G or fall into a hole."
)


@dataclass(frozen=True)
class Problem:
    grid: tuple[str, ...]  # gymnasium's map rows
    plan: tuple[str, ...]  # a shortest safe path (BFS), for the demonstration
    level: int
    family: str  # "level<k>": evaluate.py reports per family
    split: str
    uid: str


def _cells(grid, ch):
    return [(r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == ch]


def bfs(grid, start=None) -> list[str] | None:
    """A shortest list of moves from ``start`` (default S) to G over non-hole tiles, or None."""
    n_r, n_c = len(grid), len(grid[0])
    start = start or _cells(grid, "S")[0]
    prev = {start: None}
    queue = deque([start])
    while queue:
        cur = queue.popleft()
        if grid[cur[0]][cur[1]] == "G":
            path = []
            while prev[cur] is not None:
                cur, mv = prev[cur]
                path.append(mv)
            return path[::-1]
        for mv, (dr, dc) in DIRECTIONS.items():
            nxt = (cur[0] + dr, cur[1] + dc)
            if 0 <= nxt[0] < n_r and 0 <= nxt[1] < n_c and nxt not in prev and grid[nxt[0]][nxt[1]] != "H":
                prev[nxt] = (cur, mv)
                queue.append(nxt)
    return None


@functools.lru_cache(maxsize=1 << 16)
def moves_to_goal(grid: tuple[str, ...], pos: tuple[int, int]) -> int | None:
    """``len(bfs(grid, pos))`` (None when G cannot be reached), remembered: ``_Lake.progress`` asks it after every
    move, for the same few hundred maps (a map-blind baseline plays each map ~90 times)."""
    rest = bfs(grid, pos)
    return None if rest is None else len(rest)


@functools.lru_cache(maxsize=1024)
def _gym_lake(grid: tuple[str, ...]):
    """gymnasium's deterministic FrozenLakeEnv of ``grid``, built once per map (``_Lake`` plays a copy of it)."""
    from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv

    return FrozenLakeEnv(desc=list(grid), is_slippery=False)


ORIENTATIONS = ("fixed", "any")


def symmetry(grid: tuple[str, ...], k: int) -> tuple[str, ...]:
    """``grid`` under the ``k``-th symmetry of the square (0 = itself; 1-3 = turned by 90, 180, 270 degrees
    clockwise; 4-7 = those mirrored left-right)."""
    rows = [list(r) for r in grid]
    for _ in range(k % 4):
        rows = [list(r) for r in zip(*rows[::-1])]  # a quarter turn clockwise
    if k >= 4:
        rows = [r[::-1] for r in rows]
    return tuple("".join(r) for r in rows)


def make_problem(split: str, seed: int, level: int, index: int, orientation: str = "fixed") -> Problem:
    from gymnasium.envs.toy_text.frozen_lake import generate_random_map

    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be one of {', '.join(ORIENTATIONS)}, not {orientation!r}")
    size, p, min_len = LEVELS[level]
    rng = random.Random(f"frozenlake/{split}/{seed}/{level}/{index}")
    # a separate stream, so the "fixed" maps stay exactly the maps drawn before the option existed
    turn = random.Random(f"frozenlake-orientation/{split}/{seed}/{level}/{index}")
    for _ in range(10_000):
        grid = tuple(generate_random_map(size=size, p=p, seed=rng.randrange(2**31)))
        if orientation == "any":
            grid = symmetry(grid, turn.randrange(8))
        if split_of("frozenlake/" + "/".join(grid)) != split:
            continue
        plan = bfs(grid)
        if plan is not None and len(plan) >= min_len:
            return Problem(grid, tuple(plan), level, f"level{level}", split,
                           f"{split}-{seed}-{level}-{index}" + ("-any" if orientation == "any" else ""))
    raise RuntimeError("no FrozenLake map found")  # pragma: no cover - never happens for these levels


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), orientation: str = "fixed") -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    levels = tuple(levels)
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels), orientation) for i in range(n)]


@dataclass
class FrozenLakeConfig(GridGameOptions):
    """FrozenLake's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Map levels: 1 = 4x4, 2 = 5x5, 3 = 6x6, 4 = 8x8 (denser holes "
                                     "and longer paths as the level rises).", choices=(1, 2, 3, 4))
    orientation: str = option("fixed", "fixed = gymnasium's layout (S top-left, G bottom-right: a map-blind 'down "
                              "right' solves ~30%); any = each map turned or mirrored at random, so S and G sit in "
                              "any two opposite corners and the policy must read the map.", choices=ORIENTATIONS)


class _Lake:
    """The game: gymnasium's deterministic FrozenLakeEnv, rendered as text."""

    def __init__(self, grid):
        self.grid = grid
        # a copy of the map's built env: gymnasium builds the transition table of every (tile, move) in its
        # constructor, and an episode's step and reset only rebind the copy's own position and random stream
        self.env = copy.copy(_gym_lake(tuple(grid)))
        self.state, _ = self.env.reset(seed=0)
        self.ncol = len(grid[0])
        self.tile = "S"
        self.start_dist = moves_to_goal(tuple(grid), _cells(grid, "S")[0])

    @property
    def pos(self):
        return divmod(int(self.state), self.ncol)

    def move(self, direction: str) -> str:
        before = self.state
        self.state, _, terminated, _, _ = self.env.step(_GYM_ACTION[direction])
        r, c = self.pos
        self.tile = self.grid[r][c]
        if terminated:
            return "won" if self.tile == "G" else "lost"
        return "blocked" if self.state == before else "ok"

    @property
    def solved(self) -> bool:
        return self.tile == "G"

    def progress(self) -> float:
        if self.tile == "H":
            return 0.0
        rest = moves_to_goal(tuple(self.grid), self.pos)
        return 0.0 if rest is None else max(0.0, 1.0 - rest / self.start_dist)

    def plan(self) -> list[str] | None:
        from .plansearch import lake_search

        return lake_search(self.grid, self.pos)[0] if self.tile not in "HG" else []

    def render(self) -> str:
        r0, c0 = self.pos
        return "\n".join("".join("P" if (r, c) == (r0, c0) else x for c, x in enumerate(row))
                         for r, row in enumerate(self.grid))


class FrozenLakeEnv(GridGameEnv):
    system_prompt = SYSTEM_PROMPT

    def new_game(self):
        return _Lake(self.problem.grid)

    def goal_text(self) -> str:
        return "Reach G."


def demonstration(problem: Problem, config: FrozenLakeConfig | None = None) -> list[tuple[str, str]]:
    """The shortest plan, ``moves_per_turn`` moves a tag, with the run's hints if it has them; the turn limit is
    lifted so that the whole plan is shown."""
    env = FrozenLakeEnv(problem, replace(config or FrozenLakeConfig(), max_turns=64))
    return plan_demonstration(env, list(problem.plan))


def _problems(split: str, n: int, seed: int, config: FrozenLakeConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, orientation=config.orientation)


SPEC = EnvSpec("frozenlake", FrozenLakeConfig, _problems, FrozenLakeEnv, demonstration,
               title="FrozenLake (gymnasium) as a text planning game", demonstration_takes_config=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make
__all__ = ["TOOL", "Problem", "problems", "bfs", "FrozenLakeConfig", "FrozenLakeEnv", "demonstration", "make"]


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation, PLANNING_NODES  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("frozenlake-grpo", "GRPO planner on FrozenLake (text)", "grpo", "frozenlake", "A policy that walks gymnasium's FrozenLake from S to G over several turns of <move> tags, "
                   "rewarded when it reaches the goal.",
                   nodes=PLANNING_NODES,
                   changes="Keeps gymnasium's own FrozenLake: its random-map generator (seeded, levels by map size and "
                           "hole density) and its step function, with the deterministic (non-slippery) ice so that a "
                           "plan can be checked. Simplifies the observation to a text grid and the action to words "
                           "in a <move> tag (a few moves per turn). The reward is the sparse success of the original; "
                           "a shaping switch adds distance progress, either once at the end or per turn (the "
                           "long-horizon option), off by default."),
    Implementation("frozenlake-grpo-turn-reward", "GRPO planner on FrozenLake, turn-level shaping", "grpo",
                   "frozenlake", "FrozenLake with a turn-level reward: each turn earns its distance progress minus a turn cost, "
                   "summed into the episode reward (vs the outcome-only default).",
                   env_options={"levels": (3, 4), "shaping": 0.5, "shaping_mode": "turn", "turn_cost": 0.02},
                   nodes=("capability-others", "planning-internal-driver"),
                   changes="The same lake on the larger maps, with a dense per-turn reward (progress towards the goal "
                           "minus a small cost per turn) on top of success. The rollout still credits the episode with "
                           "one number: the turn rewards are summed, and listed per turn in the episode info."),
    # the core comparison grid's algorithms here (lab/recipes/grids/core.yaml): each with the switches of its
    # calculator row (algorithms/), which tests/test_compare.py checks they keep
    Implementation("frozenlake-dr-grpo", "FrozenLake planner (Dr.GRPO)", "grpo", "frozenlake",
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling. "
                   "On the frozenlake environment, for the comparison grid.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}),
    Implementation("frozenlake-dapo", "FrozenLake planner (DAPO)", "grpo", "frozenlake",
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping. "
                   "On the frozenlake environment, for the comparison grid.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32}),
    Implementation("frozenlake-gspo", "FrozenLake planner (GSPO)", "grpo", "frozenlake",
                   "GRPO with a sequence-level importance ratio (GSPO). "
                   "On the frozenlake environment, for the comparison grid.",
                   {"importance_sampling_level": "sequence", "epsilon_low": 3e-4, "epsilon_high": 4e-4}),
    Implementation("frozenlake-rloo", "FrozenLake planner (RLOO)", "rloo", "frozenlake",
                   "REINFORCE with a leave-one-out baseline over the group. "
                   "On the frozenlake environment, for the comparison grid."),
    Implementation("frozenlake-ppo", "FrozenLake planner (PPO)", "ppo", "frozenlake",
                   "PPO with a value head, token-level GAE over model tokens, clipped policy and value losses. "
                   "On the frozenlake environment, for the comparison grid."),
    Implementation("frozenlake-dpo", "FrozenLake planner (DPO)", "dpo", "frozenlake",
                   "Offline preference optimisation on correct vs incorrect rollouts of the same prompt. "
                   "On the frozenlake environment, for the comparison grid."),
)
