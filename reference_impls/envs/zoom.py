"""Active perception as text: a character-grid "image" too large to show whole; the agent sees a coarse
thumbnail, zooms into regions with a crop tool, then answers a question and points to the cell it found.

THIS IS A TEXT PROXY of visual active perception (zoom-in / crop tools of "thinking with images" agents and
grounding rewards): there are no pixels and no vision encoder. What it keeps is the structure of the task:
the whole input does not fit the view, a low-resolution overview shows *where* something salient is but
not *what* it is, the agent has to choose regions to inspect with a tool, and the reward checks both the
answer and the grounding (the pointed cell).

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    user:  the question, then the thumbnail in <view>...</view>
    model: <zoom>8,16,15,23</zoom>                    rows 8..15, cols 16..23 (inclusive, 0-based)
    env:   <view>rows 8-15, cols 16-23 ...
           10 ...Q....                                 one line per row: its number, then its cells
           </view>
    model: <answer>Q at 10,19</answer>                 the answer, then the cell "row,col"

The image: a square grid (16, 24 or 40 cells a side for level 1, 2, 3) of '.' with dim marks (lowercase
letters and digits) and a few bright marks (an uppercase letter or one of ``# % & @ *``), each bright mark in
its own block. The thumbnail has one character per block (4, 6 or 8 cells a side): ``*`` when the block holds
a bright mark, else the number of dim marks in it (``.`` for none, 9 means 9 or more), as a down-sampled
image shows a bright blob but not its shape.

Families (questions): ``odd-letter``: "which uppercase letter is in the image, and where?" (the other
bright marks are symbols); ``right-of``: "which mark is immediately right of the only @, and where is the
@?" (the other bright marks are symbols and uppercase letters; the mark to the right is a dim one).

Reward: ``answer_weight * [answer right] + grounding_weight * [pointed cell right]`` (options), 0 without
a readable final answer; ``correct`` = every part whose weight is above 0 is right. Zoom requests are
parsed (four integers), never evaluated: a malformed, out-of-range or too-large request gets an
observation saying exactly what is wrong and counts as a zoom. ``max_zooms`` = 0 is passive perception
(thumbnail only). Splits: a problem is ``train`` or ``heldout`` by a stable hash of (family, the target's
cell, the answer), one in four held out. The demonstration zooms into the bright blocks in reading order
until it sees the target, then answers: the search a good policy can actually perform from the thumbnail.
"""
from __future__ import annotations

import hashlib
import random
import re
import string
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec
from .reports import register_report

TOOL = ToolSpec(
    name="zoom",
    description="Shows the cells of a rectangle of the image: <zoom>r0,c0,r1,c1</zoom>, corners inclusive.",
    call_open="<zoom>",
    call_close="</zoom>",
    result_open="<view>",
    result_close="</view>",
)
FAMILIES = ("odd-letter", "right-of")
LEVELS = (1, 2, 3)
SIZE = {1: 16, 2: 24, 3: 40}  # cells a side
BLOCK = {1: 4, 2: 6, 3: 8}  # thumbnail block side
BRIGHT_DISTRACTORS = {1: 1, 2: 2, 3: 3}  # bright marks besides the target
DIM_MARKS = {1: 10, 2: 24, 3: 60}
SYMBOLS = "#%&*"
DIM = string.ascii_lowercase + string.digits
BACKGROUND = "."

SYSTEM_PROMPT = (
    "You inspect a large text image that you cannot see whole. You get a coarse thumbnail; look closer with "
    "<zoom>r0,c0,r1,c1</zoom> (rows r0..r1, columns c0..c1, inclusive, 0-based), which answers in "
    "<view>...</view>. When you know the answer, write <answer>SYMBOL at ROW,COL</answer>."
)


@dataclass(frozen=True)
class Problem:
    rows: tuple[str, ...]  # the image, one string per row
    block: int
    question: str
    answer: str  # the symbol to name
    target: tuple[int, int]  # the cell to point to
    bright_blocks: tuple[tuple[int, int], ...]  # blocks holding a bright mark, reading order
    level: int
    family: str
    split: str
    uid: str


def split_of(family: str, target: tuple[int, int], answer: str) -> str:
    h = int(hashlib.sha256(f"zoom/{family}/{target[0]},{target[1]}/{answer}".encode()).hexdigest()[:8], 16)
    return "heldout" if h % 4 == 0 else "train"


# ----------------------------------------------------------------------------------------------------
# images, thumbnails and crops

def thumbnail(rows, block: int) -> list[str]:
    """One character per block: ``*`` bright mark inside, else the dim-mark count (``.`` none, max 9)."""
    n = len(rows)
    out = []
    for bi in range(0, n, block):
        line = []
        for bj in range(0, n, block):
            cells = [rows[r][c] for r in range(bi, min(bi + block, n)) for c in range(bj, min(bj + block, n))]
            if any(ch != BACKGROUND and ch not in DIM for ch in cells):
                line.append("*")
            else:
                k = sum(ch in DIM for ch in cells)
                line.append("." if k == 0 else str(min(k, 9)))
        out.append("".join(line))
    return out


def render_thumbnail(rows, block: int) -> str:
    thumb = thumbnail(rows, block)
    n = len(rows)
    head = (f"Thumbnail of a {n}x{n} image: each character is a {block}x{block} block; block (i,j) covers rows "
            f"{block}i..{block}i+{block - 1} and columns {block}j..{block}j+{block - 1}. '*' = the block holds a "
            "bright mark (an uppercase letter or one of # % & @ *), a digit = how many lowercase letters or digits "
            "it holds, '.' = empty.")
    return head + "\n" + "\n".join(f"{i} {line}" for i, line in enumerate(thumb))


def crop(rows, r0: int, c0: int, r1: int, c1: int) -> str:
    """Rows r0..r1 and columns c0..c1 (inclusive) as text: a header, then one line per row."""
    lines = [f"rows {r0}-{r1}, cols {c0}-{c1} (each line: the row number, then the cells of cols {c0}-{c1})"]
    lines += [f"{r} {rows[r][c0:c1 + 1]}" for r in range(r0, r1 + 1)]
    return "\n".join(lines)


_INT = re.compile(r"-?\d+")


def parse_zoom(arg: str, size: int, max_crop: int) -> tuple[tuple[int, int, int, int] | None, str]:
    """``r0,c0,r1,c1`` -> ((r0, c0, r1, c1), "") or (None, what is wrong). Never raises, never evaluates."""
    text = arg[:200]
    if re.search(r"[^\d\s,;()\-\[\]rc=:]", text):
        return None, f"zoom takes four numbers r0,c0,r1,c1; found other characters in {_short(arg)!r}"
    numbers = _INT.findall(text)
    if len(numbers) != 4:
        return None, f"zoom takes four numbers r0,c0,r1,c1 (corners, inclusive); got {len(numbers)} in {_short(arg)!r}"
    if any(len(x.lstrip("-")) > 4 for x in numbers):
        return None, "zoom: coordinates must be small integers"
    r0, c0, r1, c1 = (int(x) for x in numbers)
    for name, v in (("r0", r0), ("c0", c0), ("r1", r1), ("c1", c1)):
        if not 0 <= v < size:
            return None, f"zoom: {name}={v} is outside the image (rows and columns are 0..{size - 1})"
    if r1 < r0 or c1 < c0:
        return None, f"zoom: the second corner ({r1},{c1}) must be below and right of the first ({r0},{c0})"
    h, w = r1 - r0 + 1, c1 - c0 + 1
    if h > max_crop or w > max_crop:
        return None, f"zoom: a {h}x{w} crop is too large; at most {max_crop}x{max_crop} cells"
    return (r0, c0, r1, c1), ""


_ANSWER = re.compile(r"^\s*['\"`]?(\S)['\"`]?\s+at\s*[\(\[]?\s*(\d{1,3})\s*[,;\s]\s*(\d{1,3})\s*[\)\]]?\s*\.?\s*$",
                     re.I)


def parse_answer(text: str) -> tuple[str, tuple[int, int]] | None:
    """``SYMBOL at ROW,COL`` -> (symbol, (row, col)), else None."""
    m = _ANSWER.match(text[:100])
    if m is None:
        return None
    return m.group(1), (int(m.group(2)), int(m.group(3)))


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:30] + "..."


# ----------------------------------------------------------------------------------------------------
# problems

def _free_cell_in_block(rng, grid, bi, bj, block, n, avoid_last_col=False):
    cells = [(r, c) for r in range(bi * block, min((bi + 1) * block, n))
             for c in range(bj * block, min((bj + 1) * block, n) - (1 if avoid_last_col else 0))
             if grid[r][c] == BACKGROUND]
    return rng.choice(cells)


def make_problem(split: str, seed: int, level: int, family: str, index: int) -> Problem:
    rng = random.Random(f"zoom/{split}/{seed}/{level}/{family}/{index}")
    n, block = SIZE[level], BLOCK[level]
    nb = n // block
    for _ in range(10_000):
        grid = [[BACKGROUND] * n for _ in range(n)]
        blocks = rng.sample([(i, j) for i in range(nb) for j in range(nb)], 1 + BRIGHT_DISTRACTORS[level])
        tb = blocks[0]
        if family == "odd-letter":
            answer = rng.choice(string.ascii_uppercase)
            target = _free_cell_in_block(rng, grid, *tb, block, n)
            grid[target[0]][target[1]] = answer
            question = "Exactly one cell of the image holds an uppercase letter. Which letter is it, and at which cell?"
            distractors = [rng.choice(SYMBOLS) for _ in blocks[1:]]
        else:
            target = _free_cell_in_block(rng, grid, *tb, block, n, avoid_last_col=True)
            answer = rng.choice(DIM)
            grid[target[0]][target[1]] = "@"
            grid[target[0]][target[1] + 1] = answer
            question = ("Exactly one cell of the image holds '@'. Which mark is immediately to the right of it? "
                        "Answer that mark, at the cell of the '@'.")
            distractors = [rng.choice(SYMBOLS + string.ascii_uppercase) for _ in blocks[1:]]
        for b, sym in zip(blocks[1:], distractors):
            r, c = _free_cell_in_block(rng, grid, *b, block, n)
            grid[r][c] = sym
        free = [(r, c) for r in range(n) for c in range(n) if grid[r][c] == BACKGROUND]
        for r, c in rng.sample(free, DIM_MARKS[level]):
            grid[r][c] = rng.choice(DIM)
        if split_of(family, target, answer) != split:
            continue
        rows = tuple("".join(row) for row in grid)
        return Problem(rows, block, question, answer, target, tuple(sorted(blocks)), level, family, split,
                       f"{split}-{seed}-{level}-{family}-{index}")
    raise RuntimeError("no zoom problem found")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, families=FAMILIES) -> list[Problem]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    combos = [(lv, f) for f in families for lv in levels]
    if not combos:
        raise ValueError("zoom: no levels or families chosen")
    return [make_problem(split, seed, *combos[i % len(combos)], i // len(combos)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class ZoomConfig(Options):
    """The zoom env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Image size: 16, 24 or 40 cells a side (level 1, 2, 3), with 2, 3 or "
                                     "4 bright blocks to tell apart.", choices=LEVELS)
    families: tuple[str, ...] = option(FAMILIES, "Questions: odd-letter (name the only uppercase letter), right-of "
                                       "(name the mark right of the only @).", choices=FAMILIES)
    max_zooms: int = option(4, "Zoom calls allowed (0 = passive perception: the thumbnail only).", low=0, high=20,
                            aliases=("max_tool_calls",))
    max_crop: int = option(8, "Largest crop side in cells (a request above it is refused).", low=1, high=40)
    answer_weight: float = option(0.5, "Reward for naming the right symbol.", low=0.0, high=1.0)
    grounding_weight: float = option(0.5, "Reward for pointing to the right cell (grounding).", low=0.0, high=1.0)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels or not self.families:
            raise ConfigError("--levels / --families (options of --env zoom): choose at least one of each")
        if self.answer_weight + self.grounding_weight <= 0:
            raise ConfigError("--answer-weight, --grounding-weight (options of --env zoom): both are 0, so every "
                              "episode would earn 0; give one of them a weight")


class ZoomEnv:
    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: ZoomConfig | None = None):
        self.problem = problem
        self.config = config or ZoomConfig()
        self.reset()

    def reset(self) -> list[dict[str, str]]:
        self.zooms = 0
        self.turns = 0
        p = self.problem
        user = f"{p.question}\n{TOOL.result(render_thumbnail(p.rows, p.block))}"
        if self.config.max_zooms:
            user += f"\nYou may zoom {self.config.max_zooms} times, at most {self.config.max_crop}x{self.config.max_crop} cells each."
        else:
            user += "\nNo zooms are allowed: answer from the thumbnail."
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def score(self, answer_text: str | None) -> tuple[float, dict]:
        """(reward, info) of a final answer's text (the inside of <answer>)."""
        parsed = parse_answer(answer_text) if answer_text is not None else None
        cfg = self.config
        if parsed is None:
            return 0.0, {"correct": False, "answer_ok": False, "grounding_ok": False,
                         "parse_error": "expected <answer>SYMBOL at ROW,COL</answer>"}
        symbol, cell = parsed
        answer_ok = symbol == self.problem.answer
        grounding_ok = cell == self.problem.target
        reward = cfg.answer_weight * answer_ok + cfg.grounding_weight * grounding_ok
        parts = [ok for ok, w in ((answer_ok, cfg.answer_weight), (grounding_ok, cfg.grounding_weight)) if w > 0]
        return float(reward), {"correct": bool(parts) and all(parts), "answer_ok": answer_ok,
                               "grounding_ok": grounding_ok}

    def step(self, model_text: str) -> StepResult:
        self.turns += 1
        action = TOOL.first_action(model_text)
        if action is None or action[0] == "answer":
            text = action[1].group(1) if action else None
            reward, info = self.score(text)
            return StepResult(None, True, reward, {**info, "zooms": self.zooms, "tool_calls": self.zooms,
                                                   "answer": None if text is None else text.strip()[:100]})
        if self.zooms >= self.config.max_zooms:
            text = "no zooms left: answer with <answer>SYMBOL at ROW,COL</answer>"
        else:
            self.zooms += 1
            box, error = parse_zoom(action[1].group(1), len(self.problem.rows), self.config.max_crop)
            text = error if box is None else crop(self.problem.rows, *box)
        if self.turns > self.config.max_zooms + 1:  # one refused extra call is answered; then it is over
            return StepResult(None, True, 0.0, {"correct": False, "answer_ok": False, "grounding_ok": False,
                                                "zooms": self.zooms, "tool_calls": self.zooms, "truncated": True})
        return StepResult(TOOL.result(text), False, 0.0, {"zooms": self.zooms, "tool_calls": self.zooms})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Zoom into the bright blocks in reading order until the target's block, then answer."""
    env = ZoomEnv(problem, ZoomConfig(max_zooms=len(problem.bright_blocks), max_crop=problem.block))
    b, n = problem.block, len(problem.rows)
    target_block = (problem.target[0] // b, problem.target[1] // b)
    segments: list[tuple[str, str]] = []
    for bi, bj in problem.bright_blocks:
        call = f"{TOOL.call_open}{bi * b},{bj * b},{min(n, (bi + 1) * b) - 1},{min(n, (bj + 1) * b) - 1}{TOOL.call_close}"
        segments.append(("model", call))
        segments.append(("env", env.step(call).observation))
        if (bi, bj) == target_block:
            break
    r, c = problem.target
    segments.append(("model", f"{TOOL.answer_open}{problem.answer} at {r},{c}{TOOL.answer_close}"))
    return segments


def _problems(split: str, n: int, seed: int, config: ZoomConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, families=config.families)


SPEC = EnvSpec("zoom", ZoomConfig, _problems, ZoomEnv, demonstration,
               title="Active perception in text: zoom into a character-grid image (a text proxy)")
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


def perception_report(samples, problems_) -> dict:
    """What ``correct`` hides: the answer and the grounding (pointing to the target cell) scored apart, the share
    of episodes that end with a readable ``<answer>SYMBOL at ROW,COL</answer>``, the zooms used, and each level's
    accuracy. ``python -m reference_impls.measure.report heldout --env zoom --run RUN`` (add
    ``--env-option max_zooms=0`` for the passive, thumbnail-only version of the same problems)."""
    infos = [s.info for s in samples]
    n = max(len(infos), 1)

    def share(key):
        return round(sum(bool(i.get(key)) for i in infos) / n, 4)

    levels = {}
    for s, i in zip(samples, infos):
        level = problems_[s.group].level
        levels.setdefault(level, []).append(bool(i.get("correct")))
    return {"n": len(infos), "correct": share("correct"), "answer_ok": share("answer_ok"),
            "grounding_ok": share("grounding_ok"),
            "answered": round(sum("parse_error" not in i and i.get("answer") is not None for i in infos) / n, 4),
            "mean_zooms": round(sum(int(i.get("zooms", 0)) for i in infos) / n, 3),
            "truncated": round(sum(bool(s.truncated or i.get("truncated")) for s, i in zip(samples, infos)) / n, 4),
            "by_level": {str(k): round(sum(v) / len(v), 4) for k, v in sorted(levels.items())}}


register_report("zoom", perception_report)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("zoom-grpo", "Active perception with a zoom tool on a text image (GRPO)", "grpo", "zoom",
                   "A large character-grid 'image' seen only as a coarse thumbnail; the agent zooms into regions "
                   "with a crop tool, names what it found and points to its cell; rewarded for the answer and for "
                   "the grounding.",
                   nodes=("perception", "perception-tool-driven", "perception-grounding-driven",
                          "perception-passive-to-active"),
                   changes="A TEXT PROXY of visual active perception, not vision: the image is a grid of "
                           "characters (16 to 40 cells a side) and there is no vision encoder. Keeps the task's "
                           "structure from zoom-in / crop-tool agents and grounding rewards: the input is too large "
                           "to view whole, a down-sampled overview shows where salient marks are but not what they "
                           "are, the agent picks regions to inspect with a tool (a crop size limit and a zoom "
                           "budget), and the reward checks the answer and the pointed cell separately (weights are "
                           "options). Simplifies: symbols instead of objects, exact cell coordinates instead of "
                           "boxes, two question types, and a thumbnail that marks bright blocks exactly."),
    Implementation("zoom-passive-grpo", "Passive perception baseline: thumbnail only, no zoom (GRPO)", "grpo",
                   "zoom", "The zoom task with max_zooms=0: the agent must answer from the coarse thumbnail alone.",
                   env_options={"max_zooms": 0}, nodes=("perception-passive-to-active",),
                   changes="The passive end of passive-to-active perception: the same questions with the zoom "
                           "tool taken away, so the detail the answer needs is never seen; its reward bounds what "
                           "guessing from the overview earns, next to zoom-grpo's active version."),
)
