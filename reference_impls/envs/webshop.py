"""Web shopping environments (WebShop style, text pages): ``webshop`` (interactive) and ``web-step`` (static).

A page is a text rendering of an accessibility tree: every clickable element has a number::

    [page] Results for "red mug"
    [1] link "Classic mug (red, blue) $12.50"
    [2] link "Handy mug (green) $9.00"
    [3] button "Back to search"

``webshop`` (multi-turn, the GUI-RL *interactive* setting)::

    user:  instruction ("I want a red mug in size large for at most 20 dollars") and the home page
    model: <action>search red mug</action>     or  <action>click 2</action>
    env:   <page>...</page>                     the new page
    ...    <action>click 7</action> on "Buy now" ends the episode

``web-step`` (one turn, the *static* setting of GUI-R1 / UI-R1): the page and instruction at one step
of an expert trajectory (with the actions so far); the model writes one action; reward 1 when it is the
expert's action (a search counts when its results contain the target product).

Problems
    Each problem is a small seeded catalog (12-20 products in categories such as mug, lamp, backpack ...,
    each with colors, sizes and a price) and an instruction naming a category, a color, a size and a
    budget. Exactly one product satisfies it; distractors share the category but miss the color, the size
    or the budget. Levels: 1 = the target is the only product of its category with that color; 2 = two
    same-color distractors (one over budget, one without the size); 3 = more distractors and a vaguer
    instruction wording. ``train`` and ``heldout`` draw from disjoint random streams and use different
    instruction phrasings.
Reward (``webshop``)
    WebShop's attribute score, simplified: the bought product's category, chosen color, chosen size and
    price within budget each count 1/4; ``correct`` when all four hold. Running out of actions: 0.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="browser",
    description="Acts on the shop's page: 'search QUERY' or 'click N' (the number of an element).",
    call_open="<action>",
    call_close="</action>",
    result_open="<page>",
    result_close="</page>",
)

SYSTEM_PROMPT = (
    "You shop on a website. Each page lists numbered elements. Act with <action>search words</action> or "
    "<action>click N</action>; the next page comes back in <page>...</page>. Choose the options the "
    "instruction asks for, then click \"Buy now\"."
)
STEP_PROMPT = ("You shop on a website. Given the instruction, the actions so far and the current page, write the "
               "next action as <action>search words</action> or <action>click N</action>.")

CATEGORIES = ("mug", "lamp", "backpack", "t-shirt", "kettle", "notebook", "umbrella", "pillow")
COLORS = ("red", "blue", "green", "black", "white", "yellow", "grey")
SIZES = ("small", "medium", "large")
ADJ = ("Classic", "Handy", "Urban", "Cozy", "Nordic", "Sunny", "Prime", "Eco", "Retro", "Swift")

PHRASINGS = {
    "train": ("I want a {color} {cat} in size {size} for at most {budget} dollars.",
              "Find me a {cat}, {color}, size {size}, price not above {budget} dollars."),
    "heldout": ("Please buy a {size} {color} {cat}; my budget is {budget} dollars.",),
}
VAGUE = {"train": ("Looking for something to use as a {cat}: {color}, {size}, no more than ${budget}.",),
         "heldout": ("Get a {cat} ({color}, {size}) that costs {budget} dollars or less.",)}


@dataclass(frozen=True)
class Product:
    pid: int
    name: str
    category: str
    colors: tuple[str, ...]
    sizes: tuple[str, ...]
    price: float

    def line(self) -> str:
        return f"{self.name} ({', '.join(self.colors)}) ${self.price:.2f}"


@dataclass(frozen=True)
class Problem:
    instruction: str
    products: tuple[Product, ...]
    target: int  # pid
    category: str
    color: str
    size: str
    budget: int
    family: str  # the level's name, for per-family reports
    level: int
    split: str
    uid: str

    @property
    def question(self) -> str:
        return self.instruction


def make_problem(split: str, seed: int, index: int, level: int) -> Problem:
    rng = random.Random(f"webshop/{split}/{seed}/{level}/{index}")
    cat = rng.choice(CATEGORIES)
    color, size = rng.choice(COLORS), rng.choice(SIZES)
    budget = rng.randint(15, 80)
    names = iter(rng.sample(ADJ, len(ADJ)))
    prods: list[dict] = []

    def add(category, colors, sizes, price):
        prods.append(dict(category=category, colors=tuple(colors), sizes=tuple(sizes), price=price,
                          name=f"{next(names, 'Basic') if category == cat else rng.choice(ADJ)} {category}"))

    others = [c for c in COLORS if c != color]
    add(cat, sorted({color, *rng.sample(others, rng.randint(0, 2))}), sorted({size, *rng.sample(SIZES, 1)}),
        round(rng.uniform(5, budget - 1), 2))
    n_dis = {1: 2, 2: 3, 3: 5}[level]
    for i in range(n_dis):
        kind = i % 3 if level > 1 else 0
        if kind == 0:  # wrong color
            add(cat, rng.sample(others, 2), rng.sample(SIZES, 2), round(rng.uniform(5, budget - 1), 2))
        elif kind == 1:  # over budget
            add(cat, [color], [size], round(rng.uniform(budget + 1, budget + 40), 2))
        else:  # without the size
            add(cat, [color], [s for s in SIZES if s != size], round(rng.uniform(5, budget - 1), 2))
    for _ in range(rng.randint(9, 13)):  # other categories
        c = rng.choice([c for c in CATEGORIES if c != cat])
        add(c, rng.sample(COLORS, rng.randint(1, 3)), rng.sample(SIZES, rng.randint(1, 3)),
            round(rng.uniform(5, 90), 2))
    order = list(range(len(prods)))
    rng.shuffle(order)
    products = tuple(Product(i + 1, prods[j]["name"], prods[j]["category"], prods[j]["colors"], prods[j]["sizes"],
                             prods[j]["price"]) for i, j in enumerate(order))
    target = order.index(0) + 1
    pool = VAGUE[split] if level == 3 else PHRASINGS[split]
    text = rng.choice(pool).format(color=color, cat=cat, size=size, budget=budget)
    return Problem(text, products, target, cat, color, size, budget, f"level{level}", level, split,
                   f"{split}-{seed}-{level}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3)) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    levels = tuple(levels)
    if not levels:
        raise ValueError("no webshop level chosen")
    return [make_problem(split, seed, i // len(levels), levels[i % len(levels)]) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the simulated site

_WORD = re.compile(r"[a-z0-9-]+")


@dataclass
class Site:
    """Page state machine: home -> results -> product -> bought."""

    problem: Problem
    page: str = "home"
    query: str = ""
    results: list[int] = field(default_factory=list)
    product: int | None = None
    color: str | None = None
    size: str | None = None
    bought: bool = False

    def search(self, query: str, k: int = 5) -> list[int]:
        words = set(_WORD.findall(query.lower()))
        scored = []
        for p in self.problem.products:
            text = set(_WORD.findall(f"{p.name} {p.category} {' '.join(p.colors)} {' '.join(p.sizes)}".lower()))
            s = len(words & text) + 2 * (p.category in words)
            if s:
                scored.append((-s, p.pid))
        return [pid for _, pid in sorted(scored)[:k]]

    def elements(self) -> list[tuple[str, str, tuple]]:
        """(kind, label, effect) in display order; numbers are positions + 1."""
        if self.page == "home":
            return []
        if self.page == "results":
            els = [("link", self.problem.products[pid - 1].line(), ("open", pid)) for pid in self.results]
            return els + [("button", "Back to search", ("home",))]
        p = self.problem.products[self.product - 1]
        els = [("option", f"color: {c}" + (" (selected)" if c == self.color else ""), ("color", c)) for c in p.colors]
        els += [("option", f"size: {s}" + (" (selected)" if s == self.size else ""), ("size", s)) for s in p.sizes]
        return els + [("button", "Buy now", ("buy",)), ("button", "Back to results", ("results",))]

    def render(self) -> str:
        if self.page == "home":
            return '[page] Shop home\n[search box] write: search WORDS'
        if self.page == "results":
            head = f'[page] Results for "{self.query}"' + ("" if self.results else "\n(no products found)")
        else:
            p = self.problem.products[self.product - 1]
            head = f"[page] {p.name}\nprice: ${p.price:.2f}\ncategory: {p.category}"
        lines = [head] + [f'[{i + 1}] {kind} "{label}"' for i, (kind, label, _) in enumerate(self.elements())]
        if self.page == "results":
            lines.append("[search box] write: search WORDS")
        return "\n".join(lines)

    def act(self, action: str) -> str | None:
        """Apply one action; returns an error message or None."""
        action = " ".join(action.split())
        m = re.fullmatch(r"search\s*\[?(.*?)\]?", action, re.I)
        if m and action.lower().startswith("search"):
            if self.page == "product":
                return "there is no search box on this page"
            self.query = m.group(1).strip()[:100]
            self.results = self.search(self.query)
            self.page = "results"
            return None
        m = re.fullmatch(r"click\s*\[?\s*(\d{1,4})\s*\]?", action, re.I)
        if not m:
            return "unknown action; write search WORDS or click N"
        els = self.elements()
        i = int(m.group(1))
        if not 1 <= i <= len(els):
            return f"no element {i} on this page"
        effect = els[i - 1][2]
        if effect[0] == "open":
            self.page, self.product, self.color, self.size = "product", effect[1], None, None
        elif effect[0] == "home":
            self.page = "home"
        elif effect[0] == "results":
            self.page = "results"
        elif effect[0] == "color":
            self.color = effect[1]
        elif effect[0] == "size":
            self.size = effect[1]
        elif effect[0] == "buy":
            self.bought = True
        return None

    def score(self) -> tuple[float, bool]:
        if not self.bought or self.product is None:
            return 0.0, False
        p, pr = self.problem.products[self.product - 1], self.problem
        hits = [p.category == pr.category, self.color == pr.color, self.size == pr.size, p.price <= pr.budget]
        return sum(hits) / 4, all(hits)

    def index_of(self, effect: tuple) -> int:
        return next(i + 1 for i, (_, _, e) in enumerate(self.elements()) if e == effect)


def expert_actions(problem: Problem) -> list[str]:
    """The demonstration's actions: search, open the target, choose color and size, buy."""
    site = Site(problem)
    acts = [f"search {problem.color} {problem.category}"]
    site.act(acts[0])
    if problem.target not in site.results:  # cannot happen for generated problems (tested), kept safe
        acts[0] = f"search {problem.category}"
        site.act(acts[0])
    for effect in (("open", problem.target), ("color", problem.color), ("size", problem.size), ("buy",)):
        a = f"click {site.index_of(effect)}"
        site.act(a)
        acts.append(a)
    return acts


# ----------------------------------------------------------------------------------------------------
# the environments

@dataclass
class WebShopConfig(Options):
    levels: tuple[int, ...] = option((1, 2, 3), "Difficulty levels: 1 = wrong-color distractors, 2 = also over-budget "
                                     "and wrong-size ones, 3 = more distractors and vaguer wording.", choices=(1, 2, 3))
    max_tool_calls: int = option(8, "Actions allowed before buying; one more ends the episode with reward 0.", low=1,
                                 high=64, aliases=("max_turns",))


class WebShopEnv:
    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: WebShopConfig | None = None):
        self.problem = problem
        self.config = config or WebShopConfig()
        self.site = Site(problem)
        self.tool_calls = 0

    def reset(self) -> list[dict[str, str]]:
        self.site, self.tool_calls = Site(self.problem), 0
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Instruction: {self.problem.instruction}\n{self.site.render()}"}]

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.tool_calls}
        if action is None or action[0] == "answer":
            return StepResult(None, True, 0.0, {**base, "correct": False})
        if self.tool_calls >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {**base, "correct": False, "truncated": True})
        self.tool_calls += 1
        err = self.site.act(action[1].group(1))
        if self.site.bought:
            reward, correct = self.site.score()
            return StepResult(None, True, reward, {"tool_calls": self.tool_calls, "correct": correct})
        page = self.site.render() if err is None else f"error: {err}\n{self.site.render()}"
        return StepResult(TOOL.result(page), False, 0.0, {"tool_calls": self.tool_calls})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    env = WebShopEnv(problem)
    env.reset()
    segs: list[tuple[str, str]] = []
    for a in expert_actions(problem):
        call = f"{TOOL.call_open}{a}{TOOL.call_close}"
        r = env.step(call)
        segs.append(("model", call))
        if not r.done:
            segs.append(("env", r.observation))
    return segs


# static: one step of the expert trajectory

@dataclass(frozen=True)
class StepProblem:
    base: Problem
    k: int  # index of the expert action to predict
    family: str
    level: int
    split: str
    uid: str

    @property
    def question(self) -> str:
        return self.base.instruction


@dataclass
class WebStepConfig(Options):
    levels: tuple[int, ...] = option((1, 2, 3), "Difficulty levels of the underlying shopping tasks.",
                                     choices=(1, 2, 3))


STEP_NAMES = ("search", "open", "color", "size", "buy")


def step_problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3)) -> list[StepProblem]:
    base = problems(split, (n + len(STEP_NAMES) - 1) // len(STEP_NAMES), seed, levels)
    out = []
    for i in range(n):
        b, k = base[i // len(STEP_NAMES)], i % len(STEP_NAMES)
        out.append(StepProblem(b, k, STEP_NAMES[k], b.level, split, f"{b.uid}-step{k}"))
    return out


class WebStepEnv:
    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: StepProblem, config: WebStepConfig | None = None):
        self.problem = problem
        self.config = config or WebStepConfig()
        self.expert = expert_actions(problem.base)
        self.site = Site(problem.base)
        for a in self.expert[: problem.k]:
            self.site.act(a)

    def reset(self) -> list[dict[str, str]]:
        done = "; ".join(self.expert[: self.problem.k]) or "none"
        return [{"role": "system", "content": STEP_PROMPT},
                {"role": "user", "content": f"Instruction: {self.problem.base.instruction}\nActions so far: {done}\n"
                                            f"{self.site.render()}"}]

    def step(self, model_text: str) -> StepResult:
        action = TOOL.find_call(model_text)
        if action is None:
            return StepResult(None, True, 0.0, {"correct": False})
        text = " ".join(action.group(1).split())
        gold = self.expert[self.problem.k]
        if gold.startswith("search"):
            probe = Site(self.problem.base)
            correct = text.lower().startswith("search") and probe.act(text) is None and \
                self.problem.base.target in probe.results
        else:
            m = re.fullmatch(r"click\s*\[?\s*(\d{1,4})\s*\]?", text, re.I)
            correct = bool(m) and f"click {int(m.group(1))}" == gold
        return StepResult(None, True, float(correct), {"correct": correct, "action": text[:200]})


def step_demonstration(problem: StepProblem) -> list[tuple[str, str]]:
    return [("model", f"{TOOL.call_open}{expert_actions(problem.base)[problem.k]}{TOOL.call_close}")]


def _problems(split: str, n: int, seed: int, config: WebShopConfig) -> list[Problem]:
    return problems(split, n, seed, config.levels)


def _step_problems(split: str, n: int, seed: int, config: WebStepConfig) -> list[StepProblem]:
    return step_problems(split, n, seed, config.levels)


SPEC = EnvSpec("webshop", WebShopConfig, _problems, WebShopEnv, demonstration,
               title="WebShop-style shopping on text pages")
STEP_SPEC = EnvSpec("web-step", WebStepConfig, _step_problems, WebStepEnv, step_demonstration,
                    title="one GUI action on a shop page (static)")
ENV_SPECS = (SPEC, STEP_SPEC,)  # collected by envs.ENVS


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("webshop-grpo", "WebShop-style shopping agent (GRPO)", "grpo", "webshop", "A multi-turn agent that searches a simulated shop, opens products, picks color and size and "
                   "buys; rewarded by how many of the instruction's attributes the purchase matches.",
                   nodes=("gui-rl-interactive", "env-gui", "env-web"),
                   changes="Keeps the interactive web-agent loop of WebShop-style GUI RL: an instruction with "
                           "attributes and a budget, a site with search, result lists, product pages with options "
                           "and a buy button, numbered elements to act on, distractor products that miss one "
                           "attribute, and an attribute-match reward (category, color, size, price each a quarter). "
                           "Simplifies: text pages instead of HTML or screenshots, a generated catalog of 12-20 "
                           "products per task instead of a million scraped ones, keyword search, and exactly one "
                           "product that fits."),
    Implementation("web-step-grpo", "One GUI action on a shop page (GRPO)", "grpo", "web-step", "Static GUI action prediction: given the instruction, the actions so far and the current page, "
                   "predict the expert's next action; reward 1 when it matches.",
                   nodes=("gui-rl-static", "env-web"),
                   changes="Keeps the static setting of GUI-R1 / UI-R1-style RL: one screen, an instruction and the "
                           "history, one action scored by a rule against the ground-truth action (here the element "
                           "number, or for a search any query whose results contain the target). Simplifies: the "
                           "screen is the webshop env's text page (no pixels, no coordinates), the states come from "
                           "expert trajectories of generated shopping tasks, and there are two action types."),
)
