"""The negotiate env (reference_impls/envs/negotiate.py): games by level and split (disjoint), the scripted
partner's acceptance, concessions and counter-offers, the reward of hand-computed deals, Pareto optimality, bad
actions named in the reply, the action parser on hostile input, limits, and two training steps through the CLI."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_impls.envs import get_env
from reference_impls.envs.negotiate import (MIN_OPENING, SPLITS, TOTAL, Partner, Problem, best_opening,
                                            parse_action, split_of)
from reference_impls.options import ConfigError

from episode_replay import play

SPEC = get_env("negotiate")


def act(text: str) -> str:
    return f"<action>{text}</action>"


# -- games and splits --

def test_games_are_seeded_and_levels_pick_the_number_of_kinds():
    a = SPEC.problems("train", 30, seed=3)
    assert a == SPEC.problems("train", 30, seed=3) and len(a) == 30
    assert a != SPEC.problems("train", 30, seed=4)
    for level, kinds in ((1, 2), (2, 3), (3, 4)):
        assert {len(p.kinds) for p in SPEC.problems("train", 12, levels=(level,))} == {kinds}
    for p in SPEC.problems("train", 60):
        assert p.agent_value(p.counts) == TOTAL and p.worth(p.counts, p.partner_values) == TOTAL
        assert p.values != p.partner_values and all(1 <= c <= 4 for c in p.counts)
        assert p.agent_value(best_opening(p)) >= MIN_OPENING


def test_the_three_splits_hold_different_games():
    def key(p):
        return (p.kinds, p.counts, p.values, p.partner_values)

    games = {split: {key(p) for s in (0, 1) for p in SPEC.problems(split, 200, seed=s)} for split in SPLITS}
    assert all(games.values())
    assert not games["train"] & games["heldout"]
    assert not games["train"] & games["validation"]
    assert not games["validation"] & games["heldout"]
    assert all(split_of(*key(p)) == "heldout" for p in SPEC.problems("heldout", 20))
    with pytest.raises(ValueError, match="split must be one of"):
        SPEC.problems("test", 3)


@pytest.mark.parametrize("split", SPLITS)
def test_the_demonstration_closes_the_best_deal_the_partner_takes_at_once(split):
    for p in SPEC.problems(split, 30, seed=1):
        segments = SPEC.demonstrate(p)
        assert [role for role, _ in segments] == ["model"]
        result = play(SPEC.make(p), [segments[0][1]])
        assert result.done and result.info["deal"] and result.info["correct"], (p, result.info)
        assert result.reward == p.agent_value(best_opening(p)) / TOTAL >= MIN_OPENING / TOTAL
        # no split the partner accepts at once is worth more to the agent
        partner = Partner(p, SPEC.options())
        assert all(p.agent_value(s) <= result.info["agent_value"] for s in p.all_splits() if partner.accepts(s))


# -- the partner and the reward, on a hand-built game --
# 2 books, 1 hat, 3 balls. The agent values book 2, hat 6, ball 0; the partner book 3, hat 1, ball 1 (10 each).
GAME = Problem(("book", "hat", "ball"), (2, 1, 3), (2, 6, 0), (3, 1, 1), 2, "train", "hand")


def run(actions, **options):
    return play(SPEC.make(GAME, SPEC.options(options)), actions)


def test_an_accepted_proposal_pays_the_agents_value_of_its_share():
    # the agent keeps the hat and the balls: worth 6 to it; the partner keeps both books: 6 of its 10 >= 0.6 * 10
    r = run([act("propose(book=0, hat=1, ball=3)")])
    assert r.done and r.info["deal"] and r.reward == 0.6
    assert r.info["agent_value"] == 6 and r.info["partner_value"] == 6 and r.info["kept"] == "book=0, hat=1, ball=3"
    # giving the balls away costs the agent nothing (it values them 0) and is worth 3 more to the partner
    assert not r.info["correct"]
    r = run([act("propose(book=0, hat=1, ball=0)")])
    assert r.reward == 0.6 and r.info["partner_value"] == 9 and r.info["correct"]  # Pareto-optimal


def test_the_partner_rejects_names_its_favourite_counters_and_concedes():
    env = SPEC.make(GAME)
    env.reset()
    # both books and the hat leave the partner only the balls (3 < 6): rejected; its threshold drops to 5 and its
    # counter-offer takes books until it reaches 5 (both: 6)
    r = env.step(act("propose(book=2, hat=1, ball=0)"))
    assert not r.done
    assert r.observation == ("<reply>Partner: No, that leaves me too little. I care most about the book. I propose: "
                             "you get book=0, hat=1, ball=3.</reply>")
    assert env.partner.rejections == 1 and env.partner.threshold == pytest.approx(5.0)
    # after one rejection its threshold is 5: one book and the balls (3 + 3 = 6) now pass ...
    r = env.step(act("propose(book=1, hat=1, ball=0)"))
    assert r.done and r.info["deal"] and r.reward == 0.8 and r.info["partner_value"] == 6
    # ... which they would not have at first: keeping a book, the hat and a ball leaves it 3 + 2 = 5 < 6
    assert not Partner(GAME, SPEC.options()).accepts((1, 1, 1))


def test_accept_takes_the_counter_offer():
    r = run([act("propose(book=2, hat=1, ball=3)"), act("accept()")])
    assert r.done and r.info["deal"] and r.info["kept"] == "book=0, hat=1, ball=3" and r.reward == 0.6


def test_the_threshold_stops_at_the_floor():
    partner = Partner(GAME, SPEC.options({"firmness": 0.9, "concession": 0.2, "floor": 0.5}))
    thresholds = []
    for _ in range(5):
        thresholds.append(partner.threshold)
        partner.rejections += 1
    assert thresholds == pytest.approx([9.0, 7.0, 5.0, 5.0, 5.0])


def test_no_deal_earns_zero():
    greedy = act("propose(book=2, hat=1, ball=3)")
    r = run([greedy] * 4, max_turns=3)
    assert r.done and r.reward == 0.0 and not r.info["deal"] and r.info["truncated"]
    assert "all 3 turns were used; no deal" in r.info["error"]
    r = run(["Let us split it evenly."])
    assert r.done and r.reward == 0.0 and "no <action>" in r.info["error"]


# -- bad actions --

@pytest.mark.parametrize("action, named", [
    ("accept()", "there is no offer to accept yet"),
    ("propose(book=1, hat=1)", "missing: ball"),
    ("propose(book=1, book=1, hat=0, ball=0)", "book is named twice"),
    ("propose(book=3, hat=0, ball=0)", "book=3: the pool holds 2 book, so keep from 0 to 2"),
    ("propose(book=-1, hat=0, ball=0)", "keep from 0 to 2"),
    ("propose(book=1, hat=0, ball=0, lamp=1)", "'lamp' is not in the pool; the kinds are book, hat, ball"),
    ("propose(book one, hat=0, ball=0)", "propose takes kind=count pairs"),
    ("offer(book=1)", "unknown action 'offer'"),
    ("propose book=1", "unknown action 'propose book=1'"),
    ("accept(now)", "accept takes nothing"),
])
def test_a_bad_action_is_named_in_the_reply_and_spends_the_turn(action, named):
    env = SPEC.make(GAME)
    env.reset()
    r = env.step(act(action))
    assert not r.done and r.observation.startswith("<reply>error: ") and named in r.observation, r.observation
    assert r.info["tool_calls"] == 1 and env.offer is None and env.partner.rejections == 0


@pytest.mark.parametrize("text, keep", [
    ("propose(book=1, hat=0, ball=2)", (1, 0, 2)),
    ("propose(books=1, hats: 0, balls=2)", (1, 0, 2)),
    (" PROPOSE ( ball=2 , book=1, hat=0 ) ", (1, 0, 2)),
])
def test_proposals_are_read(text, keep):
    assert parse_action(text, GAME) == (("propose", keep), "")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_the_parser_never_raises_and_never_evaluates(text):
    action, error = parse_action(text, GAME)
    assert (action is None) == bool(error)
    if action is not None and action[0] == "propose":
        assert all(0 <= k <= c for k, c in zip(action[1], GAME.counts))


def test_options_are_checked():
    with pytest.raises(ConfigError, match="--floor.*above --firmness"):
        SPEC.options({"floor": 0.7, "firmness": 0.6})
    with pytest.raises(ConfigError, match="--max-turns"):
        SPEC.options({"max_turns": 0})
    with pytest.raises(ConfigError, match="levels"):
        SPEC.options({"levels": (5,)})


def test_trains_two_steps_through_the_cli(tmp_path):
    from reference_impls import train

    out = tmp_path / "negotiate"
    rc = train.main(["--impl", "negotiate-grpo", "--model", "tiny", "--steps", "2", "--prompts-per-step", "2",
                     "--group-size", "2", "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "64",
                     "--sft-steps", "1", "--sft-examples", "2", "--out", str(out)])
    assert rc in (0, None)
    steps = (out / "metrics.jsonl").read_text().splitlines()
    assert len(steps) == 2
