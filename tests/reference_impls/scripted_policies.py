"""A policy for rollout tests that writes tool calls without training: the random tiny Llama nudged
towards the token bigrams of a few example replies.

``BigramNudgedLlama`` is a real ``LlamaForCausalLM`` (real cache, masks and positions; ``generate``
works) whose logits at position ``t`` get ``+strength`` on every token that follows ``input_ids[t]`` in
one of the example replies (the prompt's last token, the ``\\n`` that opens the assistant turn, is
followed by each reply's first token). The nudge depends on the token at ``t`` only, so the model stays
causal: a fresh forward over a finished episode scores it exactly as the sampling passes did.

Where a token has several nudged successors (``<`` opens ``<calc>`` and ``<answer>``; ``>`` ends
``<calc>`` and the env's ``</result>``), the random base logits choose, and they depend on the whole
context, so episodes differ: some call the tool and continue after the env's ``<result>``, some answer,
some cycle (``<calc><calc>...``) until their length limit.
"""
from __future__ import annotations

import torch
from transformers import LlamaForCausalLM


class BigramNudgedLlama(LlamaForCausalLM):
    def set_bigrams(self, successors_of: dict[int, set[int]], strength: float) -> None:
        V = self.config.vocab_size
        width = max((len(v) for v in successors_of.values()), default=1)
        successors = torch.arange(V).unsqueeze(1).repeat(1, width)  # padding: the token itself, weight 0
        weights = torch.zeros(V, width)
        for a, nxt in successors_of.items():
            successors[a, :len(nxt)] = torch.tensor(sorted(nxt))
            weights[a, :len(nxt)] = strength
        self.register_buffer("successors", successors.to(self.device), persistent=False)
        self.register_buffer("nudge", weights.to(self.device), persistent=False)

    def forward(self, input_ids=None, logits_to_keep=0, **kwargs):
        out = super().forward(input_ids=input_ids, logits_to_keep=logits_to_keep, **kwargs)
        last = input_ids[:, -out.logits.shape[1]:]  # the tokens whose next-token logits these are
        out.logits = out.logits.scatter_add(-1, self.successors[last], self.nudge[last].to(out.logits.dtype))
        return out


def nudged_tiny(tiny_model, tokenizer, replies, strength: float = 25.0, context_gain: float = 8.0) -> BigramNudgedLlama:
    """A copy of the tiny model nudged towards the bigrams of ``replies`` (texts the model should write).

    ``context_gain`` scales the output projections of attention and MLP: at its initial scale the random
    model's logits mostly reflect the current token (every row makes the same choice); amplified, the
    layers' view of the context decides, so rows with different prompts take different paths."""
    model = BigramNudgedLlama(tiny_model.config)
    state = dict(tiny_model.state_dict())
    for name in state:
        if name.endswith(("o_proj.weight", "down_proj.weight")):
            state[name] = state[name] * context_gain
    model.load_state_dict(state)
    model.generation_config = tiny_model.generation_config
    model.eval()
    opener = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-1]
    successors_of: dict[int, set[int]] = {}
    for text in replies:
        ids = [opener] + tokenizer(text, add_special_tokens=False)["input_ids"]
        for a, b in zip(ids, ids[1:]):
            successors_of.setdefault(a, set()).add(b)
    model.set_bigrams(successors_of, strength)
    return model
