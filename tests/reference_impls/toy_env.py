"""A trivially learnable task for learning tests with the random tiny model.

Reward 1 when the reply's first token belongs to a fixed half of the vocabulary: the tokens whose
(tied) embedding points along a fixed random direction u. Half the vocabulary qualifies, so a random
policy scores ~0.5 and every sample carries signal; and because the class is linear in the output
embedding, moving the last hidden state towards u raises the probability of the whole class at once.
"""
from dataclasses import dataclass

import torch

from reference_impls.envs import EnvSpec, NoOptions, StepResult, ToolSpec

TOOL = ToolSpec("none", "no tool", "<calc>", "</calc>", "<result>", "</result>")


@dataclass(frozen=True)
class Prompt:
    question: str


class HalfVocabEnv:
    tool = TOOL
    stop_strings = ("</answer>",)

    def __init__(self, problem, tokenizer, good_ids):
        self.problem, self.tokenizer, self.good_ids = problem, tokenizer, good_ids

    def reset(self):
        return [{"role": "user", "content": self.problem.question}]

    def step(self, text):
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ok = bool(ids) and ids[0] in self.good_ids
        return StepResult(None, True, float(ok), {"correct": ok})


def make_task(model, tokenizer, seed: int = 0) -> EnvSpec:
    emb = model.get_input_embeddings().weight.detach()
    u = torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(seed))
    good_ids = set(torch.nonzero(emb @ u > 0).flatten().tolist())

    def problems(split, n, seed, config):
        return [Prompt(f"Say something #{i % 4}.") for i in range(n)]

    return EnvSpec("half_vocab", NoOptions, problems, lambda p, config: HalfVocabEnv(p, tokenizer, good_ids),
                   lambda p: [("model", "a")])


# -- issue 18 (finished): a task whose correct episodes differ only in length, for LCPO --------------

class StopHalfEnv:
    """Every episode is correct; it lasts until the model's one-token turn lies in the "stop" half of the
    vocabulary (the tokens whose embedding points along a fixed random direction, as in HalfVocabEnv) or
    ``max_turns`` turns pass, each non-stop turn answered by a short (masked) observation. A random policy
    stops with probability ~1/2 per turn, so a group's episodes have 1 to ``max_turns`` model tokens and its
    shortest and longest differ in length only, as on the easy split of LCPO's recipe; since the stop class
    is linear in the output embedding, a policy can learn to stop sooner."""

    tool = TOOL
    stop_strings = ("",)  # every text contains "": each turn ends after its first token

    def __init__(self, problem, tokenizer, stop_ids, max_turns):
        self.problem, self.tokenizer, self.stop_ids, self.max_turns = problem, tokenizer, stop_ids, max_turns
        self.turns = 0

    def reset(self):
        self.turns = 0
        return [{"role": "user", "content": self.problem.question}]

    def step(self, text):
        self.turns += 1
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if (ids and ids[0] in self.stop_ids) or self.turns >= self.max_turns:
            return StepResult(None, True, 1.0, {"correct": True, "turns": self.turns})
        return StepResult(" more", False)


def make_length_task(model, tokenizer, seed: int = 0, max_turns: int = 4) -> EnvSpec:
    emb = model.get_input_embeddings().weight.detach()
    u = torch.randn(emb.shape[1], generator=torch.Generator().manual_seed(seed))
    stop_ids = set(torch.nonzero(emb @ u > 0).flatten().tolist())

    def problems(split, n, seed, config):
        return [Prompt(f"Say something #{i % 4}.") for i in range(n)]

    return EnvSpec("stop_half", NoOptions, problems,
                   lambda p, config: StopHalfEnv(p, tokenizer, stop_ids, max_turns), lambda p: [("model", "a")])
