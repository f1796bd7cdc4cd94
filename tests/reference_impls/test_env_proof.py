"""The proof env (reference_impls/envs/proof.py): each inference rule of the kernel on formulas it accepts and
refuses, the formula parser on hostile input (it reads, never evaluates, model text), problems by level and split,
the demonstration proving its goal, bad steps named in the observation, the row on math-formal, and two training
steps through the CLI."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.proof import (MAX_FORMULA_CHARS, RULES, SPLITS, FormulaError, Problem, ProofConfig, ProofEnv,
                                        check_rule, parse_formula, parse_step, show)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("proof")
F = parse_formula


# -- the kernel: each rule accepts what it gives and refuses the rest, naming why --

ACCEPTS = [  # rule, cited lines, conclusion
    ("MP", ["p -> q", "p"], "q"),
    ("MP", ["p", "p -> q"], "q"),                         # the cited lines' order does not matter
    ("MP", ["(p & r) -> ~q", "p & r"], "~q"),
    ("MT", ["p -> q", "~q"], "~p"),
    ("MT", ["p -> ~q", "~~q"], "~p"),
    ("HS", ["p -> q", "q -> r"], "p -> r"),
    ("HS", ["q -> r", "p -> q"], "p -> r"),
    ("DS", ["p | q", "~p"], "q"),
    ("DS", ["p | q", "~q"], "p"),
    ("Conj", ["p", "q -> r"], "p & (q -> r)"),
    ("Conj", ["p", "q"], "q & p"),
    ("Simp", ["p & q"], "p"),
    ("Simp", ["p & q"], "q"),
    ("Add", ["p"], "p | (q & r)"),
    ("Add", ["p"], "s | p"),
    ("DN", ["~~p"], "p"),
    ("DN", ["p -> q"], "~~(p -> q)"),
]
REFUSES = [  # rule, cited lines, conclusion, what the refusal names
    ("MP", ["p -> q", "q"], "p", "MP needs an implication A -> B and its antecedent A"),  # affirming the consequent
    ("MP", ["p -> q", "p"], "r", "they give q, not r"),
    ("MT", ["p -> q", "~p"], "~q", "MT needs an implication A -> B and the negation ~B"),  # denying the antecedent
    ("MT", ["p -> q", "~q"], "p", "they give ~p, not p"),
    ("HS", ["p -> q", "r -> s"], "p -> s", "HS needs two implications A -> B and B -> C"),
    ("HS", ["p -> q", "q -> r"], "r -> p", "they give p -> r, not r -> p"),
    ("DS", ["p | q", "p"], "q", "DS needs a disjunction A | B and the negation of one side"),
    ("DS", ["p | q", "~p"], "p", "they give q, not p"),
    ("DS", ["p & q", "~p"], "q", "DS needs a disjunction"),
    ("Conj", ["p", "q"], "p | q", "Conj concludes a conjunction A & B; p | q is not one"),
    ("Conj", ["p", "q"], "p & r", "is their conjunction, not p & r"),
    ("Simp", ["p | q"], "p", "Simp needs a conjunction A & B; p | q is not one"),
    ("Simp", ["p & q"], "r", "r is neither side of p & q"),
    ("Add", ["p"], "p & q", "Add concludes a disjunction"),
    ("Add", ["p"], "q | r", "p is neither side of q | r"),
    ("DN", ["~p"], "p", "DN turns ~~A into A or A into ~~A"),
    ("MP", ["p -> q"], "q", "MP cites 2 lines, got 1"),
    ("Simp", ["p & q", "p"], "p", "Simp cites 1 line, got 2"),
]


@pytest.mark.parametrize("rule, lines, conclusion", ACCEPTS)
def test_each_rule_accepts_what_it_gives(rule, lines, conclusion):
    assert check_rule(rule, F(conclusion), [F(x) for x in lines]) == ""


@pytest.mark.parametrize("rule, lines, conclusion, named", REFUSES)
def test_each_rule_refuses_what_it_does_not_give_and_says_why(rule, lines, conclusion, named):
    error = check_rule(rule, F(conclusion), [F(x) for x in lines])
    assert named in error, error


def test_every_rule_is_tested_both_ways():
    assert {case[0] for case in ACCEPTS} == {case[0] for case in REFUSES} == set(RULES)


# -- formulas --

def test_precedence_and_the_printer_read_back():
    assert F("~p & q | r -> s -> t") == ("imp", ("or", ("and", ("not", ("atom", "p")), ("atom", "q")), ("atom", "r")),
                                         ("imp", ("atom", "s"), ("atom", "t")))
    for text in ("~(p & q) -> (r | ~~s)", "p -> (q -> r)", "(p -> q) -> r", "~~p", "(p | q) & r"):
        assert F(show(F(text))) == F(text)
    assert show(F("(p -> q) -> r")) == "(p -> q) -> r" and show(F("p -> q -> r")) == "p -> (q -> r)"


@pytest.mark.parametrize("text, named", [
    ("__import__('os')", "unexpected '__import__' at position 0; atoms are single lower-case letters"),
    ("p; import os", "unexpected ';' at position 1"),
    ("P -> q", "unexpected 'P' at position 0"),
    ("pq", "unexpected 'pq' at position 0"),
    ("p ->", "expected a letter, '~' or '(' at position 4, found the end of the formula"),
    ("(p & q", "expected ')' at position 6"),
    ("p q", "unexpected 'q' at position 2"),
    ("p => q", "unexpected '=' at position 2"),
    ("(" * 12 + "p" + ")" * 12, "nests deeper than 8 levels"),
    ("~" * 12 + "p", "nests deeper than 8 levels"),
    ("&".join("p" * 40), "more than 60 tokens"),
    ("p" * (MAX_FORMULA_CHARS + 1), f"at most {MAX_FORMULA_CHARS}"),
    ("  ", "the formula is empty"),
])
def test_hostile_and_malformed_formulas_are_refused_with_what_and_where(text, named):
    with pytest.raises(FormulaError) as caught:
        parse_formula(text)
    assert named in str(caught.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list("pqr~&|->() xP;_1")), max_size=40))
def test_the_parser_never_fails_but_with_a_formula_error(text):
    try:
        tree = parse_formula(text)
    except FormulaError as err:
        assert str(err)
        return
    assert parse_formula(show(tree)) == tree


# -- steps --

@pytest.mark.parametrize("text, named", [
    ("q", "a step is 'FORMULA by RULE LINES'"),
    ("q by Magic 1, 2", "unknown rule 'Magic'; the rules are MP, MT, HS, DS, Conj, Simp, Add, DN"),
    ("q by MP one, two", "the lines a step cites are numbers"),
    ("q by MP 1; 2", "the lines a step cites are numbers"),
    ("q) by MP 1, 2", "the formula does not read: unexpected ')' at position 1"),
    ("q by MP " + "1, " * 80, "at most 200"),
])
def test_a_malformed_step_is_refused_by_name(text, named):
    step, error = parse_step(text)
    assert step is None and named in error


def test_a_step_reads_its_formula_rule_and_lines():
    step, error = parse_step("  (p & q) -> r  BY mp 3 and 4 ")
    assert error == "" and step.rule == "MP" and step.refs == (3, 4) and step.formula == F("(p & q) -> r")


# -- problems and splits --

def test_problems_are_seeded_and_the_level_is_the_proof_length():
    a = SPEC.problems("train", 30, seed=3)
    assert a == SPEC.problems("train", 30, seed=3) and len(a) == 30 and a != SPEC.problems("train", 30, seed=4)
    for level in (1, 2, 3):
        assert all(p.level == level and len(p.proof) == level for p in SPEC.problems("train", 10, levels=(level,)))
    assert all(p.goal not in p.premises for p in a)


def test_the_three_splits_hold_different_problems():
    drawn = {split: {(frozenset(p.premises), p.goal) for s in (0, 1) for p in SPEC.problems(split, 150, seed=s)}
             for split in SPLITS}
    assert all(len(v) > 100 for v in drawn.values())
    assert not drawn["train"] & drawn["heldout"]
    assert not drawn["train"] & drawn["validation"]
    assert not drawn["validation"] & drawn["heldout"]
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_proves_its_goal(split):
    for p in SPEC.problems(split, 30, seed=1):
        segments = SPEC.demonstrate(p)
        model = [text for role, text in segments if role == "model"]
        assert len(model) == p.level and segments[-1][0] == "model"
        result = play(SPEC.make(p), model)
        assert result.done and result.reward == 1.0 and result.info["proved"], (p, result.info)
        assert all(text.startswith("<result>line ") for role, text in segments if role == "env")


# -- episodes --

HAND = Problem(("p -> q", "q -> r", "p"), "r", ("q by MP 1, 3", "r by MP 2, 4"), 2, "train", "hand")


def test_a_hand_proof_is_checked_line_by_line():
    env = ProofEnv(HAND)
    assert "1. p -> q  (premise)" in env.reset()[1]["content"] and "Goal: r" in env.reset()[1]["content"]
    first = env.step("<step>q by MP 1, 3</step>")
    assert not first.done and first.observation == "<result>line 4: q (MP 1, 3)</result>"
    last = env.step("<step>r by MP 2, 4</step>")
    assert last.done and last.reward == 1.0 and last.info["proved"] and last.info["lines"] == 5


def test_another_valid_proof_earns_the_reward_too():
    result = play(ProofEnv(HAND), ["<step>p -> r by HS 1, 2</step>", "<step>r by MP 4, 3</step>"])
    assert result.done and result.reward == 1.0


@pytest.mark.parametrize("step, named", [
    ("r by MP 1, 3", "MP does not give r from lines 1, 3: they give q, not r"),
    ("r by MP 2, 9", "line 9 does not exist; the proof has lines 1 to 3"),
    ("r by Guess 1", "unknown rule 'Guess'"),
    ("r &", "a step is 'FORMULA by RULE LINES'"),
    ("r & by Conj 1, 2", "the formula does not read"),
])
def test_a_bad_step_is_named_in_the_observation_and_not_added(step, named):
    env = ProofEnv(HAND)
    env.reset()
    result = env.step(f"<step>{step}</step>")
    assert not result.done and result.reward == 0.0
    assert result.observation.startswith("<result>error: ") and named in result.observation
    assert "The step was not added." in result.observation and result.info["lines"] == 3
    assert result.info["step_error"] and result.info["tool_calls"] == 1
    follow = env.step("<step>q by MP 1, 3</step>")
    assert follow.observation == "<result>line 4: q (MP 1, 3)</result>"  # the refused step took no line


def test_the_step_budget_and_a_turn_without_a_step_end_unproved():
    env = ProofEnv(HAND, ProofConfig(max_steps=1))
    env.reset()
    assert not env.step("<step>q by MP 1, 3</step>").done
    end = env.step("<step>r by MP 2, 4</step>")
    assert end.done and end.reward == 0.0 and end.info["truncated"] and "all 1 steps" in end.info["error"]
    assert play(ProofEnv(HAND), ["r, obviously"]).reward == 0.0
    answered = play(ProofEnv(HAND), ["<answer>r</answer>"])
    assert answered.done and answered.reward == 0.0 and "an answer proves nothing" in answered.info["error"]


def test_options_are_checked():
    with pytest.raises(ConfigError, match="levels"):
        SPEC.options({"levels": (4,)})
    with pytest.raises(ConfigError, match="--max-steps"):
        SPEC.options({"max_steps": 0})


# -- the row and the trainer --

def test_the_row_serves_math_formal(train_list_json):
    rows = {row["id"]: row for row in json.loads(train_list_json)}
    assert "math-formal" in rows["proof-grpo"]["nodes"] and rows["proof-grpo"]["environment"] == "proof"


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "proof"
    rc = train.main(["--impl", "proof-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
