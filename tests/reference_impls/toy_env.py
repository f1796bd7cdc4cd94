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
