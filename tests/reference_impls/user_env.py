"""A user's environment, kept outside the package: the trainer, evaluation and SFT load it with
``--env-module tests/reference_impls/user_env.py``. Echo: the prompt names a word, the reward is 1 when the
reply's <answer> holds it. It has options of its own (typed, validated like the built-in envs')."""
from dataclasses import dataclass

from reference_impls.envs import EnvSpec, StepResult, ToolSpec, register_env
from reference_impls.options import Options, option

TOOL = ToolSpec("none", "no tool", "<call>", "</call>", "<result>", "</result>")
WORDS = ("apple", "river", "stone", "cloud", "maple", "tiger", "ocean", "amber")


@dataclass(frozen=True)
class Problem:
    word: str
    uid: str


@dataclass
class EchoConfig(Options):
    words: int = option(4, "How many distinct words the problems use.", low=1, high=len(WORDS))
    bonus: float = option(0.0, "Added to the reward of a correct answer.", low=0.0, high=1.0)


class EchoEnv:
    stop_strings = (TOOL.answer_close,)

    def __init__(self, problem: Problem, config: EchoConfig):
        self.problem, self.config = problem, config

    def reset(self):
        return [{"role": "user", "content": f"Write <answer>{self.problem.word}</answer>."}]

    def step(self, model_text: str) -> StepResult:
        found = TOOL.find_answer(model_text)
        correct = found is not None and found.group(1).strip() == self.problem.word
        return StepResult(None, True, float(correct) * (1.0 + self.config.bonus), {"correct": correct})


def problems(split: str, n: int, seed: int, config: EchoConfig):
    offset = 0 if split == "train" else 1
    return [Problem(WORDS[(i + offset + seed) % config.words], f"{split}-{i}") for i in range(n)]


register_env(EnvSpec("echo", EchoConfig, problems, EchoEnv,
                     lambda p: [("model", f"{TOOL.answer_open}{p.word}{TOOL.answer_close}")], title="echo a word"))
