r"""Self-correction: two attempts at a calculator word problem, with feedback in between.

Stages (a) and (b) of the survey's self-improvement section run on this one environment:

- *verbal self-improvement* (Reflexion, Self-Refine): the agent answers, receives feedback, answers again; what
  changes between the two modes is where the feedback comes from (``feedback`` option);
- *internalised self-correction* (SCoRe): the same episodes trained with RL, the reward crediting the
  corrected second attempt (``credit_first``, ``flip_bonus``; see :func:`self_correction_reward`).

Protocol (everything inside one assistant turn sequence; the environment's text is loss-masked)::

    user:  the word problem (the calculator env's problems, levels and splits)
    model: <answer>57</answer>                                   attempt 1
    env:   <feedback>...</feedback>                              depends on ``feedback``, below
    model: <check>20+17=37; 37*3=111</check><answer>111</answer> attempt 2 (the check is optional)

``feedback="external"`` (a verifier, Reflexion style): a correct attempt 1 ends the episode (attempt 2 is
attempt 1, so right->wrong cannot happen). A wrong one gets ``<feedback>Your answer 57 is incorrect.
Try again ...</feedback>``; with ``hint="direction"`` the verifier also says whether the true answer is larger or
smaller than the one given (derived from the gold answer; nothing else of it is revealed).

``feedback="self"`` (intrinsic self-correction, SCoRe's setting): whatever attempt 1 was, the env sends the same
text, asking the agent to check its own answer and give a final one. The env never says whether attempt 1 was
right: the observation is a constant (a test checks that a right and a wrong attempt get identical tokens).

No calculator tool is offered: the attempts are mental arithmetic, so that attempt 1 has errors to correct.

Reward
    ``r1``, ``r2`` in {0, 1}: exact match (as a fraction) of the number in attempt 1's / attempt 2's first
    ``<answer>`` tag with the gold answer. Episode reward (:func:`self_correction_reward`)::

        R = [credit_first] * r1 + r2 + flip_bonus * (r2 - r1)

    Defaults ``credit_first=False, flip_bonus=0``: R = r2, the corrected answer only. SCoRe's Stage II sets
    ``credit_first=True`` (both attempts are rewarded) and a positive ``flip_bonus`` (their alpha): a wrong->right
    flip earns ``+alpha`` more, a right->wrong flip costs ``alpha``.
Metrics (``info`` at the episode's end)
    ``first_correct``, ``second_correct`` (= ``correct``), ``flip`` (``wrong->right``, ``right->wrong``,
    ``right->right``, ``wrong->wrong``), ``first_answer``, ``second_answer``, ``checked`` (a ``<check>`` was written).
    :mod:`reference_impls.measure.self_correction` measures them for both feedback modes on held-out problems.
Demonstrations (SFT warm start)
    Written in the ``self`` protocol (the default): attempt 1, the env's self-check request, a ``<check>`` that
    recomputes every step of a correct solution and the gold answer. ``demo_slip_rate`` of the demonstrations
    start with a plausible slip in attempt 1 (the first step's value, or the answer off by one or ten) that the
    check then corrects, so the warm start shows both keeping a right answer and fixing a wrong one.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

from ..options import Options, option
from . import EnvSpec, StepResult
from . import calculator
from .arith import evaluate, format_number, parse_number

ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
CHECK_OPEN, CHECK_CLOSE = "<check>", "</check>"
FEEDBACK_OPEN, FEEDBACK_CLOSE = "<feedback>", "</feedback>"

SYSTEM_PROMPT = ("Solve the word problem. Write your answer as <answer>number</answer>. You will then get "
                 "feedback and one more attempt: you may check your work in <check>...</check> and give your "
                 "final answer as <answer>number</answer>.")
#: the self mode's request: the same text whatever attempt 1 was (it must never reveal correctness)
SELF_FEEDBACK = (f"{FEEDBACK_OPEN}Check your answer: recompute each step in {CHECK_OPEN}...{CHECK_CLOSE}, then "
                 f"give your final answer as {ANSWER_OPEN}number{ANSWER_CLOSE}.{FEEDBACK_CLOSE}")
FEEDBACK_MODES = ("self", "external")
HINTS = ("none", "direction")


def self_correction_reward(first_correct: bool, second_correct: bool, credit_first: bool = False,
                           flip_bonus: float = 0.0) -> float:
    r"""The episode reward from the two attempts' correctness (module docstring).

    SCoRe (Kumar et al., "Training Language Models to Self-Correct via Reinforcement Learning", arXiv
    2409.12917): Stage II maximises the sum of both attempts' rewards, E[sum_{i=1,2} r(y_i, y*)] minus a KL
    term to the reference (their Stage II objective, Eq. 4), with the second attempt's reward shaped by the
    progress bonus b(y_2 | y_1, y*) = alpha * (r(y_2, y*) - r(y_1, y*)) (Section 5, "reward shaping").
    Here::

        R = credit_first * r_1 + r_2 + flip_bonus * (r_2 - r_1),   r_i = 1[y_i correct]

    so wrong->right earns ``flip_bonus`` extra and right->wrong loses it; with ``credit_first=False`` and
    ``flip_bonus=0`` it is the plain second-attempt reward. The KL term is the trainer's (``--beta``).
    Not kept: SCoRe's Stage I (maximise r(y_2) while a strong KL keeps attempt 1 at the base model, their Eq. 3)
    and per-turn credit (here one episode reward reaches both turns' tokens). The equation numbers are from our
    reading of the paper; the search tool served only its abstract and third-party summaries, so they were not
    re-checked against the full text.
    """
    r1, r2 = float(bool(first_correct)), float(bool(second_correct))
    return (r1 if credit_first else 0.0) + r2 + flip_bonus * (r2 - r1)


def flip_name(first_correct: bool, second_correct: bool) -> str:
    return f"{'right' if first_correct else 'wrong'}->{'right' if second_correct else 'wrong'}"


@dataclass(frozen=True)
class Problem:
    """A calculator problem plus what the demonstration's first attempt writes."""

    base: calculator.Problem
    demo_first: str  # the gold answer, or a plausible slip the demonstration's check corrects

    @property
    def question(self) -> str:
        return self.base.question

    @property
    def answer(self) -> Fraction:
        return self.base.answer

    @property
    def family(self) -> str:
        return self.base.family

    @property
    def level(self) -> int:
        return self.base.level

    @property
    def split(self) -> str:
        return self.base.split

    @property
    def uid(self) -> str:
        return "selfcorrect-" + self.base.uid


@dataclass
class SelfCorrectConfig(Options):
    """Options of the self-correction env (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2), "Difficulty levels of the calculator problems: 1 = one operation, "
                                     "2 = two, 3 = distractors and three operations.", choices=(1, 2, 3))
    families: tuple[str, ...] = option((), "Calculator problem families; empty = every family of the levels.",
                                       choices=tuple(f.name for f in calculator.FAMILIES))
    feedback: str = option("self", "Who judges attempt 1: self (the agent is asked to check its own answer and is "
                           "never told whether it was right) or external (a verifier says 'incorrect'; a correct "
                           "attempt 1 ends the episode).", choices=FEEDBACK_MODES)
    hint: str = option("none", "External feedback only: none ('incorrect') or direction (also whether the true "
                       "answer is larger or smaller).", choices=HINTS)
    credit_first: bool = option(False, "Add attempt 1's correctness to the reward (SCoRe Stage II rewards both "
                                "attempts); off = only the second attempt counts.")
    flip_bonus: float = option(0.0, "SCoRe's progress bonus alpha: reward + alpha*(r2 - r1), i.e. +alpha for a "
                               "wrong->right flip, -alpha for right->wrong (0 = off).", low=0.0, high=100.0)
    demo_slip_rate: float = option(0.25, "Share of warm-start demonstrations whose attempt 1 is a slip that the "
                                   "check corrects.", low=0.0, high=1.0)


def _slip(problem: calculator.Problem, rng: random.Random) -> str:
    """A plausible wrong first answer: stopping after the first step, else the answer off by one or ten."""
    first_step = evaluate(problem.steps[0])
    if len(problem.steps) > 1 and first_step != problem.answer:
        return format_number(first_step)
    return format_number(problem.answer + rng.choice((-10, -1, 1, 10)))


def problems(split: str, n: int, seed: int, config: SelfCorrectConfig) -> list[Problem]:
    """The calculator's problems of ``split`` (disjoint phrasings and random streams per split)."""
    base = calculator.problems(split, n, seed, levels=config.levels, families=config.families or None)
    out = []
    for p in base:
        rng = random.Random(f"selfcorrect/{p.uid}")
        first = _slip(p, rng) if rng.random() < config.demo_slip_rate else format_number(p.answer)
        out.append(Problem(p, first))
    return out


class SelfCorrectEnv:
    """One two-attempt episode (module docstring)."""

    stop_strings = (ANSWER_CLOSE,)

    def __init__(self, problem: Problem, config: SelfCorrectConfig | None = None):
        self.problem = problem
        self.config = config or SelfCorrectConfig()
        self.first: str | None = None
        self.first_correct = False
        self.attempts = 0

    def reset(self) -> list[dict[str, str]]:
        self.first, self.first_correct, self.attempts = None, False, 0
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.problem.question}]

    def judge(self, text: str) -> tuple[str | None, bool]:
        """The first ``<answer>`` of ``text`` and whether it is the gold answer."""
        start = text.find(ANSWER_OPEN)
        end = text.find(ANSWER_CLOSE, start + len(ANSWER_OPEN)) if start >= 0 else -1
        if start < 0 or end < 0:
            return None, False
        answer = text[start + len(ANSWER_OPEN):end].strip()
        value = parse_number(answer)
        return answer, value is not None and value == self.problem.answer

    def external_feedback(self, answer: str | None) -> str:
        if answer is None:
            text = "No <answer> found. Try again: give your final answer as <answer>number</answer>."
        else:
            text = f"Your answer {answer} is incorrect."
            value = parse_number(answer)
            if self.config.hint == "direction" and value is not None:
                text += f" The true answer is {'larger' if self.problem.answer > value else 'smaller'}."
            text += " Try again: give your final answer as <answer>number</answer>."
        return f"{FEEDBACK_OPEN}{text}{FEEDBACK_CLOSE}"

    def finish(self, second: str | None, second_correct: bool, checked: bool) -> StepResult:
        cfg = self.config
        reward = self_correction_reward(self.first_correct, second_correct, cfg.credit_first, cfg.flip_bonus)
        return StepResult(None, True, reward, {
            "correct": second_correct, "first_correct": self.first_correct, "second_correct": second_correct,
            "flip": flip_name(self.first_correct, second_correct), "first_answer": self.first,
            "second_answer": second, "checked": checked, "feedback": cfg.feedback})

    def step(self, model_text: str) -> StepResult:
        self.attempts += 1
        answer, correct = self.judge(model_text)
        if self.attempts == 1:
            self.first, self.first_correct = answer, correct
            if self.config.feedback == "external":
                if correct:  # the verifier accepts: the episode ends, attempt 2 = attempt 1
                    return self.finish(answer, True, False)
                return StepResult(self.external_feedback(answer), False, 0.0, {"first_correct": False})
            return StepResult(SELF_FEEDBACK, False, 0.0, {})
        return self.finish(answer, correct, CHECK_OPEN in model_text)


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Attempt 1 (``problem.demo_first``), the self-check request, a check recomputing each step, the gold."""
    checks = "; ".join(f"{expr}={format_number(evaluate(expr))}" for expr in problem.base.steps)
    gold = format_number(problem.answer)
    return [("model", f"{ANSWER_OPEN}{problem.demo_first}{ANSWER_CLOSE}"), ("env", SELF_FEEDBACK),
            ("model", f"{CHECK_OPEN}{checks}{CHECK_CLOSE}{ANSWER_OPEN}{gold}{ANSWER_CLOSE}")]


SPEC = EnvSpec(
    "self-correct", SelfCorrectConfig, problems, SelfCorrectEnv, demonstration,
    title="two attempts with self or verifier feedback (Reflexion / SCoRe style)")
ENV_SPECS = (SPEC,)  # collected by envs.ENVS


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "self-refine-grpo", "Retry after verifier feedback (GRPO, Reflexion style)", "grpo", "self-correct",
        "Two attempts at a calculator word problem: a wrong first answer gets a verifier's 'incorrect' (and "
        "whether the true answer is larger or smaller), then a second attempt; rewarded by the second attempt.",
        env_options={"feedback": "external", "hint": "direction"},
        nodes=("self-improvement", "self-improvement-verbal"),
        changes="Keeps the loop of verbal self-improvement methods (Reflexion, Self-Refine, and the RL methods that "
                "train on it): attempt, feedback in words, revised attempt in the same context, scored by a "
                "verifier. The feedback here is external: a verifier says 'incorrect' and, with hint=direction, "
                "whether the answer should be larger or smaller; a correct first attempt ends the episode. GRPO "
                "trains on the episodes, rewarded by the second attempt. Simplifies: one retry, arithmetic word "
                "problems answered without a tool, a templated verifier message instead of a model-written "
                "reflection, and no memory of reflections across episodes. The feedback=self option gives the "
                "intrinsic variant; python -m reference_impls.measure.self_correction measures both modes (attempt 1 vs "
                "attempt 2 accuracy and the flips).",
        paper="Reflexion: Language Agents with Verbal Reinforcement Learning (Shinn et al.; arXiv 2303.11366); "
              "Self-Refine (Madaan et al.; arXiv 2303.17651)"),
    Implementation(
        "self-correct-score", "Intrinsic self-correction with SCoRe's reward (GRPO)", "grpo", "self-correct",
        "Two attempts with no external signal in between: the agent is asked to check its own answer; the "
        "reward credits both attempts plus a bonus for turning a wrong answer right (minus for the reverse).",
        env_options={"feedback": "self", "credit_first": True, "flip_bonus": 1.0},
        nodes=("self-improvement", "self-improvement-internalizing"),
        changes="Keeps what SCoRe trains: intrinsic self-correction with the model's own on-policy attempts, the "
                "second attempt conditioned on the first and a fixed self-check request (the environment never "
                "says whether attempt 1 was right), a reward on both attempts (Stage II) and the progress bonus "
                "alpha*(r2 - r1) that pays for wrong->right flips and charges right->wrong ones. Simplifies: one "
                "GRPO stage instead of SCoRe's two (no Stage I that keeps attempt 1 close to the base model while "
                "training attempt 2), one episode reward for both turns instead of per-turn rewards, alpha = 1 "
                "(not tuned, not the paper's value), REINFORCE replaced by GRPO's clipped surrogate, and "
                "arithmetic word problems instead of MATH / HumanEval.",
        paper="Training Language Models to Self-Correct via Reinforcement Learning (Kumar et al.; arXiv 2409.12917)",
        equation=r"R=r(y_1,y^*)+r(y_2,y^*)+\alpha\big(r(y_2,y^*)-r(y_1,y^*)\big)"),
)
