"""What a runnable implementation is (a row: an algorithm with its switches on an environment, and the
taxonomy nodes it serves), and the taxonomy-facing facts about rows: node groups, nodes without a row
(``NOT_IMPLEMENTED``) and the closest runnable proxy of a node (``NODE_PROXIES``).

The rows themselves are declared by the modules they run: an algorithm module under ``algorithms/`` or an
environment module under ``envs/`` ends with ``IMPLEMENTATIONS = (Implementation(...), ...)``, and
``reference_impls.registry`` collects them (``python -m reference_impls.train --list --json`` prints them,
``--impl ID`` runs one, the Lab and the node pages read the same list). This module imports no model code.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Implementation:
    id: str
    title: str
    algo: str
    env: str
    summary: str
    algo_options: dict = field(default_factory=dict)
    env_options: dict = field(default_factory=dict)
    nodes: tuple[str, ...] = ()  # taxonomy nodes whose "Run this" opens this implementation
    # shown on the node page, in the project's own words: what the variant changes relative to its family's
    # base and why, and each default that differs from the paper with the paper's value; the paper it
    # implements (arXiv id or citation); where the survey's Table 2 cell and the paper disagree, what each says
    changes: str = ""
    paper: str = ""
    survey_vs_paper: str = ""
    # LaTeX of what the row itself defines beyond its algorithm (an environment's reward, a role's credit),
    # shown before the objective. The objective is never written here: the algorithm class computes it from
    # the row's options (``objective(cfg)``, beside its loss code), so each row shows the loss it runs
    equation: str = ""
    # the file under reference_impls/ the Lab shows beside the curves: the module that declares the row
    # (set by the registry; never written by hand)
    source: str = ""
    # a row that trains nothing (an RL-free reference point, e.g. a prompted model scored on the held-out problems
    # its RL counterpart is scored on): the ``python -m`` arguments of the measurement command that runs it. Such
    # a row has no algorithm (``algo`` is ""); the trainer refuses it with this command, and the node page's
    # "Run this" shows the command instead of opening the Lab (which only trains)
    evaluation: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.evaluation and self.algo:
            raise ValueError(f"implementation {self.id!r}: a row with an evaluation command trains nothing; "
                             f"its algo must be '' (got {self.algo!r})")
        if not self.evaluation and not self.algo:
            raise ValueError(f"implementation {self.id!r}: give an algo (a row that trains) or an evaluation "
                             "command (a row that does not)")

    @property
    def trains(self) -> bool:
        """Whether the row is a training run (the trainer and the Lab run it) or a measurement without training."""
        return not self.evaluation

    @property
    def command(self) -> str:
        """The shell command that runs a row that does not train ("" for a training row)."""
        return "python -m " + " ".join(shlex.quote(a) for a in self.evaluation) if self.evaluation else ""

    def config(self) -> dict:
        """Its options as TrainConfig data (the trainer's defaults fill the rest)."""
        if not self.trains:
            raise ValueError(f"implementation {self.id!r} does not train; run it with: {self.command}")
        return {"algo": self.algo, "env": self.env, "algo_config": dict(self.algo_options),
                "env_options": dict(self.env_options)}


def latex_number(x: float) -> str:
    """A config value as an equation shows it (0.28, 3\\cdot10^{-4})."""
    text = f"{x:g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return (f"{mantissa}\\cdot" if mantissa != "1" else "") + f"10^{{{int(exponent)}}}"
    return text


def join_equations(*parts: str) -> str:
    """Equation parts one per line (KaTeX's gathered; empty parts left out), so a page shows them whole."""
    parts = [p for p in parts if p]
    if len(parts) < 2:
        return "".join(parts)
    open_, close = r"\begin{gathered}", r"\end{gathered}"  # a part that is lines itself joins them
    parts = [p[len(open_):-len(close)] if p.startswith(open_) and p.endswith(close) else p for p in parts]
    return open_ + r",\\ ".join(parts) + close


CALCULATOR_NODES = ("tool-use", "tool-use-react-style", "tool-use-tool-integrated-rl", "tool-use-long-horizon-tir",
                    "math", "math-informal")
SEARCH_NODES = ("search-research", "search-open-source", "search-external-web", "search-internal-knowledge")
PLANNING_NODES = ("planning", "planning-internal-driver", "env-simulated-game", "capability-others")
MEMORY_NODES = ("memory", "memory-rag-style", "memory-token-level", "memory-structured")
#: the survey's preliminaries (Sec. 2): served by the calculator task as a one-step MDP and as a multi-turn POMDP
PRELIMINARY_NODES = ("prelim-mdp", "prelim-environment-state", "prelim-action-space", "prelim-transition-dynamics",
                     "prelim-reward-function", "prelim-learning-objective")

#: a concept node -> (file under the project root, function or class in it, what that code is of the concept);
#: the node page shows it ("In the code"); a test checks that each file holds the name
CONCEPT_CODE: dict[str, tuple[tuple[str, str, str], ...]] = {
    "prelim-mdp": (
        ("reference_impls/envs/__init__.py", "Env",
         "the protocol every environment follows: reset gives the first observation, step(action) gives the next "
         "observation, done and reward; the tuple (S, A, P, R) of the decision process lives behind it"),
        ("reference_impls/rollout.py", "run_episodes",
         "the agent-environment loop: the policy writes a turn, the environment steps, until every episode is "
         "done; with the calculator's mode option the same loop runs a one-step MDP (direct) or a multi-turn "
         "POMDP (tool)"),
    ),
    "prelim-environment-state": (
        ("reference_impls/envs/calculator.py", "CalculatorEnv",
         "the hidden state: the problem (its true answer), the tool calls used and the values reached; the agent "
         "never reads it"),
        ("reference_impls/envs/calculator.py", "CalculatorEnv.reset",
         "the first observation, the text the agent conditions on; later observations are the <result> texts "
         "step returns, so the policy's context (prompt plus every turn) is its belief of the state"),
    ),
    "prelim-action-space": (
        ("reference_impls/envs/__init__.py", "ToolSpec.first_action",
         "what an action is at the turn level: the first complete <calc> call or <answer> in the model's text "
         "(a turn with neither ends the episode); the token-level actions are the vocabulary the model samples"),
        ("reference_impls/envs/calculator.py", "CalculatorEnv.step",
         "in direct mode the action space is one answer; in tool mode a call or an answer each turn"),
    ),
    "prelim-transition-dynamics": (
        ("reference_impls/envs/calculator.py", "CalculatorEnv.step",
         "the transition: a call is evaluated (arith.evaluate, a parser, never eval) and its result returned as "
         "the next observation, deterministically; an answer or a call past max_tool_calls is terminal"),
        ("reference_impls/rollout.py", "run_episodes",
         "how a transition enters the trajectory: the observation's tokens are appended with loss mask 0, so "
         "the policy conditions on them but is not trained to write them"),
    ),
    "prelim-reward-function": (
        ("reference_impls/envs/calculator.py", "CalculatorEnv.score",
         "the reward: 1 when the number in <answer> equals the true value (as a fraction), plus an optional "
         "format bonus; paid on the episode's last step, so a multi-turn trajectory gets one sparse reward"),
    ),
    "prelim-learning-objective": (
        ("reference_impls/algorithms/grpo/grpo.py", "grpo_loss",
         "the objective as optimised: group-relative advantages of the episode rewards times clipped token "
         "ratios, averaged over the model's own tokens (environment tokens masked out)"),
        ("reference_impls/algorithms/grpo/grpo.py", "GRPO.objective",
         "the same objective written out in LaTeX from the row's options (shown beside each row)"),
    ),
}


#: algorithm nodes with no implementation yet, and why (the node page says so instead of a "Run this")
NOT_IMPLEMENTED: dict[str, str] = {
}


#: capability/task nodes with no implementation of their own: the closest runnable proxy (an implementation
#: id) and why it is the closest, or None and why there is no runnable proxy yet. The node page shows it.
NODE_PROXIES: dict[str, tuple[str | None, str]] = {
}
