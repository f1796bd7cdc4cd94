"""Batched multi-turn rollouts with loss masks: the one generation loop every algorithm uses.

For ``P`` problems and group size ``G`` we run ``P*G`` episodes side by side::

    prompt  = chat_template(env.reset()) + assistant header           (loss mask 0, not in completion)
    repeat until every episode is done:
        the engine writes one turn for the still-active rows (sampling at temperature T); a row's turn
            ends at EOS, as soon as its text closes a stop tag (``</calc>``, ``</answer>``), or after
            min(max_new_tokens_per_turn, the episode's remaining budget) tokens
        model tokens  -> completion, loss mask 1, old log-prob = log softmax(logits / T)[token]
        env.step(text of this turn)  (all active rows at once through envs.step_all):
            done      -> reward, row leaves the batch
            otherwise -> observation tokens appended to the completion with loss mask 0
    episodes that exceed ``max_completion_tokens`` (model + env tokens) or the env's turn limit end
    with the env's verdict on what was written (0 if no final answer).

Engines (``RolloutConfig.engine``): ``"cached"`` (default, ``engine.CachedEngine``) prefills each
distinct prompt once and keeps every row's key/value cache across turns, so a turn only runs the model
over the row's new tokens (its last model token and the env observation) before decoding.
``"generate"`` (``generate_engine.GenerateTurns``) calls ``model.generate`` on the whole conversation of every active row each turn (left
padded), re-prefilling prompt and earlier turns; it is kept as the reference the engine is tested
against (same tokens greedily, and the same samples for the same seed).

Old log-probs come from the sampling pass itself (the logits each token was drawn from), so no extra
forward is needed; they equal a fresh forward pass up to float round-off (the scorer in ``common.py``
uses the same padding-aware positions).

Environment tokens are tokenised separately and appended as ids, and model tokens are kept as sampled
ids (never re-tokenised), so what the trainer scores is exactly what was sampled.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from .envs import step_all


@dataclass
class RolloutConfig:
    group_size: int = 4  # G samples per prompt
    max_new_tokens_per_turn: int = 48  # model tokens per turn
    max_completion_tokens: int = 160  # model + env tokens in the whole episode
    temperature: float = 1.0
    greedy: bool = False  # evaluation: argmax decoding
    # the environment's typed config (EnvSpec.config_of; None = its defaults), built once per run, never per episode
    env_config: Any = None
    # "cached": prefill each distinct prompt once and keep every row's key/value cache across turns
    # (reference_impls/engine.py); "generate": model.generate on the whole conversation every turn (the
    # reference the engine is tested against); "vllm": vLLM generates each turn (vllm_engine.py, CUDA only)
    engine: str = "cached"


@dataclass
class Sample:
    """One episode. ``loss_mask[t]`` is 1 for model tokens and 0 for environment tokens;
    ``segments`` is the rendered transcript [{"role": "prompt"|"model"|"env", "text": ...}, ...]."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    old_logprobs: list[float] = field(default_factory=list)
    reward: float = 0.0
    turns: int = 0
    done: bool = False
    truncated: bool = False
    segments: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    group: int = 0  # index of the prompt this sample answers (samples of a group share it)
    # (start, end) of each model turn in completion_ids: the turn boundaries (VinePPO's states, PSGPO's steps)
    turn_spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def token_ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids

    @property
    def full_loss_mask(self) -> list[int]:
        return [0] * len(self.prompt_ids) + self.loss_mask

    def to_json(self) -> dict:
        return {"group": self.group, "reward": self.reward, "turns": self.turns, "truncated": self.truncated,
                "model_tokens": int(sum(self.loss_mask)), "completion_tokens": len(self.completion_ids),
                "segments": self.segments, "info": {k: v for k, v in self.info.items() if _jsonable(v)}}


def _jsonable(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None)))


def render_prompt(tokenizer, messages) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # some versions return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


ENGINES = ("cached", "generate", "vllm")  # vllm: the optional vllm_engine.VLLMEngine (CUDA, the gpu extra)


@torch.no_grad()
def rollout(model, tokenizer, task, problems, config: RolloutConfig) -> tuple[list[Sample], dict]:
    """Run ``len(problems) * group_size`` episodes; returns samples (grouped: rows ``g*G .. g*G+G-1``
    answer ``problems[g]``) and stats (generation time, tokens; the cached engine adds its prefill and
    decode seconds)."""
    if config.engine not in ENGINES:
        raise ValueError(f"RolloutConfig.engine must be one of {ENGINES}, got {config.engine!r}")
    t0 = time.time()
    G = 1 if config.greedy else config.group_size
    envs, samples = [], []
    env_config = task.config_of(config.env_config)
    for g, problem in enumerate(problems):
        for _ in range(G):
            env = task.make(problem, env_config)
            ids = render_prompt(tokenizer, env.reset())
            envs.append(env)
            samples.append(Sample(prompt_ids=ids, group=g,
                                  segments=[{"role": "prompt", "text": tokenizer.decode(ids)}]))
    stats = run_episodes(model, tokenizer, envs, samples, config)
    stats["rollout_s"] = time.time() - t0
    return samples, stats


@torch.no_grad()
def run_episodes(model, tokenizer, envs, samples, config: RolloutConfig, budgets: list[int] | None = None) -> dict:
    """The turn loop of :func:`rollout` on given environments and started samples (``samples[i]`` is the
    episode of ``envs[i]``; its ``prompt_ids`` are what the model is conditioned on). ``budgets[i]`` caps
    row i's completion tokens (default ``config.max_completion_tokens`` for every row): a continuation of
    a partial episode passes what the episode had left. Fills the samples in place; returns the stats."""
    if config.engine not in ENGINES:
        raise ValueError(f"RolloutConfig.engine must be one of {ENGINES}, got {config.engine!r}")
    t0 = time.time()
    # a sample may already hold completion tokens (a shared prefix that branches: TreePO/ARPO); the new turns
    # continue it and the default budget counts the prefix
    budgets = budgets or [config.max_completion_tokens] * len(samples)
    stop_strings = envs[0].stop_strings
    eos_ids = {tokenizer.eos_token_id} | set(_as_list(model.generation_config.eos_token_id))
    if config.engine == "cached":
        from .engine import CachedEngine

        engine = CachedEngine(model, tokenizer, stop_strings, eos_ids, greedy=config.greedy,
                              temperature=config.temperature)
        next_turn = engine.turn
    elif config.engine == "vllm":
        from .vllm_engine import VLLMEngine

        engine = VLLMEngine(model, tokenizer, stop_strings, eos_ids, greedy=config.greedy,
                            temperature=config.temperature)
        next_turn = engine.turn
    else:
        from .generate_engine import GenerateTurns  # imports transformers: only for the reference engine

        engine = None
        next_turn = GenerateTurns(model, tokenizer, stop_strings, eos_ids, config)
    generated_tokens = 0
    env_s = 0.0
    was_training = model.training
    model.eval()
    try:
        while True:
            active = [i for i, s in enumerate(samples) if not s.done]
            if not active:
                break
            # per row: the episode's remaining room, and at most max_new_tokens_per_turn of it in this turn
            budget = [budgets[i] - len(samples[i].completion_ids) for i in active]
            limits = [min(config.max_new_tokens_per_turn, b) for b in budget]
            outs = next_turn(samples, active, limits)
            texts, stops = [], []
            for i, out in zip(active, outs):
                s = samples[i]
                s.turn_spans.append((len(s.completion_ids), len(s.completion_ids) + len(out.tokens)))
                s.completion_ids += out.tokens
                s.loss_mask += [1] * len(out.tokens)
                s.old_logprobs += out.logprobs
                generated_tokens += len(out.tokens)
                texts.append(tokenizer.decode(out.tokens, skip_special_tokens=True))
                stops.append(out.stopped)
                s.segments.append({"role": "model", "text": tokenizer.decode(out.tokens)})
                s.turns += 1
            t_env = time.time()
            results = step_all([envs[i] for i in active], texts)  # one call: an env may batch its own model work
            env_s += time.time() - t_env
            for i, result, stopped in zip(active, results, stops):
                s = samples[i]
                room = budgets[i] - len(s.completion_ids)
                if result.done:
                    s.done, s.reward, s.info = True, float(result.reward), dict(result.info)
                    continue
                if not stopped or room <= 0:  # ran out of tokens mid-turn: the episode is cut off
                    s.done, s.truncated, s.reward, s.info = True, True, 0.0, {"correct": False, "truncated": True}
                    continue
                obs_ids = tokenizer(result.observation, add_special_tokens=False)["input_ids"][:room]
                s.completion_ids += obs_ids
                s.loss_mask += [0] * len(obs_ids)
                s.old_logprobs += [0.0] * len(obs_ids)
                s.segments.append({"role": "env", "text": tokenizer.decode(obs_ids)})
                if len(obs_ids) >= room:
                    s.done, s.truncated, s.reward, s.info = True, True, 0.0, {"correct": False, "truncated": True}
    finally:
        if was_training:
            model.train()
    stats = {"rollout_s": time.time() - t0, "generated_tokens": generated_tokens,
             "completion_tokens": sum(len(s.completion_ids) for s in samples), "env_s": env_s,
             "engine": config.engine}
    if engine is not None:
        stats.update({k: round(v, 4) if isinstance(v, float) else v for k, v in engine.timing.items()})
    return stats


def _as_list(x) -> list[int]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [int(x)]
