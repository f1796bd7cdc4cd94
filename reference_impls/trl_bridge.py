"""Our environments on TRL's GRPOTrainer: the same problems, tool tags, loss masks and reward.

TRL 1.16's GRPOTrainer can run multi-turn tool work in two ways, and this module provides both:

1. ``rollout_func`` (:class:`AtlasRollout`, the default, works with any model): TRL hands the step's prompts
   to our rollout (``rollout.py``: our engine, our tag format, our environments), which returns the
   prompt ids, the completion ids (model and environment tokens), the sampling log-probs and an
   ``env_mask`` (1 = model token, 0 = environment token, which TRL's loss then ignores), plus the
   environment's reward as an extra field that :func:`environment_reward` hands back to TRL. The model
   writes tool calls in *our* tags (``<calc>..</calc>``), exactly as in our own trainer, so a checkpoint
   warm-started on our demonstrations behaves the same under both trainers.

2. ``environment_factory`` (:func:`environment_class`, for models whose chat template renders tool calls,
   e.g. Qwen-style templates): TRL renders each environment tool as a function in the prompt, parses the
   model's JSON tool calls with the template's response parser, calls the tool method, and appends the
   result as a ``tool`` message. Our tag format is bridged inside the tool method: the argument is handed
   to our environment as if the model had written ``<calc>ARG</calc>``, and the environment's result tags
   are stripped from the returned text. The final answer is the last assistant message's text, scored by
   :func:`environment_answer_reward` through the same environment (its ``<answer>`` tag, or the whole
   text when the model wrote none). SmolLM2's template cannot render tool calls (TRL's
   ``supports_tool_calling`` is False), so with SmolLM2 use path 1.

Neither path evaluates model text: tool arguments go to the environments' own parsers, and a bad
argument comes back as the environment's error observation.
"""
from __future__ import annotations

import json
from typing import Any

from .envs import get_env
from .rollout import RolloutConfig, rollout


def _key(messages) -> str:
    """A prompt's identity: its messages as canonical JSON."""
    return json.dumps(messages, sort_keys=True, ensure_ascii=False)


def prompt_dataset(env: str, split: str, n: int, seed: int, env_options: dict, problems: list | None = None):
    """A ``datasets.Dataset`` of our environment's problems: ``prompt`` (the environment's opening
    messages) and ``problem_index``; plus the problems themselves, by prompt, for the rollout.
    ``problems``: these problems, in this order, instead of drawing ``n`` (a benchmark that feeds two
    trainers the same problem sequence passes them)."""
    from datasets import Dataset

    task = get_env(env)
    env_config = task.config_of(env_options)
    problems = list(task.problems(split, n=n, seed=seed, config=env_config) if problems is None else problems)
    prompts = [task.make(p, env_config).reset() for p in problems]
    data = Dataset.from_dict({"prompt": prompts, "problem_index": list(range(len(problems)))})
    return data, problems, {_key(m): p for m, p in zip(prompts, problems)}


class AtlasRollout:
    """TRL ``rollout_func``: our multi-turn rollout for the prompts TRL hands over (path 1)."""

    def __init__(self, env: str, problems_by_prompt: dict[str, Any], env_options: dict, max_new_tokens_per_turn: int,
                 max_completion_tokens: int, temperature: float = 1.0, engine: str = "cached"):
        self.task = get_env(env)
        self.problems_by_prompt = problems_by_prompt
        self.env_config = self.task.config_of(env_options)
        self.max_new_tokens_per_turn = max_new_tokens_per_turn
        self.max_completion_tokens = max_completion_tokens
        self.temperature = temperature
        self.engine = engine
        self.tool_calls = 0  # over the whole run: the environment's own count (tests and logs read it)
        self.episodes = 0
        self.rewards: list[list[float]] = []  # per call: the rewards our environment gave
        # per call: the mean tokens per episode the model wrote (loss-masked in) and all completion tokens (the
        # model's and the tool results'), counted alike for any trainer by benchmarks/grpo_vs_trl.py
        self.model_tokens: list[float] = []
        self.completion_tokens: list[float] = []

    def __call__(self, prompts: list, trainer) -> dict:
        # TRL repeats each prompt num_generations times in a row; roll each run of equal prompts out as a group
        runs: list[tuple[str, int]] = []
        for p in prompts:
            key = _key(p)
            if runs and runs[-1][0] == key:
                runs[-1] = (key, runs[-1][1] + 1)
            else:
                runs.append((key, 1))
        unknown = [k for k, _ in runs if k not in self.problems_by_prompt]
        if unknown:
            raise ValueError(f"rollout_func: a prompt that is not one of the dataset's problems: {unknown[0][:200]}")
        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": [], "env_reward": [],
               "env_correct": []}
        self.rewards.append(out["env_reward"])
        model_tokens = completion_tokens = 0
        sizes = {g for _, g in runs}
        batches = [runs] if len(sizes) == 1 else [[r] for r in runs]  # equal groups roll out together
        for batch in batches:
            config = RolloutConfig(group_size=batch[0][1], max_new_tokens_per_turn=self.max_new_tokens_per_turn,
                                   max_completion_tokens=self.max_completion_tokens, temperature=self.temperature,
                                   env_config=self.env_config, engine=self.engine)
            samples, _ = rollout(model, tokenizer, self.task, [self.problems_by_prompt[k] for k, _ in batch], config)
            for s in samples:
                out["prompt_ids"].append(s.prompt_ids)
                out["completion_ids"].append(s.completion_ids)
                out["logprobs"].append(s.old_logprobs)
                out["env_mask"].append(s.loss_mask)
                out["env_reward"].append(float(s.reward))
                out["env_correct"].append(bool(s.info.get("correct", False)))
                self.tool_calls += int(s.info.get("tool_calls", 0) or 0)
                self.episodes += 1
                model_tokens += int(sum(s.loss_mask))
                completion_tokens += len(s.completion_ids)
        self.model_tokens.append(model_tokens / max(len(out["env_reward"]), 1))
        self.completion_tokens.append(completion_tokens / max(len(out["env_reward"]), 1))
        return out


def environment_reward(prompts=None, completions=None, env_reward=None, **kwargs) -> list[float]:
    """TRL reward function of path 1: the reward our environment gave each episode."""
    if env_reward is None:
        raise ValueError("environment_reward needs the env_reward field (use it with AtlasRollout)")
    return [float(r) for r in env_reward]


# -- path 2: a TRL environment_factory class ----------------------------------------------------------

def environment_class(env: str, problems: list, env_options: dict) -> type:
    """A TRL ``environment_factory`` class for our environment ``env`` (path 2, see the module docstring).
    ``reset(problem_index=..., **row)`` starts the dataset row's problem; the tool method is named after
    the environment's tool and takes one string argument."""
    task = get_env(env)
    env_config = task.config_of(env_options)
    probe = task.make(problems[0], env_config)
    spec = probe.tool

    class AtlasEnvironment:
        def __init__(self):
            self.env = None
            self.reward = 0.0
            self.correct = False
            self.finished = False

        def reset(self, problem_index: int = 0, **row) -> None:
            self.env = task.make(problems[int(problem_index)], env_config)
            self.env.reset()
            self.reward, self.correct, self.finished = 0.0, False, False
            return None

        def _call(self, argument: str) -> str:
            if self.env is None or self.finished:
                return "error: the episode has ended"
            result = self.env.step(f"{spec.call_open}{argument}{spec.call_close}")
            if result.done:  # e.g. over the tool-call limit: the environment ended the episode
                self.finished, self.reward = True, float(result.reward)
                self.correct = bool(result.info.get("correct", False))
                return "error: the episode has ended"
            text = result.observation.strip()
            if text.startswith(spec.result_open) and text.endswith(spec.result_close):
                text = text[len(spec.result_open):len(text) - len(spec.result_close)]
            return text

        def _finish(self, final_text: str) -> float:
            if not self.finished and self.env is not None:
                if spec.find_answer(final_text) is None:
                    final_text = f"{spec.answer_open}{final_text.strip()}{spec.answer_close}"
                result = self.env.step(final_text)
                self.finished, self.reward = True, float(result.reward) if result.done else 0.0
                self.correct = bool(result.info.get("correct", False)) if result.done else False
            return self.reward

    def tool(self, argument: str) -> str:
        return self._call(argument)

    tool.__name__ = tool.__qualname__ = spec.name
    tool.__doc__ = (f"{spec.description}\n\nArgs:\n    argument: what to send to the {spec.name} tool, as plain "
                    f"text.\n\nReturns:\n    The tool's result, or an error message.")
    setattr(AtlasEnvironment, spec.name, tool)
    AtlasEnvironment.__name__ = f"Atlas{env.title().replace('-', '')}Environment"
    return AtlasEnvironment


def environment_answer_reward(completions, environments=None, **kwargs) -> list[float]:
    """TRL reward function of path 2: each episode's final assistant text, scored by its environment."""
    if environments is None:
        raise ValueError("environment_answer_reward needs the environments (use it with environment_factory)")
    rewards = []
    for completion, env in zip(completions, environments):
        final = completion[-1]["content"] if isinstance(completion, list) and completion else str(completion)
        rewards.append(env._finish(final if isinstance(final, str) else str(final)))
    return rewards


def build_trainer(spec: dict, model=None, tokenizer=None, **overrides):
    """A GRPOTrainer for an export spec (``reference_impls.export``): our environment through
    :class:`AtlasRollout`, its reward through :func:`environment_reward`, DAPO's overlong shaping through
    TRL's ``get_soft_overlong_punishment`` when the run used it. ``overrides`` are GRPOConfig fields."""
    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from .models import load_policy

    if model is None:
        model, tokenizer = load_policy(spec["model"], seed=spec["seed"])
    tokenizer.padding_side = "left"
    dataset, _, by_prompt = prompt_dataset(spec["env"], "train", spec["train_pool"], spec["seed"], spec["env_options"])
    r = spec["rollout"]
    rollout_func = AtlasRollout(spec["env"], by_prompt, spec["env_options"], r["max_new_tokens_per_turn"],
                                r["max_completion_tokens"], r["temperature"])
    rewards, weights = [environment_reward], [1.0]
    if spec.get("overlong", {}).get("buffer"):
        from trl.rewards import get_soft_overlong_punishment

        rewards.append(get_soft_overlong_punishment(r["max_completion_tokens"], spec["overlong"]["buffer"]))
        weights.append(float(spec["overlong"]["penalty"]))
    config = GRPOConfig(**{**spec["grpo_config"], "reward_weights": weights, **overrides})
    trainer = GRPOTrainer(model=model, reward_funcs=rewards, args=config, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollout_func)
    trainer.atlas_rollout = rollout_func  # the run's tool-call and episode counts, for logs and tests
    return trainer
