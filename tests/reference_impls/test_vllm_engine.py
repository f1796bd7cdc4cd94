"""The vLLM rollout engine's bookkeeping, against a fake LLM with vLLM's ``generate`` call shape (vLLM itself
is not installed here): sampled ids kept as sampled, env tokens masked, old log-probs from the sampler's
logprobs, stop strings, per-row limits, the sampling parameters sent, the weight push, and the refusal
without vLLM or CUDA."""
import importlib.util
from dataclasses import dataclass, field

import pytest
import torch

from reference_impls import vllm_engine
from reference_impls.envs import calculator
from reference_impls.options import ConfigError
from reference_impls.rollout import RolloutConfig, Sample, render_prompt, rollout, run_episodes


@dataclass(kw_only=True)
class FakeSamplingParams:
    """The vLLM SamplingParams fields the adapter may set (an unknown name is a TypeError, as in vLLM)."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int | None = 16
    logprobs: int | None = None
    stop: list = field(default_factory=list)
    stop_token_ids: list = field(default_factory=list)
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    seed: int | None = None


def fake_tokens_prompt(prompt_token_ids):  # vllm.inputs.TokensPrompt is a TypedDict
    return {"prompt_token_ids": prompt_token_ids}


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list
    cumulative_logprob: float | None
    logprobs: list | None
    finish_reason: str | None = None
    stop_reason: object = None


@dataclass
class RequestOutput:
    request_id: str
    prompt_token_ids: list
    outputs: list


class FakeModel:
    def __init__(self):
        self.loaded = []

    def load_weights(self, weights):
        self.loaded.append({name: t.clone() for name, t in weights})


class FakeLLM:
    """Writes ``script[k]`` at its k-th generate call for every prompt, token by token, and stops like vLLM:
    after the token whose text completes a stop string (kept: include_stop_str_in_output), at a stop token id
    (kept in token_ids), or after max_tokens. Log-probs are made up but distinct per position, and every
    position also lists a decoy token, as vLLM's top-k entries do."""

    def __init__(self, tokenizer, script):
        self.tokenizer, self.script = tokenizer, script
        self.calls, self.params, self.prompts = 0, [], []
        self.model = FakeModel()

    def apply_model(self, fn):
        return [fn(self.model)]

    def generate(self, prompts, sampling_params, use_tqdm=True):
        assert isinstance(sampling_params, list) and len(sampling_params) == len(prompts)
        text = self.script[self.calls]
        self.calls += 1
        self.params.append(sampling_params)
        self.prompts.append([p["prompt_token_ids"] for p in prompts])
        outs = []
        for r, (prompt, sp) in enumerate(zip(prompts, sampling_params)):
            planned = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            tokens, logprobs, reason = [], [], "length"
            for t, tok in enumerate(planned):
                if len(tokens) >= sp.max_tokens:
                    break
                tokens.append(tok)
                logprobs.append({tok: Logprob(-0.01 * (t + 1) - 0.5 * r, rank=1), tok + 1: Logprob(-9.0, rank=2)})
                if tok in sp.stop_token_ids or any(s in self.tokenizer.decode(tokens) for s in sp.stop):
                    reason = "stop"
                    break
            outs.append(RequestOutput(str(r), prompt["prompt_token_ids"],
                                      [CompletionOutput(0, self.tokenizer.decode(tokens), tokens, None, logprobs,
                                                        finish_reason=reason)]))
        return outs


@pytest.fixture
def problem():
    return calculator.SPEC.problems("train", n=1, seed=3, levels=(2,))[0]


def attach(model, tok, script):
    llm = FakeLLM(tok, script)
    vllm_engine.attach(model, llm, FakeSamplingParams, fake_tokens_prompt)
    return llm


def test_turns_keep_sampled_ids_mask_env_tokens_and_take_the_samplers_logprobs(tiny, problem):
    model, tok = tiny
    script = [text for role, text in calculator.SPEC.demonstration(problem) if role == "model"]
    llm = attach(model, tok, script)
    try:
        cfg = RolloutConfig(group_size=2, max_new_tokens_per_turn=40, max_completion_tokens=400, temperature=0.7,
                            engine="vllm")
        samples, stats = rollout(model, tok, calculator.SPEC, [problem], cfg)
    finally:
        vllm_engine.detach(model)
    assert llm.calls == len(script) and stats["generate_calls"] == len(script)
    env = calculator.SPEC.make(problem)
    prompt = render_prompt(tok, env.reset())
    for r, s in enumerate(samples):
        assert s.done and s.info["correct"] and s.reward == 1.0
        assert s.prompt_ids == prompt
        # rebuild the expected episode: model segments as the fake sampled them, observations as the env wrote
        ids, mask, logps = [], [], []
        replay = calculator.SPEC.make(problem)
        replay.reset()
        for k, text in enumerate(script):
            model_ids = tok(text, add_special_tokens=False)["input_ids"]
            ids += model_ids
            mask += [1] * len(model_ids)
            logps += [-0.01 * (t + 1) - 0.5 * r for t in range(len(model_ids))]
            result = replay.step(text)
            if not result.done:
                obs = tok(result.observation, add_special_tokens=False)["input_ids"]
                ids, mask, logps = ids + obs, mask + [0] * len(obs), logps + [0.0] * len(obs)
        assert s.completion_ids == ids
        assert s.loss_mask == mask
        assert s.old_logprobs == pytest.approx(logps)
        # each turn's prompt was the row's whole conversation so far, as token ids (never re-tokenised text)
        for k, turn_prompts in enumerate(llm.prompts):
            start, _ = s.turn_spans[k]
            assert turn_prompts[r] == s.prompt_ids + s.completion_ids[:start]
    params = llm.params[0][0]
    assert params.temperature == 0.7 and params.top_p == 1.0 and params.top_k == 0 and params.n == 1
    assert params.logprobs == 0 and params.include_stop_str_in_output
    assert set(params.stop) == set(env.stop_strings) and tok.eos_token_id in params.stop_token_ids
    # the policy's weights were pushed before generating, under their own names
    pushed = llm.model.loaded[0]
    assert set(pushed) == set(model.state_dict())
    assert all(torch.equal(pushed[k], v) for k, v in model.state_dict().items())


def test_per_row_limits_truncate_and_greedy_sends_temperature_zero(tiny, problem):
    model, tok = tiny
    script = [text for role, text in calculator.SPEC.demonstration(problem) if role == "model"]
    llm = attach(model, tok, script)
    try:
        cfg = RolloutConfig(group_size=1, max_new_tokens_per_turn=40, max_completion_tokens=400, greedy=True,
                            engine="vllm")
        envs, samples = [], []
        for _ in range(2):
            env = calculator.SPEC.make(problem)
            envs.append(env)
            samples.append(Sample(prompt_ids=render_prompt(tok, env.reset())))
        run_episodes(model, tok, envs, samples, cfg, budgets=[400, 3])
    finally:
        vllm_engine.detach(model)
    first = llm.params[0]
    assert [p.max_tokens for p in first] == [40, 3] and all(p.temperature == 0.0 for p in first)
    short = samples[1]
    # the short row wrote only its 3 tokens (no stop string reached); the env judged that text: wrong, over
    assert short.completion_ids == tok(script[0], add_special_tokens=False)["input_ids"][:3]
    assert short.done and short.turns == 1 and short.reward == 0.0 and not short.info["correct"]
    assert short.loss_mask == [1, 1, 1] and samples[0].info["correct"]
    assert len(llm.prompts[1]) == 1  # only the long row was still active in the second turn


def test_a_missing_logprob_is_an_error_not_a_zero(tiny, problem):
    model, tok = tiny

    class NoLogprobs(FakeLLM):
        def generate(self, prompts, sampling_params, use_tqdm=True):
            outs = super().generate(prompts, sampling_params, use_tqdm)
            for o in outs:
                o.outputs[0].logprobs = None
            return outs

    vllm_engine.attach(model, NoLogprobs(tok, ["<answer>1</answer>"]), FakeSamplingParams, fake_tokens_prompt)
    try:
        with pytest.raises(RuntimeError, match="log-prob"):
            rollout(model, tok, calculator.SPEC, [problem], RolloutConfig(group_size=1, engine="vllm"))
    finally:
        vllm_engine.detach(model)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None and torch.cuda.is_available(),
                    reason="vLLM and CUDA are both here: nothing to refuse")
def test_refused_clearly_without_vllm_or_cuda(tmp_path):
    from reference_impls.run_config import TrainConfig, resolve
    from reference_impls.train import parse

    with pytest.raises(ConfigError, match="--rollout-engine: 'vllm' needs"):
        resolve(TrainConfig(out=str(tmp_path), rollout_engine="vllm"))
    with pytest.raises(ConfigError, match="vllm"):
        parse(["--out", str(tmp_path), "--rollout-engine", "vllm"])
    assert parse(["--out", str(tmp_path)])[0].rollout_engine == "cached"
