"""The Search-R1-style env: deterministic questions whose gold answers the catalog confirms, the tool,
the reward, and loss masking of the <information> block (it never receives gradient)."""
import dataclasses
import collections

import numpy as np
import pytest
import torch

from reference_impls.envs import search as S


class StubEmbedder:
    """Deterministic vectors, so a lexical-mode index builds without loading MiniLM."""

    model_id = "stub"
    dim = 8

    def encode(self, texts):
        rng = np.random.default_rng(0)
        v = rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def encode_query(self, text):
        return self.encode([text])[0]


@pytest.fixture(scope="module")
def cat():
    return S._catalog()


@pytest.fixture(scope="module")
def search_fn(cat):
    from papers.search import SearchIndex

    idx = SearchIndex.load_or_build(cat, embedder=StubEmbedder(), use_cache=False)
    return S.index_search(idx, cat, mode="lexical")


def test_questions_are_deterministic_per_seed():
    a = S.problems("train", n=50, seed=3)
    assert a == S.problems("train", n=50, seed=3)
    b = S.problems("train", n=50, seed=4)
    assert [p.question for p in a] != [p.question for p in b]  # the seed changes order and phrasing
    assert len({p.uid for p in a}) == 50
    assert set(p.family for p in a) == set(S.FAMILIES)  # round-robin: every family is represented


def test_heldout_is_disjoint_and_seed_independent():
    train = {(p.family, p.entity) for p in S.problems("train", n=10_000, seed=0)}
    held = {(p.family, p.entity) for p in S.problems("heldout", n=10_000, seed=0)}
    assert not train & held and len(held) > 80
    assert held == {(p.family, p.entity) for p in S.problems("heldout", n=10_000, seed=9)}


def test_the_three_splits_share_no_entity_and_no_document():
    """Train, validation and held-out questions are about different entities and answered by different catalog
    works, under any seed (the held-out facts are those the split always held: the test questions did not move);
    validation has room for the core grid's 50 questions in every family."""
    def about(split):
        problems = S.problems(split, n=10_000, seed=0)
        assert problems == S.problems(split, n=10_000, seed=0) and {p.split for p in problems} == {split}
        return problems, {p.entity.lower() for p in problems}, {p.key for p in problems}

    (train, e_train, k_train), (val, e_val, k_val), (held, e_held, k_held) = map(about, S.SPLITS)
    for (a, b) in ((e_train, e_val), (e_train, e_held), (e_val, e_held), (k_train, k_val), (k_train, k_held),
                   (k_val, k_held)):
        assert not a & b
    assert len(val) >= 50 and {p.family for p in val} == set(S.FAMILIES)
    assert {(p.family, p.entity) for p in held} == {(f["family"], f["entity"]) for f in S.facts()
                                                    if S._split_of(f["family"], f["entity"]) == "heldout"}
    with pytest.raises(ValueError, match="split must be one of train, validation, heldout"):
        S.problems("test", n=1)


def test_every_gold_answer_is_right_per_the_catalog(cat):
    works = {w.key: w for w in cat}
    t2 = cat.tables["table02_rl_algorithm_variants"].frame
    t9 = cat.tables["table09_environments_benchmarks"].frame
    t10 = cat.tables["table10_rl_frameworks"].frame
    problems = [p for split in S.SPLITS for p in S.problems(split, n=10_000, seed=0)]
    counts = collections.Counter(p.family for p in problems)
    assert all(counts[f] >= 20 for f in S.FAMILIES), counts
    for p in problems:
        assert p.entity in p.question and p.answers
        if p.family == "year":
            w = cat.by_alias(p.entity)
            assert w is not None and w.key == p.key and p.answers == (str(w.year),)
            assert sum(1 for x in works.values() if x.name.lower() == p.entity.lower()) == 1  # unambiguous
        elif p.family == "algorithm":
            w = cat.by_alias(p.entity)
            assert w.key == p.key and set(p.answers) == set(w.algorithms)
        elif p.family == "variant":
            row = t2[t2["method"] == p.entity].iloc[0]
            assert row["family"] == f"{p.answers[0]} family"
        elif p.family == "benchmark":
            row = t9[t9["name"] == p.entity].iloc[0]
            assert set(p.answers) == set(row["task_domain"].split(";"))
        elif p.family == "framework":
            rows = t10[t10["key_features"] == p.entity]
            assert len(rows) == 1 and p.answers == (rows.iloc[0]["framework"],)


def test_normalisation_and_exact_match():
    assert S.normalize_answer("  The  PPO. ") == "ppo"
    assert S.exact_match("dr. grpo", ["Dr.GRPO"]) is False  # punctuation goes, spaces stay
    assert S.exact_match("Dr.GRPO", ["Dr.GRPO"]) and S.exact_match("2025.", ["2025"])
    assert not S.exact_match("", ["2025"]) and not S.exact_match(None, ["x"])


def test_episode_search_then_answer(search_fn):
    p = next(q for q in S.problems("train", n=20, seed=0) if q.family == "framework")
    env = S.make(p, search_fn=search_fn)
    messages = env.reset()
    assert messages[1]["content"] == p.question and "<search>" in messages[0]["content"]
    r = env.step(f"<think>look it up</think><search>{p.query}</search>")
    assert not r.done and r.observation.startswith("<information>") and r.observation.endswith("</information>")
    assert p.answers[0] in r.observation and r.info["gold_retrieved"]
    r = env.step(f"<answer>{p.answers[0].lower()}</answer>")
    assert r.done and r.reward == 1.0 and r.info["correct"]
    env2 = S.make(p, search_fn=search_fn)
    env2.reset()
    assert env2.step("<answer>nobody</answer>").reward == 0.0


def test_search_budget_and_missing_tags(search_fn):
    p = S.problems("train", n=1, seed=0)[0]
    env = S.make(p, search_fn=search_fn, max_tool_calls=1)
    env.reset()
    assert not env.step("<search>a</search>").done
    r = env.step("<search>b</search>")
    assert r.done and r.reward == 0.0 and r.info["truncated"]
    env = S.make(p, search_fn=search_fn)
    env.reset()
    r = env.step("I think it is 2024")
    assert r.done and r.reward == 0.0


def test_demonstrations_answer_from_what_was_retrieved(search_fn):
    """The SFT transcripts only teach answers that the search results actually contain."""
    problems = S.problems("train", n=60, seed=0)
    found = 0
    for p in problems:
        segs = S.demonstration(p, search_fn=search_fn)
        assert [r for r, _ in segs] == ["model", "env", "model"]
        found += p.answers[0] in segs[1][1]
    assert found >= 0.95 * len(problems)


def test_information_tokens_get_no_gradient(tiny, search_fn):
    """A rollout on the search env: <information> tokens have loss mask 0, and the loss's gradient
    with respect to their log-probs is exactly 0."""
    from reference_impls.common import collate, completion_logprobs
    from reference_impls.algorithms.grpo.grpo import Config, grpo_loss
    from reference_impls.sft import demonstration_sample

    model, tok = tiny
    task = dataclasses.replace(S.SPEC, build=lambda p, config: S.SearchEnv(p, config, search_fn),
                               demonstration=lambda p, config: S.demonstration(p, search_fn=search_fn, config=config))
    p = S.problems("train", n=1, seed=0)[0]
    sample = demonstration_sample(tok, task, p)
    text_env = tok.decode([t for t, m in zip(sample.completion_ids, sample.loss_mask) if m == 0])
    assert text_env.startswith("<information>") and text_env.endswith("</information>")
    assert "<search>" in tok.decode([t for t, m in zip(sample.completion_ids, sample.loss_mask) if m == 1])
    batch = collate([sample], tok.pad_token_id)
    logps, _ = completion_logprobs(model, batch)
    logps.retain_grad()
    loss, _ = grpo_loss(logps, batch["old_logprobs"], torch.tensor([1.0]), batch["loss_mask"], Config())
    loss.backward()
    env_pos = batch["loss_mask"][0] == 0
    assert env_pos.sum() > 10
    assert torch.all(logps.grad[0][env_pos] == 0) and torch.any(logps.grad[0][~env_pos] != 0)


def test_tiny_model_rollout_on_search_env(tiny, search_fn):
    from reference_impls.rollout import RolloutConfig, rollout

    model, tok = tiny
    task = dataclasses.replace(S.SPEC, build=lambda p, config: S.SearchEnv(p, config, search_fn))
    samples, _ = rollout(model, tok, task, S.problems("train", n=2, seed=0),
                         RolloutConfig(group_size=2, max_new_tokens_per_turn=6, max_completion_tokens=20))
    assert len(samples) == 4 and all(s.done for s in samples)
    assert all(len(s.loss_mask) == len(s.completion_ids) for s in samples)


def test_registered_for_the_cli():
    from reference_impls.envs import ENVS
    from reference_impls.run_config import ALGORITHMS
    from reference_impls.train import parse

    assert "search" in ENVS and {"ppo", "dpo"} <= set(ALGORITHMS)
    cfg, _, _ = parse(["--algo", "ppo", "--env", "search", "--out", "x", "--kl-estimator", "k3", "--shared-backbone",
                       "--top-k", "5"])
    assert cfg.env == "search" and cfg.algo_config == {"kl_estimator": "k3", "shared_backbone": True}
    assert cfg.env_options == {"top_k": 5}
