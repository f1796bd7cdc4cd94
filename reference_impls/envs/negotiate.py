"""Negotiation: split a pool of items with a scripted partner whose values are hidden; the reward is the deal.

Tag format (one action per turn, inside the assistant turn; the environment's text is loss-masked)::

    user:  Items: 1 book, 4 hat, 1 pen. Your values per item: book 2, hat 1, pen 4 (all of it is worth 10 to you).
    model: <action>propose(book=1, hat=4, pen=1)</action>     the items the agent keeps; the partner gets the rest
    env:   <reply>Partner: No, that leaves me too little. I care most about the book. I propose: you get book=0,
           hat=4, pen=1.</reply>
    model: <action>accept()</action>                          the deal (worth 8 to the agent): the episode ends

Actions: ``propose(kind=N, ...)`` (every kind of the pool named once, N from 0 to its count: what the agent
keeps) and ``accept()`` (takes the partner's last counter-proposal). An action is read by :func:`parse_action`
(regular expressions and integer conversion; nothing the model writes is evaluated). A bad action (unknown,
malformed, a kind missing, repeated or not in the pool, a count out of range, accept() with no proposal on the
table) changes nothing, spends the turn and is answered ``error: ...`` naming what was wrong.
The partner
    Scripted, with its own values per item (hidden from the agent; each side's values make the whole pool worth
    10 to it). It accepts a proposal when the share left to it is worth at least ``threshold * 10`` to it; the
    threshold starts at ``firmness`` and drops by ``concession`` after each proposal it rejects, down to
    ``floor``. When it rejects, it names the kind it values most per item and counter-proposes: it keeps the
    items it values most per item (ties broken by the kind's name) until its share reaches its current
    threshold, and offers the agent the rest.
Problems
    A pool of kinds (from book, hat, ball, pen, cup, lamp) with counts 1 to 4 and both sides' values, seeded.
    Level 1: two kinds; level 2: three; level 3: four. Both sides' values differ, and a game is drawn again
    unless some split the partner (at its default options) accepts at once is worth at least ``MIN_OPENING`` to
    the agent, so every game leaves room for a deal good for both.
Splits
    ``train``, ``validation`` and ``heldout`` hold different games: a game (pool and both value vectors) belongs
    to one split by a stable hash of itself (one in four held out, one in eight for validation).
Reward
    With a deal: the agent's value of its share divided by 10 (its value of the whole pool). Without one (the
    turns run out, or a turn has no action): 0. ``correct`` when a deal was reached and it is Pareto-optimal (no
    other split is worth at least as much to both sides and more to one).
"""
from __future__ import annotations

import hashlib
import itertools
import random
import re
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="negotiate",
    description="Negotiates: propose(kind=N, ...) keeps N of each kind, accept() takes the partner's offer.",
    call_open="<action>",
    call_close="</action>",
    result_open="<reply>",
    result_close="</reply>",
)

SYSTEM_PROMPT = (
    "You negotiate how to split a pool of items with a partner. You know your own value of each item; the partner "
    "values them differently and does not say how. Each turn write one action: "
    "<action>propose(book=1, hat=2)</action> names how many of EVERY kind you keep (the partner gets the rest), "
    "or <action>accept()</action> takes the partner's last offer. The partner answers in <reply>...</reply>. "
    "Your score is the value of what you keep when a deal is made, and nothing without a deal."
)

KINDS = ("book", "hat", "ball", "pen", "cup", "lamp")
LEVELS = (1, 2, 3)
LEVEL_KINDS = {1: 2, 2: 3, 3: 4}
SPLITS = ("train", "validation", "heldout")
TOTAL = 10  # each side's value of the whole pool
MIN_OPENING = 4  # a game is drawn again when no split the partner accepts at once is worth this much to the agent


@dataclass(frozen=True)
class Problem:
    kinds: tuple[str, ...]
    counts: tuple[int, ...]
    values: tuple[int, ...]  # the agent's, per item of each kind
    partner_values: tuple[int, ...]  # hidden from the agent
    level: int
    split: str
    uid: str

    @property
    def family(self) -> str:
        return f"level-{self.level}"

    def worth(self, keep: tuple[int, ...], values: tuple[int, ...]) -> int:
        return sum(k * v for k, v in zip(keep, values))

    def agent_value(self, keep: tuple[int, ...]) -> int:
        return self.worth(keep, self.values)

    def partner_value(self, keep: tuple[int, ...]) -> int:
        """The partner's value of what the agent does NOT keep."""
        return self.worth(tuple(c - k for c, k in zip(self.counts, keep)), self.partner_values)

    def all_splits(self):
        return itertools.product(*(range(c + 1) for c in self.counts))

    def pareto_optimal(self, keep: tuple[int, ...]) -> bool:
        mine, theirs = self.agent_value(keep), self.partner_value(keep)
        return not any((a := self.agent_value(s)) >= mine and (b := self.partner_value(s)) >= theirs
                       and (a, b) != (mine, theirs) for s in self.all_splits())


def split_of(kinds, counts, values, partner_values) -> str:
    """The split a game belongs to: a stable hash of the game (1/4 held out, 1/8 validation, the rest train)."""
    key = f"negotiate/{kinds}/{counts}/{values}/{partner_values}"
    bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _values(rng: random.Random, counts: tuple[int, ...]) -> tuple[int, ...] | None:
    """Per-item values (whole numbers, some may be 0) that make the pool worth TOTAL, or None (draw again)."""
    left = TOTAL
    order = list(range(len(counts)))
    rng.shuffle(order)
    drawn = [0] * len(counts)
    for position, i in enumerate(order):
        if position == len(order) - 1:
            if left % counts[i]:
                return None
            drawn[i] = left // counts[i]
        else:
            drawn[i] = rng.randint(0, left // counts[i])
            left -= drawn[i] * counts[i]
    return tuple(drawn)


def make_problem(split: str, seed: int, level: int, index: int) -> Problem:
    rng = random.Random(f"negotiate/{split}/{seed}/{level}/{index}")
    for _ in range(10_000):
        kinds = tuple(sorted(rng.sample(KINDS, LEVEL_KINDS[level]), key=KINDS.index))
        counts = tuple(rng.randint(1, 4) for _ in kinds)
        values, partner = _values(rng, counts), _values(rng, counts)
        if values is None or partner is None or values == partner:
            continue
        if split_of(kinds, counts, values, partner) != split:
            continue
        problem = Problem(kinds, counts, values, partner, level, split, f"{split}-{seed}-{level}-{index}")
        # a game worth playing: some split the default partner accepts at once is worth MIN_OPENING to the agent
        if problem.agent_value(best_opening(problem)) >= MIN_OPENING:
            return problem
    raise RuntimeError("no game found for the split")  # pragma: no cover - every split holds many games


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"negotiate: split must be one of {', '.join(SPLITS)}, got {split!r}")
    levels = tuple(levels)
    if not levels:
        raise ValueError("negotiate: choose at least one level")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# actions

_ACTION = re.compile(r"^\s*(?P<verb>[A-Za-z_]+)\s*\((?P<args>.*)\)\s*$", re.S)
_PAIR = re.compile(r"^\s*(?P<kind>[A-Za-z]+)\s*[=:]\s*(?P<count>[-+]?\d{1,4})\s*$")


def _kind(word: str, kinds: tuple[str, ...]) -> str | None:
    word = word.lower()
    for kind in kinds:
        if word in (kind, kind + "s", kind + "es"):
            return kind
    return None


def parse_action(text: str, problem: Problem) -> tuple[tuple | None, str]:
    """``propose(book=1, ...)`` -> (("propose", counts kept per kind), ""), ``accept()`` -> (("accept",), "");
    else (None, what is wrong). Never raises, never evaluates."""
    text = text[:200]
    m = _ACTION.match(text)
    example = ", ".join(f"{k}=0" for k in problem.kinds)
    if m is None:
        return None, f"unknown action {text.strip()[:40]!r}; write propose({example}) or accept()"
    verb, args = m.group("verb").lower(), m.group("args").strip()
    if verb == "accept":
        return (("accept",), "") if not args else (None, f"accept takes nothing; got {args[:20]!r}")
    if verb != "propose":
        return None, f"unknown action {verb!r}; the actions are propose and accept"
    keep: dict[str, int] = {}
    for part in [p for p in args.split(",") if p.strip()]:
        pair = _PAIR.match(part)
        if pair is None:
            return None, f"propose takes kind=count pairs, e.g. propose({example}); got {part.strip()[:20]!r}"
        kind = _kind(pair.group("kind"), problem.kinds)
        if kind is None:
            return None, f"{pair.group('kind')[:20]!r} is not in the pool; the kinds are {', '.join(problem.kinds)}"
        if kind in keep:
            return None, f"{kind} is named twice"
        count = int(pair.group("count"))
        limit = problem.counts[problem.kinds.index(kind)]
        if not 0 <= count <= limit:
            return None, f"{kind}={count}: the pool holds {limit} {kind}, so keep from 0 to {limit}"
        keep[kind] = count
    missing = [k for k in problem.kinds if k not in keep]
    if missing:
        return None, f"propose names every kind; missing: {', '.join(missing)}"
    return ("propose", tuple(keep[k] for k in problem.kinds)), ""


def written(problem: Problem, keep: tuple[int, ...]) -> str:
    return ", ".join(f"{k}={n}" for k, n in zip(problem.kinds, keep))


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class NegotiateConfig(Options):
    """The negotiate env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Kinds of item in the pool: 1 = two, 2 = three, 3 = four.",
                                     choices=LEVELS)
    max_turns: int = option(6, "Turns allowed; the episode ends without a deal (reward 0) when they run out.",
                            low=1, high=32, aliases=("max_tool_calls",))
    firmness: float = option(0.6, "The share of its own value the partner first asks for.", low=0.0, high=1.0)
    concession: float = option(0.1, "How much the partner's threshold drops after each proposal it rejects.",
                               low=0.0, high=1.0)
    floor: float = option(0.4, "The lowest share of its value the partner accepts.", low=0.0, high=1.0)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env negotiate): choose at least one level")
        if self.floor > self.firmness:
            raise ConfigError(f"--floor (option of --env negotiate): {self.floor} is above --firmness "
                              f"{self.firmness}; the partner's threshold starts at firmness and drops to floor")


class Partner:
    """The scripted partner (see the module docstring)."""

    def __init__(self, problem: Problem, config: NegotiateConfig):
        self.problem, self.config = problem, config
        self.rejections = 0

    @property
    def threshold(self) -> float:
        c = self.config
        return max(c.floor, c.firmness - c.concession * self.rejections) * TOTAL

    def accepts(self, keep: tuple[int, ...]) -> bool:
        return self.problem.partner_value(keep) >= self.threshold - 1e-9

    def _order(self) -> list[int]:
        """The kinds, the one it values most per item first (ties by name)."""
        p = self.problem
        return sorted(range(len(p.kinds)), key=lambda i: (-p.partner_values[i], p.kinds[i]))

    def counter(self) -> tuple[int, ...]:
        """What it offers the agent: it takes the items it values most per item until its threshold is met."""
        p = self.problem
        keep = list(p.counts)  # the agent's share; the partner takes from it
        for i in self._order():
            while keep[i] and p.partner_value(tuple(keep)) < self.threshold - 1e-9:
                keep[i] -= 1
        return tuple(keep)

    def favourite(self) -> str:
        return self.problem.kinds[self._order()[0]]


class NegotiateEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close,)

    def __init__(self, problem: Problem, config: NegotiateConfig | None = None):
        self.problem = problem
        self.config = config or NegotiateConfig()
        self.partner = Partner(problem, self.config)
        self.turns = 0
        self.offer: tuple[int, ...] | None = None  # the partner's counter-proposal on the table

    def reset(self) -> list[dict[str, str]]:
        self.partner, self.turns, self.offer = Partner(self.problem, self.config), 0, None
        p = self.problem
        items = ", ".join(f"{c} {k}" for k, c in zip(p.kinds, p.counts))
        values = ", ".join(f"{k} {v}" for k, v in zip(p.kinds, p.values))
        user = (f"Items: {items}. Your values per item: {values} (all of it is worth {TOTAL} to you). "
                f"You have {self.config.max_turns} turns to make a deal.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def _deal(self, keep: tuple[int, ...]) -> StepResult:
        p = self.problem
        return StepResult(None, True, p.agent_value(keep) / TOTAL,
                          {"tool_calls": self.turns, "deal": True, "kept": written(p, keep),
                           "agent_value": p.agent_value(keep), "partner_value": p.partner_value(keep),
                           "correct": p.pareto_optimal(keep)})

    def step(self, model_text: str) -> StepResult:
        call = TOOL.find_call(model_text)
        base = {"tool_calls": self.turns, "deal": False, "correct": False}
        if call is None:
            return StepResult(None, True, 0.0, {**base, "error": "no <action>...</action> in the turn"})
        if self.turns >= self.config.max_turns:
            return StepResult(None, True, 0.0, {**base, "truncated": True,
                                                "error": f"all {self.config.max_turns} turns were used; no deal"})
        self.turns += 1
        action, error = parse_action(call.group(1), self.problem)
        if action is not None and action[0] == "accept":
            if self.offer is None:
                error = "there is no offer to accept yet; propose a split first"
            else:
                return self._deal(self.offer)
        if action is None or error:
            return StepResult(TOOL.result(f"error: {error}"), False, 0.0, {"tool_calls": self.turns})
        keep = action[1]
        if self.partner.accepts(keep):
            return self._deal(keep)
        self.partner.rejections += 1
        self.offer = self.partner.counter()
        reply = (f"Partner: No, that leaves me too little. I care most about the {self.partner.favourite()}. "
                 f"I propose: you get {written(self.problem, self.offer)}.")
        return StepResult(TOOL.result(reply), False, 0.0, {"tool_calls": self.turns})


def best_opening(problem: Problem, config: NegotiateConfig | None = None) -> tuple[int, ...]:
    """The split worth most to the agent among those the partner accepts at once (ties: more for the partner).
    Written with the partner's hidden values: an oracle's move, used only to write demonstrations."""
    partner = Partner(problem, config or NegotiateConfig())
    return max((s for s in problem.all_splits() if partner.accepts(s)),
               key=lambda s: (problem.agent_value(s), problem.partner_value(s)))


def demonstration(problem: Problem, config: NegotiateConfig | None = None) -> list[tuple[str, str]]:
    """One proposal, the best the partner accepts at once (:func:`best_opening`): it teaches the action format
    and that asking for what one values, leaving the rest, closes a good deal."""
    return [("model", f"{TOOL.call_open}propose({written(problem, best_opening(problem, config))}){TOOL.call_close}")]


def _problems(split: str, n: int, seed: int, config: NegotiateConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("negotiate", NegotiateConfig, _problems, NegotiateEnv, demonstration, demonstration_takes_config=True,
               title="Negotiation: split items with a scripted partner whose values are hidden",
               validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("negotiate-grpo", "Negotiation with a scripted partner, hidden values (GRPO)", "grpo",
                   "negotiate",
                   "An agent that bargains over how to split a pool of items with a partner whose values it does "
                   "not know, by proposals and acceptance, and is rewarded with what its share of the deal is worth "
                   "to it.",
                   nodes=("other-social",),
                   changes="A small stand-in for social tasks: two parties with private, differing goals, a "
                           "dialogue of offers, information that comes only from what the other side says (its "
                           "refusals name what it values most, its counter-offers), and a reward that depends on "
                           "reaching an agreement. Simplifies: the partner is a fixed script that concedes on a "
                           "schedule (not a learning or a language-model agent), the dialogue is two verbs rather "
                           "than free text, and the goal is one number (the deal's value) rather than Sotopia's "
                           "several social dimensions.",
                   equation=r"r = \mathbb{1}[\text{deal}]\cdot\frac{1}{10}\sum_{i} k_i\, v_i"),
)
