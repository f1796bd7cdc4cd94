"""WebShop-style envs ("webshop" interactive, "web-step" static): generator, split, solvability, reward, fuzzing."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from reference_impls.envs import get_env, webshop

SPEC, STEP = get_env("webshop"), get_env("web-step")


def test_deterministic_and_levels():
    a = SPEC.problems("train", 12, seed=1)
    assert a == SPEC.problems("train", 12, seed=1) and a != SPEC.problems("train", 12, seed=2)
    assert {p.level for p in a} == {1, 2, 3}
    assert {p.level for p in SPEC.problems("train", 4, levels=(2,))} == {2}


def test_heldout_is_disjoint():
    train, held = SPEC.problems("train", 150), SPEC.problems("heldout", 150)
    assert not {p.instruction for p in train} & {p.instruction for p in held}
    assert not {p.uid for p in train} & {p.uid for p in held}


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_exactly_one_product_fits_and_the_expert_buys_it(split):
    for p in SPEC.problems(split, 60, seed=3):
        fits = [q for q in p.products if q.category == p.category and p.color in q.colors and p.size in q.sizes
                and q.price <= p.budget]
        assert [q.pid for q in fits] == [p.target]
        env = SPEC.make(p)
        env.reset()
        segs = SPEC.demonstration(p)
        assert segs[0][1] == f"<action>search {p.color} {p.category}</action>"
        env2 = SPEC.make(p)
        env2.reset()
        results = [env2.step(t) for role, t in segs if role == "model"]
        assert results[-1].done and results[-1].reward == 1.0 and results[-1].info["correct"]


def test_partial_reward_for_a_distractor_and_budget_of_actions():
    p = next(p for p in SPEC.problems("train", 12) if p.level == 2)
    env = SPEC.make(p)
    env.reset()
    env.step(f"<action>search {p.color} {p.category}</action>")
    over = next(q for q in p.products if q.category == p.category and q.price > p.budget)
    idx = env.site.index_of(("open", over.pid))
    env.step(f"<action>click {idx}</action>")
    env.step(f"<action>click {env.site.index_of(('color', p.color))}</action>")
    env.step(f"<action>click {env.site.index_of(('size', p.size))}</action>")
    r = env.step(f"<action>click {env.site.index_of(('buy',))}</action>")
    assert r.done and r.reward == 0.75 and not r.info["correct"]
    env = SPEC.make(p, max_tool_calls=1)
    env.reset()
    assert not env.step("<action>search mug</action>").done
    assert env.step("<action>search mug</action>").info["truncated"]


def test_errors_are_observations():
    env = SPEC.make(SPEC.problems("train", 1)[0])
    env.reset()
    assert "no element 9" in env.step("<action>click 9</action>").observation
    assert "unknown action" in env.step("<action>jump</action>").observation


def test_static_steps_score_the_expert_action():
    for sp in STEP.problems("train", 15, seed=2):
        gold = STEP.demonstration(sp)[0][1]
        env = STEP.make(sp)
        env.reset()
        assert env.step(gold).reward == 1.0
        wrong = "<action>click 99</action>" if sp.k else "<action>search zzz</action>"
        assert STEP.make(sp).step(wrong).reward == 0.0
    sp = STEP.problems("train", 1)[0]  # any query whose results hold the target counts
    assert STEP.make(sp).step(f"<action>search {sp.base.category} {sp.base.color} please</action>").reward == 1.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120), st.sampled_from(["", "<action>", "<action>click ", "<action>search "]),
       st.sampled_from(["", "</action>"]))
def test_fuzz_any_text_gives_an_observation(body, head, tail):
    p = SPEC.problems("train", 1)[0]
    env = SPEC.make(p)
    env.reset()
    r = env.step(head + body + tail)
    assert r.done or (r.observation.startswith("<page>") and r.observation.endswith("</page>"))
    sp = STEP.problems("train", 2)[1]
    assert STEP.make(sp).step(head + body + tail).done


@pytest.mark.parametrize("env", ["webshop", "web-step"])
def test_trains_two_steps_and_evaluates(env, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from reference_impls import train
    from reference_impls.measure import evaluate

    out = tmp_path / "run"
    train.main(["--env", env, "--model", "tiny", "--steps", "2", "--prompts-per-step", "2", "--group-size", "2",
                "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48", "--sft-steps", "2",
                "--sft-examples", "2", "--out", str(out)])  # two short SFT batches: the warm start runs, cheaply
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    evaluate.main(["--run", str(out), "--n", "4", "--json", "--max-new-tokens-per-turn", "16",
                   "--max-completion-tokens", "48"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 4 and 0.0 <= result["accuracy"] <= 1.0
    assert webshop.TOOL.call_open == "<action>"
