"""What the grid puzzles (FrozenLake, Sokoban) share: the move tags, the move parser, the reward
switches and the multi-turn episode loop. Each puzzle module supplies a *game* (its state, its moves,
its text rendering, its progress measure) and a solver.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <move>right right down</move>      one or a few moves (up to ``moves_per_turn``)
    env:   <state>...the grid after them...</state>
    model: <move>down</move>
    ...                                        the episode ends by itself when the puzzle is solved
                                               (or lost, or after ``max_turns`` turns)

Moves are the words ``up down left right`` (also ``u d l r`` and ``north south west east``), separated
by spaces, commas or newlines. A tag with an unknown word applies none of its moves and answers with an
error line and the unchanged grid (the turn still counts). Moves past ``moves_per_turn`` in one tag are
ignored and said so. Writing ``<answer>...</answer>`` ends the episode (a give-up); text with no
complete tag ends it too (EOS or the token limit).

Reward (the switches are options of each puzzle):
    ``1.0`` when solved, else ``0.0`` (outcome only, the default). ``shaping`` > 0 adds a progress term,
    progress being the puzzle's own measure in [0, 1] (FrozenLake: the fraction of the start's
    shortest-path distance to the goal that has been closed; Sokoban: the fraction of boxes on
    targets). ``shaping_mode="final"`` adds ``shaping * progress`` at the end of the episode;
    ``shaping_mode="turn"`` is the turn-level variant for long horizons: every turn earns
    ``shaping * (progress after - progress before) - turn_cost``. The rollout credits an episode with
    one number, so the turn rewards are summed into the episode reward; ``info["turn_rewards"]`` keeps the
    per-turn list for a turn-level credit assigner. (Without ``turn_cost`` the sum telescopes to
    ``shaping * (final - initial progress)``; ``turn_cost`` is what makes long plans cost more.)
"""
from __future__ import annotations

import hashlib
import re
from typing import Protocol

from dataclasses import dataclass

from ..options import Options, option
from . import StepResult, ToolSpec, replay_calls

TOOL = ToolSpec(
    name="move",
    description="Applies one or a few moves (up, down, left, right) and shows the grid after them.",
    call_open="<move>",
    call_close="</move>",
    result_open="<state>",
    result_close="</state>",
)

DIRECTIONS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
_ALIASES = {"u": "up", "d": "down", "l": "left", "r": "right", "north": "up", "south": "down", "west": "left",
            "east": "right", **{k: k for k in DIRECTIONS}}
_WORD = re.compile(r"[^\s,;]+")
MAX_WORDS = 64  # a tag with more words than this is answered with an error, not parsed further


def push(walls, boxes: frozenset, player: tuple[int, int], direction: str):
    """Sokoban's move rule: ``(boxes, player)`` after one move (a box walked into is pushed one cell on), or
    None when it is blocked (a wall, or a box against a wall or another box). Here, below both, so that
    ``sokoban`` (the game) and ``plansearch`` (its solver's successors) import it from one place."""
    d = DIRECTIONS[direction]
    nxt = (player[0] + d[0], player[1] + d[1])
    if nxt in walls:
        return None
    if nxt in boxes:
        beyond = (nxt[0] + d[0], nxt[1] + d[1])
        if beyond in walls or beyond in boxes:
            return None
        return (boxes - {nxt}) | {beyond}, nxt
    return boxes, nxt


def parse_moves(text: str) -> tuple[list[str], str | None]:
    """``(moves, None)`` or ``([], error message)``. Case-insensitive; never raises."""
    words = _WORD.findall(text[:4096])
    if not words:
        return [], "no move given; write e.g. <move>right down</move>"
    if len(words) > MAX_WORDS:
        return [], f"too many words ({len(words)}) in one <move> tag"
    moves = []
    for w in words:
        key = w.strip(".!?:'\"()[]").lower()
        if key not in _ALIASES:
            shown = w if len(w) <= 20 else w[:20] + "..."
            return [], f"unknown move {shown!r}; use up, down, left, right"
        moves.append(_ALIASES[key])
    return moves, None


def split_of(key: str, heldout_every: int = 4) -> str:
    """``train`` or ``heldout`` for a puzzle by a stable hash of its content (one in ``heldout_every``
    held out): the same map can never be in both splits, under any seed."""
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
    return "heldout" if h % heldout_every == 0 else "train"


@dataclass
class GridGameOptions(Options):
    """The turn, shaping and planner options every grid game shares (a game adds ``levels``)."""

    moves_per_turn: int = option(3, "Moves played from one <move> tag; more are ignored.", low=1, high=64)
    max_turns: int = option(8, "Turns (tags) allowed; the episode ends unsolved after them.", low=1, high=64)
    shaping: float = option(0.0, "Weight of the game's progress term (FrozenLake: fraction of the start's distance "
                            "to G closed; Sokoban: fraction of boxes on targets); 0 = outcome reward only.",
                            low=0.0, high=10.0)
    shaping_mode: str = option("final", "final = add shaping*progress at the end; turn = each turn earns "
                               "shaping*(progress gained) - turn_cost (turn-level, for long horizons).",
                               choices=("final", "turn"))
    turn_cost: float = option(0.0, "Cost per turn in shaping_mode=turn.", low=0.0, high=1.0)
    hint_moves: int = option(0, "External planner: after each grid, show the next this-many moves of a value-guided "
                             "best-first search from the current state (0 = off).", low=0, high=64)


class Game(Protocol):
    """A puzzle's state, mutated by :meth:`move`."""

    def move(self, direction: str) -> str:
        """Apply one move; returns ``"ok"``, ``"blocked"`` (nothing changed), ``"won"`` or ``"lost"``."""

    def render(self) -> str: ...

    def progress(self) -> float: ...

    def plan(self) -> list[str] | None:
        """A plan from the current state (the external planner, for ``hint_moves``)."""

    @property
    def solved(self) -> bool: ...


class GridGameEnv:
    """One episode of a grid puzzle. Subclasses set ``system_prompt`` and implement ``new_game`` and
    ``goal_text``; the config must have ``moves_per_turn``, ``max_turns``, ``shaping``, ``shaping_mode``,
    ``turn_cost`` and ``hint_moves``."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)
    system_prompt = ""

    def __init__(self, problem, config):
        self.problem = problem
        self.config = config
        self.reset()

    def new_game(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def goal_text(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def reset(self) -> list[dict[str, str]]:
        self.game = self.new_game()
        self.turns, self.moves_made = 0, 0
        self.turn_rewards: list[float] = []
        self.start_progress = self.game.progress()
        self.lost = False
        user = f"{self.goal_text()}\n{TOOL.result_open}{self._with_hint(self.game.render())}{TOOL.result_close}"
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}]

    def _with_hint(self, text: str) -> str:
        """``hint_moves > 0``: the external planner's next moves from here (``plansearch``) follow the grid."""
        k = getattr(self.config, "hint_moves", 0)
        if k <= 0:
            return text
        plan = self.game.plan()
        hint = " ".join(plan[:k]) if plan else "no plan found"
        return f"{text}\nplanner suggests: {hint}"

    def _reward(self) -> float:
        cfg = self.config
        reward = float(self.game.solved)
        if cfg.shaping_mode == "turn":
            reward += sum(self.turn_rewards)
        elif cfg.shaping > 0:
            reward += cfg.shaping * self.game.progress()
        return reward

    def _end(self, **extra) -> StepResult:
        info = {"correct": bool(self.game.solved), "turns": self.turns, "moves": self.moves_made,
                "progress": round(self.game.progress(), 4), "tool_calls": self.turns,
                "turn_rewards": list(self.turn_rewards), **extra}
        return StepResult(None, True, self._reward(), info)

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        if action is None:
            return self._end(answer=None)
        if action[0] == "answer":
            return self._end(answer=action[1].group(1).strip()[:200])
        self.turns += 1
        before = self.game.progress()
        moves, error = parse_moves(action[1].group(1))
        notes = []
        if error:
            notes.append(f"error: {error}")
        else:
            if len(moves) > self.config.moves_per_turn:
                notes.append(f"only the first {self.config.moves_per_turn} moves of a turn are played")
                moves = moves[: self.config.moves_per_turn]
            for mv in moves:
                outcome = self.game.move(mv)
                self.moves_made += 1
                if outcome == "blocked":
                    notes.append(f"{mv}: blocked")
                if outcome in ("won", "lost"):
                    self.lost = outcome == "lost"
                    break
        self.turn_rewards.append(self.config.shaping * (self.game.progress() - before) - self.config.turn_cost
                                 if self.config.shaping_mode == "turn" else 0.0)
        if self.game.solved or self.lost:
            return self._end(lost=self.lost)
        if self.turns >= self.config.max_turns:
            return self._end(truncated=True)
        body = self._with_hint("\n".join(notes + [self.game.render()]))
        return StepResult(TOOL.result(body), False, 0.0,
                          {"turns": self.turns, "tool_calls": self.turns, "progress": round(self.game.progress(), 4)})


def plan_demonstration(env: GridGameEnv, plan: list[str]) -> list[tuple[str, str]]:
    """The solver's plan as a transcript: ``moves_per_turn`` moves per tag, the env's real answers between."""
    env.reset()
    k = env.config.moves_per_turn
    return replay_calls(env, TOOL, (" ".join(plan[i:i + k]) for i in range(0, len(plan), k)))
