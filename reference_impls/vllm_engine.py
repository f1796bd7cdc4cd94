"""An optional vLLM rollout engine for our own trainer (``--rollout-engine vllm``, CUDA only).

The turn loop stays ``rollout.run_episodes``'s: it asks an engine for one turn of the still-active episodes
and does the env steps, masks and truncation itself. This engine answers that call with vLLM instead of
our key/value-cache engine (``engine.CachedEngine``)::

    per turn   one TokensPrompt per active row: the row's whole conversation as token ids (prompt, earlier
               model turns as sampled, env observations as tokenised by the loop); vLLM's prefix cache
               (enable_prefix_caching) finds the shared prompt and every earlier turn already computed,
               so a turn only prefills the new observation
    sampling   SamplingParams per row: n=1, temperature T (0 = greedy), top_p=1, top_k=0 (off),
               max_tokens = the row's own limit (min(tokens per turn, episode budget)), stop = the env's
               stop strings, stop_token_ids = EOS ids, include_stop_str_in_output, logprobs=0 (only the
               sampled token's), a seed drawn from the trainer's seeded torch stream
    output     RequestOutput.outputs[0].token_ids are kept as sampled (never re-tokenised);
               .logprobs[t][token_ids[t]].logprob is the old log-prob, which must be log softmax(logits / T):
               the LLM is built with logprobs_mode="processed_logprobs" (vLLM V1's default is the raw,
               pre-temperature log-probs, which would make the first PPO/GRPO ratio differ from 1)
    the cut    the turn is cut by the same rule as the other engines (``engine.cut_turn``: up to and
               including EOS or the token that closes a stop string), then to the row's limit, so vLLM's
               own stop matching can only end a turn early where ours agrees

Weights: the trainer updates the policy in PyTorch; before each rollout the engine pushes the policy's
current weights into vLLM's model (``load_weights`` on vLLM's in-process model, found through
``llm.llm_engine.model_executor.driver_worker[.worker].model_runner.model``, else ``llm.apply_model``). One
LLM per process, built once from a ``save_pretrained`` copy of the policy (``gpu_memory_utilization``
from ``ATLAS_VLLM_GPU_MEMORY``, default 0.3, since the trainer shares the GPU).

Followed: vLLM's offline API as documented for v0.10-v0.20 (``LLM.generate(prompts, sampling_params,
use_tqdm=False)``, ``vllm.inputs.TokensPrompt(prompt_token_ids=...)``, ``SamplingParams`` fields above,
``CompletionOutput.token_ids / logprobs / finish_reason / stop_reason``, engine args
``enable_prefix_caching`` and ``logprobs_mode``). Verified here only against a fake engine with that call
shape (tests/reference_impls/test_vllm_engine.py): vLLM is not installed on these machines (it is the
``gpu`` extra in pyproject.toml, never a default requirement), so the weight sync and the real sampler
are not verified.
"""
from __future__ import annotations

import importlib.util
import os
import tempfile
import time

import torch

from .engine import TurnOutput, cut_turn
from .options import ConfigError


def check_available() -> None:
    """Raise ConfigError unless vLLM is importable and CUDA is present (before any model is loaded)."""
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError("--rollout-engine: 'vllm' needs the vllm package, which is not installed; install the "
                          "optional extra (pip install 'agentic-rl-atlas[gpu]' or pip install vllm) on a CUDA "
                          "machine, or use --rollout-engine cached")
    if not torch.cuda.is_available():
        raise ConfigError("--rollout-engine: 'vllm' needs a CUDA GPU and none is visible here; use "
                          "--rollout-engine cached (the default) on CPU")


# one LLM per policy object per process (building one loads the model and reserves GPU memory)
_LLMS: dict[int, tuple] = {}


def attach(model, llm, sampling_params_cls, tokens_prompt_cls) -> None:
    """Use ``llm`` (anything with vLLM's ``generate`` call shape) for ``model``'s rollouts, with these
    ``SamplingParams`` and ``TokensPrompt`` classes (vLLM's own, or a test's stand-ins)."""
    _LLMS[id(model)] = (llm, sampling_params_cls, tokens_prompt_cls)


def detach(model) -> None:
    _LLMS.pop(id(model), None)


def llm_for(model, tokenizer):
    """The (llm, SamplingParams, TokensPrompt) of ``model``; builds a vLLM LLM on first use."""
    if id(model) not in _LLMS:
        check_available()
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

        folder = tempfile.mkdtemp(prefix="atlas-vllm-")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        llm = LLM(model=folder, tokenizer=folder, enable_prefix_caching=True, logprobs_mode="processed_logprobs",
                  gpu_memory_utilization=float(os.environ.get("ATLAS_VLLM_GPU_MEMORY", "0.3")),
                  dtype=str(next(model.parameters()).dtype).removeprefix("torch."))
        attach(model, llm, SamplingParams, TokensPrompt)
    return _LLMS[id(model)]


def _inference_model(llm):
    """vLLM's in-process torch model, where this vLLM version exposes it (None otherwise)."""
    obj = getattr(getattr(getattr(llm, "llm_engine", None), "model_executor", None), "driver_worker", None)
    obj = getattr(obj, "worker", obj)
    runner = getattr(obj, "model_runner", None)
    return getattr(runner, "model", None)


def push_weights(llm, model) -> None:
    """Load ``model``'s current weights into the LLM (vLLM's ``load_weights`` takes (name, tensor) pairs
    with the Hugging Face names)."""
    weights = [(name, t.detach()) for name, t in model.state_dict().items()]
    target = _inference_model(llm)
    if target is not None:
        target.load_weights(weights)
    elif hasattr(llm, "apply_model"):
        llm.apply_model(lambda m: m.load_weights(weights))
    else:
        raise RuntimeError("this vLLM version exposes neither its model nor LLM.apply_model: cannot sync weights")


class VLLMEngine:
    """One turn of tokens per call, generated by vLLM (module docstring). Same interface as
    ``engine.CachedEngine``: ``turn(samples, active, limits) -> [TurnOutput]`` and ``timing``."""

    def __init__(self, model, tokenizer, stop_strings, eos_ids, greedy: bool = False, temperature: float = 1.0):
        self.llm, self.SamplingParams, self.TokensPrompt = llm_for(model, tokenizer)
        self.tokenizer, self.stop_strings = tokenizer, tuple(stop_strings)
        self.eos_ids = set(eos_ids)
        self.greedy, self.temperature = greedy, temperature
        self.timing = {"weight_sync_s": 0.0, "generate_s": 0.0, "generate_calls": 0}
        t0 = time.perf_counter()
        push_weights(self.llm, model)  # the policy has changed since the last rollout
        self.timing["weight_sync_s"] += time.perf_counter() - t0

    def sampling_params(self, limit: int):
        return self.SamplingParams(
            n=1, temperature=0.0 if self.greedy else self.temperature, top_p=1.0, top_k=0,
            max_tokens=max(1, limit), logprobs=0, stop=list(self.stop_strings), stop_token_ids=sorted(self.eos_ids),
            include_stop_str_in_output=True, skip_special_tokens=False,
            # the trainer seeds torch per (seed, step, rank): each request's seed follows from it
            seed=int(torch.randint(0, 2**31 - 1, (1,)).item()))

    def turn(self, samples, active: list[int], limits: list[int]) -> list[TurnOutput]:
        prompts = [self.TokensPrompt(prompt_token_ids=list(samples[i].token_ids)) for i in active]
        params = [self.sampling_params(limit) for limit in limits]
        t0 = time.perf_counter()
        results = self.llm.generate(prompts, params, use_tqdm=False)
        self.timing["generate_s"] += time.perf_counter() - t0
        self.timing["generate_calls"] += 1
        if len(results) != len(active):
            raise RuntimeError(f"vLLM returned {len(results)} outputs for {len(active)} prompts")
        outs = []
        for row, result, limit in zip(active, results, limits):
            completion = result.outputs[0]
            sampled = list(completion.token_ids)
            if completion.logprobs is None or len(completion.logprobs) < len(sampled):
                raise RuntimeError(f"vLLM gave no log-prob for every sampled token of row {row} (logprobs=0 "
                                   "must be requested)")
            logprobs = [float(completion.logprobs[t][tok].logprob) for t, tok in enumerate(sampled)]
            tokens, stopped = cut_turn(self.tokenizer, sampled, self.eos_ids, self.stop_strings)
            # vLLM ended the turn on a stop condition (EOS, a stop id or string) our window did not see
            stopped = stopped or (len(tokens) == len(sampled) and completion.finish_reason == "stop")
            if len(tokens) > limit:
                tokens, stopped = tokens[:limit], False
            outs.append(TurnOutput(tokens, logprobs[:len(tokens)], stopped))
        return outs
