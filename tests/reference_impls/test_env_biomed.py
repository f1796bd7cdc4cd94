"""The biomed env (reference_impls/envs/biomed.py): a synthetic knowledge base, questions of 1-3 lookups by level,
splits with no entity in common, exact-match reward, hostile lookups and answers, bad actions named, and two
training steps through the CLI."""
from __future__ import annotations

import pytest

from reference_impls.envs import get_env
from reference_impls.envs.biomed import (FAMILIES, MAX_NAME_CHARS, SPLITS, BiomedConfig, BiomedEnv, knowledge_base)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("biomed")


def names(kb):
    return {n.lower() for n in (*kb.drugs, *kb.genes, *kb.diseases, *kb.pathways)}


def test_problems_are_seeded_and_a_level_is_its_number_of_lookups():
    a = SPEC.problems("train", 24, seed=3)
    assert a == SPEC.problems("train", 24, seed=3) and a != SPEC.problems("train", 24, seed=4)
    for level in (1, 2, 3):
        chosen = SPEC.problems("train", 12, levels=(level,))
        assert {p.family for p in chosen} == set(FAMILIES[level])
        assert all(len(p.lookups) == level == p.level for p in chosen)


def test_the_knowledge_base_is_consistent():
    kb = knowledge_base("train/0/3")
    assert kb is knowledge_base("train/0/3") and kb != knowledge_base("train/0/4")
    assert len({d.target for d in kb.drugs.values()}) == len(kb.drugs)  # no two drugs share a target
    for drug in kb.drugs.values():
        assert kb.drugs[drug.partner].partner == drug.name != drug.partner  # interactions are pairs
        assert drug.target in kb.genes
    for gene in kb.genes.values():
        assert gene.disease in kb.diseases and gene.pathway in kb.pathways and 1 <= gene.chromosome <= 22


def test_the_three_splits_share_no_entity():
    seen = {split: set().union(*(names(knowledge_base(f"{split}/{s}/{k}")) for s in (0, 1) for k in range(16)))
            for split in SPLITS}
    assert not seen["train"] & seen["heldout"]
    assert not seen["train"] & seen["validation"]
    assert not seen["validation"] & seen["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_solves_its_problem(split):
    for p in SPEC.problems(split, 24, seed=1):
        segments = SPEC.demonstrate(p)
        model = [text for role, text in segments if role == "model"]
        assert len(model) == p.level + 1
        result = play(SPEC.make(p), model)
        assert result.done and result.reward == 1.0 and result.info["correct"], (p, result.info)
        assert all(not text.startswith("<result>error") for role, text in segments if role == "env")


def _problem(family):
    return next(p for p in SPEC.problems("train", 24, seed=0) if p.family == family)


def test_answers_are_matched_after_normalisation_only():
    p = _problem("partner_disease")
    gold = p.answers[0]
    assert play(SPEC.make(p), [f"<answer>  The {gold.upper()}. </answer>"]).reward == 1.0
    assert play(SPEC.make(p), [f"<answer>{gold} or something else</answer>"]).reward == 0.0
    kb = knowledge_base(p.kb_key)
    wrong = next(d for d in kb.diseases if d != gold)
    assert play(SPEC.make(p), [f"<answer>{wrong}</answer>"]).reward == 0.0
    chromosome = _problem("gene_chromosome")
    number = chromosome.answers[0]
    assert play(SPEC.make(chromosome), [f"<answer>chromosome {number}</answer>"]).reward == 1.0
    assert play(SPEC.make(chromosome), [f"<answer>{number}</answer>"]).reward == 1.0
    empty = play(SPEC.make(p), ["<answer> </answer>"])
    assert empty.reward == 0.0 and empty.info["error"] == "the answer is empty"


def test_a_lookup_returns_the_entry_whatever_the_case_and_spacing():
    p = _problem("drug_target")
    drug = knowledge_base(p.kb_key).drugs[p.lookups[0]]
    env = SPEC.make(p)
    env.reset()
    text = env.step(f"<tool>lookup   {drug.name.upper()} </tool>").observation
    assert text == (f"<result>drug {drug.name}: targets gene {drug.target}; interacts with drug {drug.partner}; "
                    f"class {drug.drug_class}</result>")


@pytest.mark.parametrize("command, named", [
    ("lookup Aspirin", "no entry named 'Aspirin'"),
    ("lookup", "lookup needs a name"),
    ("search Velronib", "unknown command 'search'; use lookup NAME"),
    ("", "unknown command ''"),
    ("lookup " + "A" * (MAX_NAME_CHARS + 1), f"at most {MAX_NAME_CHARS} characters"),
    ("lookup '; DROP TABLE drugs; --", "no entry named"),
    ("lookup __import__('os')", "no entry named"),
])
def test_a_bad_lookup_is_named_in_the_observation_and_spends_the_call(command, named):
    env = SPEC.make(_problem("drug_target"))
    env.reset()
    result = env.step(f"<tool>{command}</tool>")
    assert not result.done and result.observation.startswith("<result>error: ") and named in result.observation
    assert result.info["tool_calls"] == 1


def test_the_lookup_budget_ends_the_episode_and_says_so():
    p = _problem("partner_disease")
    env = BiomedEnv(p, BiomedConfig(max_lookups=1))
    env.reset()
    assert not env.step(f"<tool>lookup {p.lookups[0]}</tool>").done
    end = env.step(f"<tool>lookup {p.lookups[1]}</tool>")
    assert end.done and end.reward == 0.0 and end.info["truncated"] and "all 1 lookups" in end.info["error"]


def test_a_turn_without_a_tag_ends_with_zero():
    p = _problem("drug_target")
    result = play(SPEC.make(p), [f"the answer is {p.answers[0]}"])
    assert result.done and result.reward == 0.0 and result.info["answer"] is None


def test_options_are_checked():
    with pytest.raises(ConfigError, match="max_lookups|max-lookups"):
        SPEC.options({"max_lookups": -1})
    with pytest.raises(ConfigError, match="levels"):
        SPEC.options({"levels": (4,)})


def test_the_prompt_says_the_data_are_synthetic():
    messages = SPEC.make(_problem("drug_target")).reset()
    assert "synthetic" in messages[0]["content"]


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "biomed"
    rc = train.main(["--impl", "biomed-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
