"""Perception tasks rendered as text: an image, a video, a 3D scene, a sketch to draw, an audio clip.

THESE ARE TEXT PROXIES of visual (and audio) tasks. No vision-language or audio model runs offline on a CPU
here, so every observation is text: an image is a grid of characters, a video is a sequence of such grids, a 3D
scene is a voxel grid shown slice by slice, and an audio clip is a sequence of integer samples. What each
family keeps is the structure of its task (what has to be found in the input and how the answer is checked);
what it loses is everything pixels and sound add (texture, lighting, perspective, occlusion, timbre, speech).

Families (the option ``families``; one episode is one problem of one family)::

    image    count or locate shapes in a character grid            <answer>3</answer> / <answer>4,7</answer>
    video    frames in sequence: which object moves, and where to    <answer>B left</answer>
    voxel    slices of a voxel grid: which object is directly above  <answer>C</answer>
             (or below) another
    sketch   generation-driven perception: the model first draws the scene described in words as a grid
             in <sketch>...</sketch>; the environment checks the sketch (<check>...</check>) before it accepts
             an answer about the scene (how many cells two rectangles share, or cover alone)
    audio    a waveform as integer samples: the period of a tone (pitch) or the interval between beats
             (rhythm), in samples                                    <answer>6</answer>

Levels (the option ``levels``): 1 = small inputs and exact signals; 2 = larger inputs, more objects, and
audio samples with +-1 noise.
Splits: ``train``, ``validation`` and ``heldout`` hold different inputs: a problem belongs to one split by a
stable hash of its family and its whole observation (one in four held out, one in eight for validation).
Reward: 1 for the right answer, else 0; the sketch family pays ``sketch_weight`` for a sketch that matches
the scene cell for cell plus ``answer_weight`` for the right answer. An answer that does not read ends the
episode with reward 0 and ``parse_error`` naming the expected form. Answers and sketches are parsed with
regular expressions and compared; nothing the model writes is evaluated.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
import string
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="sketch",
    description="Draw the described scene as a grid of characters; the environment checks it cell by cell.",
    call_open="<sketch>",
    call_close="</sketch>",
    result_open="<check>",
    result_close="</check>",
)
FAMILIES = ("image", "video", "voxel", "sketch", "audio")
VISUAL_FAMILIES = ("image", "video", "voxel")
LEVELS = (1, 2)
SPLITS = ("train", "validation", "heldout")
DIRECTIONS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
EMPTY = "."
MAX_ANSWER_CHARS = 60
MAX_SKETCH_CHARS = 2000

SYSTEM_PROMPT = (
    "You answer questions about an input shown as text: a picture drawn with characters, frames of a video, "
    "slices of a 3D scene or the samples of a sound. Rows and columns are counted from 0 (row 0 at the top, "
    "column 0 at the left). Write the final answer inside <answer>...</answer>."
)
SKETCH_PROMPT = (
    "You answer a question about a scene described in words. First draw the scene as a grid of characters "
    "inside <sketch>...</sketch> (one line per row, nothing else); the drawing is checked and the result comes "
    "back in <check>...</check>. Then write the final answer inside <answer>...</answer>."
)


@dataclass(frozen=True)
class Problem:
    family: str
    level: int
    question: str
    scene: str  # the observation (the rendered input), shown with the question
    answer: str  # the gold answer, in the form the family's answer is written
    kind: str  # how the answer is read: int, cell, letter, motion
    sketch: tuple[str, ...] = ()  # the sketch family: the true drawing, one string per row
    split: str = "train"
    uid: str = ""


def split_of(family: str, scene: str) -> str:
    """A problem's split: a stable hash of its family and observation (1/4 held out, 1/8 validation)."""
    bucket = int(hashlib.sha256(f"perception-proxy/{family}/{scene}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _grid_text(rows) -> str:
    """A grid with its row numbers: ``r: cells``."""
    width = len(str(len(rows) - 1))
    return "\n".join(f"{i:>{width}}: {row}" for i, row in enumerate(rows))


# ----------------------------------------------------------------------------------------------------
# the families' generators: (question, scene, answer, kind, sketch) from a seeded rng

def _rectangles(rng, height, width, count, max_h, max_w):
    """``count`` rectangles (r0, c0, h, w) that neither overlap nor touch (not even at a corner), or None."""
    placed = []
    for _ in range(count):
        for _ in range(200):
            h, w = rng.randint(1, max_h), rng.randint(1, max_w)
            r0, c0 = rng.randint(0, height - h), rng.randint(0, width - w)
            if all(r0 > R + H or R > r0 + h or c0 > C + W or C > c0 + w for R, C, H, W in placed):
                placed.append((r0, c0, h, w))
                break
        else:
            return None
    return placed


def _image(rng, level):
    height, width = (8, 12) if level == 1 else (12, 18)
    count = rng.randint(2, 4) if level == 1 else rng.randint(3, 6)
    rects = _rectangles(rng, height, width, count + (1 if level == 1 else 2), 3, 4)
    if rects is None:
        return None
    marks = ["#"] * count + ["o"] * (len(rects) - count)
    rng.shuffle(marks)
    grid = [[EMPTY] * width for _ in range(height)]
    for (r0, c0, h, w), mark in zip(rects, marks):
        for r in range(r0, r0 + h):
            for c in range(c0, c0 + w):
                grid[r][c] = mark
    scene = f"A {height}x{width} picture: '#' and 'o' cells form solid rectangles on a '.' background.\n" + \
        _grid_text(["".join(row) for row in grid])
    hashes = [rect for rect, mark in zip(rects, marks) if mark == "#"]
    if rng.random() < 0.5:
        question = ("How many separate '#' shapes are in the picture? (A shape is a block of touching '#' cells; "
                    "'o' shapes do not count.) Answer with a number.")
        return question, scene, str(len(hashes)), "int", ()
    areas = sorted((h * w for _, _, h, w in hashes), reverse=True)
    if len(areas) > 1 and areas[0] == areas[1]:
        return None  # the largest must be unique
    r0, c0, _, _ = max(hashes, key=lambda rect: rect[2] * rect[3])
    question = ("Where is the top-left cell of the largest '#' shape (the one with the most cells)? Answer "
                "ROW,COL.")
    return question, scene, f"{r0},{c0}", "cell", ()


def _video(rng, level):
    height, width = (5, 7) if level == 1 else (7, 9)
    n_objects, n_frames = (2, 3) if level == 1 else (3, 4)
    letters = rng.sample(string.ascii_uppercase, n_objects)
    cells = rng.sample([(r, c) for r in range(height) for c in range(width)], n_objects)
    mover = rng.randrange(n_objects)
    direction = rng.choice(sorted(DIRECTIONS))
    dr, dc = DIRECTIONS[direction]
    r, c = cells[mover]
    path = [(r + dr * t, c + dc * t) for t in range(n_frames)]
    still = {cell for i, cell in enumerate(cells) if i != mover}
    if any(not (0 <= pr < height and 0 <= pc < width) or (pr, pc) in still for pr, pc in path):
        return None
    frames = []
    for t in range(n_frames):
        grid = [[EMPTY] * width for _ in range(height)]
        for i, (letter, cell) in enumerate(zip(letters, cells)):
            pr, pc = path[t] if i == mover else cell
            grid[pr][pc] = letter
        frames.append(f"frame {t}:\n" + _grid_text(["".join(row) for row in grid]))
    scene = f"A video of {n_frames} frames, {height}x{width} cells each, in order:\n" + "\n".join(frames)
    question = ("One object moves during the video; the others stay still. Which object moves, and in which "
                "direction (up, down, left or right)? Answer LETTER DIRECTION, e.g. Q up.")
    return question, scene, f"{letters[mover]} {direction}", "motion", ()


def _voxel(rng, level):
    size = 3 if level == 1 else 4
    n_objects = 5 if level == 1 else 8
    letters = rng.sample(string.ascii_uppercase, n_objects)
    cells = rng.sample([(z, r, c) for z in range(size) for r in range(size) for c in range(size)], n_objects)
    where = dict(zip(letters, cells))
    pairs = []  # (lower, upper): the next object straight above in the same column
    for letter, (z, r, c) in where.items():
        above = sorted((oz, other) for other, (oz, orow, ocol) in where.items()
                       if (orow, ocol) == (r, c) and oz > z)
        if above:
            pairs.append((letter, above[0][1]))
    if not pairs:
        return None
    lower, upper = rng.choice(sorted(pairs))
    slices = []
    for z in range(size):
        grid = [[EMPTY] * size for _ in range(size)]
        for letter, (oz, r, c) in where.items():
            if oz == z:
                grid[r][c] = letter
        slices.append(f"height {z}{' (bottom)' if z == 0 else ' (top)' if z == size - 1 else ''}:\n" +
                      _grid_text(["".join(row) for row in grid]))
    scene = (f"A {size}x{size}x{size} scene of objects (letters) in cells, shown as horizontal slices from the "
             "bottom up; in every slice, row r and column c are the same place on the floor.\n" + "\n".join(slices))
    if rng.random() < 0.5:
        question = (f"Which object is directly above {lower} (the nearest object higher up, at the same row and "
                    "column)? Answer with its letter.")
        return question, scene, upper, "letter", ()
    question = (f"Which object is directly below {upper} (the nearest object lower down, at the same row and "
                "column)? Answer with its letter.")
    return question, scene, lower, "letter", ()


def _sketch(rng, level):
    height, width = (5, 6) if level == 1 else (7, 8)
    boxes = []
    for _ in range(2):
        h, w = rng.randint(2, height - 1), rng.randint(2, width - 1)
        r0, c0 = rng.randint(0, height - h), rng.randint(0, width - w)
        boxes.append((r0, c0, r0 + h - 1, c0 + w - 1))
    (a0, a1, a2, a3), (b0, b1, b2, b3) = boxes
    rows = []
    for r in range(height):
        row = ""
        for c in range(width):
            in_a, in_b = a0 <= r <= a2 and a1 <= c <= a3, b0 <= r <= b2 and b1 <= c <= b3
            row += "X" if in_a and in_b else "A" if in_a else "B" if in_b else EMPTY
        rows.append(row)
    scene = (f"A grid of {height} rows and {width} columns. Rectangle A covers rows {a0}-{a2} and columns "
             f"{a1}-{a3}; rectangle B covers rows {b0}-{b2} and columns {b1}-{b3} (inclusive).\n"
             f"Draw it: one line per row, {width} characters each: '.' empty, 'A' only A, 'B' only B, "
             "'X' both.")
    text = "".join(rows)
    if rng.random() < 0.5:
        question = "How many cells are covered by both A and B? Answer with a number."
        return question, scene, str(text.count("X")), "int", tuple(rows)
    question = "How many cells are covered by exactly one of the two rectangles? Answer with a number."
    return question, scene, str(text.count("A") + text.count("B")), "int", tuple(rows)


def _audio(rng, level):
    n = 32 if level == 1 else 48
    noise = 0 if level == 1 else 1
    jitter = [rng.randint(-noise, noise) for _ in range(n)]
    if rng.random() < 0.5:
        period = rng.randint(3, 8 if level == 1 else 12)
        phase = rng.randrange(period)
        samples = [round(8 * math.sin(2 * math.pi * (t + phase) / period)) + jitter[t] for t in range(n)]
        scene = f"An audio clip of {n} samples (a pure tone{' with a little noise' if noise else ''}):\n" + \
            " ".join(str(s) for s in samples)
        question = ("The tone repeats every how many samples (its period; a shorter period is a higher pitch)? "
                    "Answer with a number.")
        return question, scene, str(period), "int", ()
    interval = rng.randint(3, 8)
    offset = rng.randrange(interval)
    samples = [(9 if (t - offset) % interval == 0 else 0) + jitter[t] for t in range(n)]
    scene = f"An audio clip of {n} samples (quiet, with loud beats{' and a little noise' if noise else ''}):\n" + \
        " ".join(str(s) for s in samples)
    question = "The beats come at a steady rhythm. How many samples from one beat to the next? Answer with a number."
    return question, scene, str(interval), "int", ()


GENERATORS = {"image": _image, "video": _video, "voxel": _voxel, "sketch": _sketch, "audio": _audio}


def make_problem(split: str, seed: int, level: int, family: str, index: int) -> Problem:
    rng = random.Random(f"perception-proxy/{split}/{seed}/{level}/{family}/{index}")
    for _ in range(10_000):
        drawn = GENERATORS[family](rng, level)
        if drawn is None:
            continue
        question, scene, answer, kind, sketch = drawn
        if split_of(family, scene) == split:
            return Problem(family, level, question, scene, answer, kind, sketch, split,
                           f"{split}-{seed}-{level}-{family}-{index}")
    raise RuntimeError(f"no {family} problem found for the split")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, families=FAMILIES) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"perception-proxy: split must be one of {', '.join(SPLITS)}, got {split!r}")
    combos = [(lv, f) for f in families for lv in levels]
    if not combos:
        raise ValueError("perception-proxy: no levels or families chosen")
    return [make_problem(split, seed, *combos[i % len(combos)], i // len(combos)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# reading answers and sketches (regular expressions, never evaluation)

_FORMS = {"int": "a whole number, e.g. <answer>3</answer>", "cell": "ROW,COL, e.g. <answer>4,7</answer>",
          "letter": "one letter, e.g. <answer>C</answer>", "motion": "LETTER DIRECTION, e.g. <answer>Q up</answer>"}
_INT = re.compile(r"^\s*(\d{1,4})\s*\.?\s*$")
_CELL = re.compile(r"^\s*[\(\[]?\s*(\d{1,3})\s*[,;\s]\s*(\d{1,3})\s*[\)\]]?\s*\.?\s*$")
_LETTER = re.compile(r"^\s*['\"`]?([A-Za-z])['\"`]?\s*\.?\s*$")
_MOTION = re.compile(r"^\s*['\"`]?([A-Za-z])['\"`]?\s*(?:moves\s+)?[,:]?\s*(up|down|left|right)\s*\.?\s*$", re.I)


def parse_answer(text: str, kind: str) -> tuple[str | None, str]:
    """(the answer in its canonical form, "") or (None, what is wrong). Never raises, never evaluates."""
    if len(text) > MAX_ANSWER_CHARS:
        return None, f"the answer is {len(text)} characters long; at most {MAX_ANSWER_CHARS}"
    if kind == "int":
        m = _INT.match(text)
        return (str(int(m.group(1))), "") if m else (None, f"expected {_FORMS[kind]}; got {text.strip()[:30]!r}")
    if kind == "cell":
        m = _CELL.match(text)
        return (f"{int(m.group(1))},{int(m.group(2))}", "") if m else \
            (None, f"expected {_FORMS[kind]}; got {text.strip()[:30]!r}")
    if kind == "letter":
        m = _LETTER.match(text)
        return (m.group(1).upper(), "") if m else (None, f"expected {_FORMS[kind]}; got {text.strip()[:30]!r}")
    m = _MOTION.match(text)
    return (f"{m.group(1).upper()} {m.group(2).lower()}", "") if m else \
        (None, f"expected {_FORMS[kind]}; got {text.strip()[:30]!r}")


_ROW_NUMBER = re.compile(r"^\d{1,3}\s*:\s?")
SKETCH_MARKS = frozenset(".ABX")


def check_sketch(text: str, truth: tuple[str, ...]) -> tuple[int, str]:
    """(cells drawn right, the verdict's text) of a sketch against the true drawing. A sketch of the wrong shape
    or with a character outside the legend is named and scores 0 cells; a row may start with its number."""
    total = len(truth) * len(truth[0])
    if len(text) > MAX_SKETCH_CHARS:
        return 0, f"the sketch is {len(text)} characters long; at most {MAX_SKETCH_CHARS}"
    rows = [_ROW_NUMBER.sub("", line.strip()).replace(" ", "") for line in text.strip("\n").splitlines()]
    rows = [row for row in rows if row]
    if len(rows) != len(truth):
        return 0, f"the sketch has {len(rows)} rows; the grid has {len(truth)}"
    for i, row in enumerate(rows):
        bad = sorted(set(row.upper()) - SKETCH_MARKS)
        if bad:
            return 0, f"row {i} uses {bad[0]!r}; a cell is one of . A B X"
        if len(row) != len(truth[0]):
            return 0, f"row {i} has {len(row)} cells; the grid has {len(truth[0])} columns"
    right = sum(a == b for row, true in zip(rows, truth) for a, b in zip(row.upper(), true))
    if right == total:
        return right, f"the sketch matches the description: all {total} cells right. Now answer."
    wrong_rows = [i for i, (row, true) in enumerate(zip(rows, truth)) if row.upper() != true]
    return right, (f"{right} of {total} cells match the description; rows {', '.join(map(str, wrong_rows))} "
                   "differ from it")


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class PerceptionProxyConfig(Options):
    """The perception-proxy env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    families: tuple[str, ...] = option(FAMILIES, "Tasks: image (count or locate shapes in a character grid), video "
                                       "(frames in sequence: what moved, which way), voxel (slices of a 3D grid: "
                                       "what is above what), sketch (draw the described scene, then answer), audio "
                                       "(integer samples: a tone's period or a beat's interval). All text proxies.",
                                       choices=FAMILIES)
    levels: tuple[int, ...] = option(LEVELS, "1 = small inputs, exact signals; 2 = larger inputs, more objects, "
                                     "noisy audio samples.", choices=LEVELS)
    max_sketches: int = option(2, "Sketches the sketch family checks; one more turn without an answer ends the "
                               "episode with reward 0.", low=1, high=10, aliases=("max_tool_calls",))
    sketch_weight: float = option(0.5, "Sketch family: reward for a sketch that matches the scene cell for cell.",
                                  low=0.0, high=1.0)
    answer_weight: float = option(0.5, "Sketch family: reward for the right answer (the other families pay 1 for "
                                  "it).", low=0.0, high=1.0)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels or not self.families:
            raise ConfigError("--levels / --families (options of --env perception-proxy): choose at least one of "
                              "each")
        if self.sketch_weight + self.answer_weight <= 0:
            raise ConfigError("--sketch-weight, --answer-weight (options of --env perception-proxy): both are 0, so "
                              "every sketch episode would earn 0; give one of them a weight")


class PerceptionProxyEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: PerceptionProxyConfig | None = None):
        self.problem = problem
        self.config = config or PerceptionProxyConfig()
        self.reset()

    def reset(self) -> list[dict[str, str]]:
        self.sketches = 0
        self.sketch_ok = False
        self.turns = 0
        p = self.problem
        if p.family == "sketch":
            user = f"{p.scene}\nQuestion: {p.question}\nDraw the sketch first; an answer is accepted after it."
            return [{"role": "system", "content": SKETCH_PROMPT}, {"role": "user", "content": user}]
        return [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"{p.scene}\nQuestion: {p.question}"}]

    def _info(self, **extra) -> dict:
        info = {"tool_calls": self.sketches, "family": self.problem.family}
        if self.problem.family == "sketch":
            info["sketch_ok"] = self.sketch_ok
        return {**info, **extra}

    def score(self, answer_text: str) -> tuple[float, dict]:
        """(reward, info) of a final answer (the inside of <answer>)."""
        p = self.problem
        answer, error = parse_answer(answer_text, p.kind)
        answer_ok = answer == p.answer
        extra = {"answer_ok": answer_ok, "answer": answer_text.strip()[:MAX_ANSWER_CHARS]}
        if error:
            extra["parse_error"] = error
        if p.family != "sketch":
            return float(answer_ok), self._info(correct=answer_ok, **extra)
        cfg = self.config
        reward = cfg.sketch_weight * self.sketch_ok + cfg.answer_weight * answer_ok
        parts = [ok for ok, w in ((self.sketch_ok, cfg.sketch_weight), (answer_ok, cfg.answer_weight)) if w > 0]
        return float(reward), self._info(correct=bool(parts) and all(parts), **extra)

    def step(self, model_text: str) -> StepResult:
        self.turns += 1
        p = self.problem
        action = TOOL.first_action(model_text)
        if action is None:
            return StepResult(None, True, 0.0, self._info(correct=False, answer=None,
                                                          parse_error=f"no answer: expected {_FORMS[p.kind]}"))
        kind, m = action
        sketch_family = p.family == "sketch"
        if kind == "answer" and (not sketch_family or self.sketches):
            reward, info = self.score(m.group(1))
            return StepResult(None, True, reward, info)
        if self.turns > (self.config.max_sketches + 1 if sketch_family else 1):
            return StepResult(None, True, 0.0, self._info(correct=False, answer=None, truncated=True))
        if kind == "answer":  # the sketch family, before any sketch
            text = "error: draw the sketch first in <sketch>...</sketch>; it is checked before an answer is accepted"
        elif not sketch_family:
            text = (f"error: the {p.family} task has no sketch step; write the answer as {_FORMS[p.kind]}")
        elif self.sketches >= self.config.max_sketches:
            text = f"error: all {self.config.max_sketches} sketches were checked; write the answer now"
        else:
            self.sketches += 1
            right, text = check_sketch(m.group(1), p.sketch)
            self.sketch_ok = self.sketch_ok or right == len(p.sketch) * len(p.sketch[0])
        return StepResult(TOOL.result(text), False, 0.0, self._info())


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """The sketch family: the true drawing, its check, then the answer; the others: the answer."""
    segments: list[tuple[str, str]] = []
    if problem.family == "sketch":
        env = PerceptionProxyEnv(problem)
        call = f"{TOOL.call_open}\n" + "\n".join(problem.sketch) + f"\n{TOOL.call_close}"
        segments += [("model", call), ("env", env.step(call).observation)]
    segments.append(("model", f"{TOOL.answer_open}{problem.answer}{TOOL.answer_close}"))
    return segments


def _problems(split: str, n: int, seed: int, config: PerceptionProxyConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, families=config.families)


SPEC = EnvSpec("perception-proxy", PerceptionProxyConfig, _problems, PerceptionProxyEnv, demonstration,
               title="Perception as text (text proxies): character-grid images, frames, voxel slices, sketches, "
                     "audio samples", validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

_PROXY = "A TEXT PROXY, not vision: "
IMPLEMENTATIONS = (
    Implementation("perception-proxy-grpo", "Vision tasks as text: images, videos and 3D scenes (GRPO)", "grpo",
                   "perception-proxy",
                   "A text proxy of vision: questions about pictures, videos and 3D scenes rendered as text "
                   "(character grids, frames in sequence, slices of a voxel grid); rewarded for the exact answer.",
                   env_options={"families": VISUAL_FAMILIES}, nodes=("vision",),
                   changes=_PROXY + "no vision-language model runs offline on a CPU here, so the three visual "
                           "task kinds the survey groups under vision agents are posed over text renderings: an "
                           "image is a grid of characters, a video a sequence of grids, a 3D scene its horizontal "
                           "slices. What is kept is what each task asks of the input (find and count objects, "
                           "track change across frames, relate positions in depth) and a verifiable answer; what "
                           "is lost is every property of pixels (texture, colour, perspective, occlusion)."),
    Implementation("perception-proxy-image-grpo", "Image tasks as text: count and locate shapes (GRPO)", "grpo",
                   "perception-proxy",
                   "A text proxy of image tasks: a picture drawn with characters; count the '#' rectangles among "
                   "'o' ones, or give the top-left cell of the largest; exact-match reward.",
                   env_options={"families": ("image",)}, nodes=("vision-image",),
                   changes=_PROXY + "the image is a character grid (8x12 or 12x18 cells) of solid rectangles of "
                           "two marks on a background, seen whole (zoom-grpo is the variant that must crop a grid "
                           "too large to see). Keeps counting and localisation questions with exact answers; "
                           "simplifies objects to axis-aligned rectangles that never touch."),
    Implementation("perception-proxy-video-grpo", "Video tasks as text: what moved, and which way (GRPO)", "grpo",
                   "perception-proxy",
                   "A text proxy of video tasks: three or four frames of a small character grid in order; one "
                   "letter moves one cell per frame; name it and its direction.",
                   env_options={"families": ("video",)}, nodes=("vision-video",),
                   changes=_PROXY + "a video is a sequence of character-grid frames, shown together in order. "
                           "Keeps the temporal part of video understanding (the answer is in the change between "
                           "frames, not in any one frame); simplifies to one mover with a constant direction, "
                           "static distractors and no camera motion."),
    Implementation("perception-proxy-3d-grpo", "3D tasks as text: what is above what in a voxel scene (GRPO)",
                   "grpo", "perception-proxy",
                   "A text proxy of 3D tasks: a 3x3x3 or 4x4x4 voxel grid of lettered objects shown slice by "
                   "slice from the bottom; name the object directly above or below another.",
                   env_options={"families": ("voxel",)}, nodes=("vision-3d",),
                   changes=_PROXY + "a 3D scene is a voxel grid printed as its horizontal slices. Keeps spatial "
                           "reasoning across depth (the answer needs the same row and column found in other "
                           "slices); simplifies to one-cell objects, a fully visible scene and no viewpoint, "
                           "projection or point cloud."),
    Implementation("perception-proxy-sketch-grpo", "Generation-driven perception as text: sketch, then answer "
                   "(GRPO)", "grpo", "perception-proxy",
                   "A text proxy of generation-driven perception: two rectangles described in words; the agent "
                   "first draws the scene as a character grid in <sketch>, "
                   "which the environment checks cell by cell, then answers how many cells the rectangles share "
                   "or cover alone.",
                   env_options={"families": ("sketch",)}, nodes=("perception-generation-driven",),
                   changes=_PROXY + "the model generates its own intermediate picture, as the survey's "
                           "generation-driven perception does with sketches or edited images, but the picture is "
                           "a character grid. Keeps the loop: produce a visual aid, have it checked against the "
                           "input (the <check> observation says how many cells match and which rows differ), then "
                           "reason over it; the reward pays for the sketch and the answer separately (weights are "
                           "options). Simplifies to two axis-aligned rectangles and counting questions.",
                   equation=r"r = w_s\,\mathbb{1}[\text{sketch} = \text{scene}] + w_a\,\mathbb{1}[\hat a = a]"),
    Implementation("perception-proxy-audio-grpo", "Audio as text: pitch and rhythm from raw samples (GRPO)", "grpo",
                   "perception-proxy",
                   "A text proxy of audio: a short clip as a line of integer samples; the period of a tone (its "
                   "pitch) or the interval between beats (its rhythm), in samples.",
                   env_options={"families": ("audio",)}, nodes=("perception-audio",),
                   changes="A TEXT PROXY, not audio: no audio encoder runs here, so a clip is its waveform written "
                           "as 32 or 48 integer samples. It is an honest proxy only for low-level listening: "
                           "pitch (a tone's period) and rhythm (the interval between beats) must be read off the "
                           "raw signal, as an audio model must, with +-1 noise at level 2. It does not stand in "
                           "for speech, music, sound events or audio question answering over real recordings, "
                           "which need thousands of samples a second and a trained encoder."),
)
