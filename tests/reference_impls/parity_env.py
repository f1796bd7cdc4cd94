"""A test environment on which the untrained tiny model earns mixed rewards, so a group-relative update
has a gradient: reward 1 when the reply's first character has an even code point. Random tokens start
with an even character about half of the time. Loaded with ``--env-module tests/reference_impls/parity_env.py``
(the torchrun tests: a step that moves no weight would make "the replicas agree" trivially true)."""
from dataclasses import dataclass

from reference_impls.envs import EnvSpec, NoOptions, StepResult, register_env


@dataclass(frozen=True)
class Problem:
    number: int
    uid: str


class ParityEnv:
    stop_strings = ("</answer>",)

    def __init__(self, problem: Problem, config):
        self.problem = problem

    def reset(self):
        return [{"role": "user", "content": f"Message {self.problem.number}: reply with anything."}]

    def step(self, model_text: str) -> StepResult:
        text = model_text.strip()
        correct = bool(text) and ord(text[0]) % 2 == 0
        return StepResult(None, True, float(correct), {"correct": correct})


def problems(split: str, n: int, seed: int, config):
    start = 0 if split == "train" else 10_000  # disjoint held-out numbers
    return [Problem(start + seed + i, f"{split}-{i}") for i in range(n)]


# "<" has an even code point (60): the demonstration is a correct reply
register_env(EnvSpec("parity", NoOptions, problems, ParityEnv, lambda p: [("model", "<answer>yes</answer>")],
                     title="even first character"))
