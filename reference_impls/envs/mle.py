"""Machine-learning engineering in the sandbox: train a model on a small tabular data set and submit its
predictions, scored on a hidden test split.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    user:  the task, the columns, the first rows of train.csv
    model: <run>import csv ... print(prediction)</run>     a trial: trained on part of train.csv, scored on
    env:   <result>validation R^2 0.97 on 15 rows</result>  the rest (its labels never enter the sandbox)
    model: <submit>import csv ... </submit>                the submission: trained on all of train.csv,
                                                           predicting test.csv; scored on the hidden labels

Problems
    A problem is a generated data set with a hidden rule: ``regression`` (``y`` a linear function of the
    features plus Gaussian noise), ``binary`` (``y`` is 1 on one side of a hidden hyperplane, else 0) or
    ``multiclass`` (three classes, each a cloud around a hidden centre). Level 1 has two features, all of them
    informative; level 2 adds irrelevant features (four or three in all) and, for ``binary``, 5% flipped labels.
    ``n_train`` labelled rows go to ``train.csv``, ``n_test`` unlabelled rows to ``test.csv``; the test labels
    stay in this process.
Splits
    ``train``, ``validation`` and ``heldout`` hold different hidden rules: a data set belongs to one split by a
    stable hash of its family and rule (one in four held out, one in eight for validation).
The program
    Model text runs only in :mod:`reference_impls.sandbox` (a fresh, locked-down interpreter, standard library
    only), never in this process: it is ``main.py`` beside ``train.csv`` and ``test.csv``, and it prints one
    prediction per row of ``test.csv``, in order, and nothing else on stdout (stderr is free). The predictions
    are read as numbers by a regular expression; nothing the program prints is evaluated.
Reward
    ``regression``: ``max(0, R^2)`` on the hidden test labels (predicting a constant earns 0). ``binary`` and
    ``multiclass``: accuracy above the majority class, ``max(0, (acc - base) / (1 - base))`` with ``base`` the
    share of the test split's most common label (guessing one class earns 0). ``correct`` = the reward is at
    least ``pass_score``. A submission that does not run, or whose output is not one number per test row,
    earns 0 and ``error`` says what was wrong.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
from collections import Counter
from dataclasses import dataclass

from .. import sandbox
from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="run",
    description="Runs a training program in the sandbox on part of train.csv and scores it on the rest.",
    call_open="<run>",
    call_close="</run>",
    result_open="<result>",
    result_close="</result>",
    answer_open="<submit>",
    answer_close="</submit>",
)
FAMILIES = ("regression", "binary", "multiclass")
LEVELS = (1, 2)
SPLITS = ("train", "validation", "heldout")
METRIC = {"regression": "R^2", "binary": "accuracy", "multiclass": "accuracy"}
SHOWN_ROWS = 3  # rows of train.csv quoted in the prompt
MAX_SHOWN_CHARS = 600  # of a run's output quoted back

SYSTEM_PROMPT = (
    "You are a machine-learning engineer. Write a Python program (standard library only: csv, math, statistics "
    "...) that reads train.csv (features and the label y), trains a model, and prints one prediction per row of "
    "test.csv, in order, one per line, and nothing else. <run>program</run> tries it: it is trained on part of "
    "train.csv and scored on the rest, and the score comes back in <result>...</result>. <submit>program</submit> "
    "is your final submission, scored on hidden test labels."
)


@dataclass(frozen=True)
class Problem:
    family: str
    level: int
    columns: tuple[str, ...]  # the feature columns
    train: tuple[tuple[float, ...], ...]  # features then the label
    test: tuple[tuple[float, ...], ...]  # features only
    test_labels: tuple[float, ...]  # hidden: never written into the sandbox
    split: str
    uid: str

    @property
    def classes(self) -> bool:
        return self.family != "regression"


def split_of(family: str, rule) -> str:
    """The split a data set belongs to: a stable hash of its family and hidden rule."""
    text = ",".join(f"{v:.1f}" for v in rule)
    bucket = int(hashlib.sha256(f"mle/{family}/{text}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _label_text(value: float, classes: bool) -> str:
    return str(int(value)) if classes else f"{value:.3f}"


def csv_text(columns, rows, with_label: bool, classes: bool) -> str:
    head = ",".join(columns) + (",y" if with_label else "")
    lines = [head]
    for row in rows:
        feats = ",".join(f"{v:.2f}" for v in row[:len(columns)])
        lines.append(feats + ("," + _label_text(row[len(columns)], classes) if with_label else ""))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# data sets

def _draw(rng: random.Random, family: str, level: int, n: int):
    """(columns, rule, rows): rows are features then label, from the hidden rule."""
    informative = 2
    extra = 0 if level == 1 else (2 if family != "multiclass" else 1)
    k = informative + extra
    columns = tuple(f"x{i + 1}" for i in range(k))
    if family == "multiclass":
        centres = [(rng.randint(-4, 4), rng.randint(-4, 4)) for _ in range(3)]
        if min(math.dist(a, b) for i, a in enumerate(centres) for b in centres[i + 1:]) < 3:
            return None
        rule = tuple(v for c in centres for v in c)
        rows = []
        for i in range(n):
            label = i % 3 if i < 3 else rng.randrange(3)
            cx, cy = centres[label]
            feats = [round(rng.gauss(cx, 1.0), 2), round(rng.gauss(cy, 1.0), 2)]
            feats += [round(rng.uniform(-5, 5), 2) for _ in range(extra)]
            rows.append((*feats, float(label)))
        return columns, rule, rows
    weights = [rng.choice([-1, 1]) * rng.randint(5, 30) / 10 for _ in range(informative)] + [0.0] * extra
    bias = rng.randint(-20, 20) / 10
    rule = (*weights[:informative], bias)
    rows = []
    for _ in range(n):
        feats = [round(rng.uniform(-5, 5), 2) for _ in range(k)]
        z = sum(w * x for w, x in zip(weights, feats)) + bias
        if family == "regression":
            label = round(z + rng.gauss(0.0, 0.5), 3)
        else:
            label = float(z > 0)
            if level == 2 and rng.random() < 0.05:
                label = 1.0 - label
        rows.append((*feats, label))
    if family == "binary" and min(Counter(r[-1] for r in rows).values(), default=0) < n // 5:
        return None  # both classes well represented
    return columns, rule, rows


def make_problem(split: str, seed: int, level: int, family: str, index: int, n_train: int, n_test: int) -> Problem:
    rng = random.Random(f"mle/{split}/{seed}/{level}/{family}/{index}")
    for _ in range(10_000):
        drawn = _draw(rng, family, level, n_train + n_test)
        if drawn is None:
            continue
        columns, rule, rows = drawn
        if split_of(family, rule) != split:
            continue
        if family != "regression" and len({r[-1] for r in rows[n_train:]}) < 2:
            continue  # a test split of one class has no accuracy above its majority
        k = len(columns)
        return Problem(family, level, columns, tuple(rows[:n_train]), tuple(r[:k] for r in rows[n_train:]),
                       tuple(r[k] for r in rows[n_train:]), split, f"{split}-{seed}-{level}-{family}-{index}")
    raise RuntimeError("no data set found for the split")  # pragma: no cover


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, families=FAMILIES,
             n_train: int = 60, n_test: int = 30) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"mle: split must be one of {', '.join(SPLITS)}, got {split!r}")
    combos = [(lv, f) for f in families for lv in levels]
    if not combos:
        raise ValueError("mle: no levels or families chosen")
    return [make_problem(split, seed, *combos[i % len(combos)], i // len(combos), n_train, n_test)
            for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# scoring predictions

_NUMBER = re.compile(r"^[-+]?(?:\d{1,12}(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?$")


def read_predictions(stdout: str, n: int) -> tuple[list[float] | None, str]:
    """The program's stdout as ``n`` numbers (one a line; blank lines skipped), or (None, what is wrong)."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if len(lines) != n:
        first = f"; its first line is {lines[0][:40]!r}" if lines else ""
        return None, f"expected {n} predictions (one a line, one per row of test.csv), got {len(lines)} lines{first}"
    values = []
    for i, line in enumerate(lines):
        if not _NUMBER.match(line):
            return None, f"line {i + 1} of the output is not a number: {line[:40]!r}"
        value = float(line)
        if not math.isfinite(value):
            return None, f"line {i + 1} of the output is not a finite number: {line[:40]!r}"
        values.append(value)
    return values, ""


def score(predictions, labels, classes: bool) -> tuple[float, float]:
    """(the metric, the reward): R^2 and max(0, R^2), or accuracy and its gain over the majority class."""
    n = len(labels)
    if not classes:
        mean = sum(labels) / n
        total = sum((y - mean) ** 2 for y in labels)
        residual = sum((y - p) ** 2 for y, p in zip(labels, predictions))
        r2 = 1.0 - residual / total if total > 0 else 0.0
        return r2, max(0.0, r2)
    accuracy = sum(round(p) == y for p, y in zip(predictions, labels)) / n
    base = Counter(labels).most_common(1)[0][1] / n
    return accuracy, max(0.0, (accuracy - base) / (1.0 - base)) if base < 1 else 0.0


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class MLEConfig(Options):
    """The mle env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    families: tuple[str, ...] = option(FAMILIES, "Tasks: regression (a linear rule plus noise, R^2), binary (a "
                                       "hidden hyperplane), multiclass (three clouds); accuracy over the majority "
                                       "class for the last two.", choices=FAMILIES)
    levels: tuple[int, ...] = option(LEVELS, "1 = two informative features; 2 = irrelevant features added (and 5% "
                                     "flipped labels for binary).", choices=LEVELS)
    n_train: int = option(60, "Labelled rows in train.csv.", low=10, high=2000)
    n_test: int = option(30, "Rows of test.csv (their labels are hidden).", low=5, high=2000)
    validation_rows: int = option(15, "Rows of train.csv a <run> holds out to score a trial on.", low=2, high=1000)
    max_runs: int = option(2, "<run> trials allowed; one more ends the episode with reward 0.", low=0, high=20,
                           aliases=("max_tool_calls",))
    pass_score: float = option(0.8, "The reward at which an episode counts as correct.", low=0.0, high=1.0)
    cpu_seconds: int = option(5, "CPU seconds for one sandboxed run.", low=1, high=120)
    wall_seconds: float = option(10.0, "Wall-clock seconds for one sandboxed run.", low=0.5, high=300.0)
    max_code_chars: int = option(8000, "A longer program is refused without running it.", low=100, high=200000)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels or not self.families:
            raise ConfigError("--levels / --families (options of --env mle): choose at least one of each")
        if self.validation_rows >= self.n_train:
            raise ConfigError(f"--validation-rows (option of --env mle): {self.validation_rows} leaves no training "
                              f"rows of --n-train {self.n_train}; hold out fewer")


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_+-]*\s*\n(.*?)\n?\s*```\s*$", re.S)


def clean_program(text: str) -> str:
    m = _FENCE.match(text)
    return (m.group(1) if m else text).strip("\n")


@dataclass
class Trial:
    """One sandboxed run: the metric and reward (None when the predictions did not read), what went wrong."""

    metric: float | None
    reward: float
    status: str
    error: str
    output: str


class MLEEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: MLEConfig | None = None):
        self.problem = problem
        self.config = config or MLEConfig()
        self.runs = 0

    def reset(self) -> list[dict[str, str]]:
        self.runs = 0
        p = self.problem
        what = ("predict the number y (scored by R^2)" if not p.classes else
                f"predict the class y ({', '.join(str(c) for c in sorted({int(r[-1]) for r in p.train}))}; scored "
                "by accuracy above always guessing the most common class)")
        head = csv_text(p.columns, p.train[:SHOWN_ROWS], True, p.classes)
        user = (f"Task: {what}. train.csv has {len(p.train)} rows with the columns {', '.join(p.columns)}, y; "
                f"test.csv has {len(p.test)} rows with the columns {', '.join(p.columns)}. The first rows of "
                f"train.csv:\n{head}You may try {self.config.max_runs} programs with <run> before you submit.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def trial(self, program: str, train_rows, test_rows, labels) -> Trial:
        """Run ``program`` in the sandbox on these rows and score its predictions against ``labels``."""
        p, cfg = self.problem, self.config
        if not program.strip():
            return Trial(None, 0.0, "refused", "the program is empty", "")
        if len(program) > cfg.max_code_chars:
            return Trial(None, 0.0, "refused", f"the program is {len(program)} characters long; at most "
                                               f"{cfg.max_code_chars}", "")
        files = {"train.csv": csv_text(p.columns, train_rows, True, p.classes),
                 "test.csv": csv_text(p.columns, test_rows, False, p.classes)}
        limits = sandbox.Limits(cpu_seconds=cfg.cpu_seconds, wall_seconds=cfg.wall_seconds)
        res = sandbox.check(sandbox.run_python(program, limits=limits, files=files))
        if res.status != "ok":
            last = res.stderr.strip().splitlines()[-1][:200] if res.stderr.strip() else ""
            return Trial(None, 0.0, res.status, f"the program did not finish cleanly ({res.status})"
                         + (f": {last}" if last else ""), res.stdout)
        predictions, error = read_predictions(res.stdout, len(labels))
        if predictions is None:
            return Trial(None, 0.0, res.status, error, res.stdout)
        metric, reward = score(predictions, labels, p.classes)
        return Trial(metric, reward, res.status, "", res.stdout)

    def step(self, model_text: str) -> StepResult:
        p, cfg = self.problem, self.config
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.runs}
        if action is None:
            return StepResult(None, True, 0.0, {**base, "correct": False, "metric": None,
                                                "error": "no <run> or <submit> program in the turn"})
        kind, m = action
        if kind == "answer":
            t = self.trial(clean_program(m.group(1)), p.train, p.test, p.test_labels)
            info = {**base, "correct": t.metric is not None and t.reward >= cfg.pass_score, "metric": t.metric,
                    "sandbox_status": t.status}
            if t.error:
                info["error"] = t.error
            return StepResult(None, True, t.reward, info)
        if self.runs >= cfg.max_runs:
            return StepResult(None, True, 0.0, {**base, "correct": False, "metric": None, "truncated": True,
                                                "error": f"all {cfg.max_runs} trial runs were used; submit with "
                                                         "<submit>...</submit>"})
        self.runs += 1
        keep = len(p.train) - cfg.validation_rows
        rows = p.train[keep:]
        k = len(p.columns)
        t = self.trial(clean_program(m.group(1)), p.train[:keep], [r[:k] for r in rows], [r[k] for r in rows])
        return StepResult(TOOL.result(trial_report(t, p.family, len(rows))), False, 0.0, {"tool_calls": self.runs})


def trial_report(t: Trial, family: str, rows: int) -> str:
    """A trial as the agent reads it: the validation score, or what went wrong and the start of the output."""
    if t.metric is not None:
        return f"validation {METRIC[family]} {t.metric:.3f} on {rows} rows (reward {t.reward:.3f})"
    shown = t.output.strip()[:MAX_SHOWN_CHARS]
    return f"error: {t.error}" + (f"\noutput: {shown}" if shown else "")


# ----------------------------------------------------------------------------------------------------
# the demonstration: a reference solution per family (standard library only)

_READ = '''import csv
def read(name):
    with open(name) as f:
        rows = list(csv.reader(f))
    return rows[0], [[float(v) for v in row] for row in rows[1:]]
head, train = read("train.csv")
_, test = read("test.csv")
X, y = [row[:-1] + [1.0] for row in train], [row[-1] for row in train]
T = [row + [1.0] for row in test]
'''

_LEAST_SQUARES = _READ + '''k = len(X[0])
A = [[sum(r[i] * r[j] for r in X) for j in range(k)] + [sum(r[i] * v for r, v in zip(X, y))] for i in range(k)]
for c in range(k):
    p = max(range(c, k), key=lambda i: abs(A[i][c]))
    A[c], A[p] = A[p], A[c]
    for i in range(k):
        if i != c:
            f = A[i][c] / A[c][c]
            A[i] = [a - f * b for a, b in zip(A[i], A[c])]
w = [A[i][k] / A[i][i] for i in range(k)]
for r in T:
    print(sum(a * b for a, b in zip(w, r)))
'''

_LOGISTIC = _READ + '''import math
w = [0.0] * len(X[0])
for _ in range(300):
    g = [0.0] * len(w)
    for r, v in zip(X, y):
        z = max(-30.0, min(30.0, sum(a * b for a, b in zip(w, r))))
        e = 1 / (1 + math.exp(-z)) - v
        g = [gi + e * ri for gi, ri in zip(g, r)]
    w = [wi - 0.1 * gi / len(X) for wi, gi in zip(w, g)]
for r in T:
    print(int(sum(a * b for a, b in zip(w, r)) > 0))
'''

_CENTROIDS = _READ + '''groups = {}
for r, v in zip(X, y):
    groups.setdefault(int(v), []).append(r[:-1])
mean = {c: [sum(col) / len(rs) for col in zip(*rs)] for c, rs in groups.items()}
for r in T:
    print(min(mean, key=lambda c: sum((a - b) ** 2 for a, b in zip(mean[c], r[:-1]))))
'''

REFERENCE = {"regression": _LEAST_SQUARES, "binary": _LOGISTIC, "multiclass": _CENTROIDS}


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Try the family's reference program once (the real sandboxed result), then submit it."""
    env = MLEEnv(problem, MLEConfig())
    env.reset()
    program = REFERENCE[problem.family]
    call = f"{TOOL.call_open}\n{program}{TOOL.call_close}"
    return [("model", call), ("env", env.step(call).observation),
            ("model", f"{TOOL.answer_open}\n{program}{TOOL.answer_close}")]


def _problems(split: str, n: int, seed: int, config: MLEConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, families=config.families, n_train=config.n_train,
                    n_test=config.n_test)


SPEC = EnvSpec("mle", MLEConfig, _problems, MLEEnv, demonstration,
               title="Machine-learning engineering: train a model on a tabular task in the sandbox (hidden test "
                     "split)", uses_sandbox=True, validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("mle-grpo", "Machine-learning engineering: train and submit a tabular model (GRPO)", "grpo",
                   "mle",
                   "An agent that writes a training program for a small tabular data set, tries it in the sandbox "
                   "on a validation part of the training rows, and submits predictions for a test split whose "
                   "labels it never sees.",
                   nodes=("env-mle", "env-domain-specific"),
                   changes="A small stand-in for machine-learning engineering environments: keeps the loop they "
                           "grade (read the data, write and run training code, check it on held-out rows, submit "
                           "predictions scored on a hidden test split) with the code run in the sandbox and the "
                           "test labels kept outside it. Simplifies: generated data sets of 60 rows with two to "
                           "four numeric features and a hidden linear or cluster rule, standard-library Python "
                           "only (no numpy or scikit-learn in the sandbox), one file, no GPU, no leaderboard and "
                           "no competition text to read.",
                   equation=r"r = \max\left(0, R^2\right) \;\text{or}\; \max\left(0, "
                            r"\frac{\mathrm{acc} - \mathrm{acc}_{\mathrm{majority}}}{1 - \mathrm{acc}_{\mathrm{majority}}}\right)"),
)
