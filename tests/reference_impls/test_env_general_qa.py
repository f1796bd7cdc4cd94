"""The general-qa env (reference_impls/envs/general_qa.py): the encyclopedia and its passages, BM25 against a
hand-computed score, questions by split (disjoint by entity), the reward on scripted answers, bad queries and the
search budget, the demonstration answering its question, the row on other-general-qa (which leaves the proxy
list), and two training steps through the CLI."""
from __future__ import annotations

import json
import math

import pytest

from reference_impls.envs import get_env
from reference_impls.envs.general_qa import (BM25, ENCYCLOPEDIA, PHRASINGS, SPLITS, GeneralQAConfig, GeneralQAEnv,
                                             Problem, facts, passage, search, split_of)
from reference_impls.implementations import NODE_PROXIES
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("general-qa")


# -- the encyclopedia and retrieval --

def test_every_fact_is_written_in_its_entity_passage_and_has_a_question():
    names = [e.name.lower() for e in ENCYCLOPEDIA]
    assert len(names) == len(set(names)) == 107
    for entity in ENCYCLOPEDIA:
        text = passage(entity)
        for relation, answers in entity.facts.items():
            assert answers[0] in text or (relation == "position" and answers[1] in text), (entity.name, relation)
            assert (entity.kind, relation) in PHRASINGS


def test_searching_an_entity_by_name_finds_its_passage_first():
    for entity in ENCYCLOPEDIA:
        assert search(entity.name, 3)[0][0] == entity.name, entity.name


def test_bm25_scores_as_the_formula_says():
    bm25 = BM25(["red apple", "green apple pie", "blue sky"])
    # 'apple' is in 2 of 3 documents: idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)); document 0 has 2 terms, avgdl 7/3
    idf = math.log(1 + 1.5 / 2.5)
    norm = 1.2 * (1 - 0.75 + 0.75 * 2 / (7 / 3))
    assert bm25.scores("apple")[0] == pytest.approx(idf * 1 * 2.2 / (1 + norm))
    assert bm25.scores("apple")[2] == 0.0
    assert bm25.top("apple pie", 3) == [1, 0]  # the sky has no score and is not returned
    assert bm25.top("the of", 3) == []  # stop words only


# -- questions and splits --

def test_problems_are_seeded_and_kinds_narrow_them():
    a = SPEC.problems("train", 40, seed=3)
    assert a == SPEC.problems("train", 40, seed=3) and a != SPEC.problems("train", 40, seed=4)
    assert {p.family.split("/")[0] for p in SPEC.problems("train", 200, kinds=("element",))} == {"element"}
    assert len(SPEC.problems("validation", 1000)) == len(facts("validation"))  # fewer when the split has fewer


def test_the_three_splits_ask_about_different_entities():
    entities = {split: {p.entity for p in SPEC.problems(split, 1000)} for split in SPLITS}
    assert all(len(v) >= 5 for v in entities.values())
    assert not entities["train"] & entities["heldout"]
    assert not entities["train"] & entities["validation"]
    assert not entities["validation"] & entities["heldout"]
    assert all(split_of(name) == split for split, names in entities.items() for name in names)
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_answers_its_question(split):
    for p in SPEC.problems(split, 40, seed=1):
        segments = SPEC.demonstrate(p)
        assert [role for role, _ in segments] == ["model", "env", "model"]
        assert f"<search>{p.entity}</search>" in segments[0][1] and f"[1] {p.entity}:" in segments[1][1]
        result = play(SPEC.make(p), [text for role, text in segments if role == "model"])
        assert result.done and result.reward == 1.0 and result.info["gold_retrieved"], (p, result.info)


# -- episodes --

GHANA = Problem("What is the capital of Ghana?", ("Accra",), "country/capital", "Ghana", "train", "hand")


@pytest.mark.parametrize("answer, reward", [("Accra", 1.0), ("accra.", 1.0), ("The Accra", 1.0), ("Kumasi", 0.0),
                                            ("", 0.0)])
def test_the_reward_is_exact_match_after_normalisation(answer, reward):
    result = GeneralQAEnv(GHANA).step(f"<answer>{answer}</answer>")
    assert result.done and result.reward == reward and result.info["correct"] == (reward == 1.0)


def test_a_search_returns_the_passages_and_notes_whether_the_gold_one_came_back():
    env = GeneralQAEnv(GHANA, GeneralQAConfig(top_k=2))
    env.reset()
    found = env.step("<search>capital of Ghana</search>")
    assert not found.done and found.observation.startswith("<information>[1] Ghana: Ghana is a country in Africa.")
    assert "[3]" not in found.observation and found.info["gold_retrieved"]
    assert "Ghana" not in env.step("<search>Mona Lisa painter</search>").observation.split("[2]")[0]


@pytest.mark.parametrize("query", ["", "   ", "the of ?!"])
def test_a_query_without_a_searchable_word_is_named_and_spends_the_call(query):
    env = GeneralQAEnv(GHANA)
    env.reset()
    result = env.step(f"<search>{query}</search>")
    assert not result.done and "error: the query has no searchable word" in result.observation
    assert result.info["searches"] == 1


def test_the_search_budget_and_a_turn_without_a_tag():
    env = GeneralQAEnv(GHANA, GeneralQAConfig(max_tool_calls=1))
    env.reset()
    assert not env.step("<search>Ghana</search>").done
    end = env.step("<search>Ghana</search>")
    assert end.done and end.reward == 0.0 and end.info["truncated"] and "all 1 searches" in end.info["error"]
    assert play(GeneralQAEnv(GHANA), ["Accra"]).reward == 0.0


def test_aliases_are_gold_answers_too():
    [denali] = [p for p in SPEC.problems(split_of("Denali"), 1000) if p.uid.endswith("Denali-country")]
    assert {"United States", "USA"} <= set(denali.answers)
    assert GeneralQAEnv(denali).step("<answer>USA</answer>").reward == 1.0


def test_options_are_checked():
    with pytest.raises(ConfigError, match="--kinds"):
        SPEC.options({"kinds": ("film",)})
    with pytest.raises(ConfigError, match="--top-k"):
        SPEC.options({"top_k": 0})


# -- the row and the trainer --

def test_the_row_serves_other_general_qa_which_leaves_the_proxy_list(train_list_json):
    rows = {row["id"]: row for row in json.loads(train_list_json)}
    row = rows["general-qa-grpo"]
    assert "other-general-qa" in row["nodes"] and row["environment"] == "general-qa"
    assert "other-general-qa" not in NODE_PROXIES


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "general-qa"
    rc = train.main(["--impl", "general-qa-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
