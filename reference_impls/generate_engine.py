"""The reference rollout engine (``RolloutConfig(engine="generate")``): ``model.generate`` over the whole
conversation every turn, which the cached engine is tested against (tests/reference_impls/test_engine.py). In a
module of its own because it is the only part of the rollout that needs transformers at import: the algorithm
registry imports ``rollout`` (and so torch), and a node page or the Lab's catalog need not wait for transformers
too."""
from __future__ import annotations

import copy

import torch
from transformers import GenerationConfig, StoppingCriteria, StoppingCriteriaList

from .engine import cut_turn


class StopOnStrings(StoppingCriteria):
    """Per-row stop once the text generated in this call contains any of ``stop_strings``."""

    def __init__(self, tokenizer, stop_strings, prompt_width: int, tail_tokens: int = 8):
        self.tokenizer, self.stop_strings = tokenizer, tuple(stop_strings)
        self.prompt_width, self.tail_tokens = prompt_width, tail_tokens

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        tails = self.tokenizer.batch_decode(input_ids[:, max(self.prompt_width, input_ids.shape[1] - self.tail_tokens):])
        return torch.tensor([any(s in t for s in self.stop_strings) for t in tails], device=input_ids.device)


class GenerateTurns:
    """The reference engine (``engine="generate"``): each turn, ``model.generate`` over the whole
    conversation of every active row, left padded; rows stop on EOS or a stop string (``StopOnStrings``)
    and are cut by ``engine.cut_turn``. Re-prefills every prompt and every earlier turn, every turn."""

    def __init__(self, model, tokenizer, stop_strings, eos_ids, config):  # config: a rollout.RolloutConfig
        from .engine import TurnOutput

        self.TurnOutput = TurnOutput
        self.model, self.tokenizer, self.stop_strings, self.eos_ids = model, tokenizer, stop_strings, eos_ids
        self.device = next(model.parameters()).device
        self.pad_id = tokenizer.pad_token_id
        self.scale = 1.0 if config.greedy else config.temperature
        self.max_new_tokens_per_turn = config.max_new_tokens_per_turn
        self.gen_cfg = GenerationConfig(
            do_sample=not config.greedy, temperature=config.temperature if not config.greedy else None,
            top_k=0 if not config.greedy else None, top_p=1.0 if not config.greedy else None,
            pad_token_id=self.pad_id, eos_token_id=sorted(eos_ids), return_dict_in_generate=True,
            output_logits=True,
        )

    def __call__(self, samples, active, limits):
        seqs = [samples[i].token_ids for i in active]
        width = max(len(s) for s in seqs)
        input_ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros_like(input_ids)
        for r, s in enumerate(seqs):  # left padding so every row's next token is at the same column
            input_ids[r, width - len(s):] = torch.tensor(s)
            attention_mask[r, width - len(s):] = 1
        max_new = max(1, max(limits))  # = min(tokens per turn, the largest remaining budget)
        out = self.model.generate(
            input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device),
            generation_config=_with_max_new(self.gen_cfg, max_new),
            stopping_criteria=StoppingCriteriaList([StopOnStrings(self.tokenizer, self.stop_strings, width)]),
        )
        new_ids = out.sequences[:, width:]
        new_tokens = new_ids.tolist()
        # log pi_old(token) from the very logits it was sampled from (temperature applied as in sampling);
        # one step at a time so we never hold a (rows, steps, vocab) log-softmax
        logps_all = torch.stack([
            torch.log_softmax(step_logits.float() / self.scale, dim=-1).gather(1, new_ids[:, t:t + 1]).squeeze(1)
            for t, step_logits in enumerate(out.logits)], dim=1).cpu()
        outs = []
        for r, limit in enumerate(limits):
            tokens, stopped = cut_turn(self.tokenizer, new_tokens[r], self.eos_ids, self.stop_strings)
            tokens = tokens[:limit]  # a row never writes past its own budget
            outs.append(self.TurnOutput(tokens, logps_all[r, :len(tokens)].tolist(), stopped))
        return outs


def _with_max_new(cfg: GenerationConfig, max_new: int) -> GenerationConfig:
    cfg = copy.deepcopy(cfg)
    cfg.max_new_tokens = max_new
    return cfg
