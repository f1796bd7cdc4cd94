"""DPO pairs from the environment's demonstration (``--demonstration-chosen``): the chosen episode is the
demonstration replayed through the env (verified correct, observations masked, same prompt as the rejected
sample); a demonstration the env does not score correct is no chosen episode; pairs come only from prompts
whose samples are all wrong."""
from dataclasses import replace

import pytest

from reference_impls.algorithms.dpo import dpo
from reference_impls.envs import calculator
from reference_impls.rollout import RolloutConfig, render_prompt


@pytest.fixture
def problem():
    return calculator.SPEC.problems("train", n=1, seed=5, levels=(2,))[0]


def test_the_chosen_episode_is_the_replayed_verified_demonstration(tiny, problem):
    _, tok = tiny
    prompt = render_prompt(tok, calculator.SPEC.make(problem).reset())
    demo = dpo.demonstration_episode(tok, calculator.SPEC, problem, {}, prompt)
    assert demo is not None and demo.info["correct"] and demo.reward == 1.0 and demo.prompt_ids == prompt
    segments = calculator.SPEC.demonstration(problem)
    model_text = [t for r, t in segments if r == "model"]
    env_text = [t for r, t in segments if r == "env"]
    expected_ids, expected_mask = [], []
    for k, text in enumerate(model_text):
        ids = tok(text + (tok.eos_token if k == len(model_text) - 1 else ""), add_special_tokens=False)["input_ids"]
        expected_ids, expected_mask = expected_ids + ids, expected_mask + [1] * len(ids)
        if k < len(env_text):  # the env's own observation, masked
            obs = tok(env_text[k], add_special_tokens=False)["input_ids"]
            expected_ids, expected_mask = expected_ids + obs, expected_mask + [0] * len(obs)
    assert demo.completion_ids == expected_ids and demo.loss_mask == expected_mask
    assert demo.completion_ids[-1] == tok.eos_token_id and demo.turns == len(model_text)


def test_a_demonstration_the_env_does_not_verify_is_refused(tiny, problem):
    _, tok = tiny
    wrong = replace(calculator.SPEC, demonstration=lambda p, config=None: [("model", "<answer>-1</answer>")])
    assert dpo.demonstration_episode(tok, wrong, problem, {}, [1, 2, 3]) is None


def test_demonstration_pairs_only_where_no_sample_is_correct(tiny):
    model, tok = tiny
    problems = list(calculator.SPEC.problems("train", n=3, seed=0))
    cfg = RolloutConfig(group_size=2, max_new_tokens_per_turn=6, max_completion_tokens=10)
    none, stats_none = dpo.build_pairs(model, tok, calculator.SPEC, problems, cfg, seed=1)
    pairs, stats = dpo.build_pairs(model, tok, calculator.SPEC, problems, cfg, seed=1, demonstration_chosen=True)
    assert stats_none["sample_accuracy"] == stats["sample_accuracy"] == 0.0  # the random tiny model solves nothing
    # the sampled episodes' cost: at least one token per sample, at most the completion budget each
    assert 6 <= stats["generated_tokens"] <= 6 * 10 and stats["samples"] == 6
    assert none == [] and stats["demonstration_pairs"] == len(pairs) == 3
    for pair, problem in zip(pairs, problems):
        assert pair.uid == problem.uid
        assert pair.chosen.info["correct"] and not pair.rejected.info["correct"]
        assert pair.chosen.prompt_ids == pair.rejected.prompt_ids
