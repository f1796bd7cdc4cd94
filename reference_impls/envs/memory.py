"""Memory-R1-style memory environment: a Memory Manager writes ADD / UPDATE / DELETE / NOOP, rewarded
only by whether a frozen Answer Agent then answers questions exactly (no operation labels).

How a manager decision maps onto the shared rollout / trainer (the design choice)
    One Env episode = ONE manager decision on ONE dialogue turn (a one-step episode), as in
    Memory-R1's training tuples. A problem (:class:`Decision`) is a dialogue, a turn index ``t``, the
    memory bank as it stood before turn ``t`` and the questions about the true state right after
    turn ``t``. The prompt shows the turn and the top-``k`` entries it retrieves; the model writes one
    operation; the env applies it to a copy of the bank, lets the frozen Answer Agent answer the first
    ``questions`` questions from the new bank, and returns
    ``reward = mean exact match - format_penalty * [unparseable or invalid]``. The questions asked
    first are one about the slot turn ``t`` talks about and one about each fact a shown entry holds,
    i.e. what the operation can get right or destroy (:func:`asked_questions`).

    Why not one episode per dialogue with every turn an observation (env tokens masked)? With 10-30
    turns the transcript grows to 1-2k tokens and every step re-encodes it: on 2 CPU cores a GRPO step
    would take minutes, and a single reward at the end of 30 decisions gives the same credit to every
    decision. The one-step form gives each decision its own Monte-Carlo reward from the QA that
    follows it, keeps prompts under ~200 tokens, and lets GRPO's group (G samples of the same
    decision on the same bank) act as the baseline. The cost: the bank before ``t`` is written by a
    fixed *reference* manager, not by the policy itself. It is the rule manager with noise (each of
    its fact operations is replaced by a plain ADD with probability ``prefix_noise``, default 0.3), so
    the policy sees banks with stale duplicates, as its own imperfect bank would have. At evaluation
    the policy manages whole dialogues by itself (``benchmarks/memory_eval.py``), so compounding errors
    are measured there. Known limit: a retraction turn's own questions cannot reward DELETE (the
    retracted slot has no value to ask about at that point); DELETE is rewarded only through the
    distractors it removes for the later questions of the benchmark.

Prompt (chat): the system prompt of ``reference_impls.memory.managers.MANAGER_SYSTEM`` and a user
message ``Memories:\\n[3] Alice: I live in Paris.\\nNew message: Alice: I moved to Oslo in May.``.
The reply is parsed by ``reference_impls.memory.bank.parse_op``; the episode stops at EOS or at a
newline after the operation (stop string ``"\\n"``).

Answer Agent: frozen, prompted LM (``reference_impls.memory.answer.AnswerAgent``), by default the base
SmolLM2-135M-Instruct loaded once per process (a separate copy from the policy; no gradient). Env
option ``answer_model`` picks another (``tiny`` in tests); :func:`set_answer_agent` installs one.

Label-free format warm-up: the registry also holds ``memory-format``, the same env whose SFT
demonstrations are uniformly random *valid* operations (:func:`random_operation`); see
``benchmarks/memory_eval.py --stages format``. ``demonstration`` of ``memory`` itself is the rule
manager's operation (an optional supervised baseline; no reported RL result uses it).

Env options (``--env-option KEY=VALUE``): ``questions`` (per decision, default 1), ``format_penalty``
(default 0.1), ``k`` (entries shown to the manager, default 3), ``answer_model``, ``answer_mode``
(``extract`` or ``generate``, see ``reference_impls.memory.answer``), ``focus`` (which questions come
first: ``shown``, the default, or ``own``; see :func:`asked_questions`), ``balance_kinds`` (default true:
the trainer draws kind-balanced decisions, see :func:`make_decision`; runs before it existed drew fact
turns uniformly, ``balance_kinds=false``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec
from ..memory.answer import MODES, AnswerAgent, exact_match, f1
from ..memory.bank import Entry, MemoryBank, parse_op
from ..memory.dialogue import Dialogue, Question, make_dialogue, make_questions
from ..memory.managers import manager_messages, rule_op

TOOL = ToolSpec(
    name="memory",
    description="Memory bank operations: ADD text | UPDATE id text | DELETE id | NOOP.",
    call_open="", call_close="\n", result_open="", result_close="",
    answer_open="", answer_close="\n",
)


@dataclass(frozen=True)
class Decision:
    dialogue: Dialogue
    turn: int
    prefix: tuple[Entry, ...]  # the bank before turn ``turn``
    next_id: int
    questions: tuple[Question, ...]
    uid: str
    family: str  # the turn's kind (set / change / correct / retract / filler), for per-kind stats

    def bank(self) -> MemoryBank:
        return MemoryBank(self.prefix, self.next_id)


def _reference_bank(dialogue: Dialogue, upto: int, rng: random.Random, noise: float, k: int) -> MemoryBank:
    bank = MemoryBank()
    for t in dialogue.turns[:upto]:
        op = rule_op(t.line, bank.retrieve(t.line, k))
        if op != "NOOP" and rng.random() < noise:
            op = "ADD"
        bank.apply(parse_op(op), t.line, t.index)
    return bank


def make_decision(split: str, seed: int, level: int, index: int, prefix_noise: float = 0.3, k: int = 3,
                  fact_frac: float = 0.8, balance_kinds: bool = True) -> Decision:
    """One training decision. The turn is a fact turn with probability ``fact_frac`` (else small talk);
    with ``balance_kinds`` the fact turn's kind (set / change / correct / retract) is drawn uniformly
    among the kinds the dialogue has, then a turn of that kind. Without it, fact turns are drawn
    uniformly, and about two thirds of them introduce a new fact (where ADD is already right): the
    decisions on which the choice between ADD and UPDATE matters would be rare in a batch. This is a
    choice of *which* turns to train on; the operation itself is never labelled."""
    rng = random.Random(f"memory-decision/{split}/{seed}/{level}/{index}")
    d = make_dialogue(split, seed, level, index)
    facts = [t.index for t in d.turns if t.kind != "filler"]
    fillers = [t.index for t in d.turns if t.kind == "filler"]
    if rng.random() < fact_frac or not fillers:
        if balance_kinds:
            kind = rng.choice(sorted({d.turns[i].kind for i in facts}))
            facts = [i for i in facts if d.turns[i].kind == kind]
        t = rng.choice(facts)
    else:
        t = rng.choice(fillers)
    bank = _reference_bank(d, t, rng, prefix_noise, k)
    qs = make_questions(d.turns, d.speakers, random.Random(rng.random()), upto=t + 1, max_per_kind=8)
    turn = d.turns[t]
    own = [q for q in qs if q.speaker == turn.speaker and q.slot == turn.slot]
    rest = [q for q in qs if q not in own]
    rng.shuffle(own)
    rng.shuffle(rest)
    return Decision(d, t, tuple(bank.entries.values()), bank.next_id, tuple(own + rest),
                    f"{d.uid}-t{t}", turn.kind)


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=(1, 2, 3), balance_kinds: bool = True,
             **_) -> list[Decision]:
    """``n`` decisions, one per dialogue, cycling over ``levels``; a pure function of the arguments."""
    levels = tuple(levels)
    return [make_decision(split, seed, levels[i % len(levels)], i // len(levels), balance_kinds=balance_kinds)
            for i in range(n)]


# ---- the frozen Answer Agent, one per (model, mode) per process, sharing one frozen model ----------
_AGENTS: dict[tuple[str, str], AnswerAgent] = {}


def set_answer_agent(agent: AnswerAgent, name: str = "smollm2-135m-instruct") -> None:
    _AGENTS[(name, agent.mode)] = agent


def get_answer_agent(name: str = "smollm2-135m-instruct", mode: str = "extract") -> AnswerAgent:
    if (name, mode) not in _AGENTS:
        loaded = next((a for (n, _), a in _AGENTS.items() if n == name), None)
        if loaded is not None:
            model, tok = loaded.model, loaded.tokenizer
        else:
            from ..models import load_policy

            model, tok = load_policy(name, device="cpu")
        _AGENTS[(name, mode)] = AnswerAgent(model, tok, mode=mode)
    return _AGENTS[(name, mode)]


FOCUS = ("shown", "own")


@dataclass
class MemoryConfig(Options):
    """The memory env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option((1, 2, 3), "Dialogue levels the decisions come from (more sessions and "
                                     "changed facts at higher levels).", choices=(1, 2, 3))
    balance_kinds: bool = option(True, "Draw decisions balanced over turn kinds, so change/correct turns (where "
                                 "UPDATE matters) are not rare.")
    questions: int = option(1, "Questions asked per decision; the reward is their mean exact match.", low=1, high=16)
    format_penalty: float = option(0.1, "Subtracted when the operation does not parse or names a missing entry.",
                                   low=0.0, high=10.0)
    k: int = option(3, "Memories shown to the manager (retrieved for the new turn).", low=1, high=16)
    answer_model: str = option("smollm2-135m-instruct", "The frozen Answer Agent's model.")
    answer_mode: str = option("extract", "extract: copy the best-scored span; generate: free greedy text.",
                              choices=MODES)
    focus: str = option("shown", "Which questions come first: about the turn's slot and the shown memories' facts "
                        "(shown), or the problem's own order (own).", choices=FOCUS)


def asked_questions(problem: Decision, shown, focus: str = "shown") -> list[Question]:
    """The order in which a decision's questions are asked; the env scores the first ``questions``.

    ``own``: the problem's order, the questions about the turn's own (speaker, slot) first, then the
    other live facts. ``shown`` (default): one question about the turn's own slot, then one about each
    fact held by an entry the prompt shows (the (speaker, slot) of the turn that wrote it), then the
    rest in the problem's order. The shown entries are exactly what UPDATE and DELETE can destroy, so
    with ``questions=3`` overwriting or deleting a live fact costs reward on the spot; with ``own`` the
    other questions were random live facts and rarely the ones an overwrite destroyed, and PPO learned
    to UPDATE almost every turn (docs/results_memory.md)."""
    qs = list(problem.questions)
    if focus == "own":
        return qs
    turn = problem.dialogue.turns[problem.turn]
    own = [q for q in qs if (q.speaker, q.slot) == (turn.speaker, turn.slot)]
    first = own[:1]
    covered = {(turn.speaker, turn.slot)}
    for e in shown:
        src = problem.dialogue.turns[e.turn] if 0 <= e.turn < len(problem.dialogue.turns) else None
        if src is None or src.slot is None or (src.speaker, src.slot) in covered:
            continue
        covered.add((src.speaker, src.slot))
        hit = next((q for q in qs if (q.speaker, q.slot) == (src.speaker, src.slot)), None)
        if hit is not None:  # None: that fact was retracted or has no question
            first.append(hit)
    return first + [q for q in qs if q not in first]


class MemoryEnv:
    tool = TOOL
    stop_strings = ("\n",)

    def __init__(self, problem: Decision, config: MemoryConfig | None = None, agent: AnswerAgent | None = None):
        self.problem, self.config = problem, config or MemoryConfig()
        self.agent = agent
        self.line = problem.dialogue.turns[problem.turn].line

    def reset(self) -> list[dict[str, str]]:
        self.bank = self.problem.bank()
        return manager_messages(self.line, self.bank.retrieve(self.line, self.config.k))

    def step(self, model_text: str) -> StepResult:
        return self.step_many([self], [model_text])[0]

    @classmethod
    def step_many(cls, envs, texts) -> list[StepResult]:
        """Step several episodes with one batched Answer Agent call per agent (what ``rollout`` uses;
        ``step`` is this with one episode). The reward of an episode does not depend on its batch mates
        (the agent is frozen and greedy), except through the answer cache's key, which leaves out entry
        ids (``memory/answer.py``)."""
        todo = []  # (env, agent, applied op, questions asked, [(question, retrieved entries)])
        for env, text in zip(envs, texts):
            bank = env.problem.bank()
            applied = bank.apply(parse_op(text), env.line, env.problem.turn)
            agent = env.agent or get_answer_agent(env.config.answer_model, env.config.answer_mode)
            shown = env.problem.bank().retrieve(env.line, env.config.k)
            qs = asked_questions(env.problem, shown, env.config.focus)[: env.config.questions]
            todo.append((env, agent, applied, qs, [(q.text, bank.retrieve(q.text, agent.k)) for q in qs]))
        answers: dict[int, list] = {}
        for agent in {id(a): a for _, a, *_ in todo}.values():
            mine = [i for i, row in enumerate(todo) if row[1] is agent]
            flat = agent.answer_many([item for i in mine for item in todo[i][4]])
            for i in mine:
                answers[i], flat = flat[:len(todo[i][4])], flat[len(todo[i][4]):]
        return [env._result(applied, qs, answers[i]) for i, (env, _, applied, qs, _) in enumerate(todo)]

    def _result(self, applied, qs, answers) -> StepResult:
        ems = [exact_match(a, q.answer) for (a, _), q in zip(answers, qs)]
        em = sum(ems) / len(ems) if ems else 0.0
        bad = applied.status != "ok"
        reward = em - (self.config.format_penalty if bad else 0.0)
        info = {"correct": bool(ems) and all(ems), "em": em,
                "f1": sum(f1(a, q.answer) for (a, _), q in zip(answers, qs)) / max(len(qs), 1),
                "op": applied.kind, "op_status": applied.status, "turn_kind": self.problem.family,
                "answer": answers[0][0] if answers else "", "gold": qs[0].answer if qs else ""}
        return StepResult(None, True, reward, info)


def demonstration(problem: Decision) -> list[tuple[str, str]]:
    """The rule manager's operation (for an optional SFT warm start; the RL results use none)."""
    bank = problem.bank()
    return [("model", rule_op(problem.dialogue.turns[problem.turn].line, bank.retrieve(
        problem.dialogue.turns[problem.turn].line, MemoryConfig.k)))]


def random_operation(problem: Decision) -> list[tuple[str, str]]:
    """A uniformly random *valid* operation for this decision (seeded by the problem's uid): ADD, NOOP,
    or UPDATE / DELETE of one of the entries the prompt shows. It carries no information about which
    operation is right, so SFT on it teaches the format only (see ``memory-format``)."""
    rng = random.Random(f"format/{problem.uid}")
    line = problem.dialogue.turns[problem.turn].line
    ids = [e.id for e in problem.bank().retrieve(line, MemoryConfig.k)]
    choices = ["ADD", "NOOP"] + ([f"UPDATE {i}" for i in ids] + [f"DELETE {i}" for i in ids] if ids else [])
    kinds = ["ADD", "NOOP"] + (["UPDATE", "DELETE"] if ids else [])
    kind = rng.choice(kinds)  # uniform over the operation kinds, then over the shown ids
    return [("model", rng.choice([c for c in choices if c.startswith(kind)]))]


def _problems(split: str, n: int, seed: int, config: MemoryConfig) -> list[Decision]:
    return problems(split, n, seed, levels=config.levels, balance_kinds=config.balance_kinds)


SPEC = EnvSpec("memory", MemoryConfig, _problems, MemoryEnv, demonstration,
               title="Memory-R1-style memory manager")
make = SPEC.make
# The same env whose demonstrations are random valid operations: the label-free format warm-up.
# A 135M model prompted zero-shot never wrote a parseable operation (0/24 samples, docs/results_memory.md),
# so RL would start with zero reward variance; ``python -m reference_impls.sft --env memory-format``
# teaches the one-line format without saying which operation is right.
FORMAT_SPEC = EnvSpec("memory-format", MemoryConfig, _problems, MemoryEnv, random_operation,
                      title="memory env with label-free format demonstrations")
ENV_SPECS = (SPEC, FORMAT_SPEC,)  # collected by envs.ENVS


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation, MEMORY_NODES  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("memory-grpo", "Memory-R1-style memory manager (GRPO)", "grpo", "memory", "A memory manager choosing ADD/UPDATE/DELETE/NOOP, rewarded by a frozen answer agent's exact match.",
                   nodes=MEMORY_NODES),
    Implementation("memory-ppo", "Memory-R1-style memory manager (PPO)", "ppo", "memory", "The memory manager trained with PPO and a critic."),
)
