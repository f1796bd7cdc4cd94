"""An embodied household in text (ALFWorld-style): rooms, containers and objects; navigate, open, take,
clean, put. Our own small simulator with seeded layouts.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <action>go to kitchen</action>            one command per turn
    env:   <obs>You are in the kitchen. Exits: hallway. You see a fridge (closed), a countertop with
           a mug, a sinkbasin.</obs>
    model: <action>take mug from countertop</action>
    ...                                              the episode ends by itself when the goal holds

Commands (case-insensitive; articles are ignored): ``look``, ``inventory``, ``go to ROOM`` (a connected
room), ``open X`` / ``close X`` (a container in this room), ``take OBJ from X`` (or ``take OBJ``), ``put
OBJ in X`` / ``put OBJ on X``, ``clean OBJ with sinkbasin`` (in the kitchen, holding it). The agent holds
one object at a time. An unknown or impossible command answers with a short reason ("Nothing happens."
in ALFWorld) and the turn counts. With ``admissible=True`` every observation ends with the list of
commands that would do something (ALFWorld's admissible commands); off, the agent has to know them.

Layouts (seeded): the kitchen plus 2, 3 or 4 other rooms (level 1, 2, 3) joined by doors as a random
tree, so reaching a room may take several moves; each room type has its own receptacles, some of them
closed containers; a dozen objects lie in random receptacles (inside closed containers too).
Tasks (``tasks`` option): ``find`` (navigation: "find the book"; done when the agent stands in the
object's room and can see it, opening its container if needed), ``place`` ("put a mug in the cabinet")
and ``clean_place`` ("put a clean mug in the cabinet": clean it at the kitchen's sinkbasin first).
Splits: a goal is ``train`` or ``heldout`` by a stable hash of its (task, object, target) triple, one
in four held out, so held-out goals are object/receptacle combinations never trained on.
A scripted solver (:func:`solve`) plans every goal from the layout (shortest room path, open what is
closed); tests play it on every generated problem, and it is the SFT demonstration.
Reward: ``1.0`` when the goal holds, else ``0.0`` (ALFWorld's success signal; no shaping).
"""
from __future__ import annotations

import hashlib
import random
import re
from collections import deque
from dataclasses import dataclass

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec, replay_calls

TOOL = ToolSpec(
    name="household",
    description="Runs one household command (go to, open, take, clean, put ...) and describes what happens.",
    call_open="<action>",
    call_close="</action>",
    result_open="<obs>",
    result_close="</obs>",
)

# receptacle: (openable, preposition)
ROOMS: dict[str, dict[str, tuple[bool, str]]] = {
    "kitchen": {"fridge": (True, "in"), "cabinet": (True, "in"), "countertop": (False, "on"),
                "sinkbasin": (False, "in")},
    "living room": {"sofa": (False, "on"), "coffeetable": (False, "on"), "shelf": (False, "on")},
    "bedroom": {"bed": (False, "on"), "dresser": (False, "on"), "wardrobe": (True, "in")},
    "bathroom": {"bathtub": (False, "in"), "cupboard": (True, "in")},
    "office": {"desk": (False, "on"), "drawer": (True, "in"), "bookshelf": (False, "on")},
    "hallway": {"shoerack": (False, "on"), "closet": (True, "in")},
}
OTHER_ROOMS = tuple(r for r in ROOMS if r != "kitchen")
RECEPTACLES = {rec: (room, *spec) for room, recs in ROOMS.items() for rec, spec in recs.items()}
OBJECTS = ("mug", "plate", "apple", "bowl", "spoon", "cloth", "book", "pen", "remote", "towel", "soap",
           "keychain", "cellphone", "candle")
CLEANABLE = ("mug", "plate", "apple", "bowl", "spoon", "cloth")
TASKS = ("find", "place", "clean_place")
LEVEL_ROOMS = {1: 2, 2: 3, 3: 4}  # other rooms besides the kitchen
N_OBJECTS = 10

SYSTEM_PROMPT = (
    "You are a household robot. Reach the goal with one command per turn, written as "
    "<action>command</action>: look, inventory, go to ROOM, open X, close X, take OBJ from X, put OBJ in X "
    "(or on X), clean OBJ with sinkbasin. What happens comes back in <obs>...</obs>."
)


@dataclass(frozen=True)
class Problem:
    rooms: tuple[str, ...]
    doors: tuple[tuple[str, str], ...]
    placement: tuple[tuple[str, str], ...]  # (object, receptacle)
    start: str  # the agent's room
    task: str
    obj: str
    target: str  # a receptacle (place tasks) or the object's room (find)
    goal: str  # the task sentence
    plan: tuple[str, ...]  # the scripted solver's commands
    level: int
    family: str  # the task type: evaluate.py reports per family
    split: str
    uid: str


def split_of(task: str, obj: str, target: str) -> str:
    h = int(hashlib.sha256(f"household/{task}/{obj}/{target}".encode()).hexdigest()[:8], 16)
    return "heldout" if h % 4 == 0 else "train"


# ----------------------------------------------------------------------------------------------------
# the simulator

class House:
    """The mutable world of one episode."""

    def __init__(self, p: Problem):
        self.p = p
        self.room = p.start
        self.holding: str | None = None
        self.where = dict(p.placement)  # object -> receptacle (absent while held)
        self.open = {r: False for r in self.receptacles_all() if RECEPTACLES[r][1]}
        self.clean: set[str] = set()
        self.adj: dict[str, list[str]] = {r: [] for r in p.rooms}
        for a, b in p.doors:
            self.adj[a].append(b)
            self.adj[b].append(a)

    def receptacles_all(self):
        return [rec for room in self.p.rooms for rec in ROOMS[room]]

    def receptacles(self, room=None):
        return list(ROOMS[room or self.room])

    def visible(self, rec: str) -> bool:
        return not RECEPTACLES[rec][1] or self.open[rec]

    def contents(self, rec: str) -> list[str]:
        return sorted(o for o, r in self.where.items() if r == rec)

    def describe(self) -> str:
        parts = []
        for rec in self.receptacles():
            if not self.visible(rec):
                parts.append(f"{_a(rec)} (closed)")
                continue
            items = self.contents(rec)
            prep = RECEPTACLES[rec][2]
            parts.append(_a(rec) + (f" with {', '.join(_a(o) for o in items)} {prep} it" if items else ""))
        return (f"You are in the {self.room}. Exits: {', '.join(sorted(self.adj[self.room]))}. "
                f"You see {', '.join(parts)}.")

    def admissible(self) -> list[str]:
        cmds = ["look", "inventory"] + [f"go to {r}" for r in sorted(self.adj[self.room])]
        for rec in self.receptacles():
            if RECEPTACLES[rec][1]:
                cmds.append(f"{'close' if self.open[rec] else 'open'} {rec}")
            if self.visible(rec):
                if self.holding is None:
                    cmds += [f"take {o} from {rec}" for o in self.contents(rec)]
                else:
                    cmds.append(f"put {self.holding} {RECEPTACLES[rec][2]} {rec}")
        if self.holding and self.room == "kitchen":
            cmds.append(f"clean {self.holding} with sinkbasin")
        return cmds

    def goal_met(self) -> bool:
        p = self.p
        if p.task == "find":
            rec = self.where.get(p.obj)
            return self.holding == p.obj or (rec is not None and RECEPTACLES[rec][0] == self.room
                                             and self.visible(rec))
        placed = self.where.get(p.obj) == p.target
        return placed and (p.task != "clean_place" or p.obj in self.clean)

    def run(self, command: str) -> str:
        """Apply one parsed command; returns the observation text. Never raises on any input."""
        cmd = normalize(command)
        if not cmd:
            return "Nothing happens. (empty command)"
        if cmd in ("look", "look around", "l"):
            return self.describe()
        if cmd in ("inventory", "inv", "i"):
            return f"You are carrying {_a(self.holding) if self.holding else 'nothing'}."
        m = re.fullmatch(r"go to (.+)", cmd)
        if m:
            room = m.group(1)
            if room == self.room:
                return self.describe()
            if room not in self.adj[self.room]:
                if room in self.p.rooms:
                    return f"You cannot get to the {room} from here. Exits: {', '.join(sorted(self.adj[self.room]))}."
                return f"Nothing happens. There is no room called {_short(room)!r}."
            self.room = room
            return self.describe()
        m = re.fullmatch(r"(open|close) (.+)", cmd)
        if m:
            verb, rec = m.groups()
            if rec not in self.receptacles():
                return f"Nothing happens. There is no {_short(rec)} here."
            if not RECEPTACLES[rec][1]:
                return f"The {rec} cannot be opened or closed."
            self.open[rec] = verb == "open"
            if verb == "close":
                return f"You close the {rec}."
            items = self.contents(rec)
            return f"You open the {rec}. " + (f"In it you see {', '.join(_a(o) for o in items)}."
                                              if items else "It is empty.")
        m = re.fullmatch(r"(?:take|pick up|get) (.+?)(?: (?:from|off|out of) (.+))?", cmd)
        if m:
            obj, rec = m.groups()
            if self.holding is not None:
                return f"You are already carrying a {self.holding}."
            here = [r for r in self.receptacles() if self.visible(r) and obj in self.contents(r)]
            if rec is not None:
                here = [r for r in here if r == rec]
            if not here:
                return f"Nothing happens. You see no {_short(obj)} there."
            self.holding = obj
            del self.where[obj]
            return f"You take the {obj} from the {here[0]}."
        m = re.fullmatch(r"put (.+?) (?:in|on|into|onto|in/on) (.+)", cmd)
        if m:
            obj, rec = m.groups()
            if self.holding != obj:
                return f"Nothing happens. You are not carrying a {_short(obj)}."
            if rec not in self.receptacles():
                return f"Nothing happens. There is no {_short(rec)} here."
            if not self.visible(rec):
                return f"The {rec} is closed."
            self.where[obj] = rec
            self.holding = None
            return f"You put the {obj} {RECEPTACLES[rec][2]} the {rec}."
        m = re.fullmatch(r"clean (.+?)(?: (?:with|in|at) (.+))?", cmd)
        if m:
            obj, tool = m.groups()
            if self.holding != obj:
                return f"Nothing happens. You are not carrying a {_short(obj)}."
            if tool not in (None, "sinkbasin", "sink") or self.room != "kitchen":
                return "Nothing happens. You can clean things at the sinkbasin in the kitchen."
            self.clean.add(obj)
            return f"You clean the {obj} with the sinkbasin."
        return "Nothing happens. (unknown command)"


_ARTICLES = re.compile(r"\b(?:the|a|an|some)\b")


def normalize(command: str) -> str:
    text = command[:300].lower()
    text = re.sub(r"[^a-z/ ]+", " ", text)
    text = _ARTICLES.sub(" ", text)
    text = " ".join(text.split())
    # "living room" is the only two-word name; accept it glued too
    return text.replace("livingroom", "living room")


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:30] + "..."


# ----------------------------------------------------------------------------------------------------
# layouts, tasks and the scripted solver

def room_path(doors, start: str, goal: str) -> list[str]:
    adj: dict[str, list[str]] = {}
    for a, b in doors:
        adj.setdefault(a, []).append(b)
        adj.setdefault(b, []).append(a)
    prev = {start: None}
    queue = deque([start])
    while queue:
        cur = queue.popleft()
        if cur == goal:
            break
        for nxt in sorted(adj.get(cur, [])):
            if nxt not in prev:
                prev[nxt] = cur
                queue.append(nxt)
    path = []
    cur = goal
    while cur != start:
        path.append(cur)
        cur = prev[cur]
    return path[::-1]


def solve(p: Problem) -> list[str]:
    """The scripted plan: walk the shortest room path, open what is closed, take, clean, put."""
    place = dict(p.placement)
    src = place[p.obj]
    src_room = RECEPTACLES[src][0]
    plan = [f"go to {r}" for r in room_path(p.doors, p.start, src_room)]
    if RECEPTACLES[src][1]:
        plan.append(f"open {src}")
    if p.task == "find":
        return plan
    plan.append(f"take {p.obj} from {src}")
    room = src_room
    if p.task == "clean_place":
        plan += [f"go to {r}" for r in room_path(p.doors, room, "kitchen")]
        plan.append(f"clean {p.obj} with sinkbasin")
        room = "kitchen"
    dst_room = RECEPTACLES[p.target][0]
    plan += [f"go to {r}" for r in room_path(p.doors, room, dst_room)]
    if RECEPTACLES[p.target][1]:
        plan.append(f"open {p.target}")
    plan.append(f"put {p.obj} {RECEPTACLES[p.target][2]} {p.target}")
    return plan


def _layout(rng: random.Random, level: int):
    others = rng.sample(OTHER_ROOMS, LEVEL_ROOMS[level])
    rooms = ["kitchen", *others]
    rng.shuffle(rooms)
    doors = tuple((rooms[i], rooms[rng.randrange(i)]) for i in range(1, len(rooms)))
    recs = [rec for room in rooms for rec in ROOMS[room]]
    objs = rng.sample(OBJECTS, N_OBJECTS)
    placement = tuple((o, rng.choice(recs)) for o in objs)
    return tuple(rooms), doors, placement, rng.choice(rooms)


def _goal_text(task, obj, target):
    if task == "find":
        return f"Your task: find the {obj}."
    prep = RECEPTACLES[target][2]
    return f"Your task: put {_a('clean ' + obj if task == 'clean_place' else obj)} {prep} the {target}."


def make_problem(split: str, seed: int, level: int, task: str, index: int) -> Problem:
    rng = random.Random(f"household/{split}/{seed}/{level}/{task}/{index}")
    for _ in range(10_000):
        rooms, doors, placement, start = _layout(rng, level)
        objs = [o for o, _ in placement if task != "clean_place" or o in CLEANABLE]
        if not objs:
            continue
        obj = rng.choice(objs)
        src = dict(placement)[obj]
        if task == "find":
            target = RECEPTACLES[src][0]
            if target == start:
                continue
        else:
            target = rng.choice([r for room in rooms for r in ROOMS[room] if r != src])
        if split_of(task, obj, target) != split:
            continue
        p = Problem(rooms, doors, placement, start, task, obj, target, _goal_text(task, obj, target), (), level,
                    task, split, f"{split}-{seed}-{level}-{task}-{index}")
        return Problem(**{**p.__dict__, "plan": tuple(solve(p))})
    raise RuntimeError("no household task found")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), tasks=TASKS) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    combos = [(lv, t) for t in tasks for lv in levels]
    if not combos:
        raise ValueError("household: no levels or tasks chosen")
    return [make_problem(split, seed, *combos[i % len(combos)], i // len(combos)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class HouseholdConfig(Options):
    """The household's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Layout size: the kitchen plus 2, 3 or 4 rooms (level 1, 2, 3).",
                                     choices=(1, 2, 3))
    tasks: tuple[str, ...] = option(TASKS, "Task types: find (navigation), place (pick and place), clean_place "
                                    "(clean at the sinkbasin, then place).", choices=TASKS)
    admissible: bool = option(True, "List the admissible commands after every observation (ALFWorld's option).")
    max_turns: int = option(20, "Commands allowed; the episode ends unsolved after them.", low=1, high=100,
                            aliases=("max_tool_calls",))


class HouseholdEnv:
    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: HouseholdConfig | None = None):
        self.problem = problem
        self.config = config or HouseholdConfig()
        self.reset()

    def _obs(self, text: str) -> str:
        if self.config.admissible:
            text += "\nAvailable commands: " + "; ".join(self.house.admissible())
        return text

    def reset(self) -> list[dict[str, str]]:
        self.house = House(self.problem)
        self.turns = 0
        user = f"{self.problem.goal}\n{TOOL.result_open}{self._obs(self.house.describe())}{TOOL.result_close}"
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def _end(self, **extra) -> StepResult:
        ok = self.house.goal_met()
        return StepResult(None, True, float(ok), {"correct": ok, "turns": self.turns, "tool_calls": self.turns,
                                                  **extra})

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        if action is None:
            return self._end(answer=None)
        if action[0] == "answer":
            return self._end(answer=action[1].group(1).strip()[:200])
        self.turns += 1
        text = self.house.run(action[1].group(1))
        if self.house.goal_met():
            return self._end()
        if self.turns >= self.config.max_turns:
            return self._end(truncated=True)
        return StepResult(TOOL.result(self._obs(text)), False, 0.0, {"turns": self.turns, "tool_calls": self.turns})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """The scripted solver's commands, one per turn, with the simulator's real answers between."""
    return replay_calls(HouseholdEnv(problem, HouseholdConfig(max_turns=100)), TOOL, problem.plan)


def _problems(split: str, n: int, seed: int, config: HouseholdConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, tasks=config.tasks)


SPEC = EnvSpec("household", HouseholdConfig, _problems, HouseholdEnv, demonstration,
               title="ALFWorld-style household in text")
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("household-grpo", "GRPO household agent (ALFWorld-style text world)", "grpo", "household",
                   "A text household: rooms, containers and objects; the agent navigates, opens, takes, cleans "
                   "and puts with one command per turn, rewarded when the goal holds.",
                   nodes=("embodied", "env-general-purpose", "other-text-game"),
                   changes="Keeps ALFWorld's shape: a household described in text, goals such as 'put a clean mug "
                           "in the cabinet', one command per turn (go to, open, take, clean, put), success reward, "
                           "and the optional list of admissible commands. Simplifies it to our own small simulator "
                           "with seeded layouts (4-5 rooms, a dozen objects), a handful of verbs and task types, and "
                           "rooms as places (no receptacle-level navigation); a scripted solver proves every goal "
                           "reachable and writes the demonstrations."),
    Implementation("household-navigation-grpo", "GRPO household agent, navigation tasks", "grpo", "household",
                   "Navigation-only household tasks: find an object somewhere in the house.",
                   env_options={"tasks": ("find",)}, nodes=("embodied-navigation",),
                   changes="Only the 'find X' goals: the agent walks between connected rooms (and opens containers) "
                           "until the object is in view; no manipulation."),
    Implementation("household-manipulation-grpo", "GRPO household agent, manipulation tasks", "grpo", "household",
                   "Manipulation household tasks: pick and place, and clean then place.",
                   env_options={"tasks": ("place", "clean_place")}, nodes=("embodied-manipulation",),
                   changes="Only the manipulation goals: take an object (from a possibly closed container), clean it "
                           "at a sink when asked, and put it in or on the named receptacle."),
)
