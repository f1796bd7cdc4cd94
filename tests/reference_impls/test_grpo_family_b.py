"""GRPO family variants, part b (issue 19): each objective on tiny tensors against hand arithmetic, masked
tokens get zero gradient, the collect hooks' layouts, and two CLI training steps per implementation."""
import json
import math
import random
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.grpo import chord, dars, ghpo, luffy, papo, skywork, starpo
from reference_impls.algorithm import RolloutBatch
from reference_impls.envs import get_env
from reference_impls.options import ConfigError, build
from reference_impls.rollout import Sample


def cfg_of(module, **values):
    return build(module.Config, values, "test")


def _fake_ctx(task=None, group_size=4):
    train = SimpleNamespace(group_size=group_size, max_completion_tokens=48, temperature=1.0, share_prompts=False,
                            micro_batch_size=8, seed=0, prompts_per_step=2)
    return SimpleNamespace(tokenizer=SimpleNamespace(pad_token_id=0), device=torch.device("cpu"), ref=None,
                           train=train, task=task, policy=None, step=0, rank=0, world=1,
                           rollout_config=SimpleNamespace(group_size=group_size, env_config=None))


# ---- CHORD ----------------------------------------------------------------------------------------------
def test_chord_mu_schedule_by_hand():
    # warm-up 2 steps to 0.5, then cosine over 4 steps to 0.1
    mu = [chord.mu_schedule(s, 0.5, 0.1, 2, 4) for s in range(8)]
    expected = [0.25, 0.5, 0.5, 0.1 + 0.4 * 0.5 * (1 + math.cos(math.pi / 4)), 0.3,
                0.1 + 0.4 * 0.5 * (1 + math.cos(3 * math.pi / 4)), 0.1, 0.1]
    assert mu == pytest.approx(expected)
    assert chord.mu_schedule(100, 0.5, 0.1, 0, 0) == 0.5  # no decay: stays at the peak


@pytest.mark.parametrize("weighting", ["none", "phi"])
def test_chord_sft_loss_and_gradient_by_hand(weighting):
    p = torch.tensor([[0.5, 0.25, 0.9]], dtype=torch.float64)
    logps = p.log().requires_grad_()
    mask = torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    loss = chord.sft_loss(logps, mask, weighting)
    # phi = p(1-p): 0.25 for p=0.5, 0.09 for p=0.9; masked token excluded; mean over 2 model tokens
    w = [1.0, 1.0] if weighting == "none" else [0.25, 0.09]
    assert float(loss) == pytest.approx(-(w[0] * math.log(0.5) + w[1] * math.log(0.9)) / 2)
    loss.backward()
    assert logps.grad[0].tolist() == pytest.approx([-w[0] / 2, 0.0, -w[1] / 2])  # phi is a weight, no gradient


def test_chord_scales_grpo_loss_by_one_minus_mu():
    algo = chord.CHORD(SimpleNamespace(config=cfg_of(chord, mu_peak=0.4, mu_valley=0.4, mu_decay_steps=0)))
    ctx = _fake_ctx()
    g = torch.Generator().manual_seed(0)
    logps, old = -torch.rand(3, 4, generator=g), -torch.rand(3, 4, generator=g)
    adv, mask = torch.tensor([1.0, -0.5, 0.2]), torch.ones(3, 4)
    from reference_impls.algorithms.grpo.grpo import GRPO

    base, _ = GRPO.loss_fn(algo, ctx, None)(logps, old, adv, mask)
    mixed, _ = algo.loss_fn(ctx, None)(logps, old, adv, mask)
    assert float(mixed) == pytest.approx(0.6 * float(base))


def test_chord_rejects_valley_above_peak():
    with pytest.raises(ConfigError):
        chord.CHORD.check(cfg_of(chord, mu_peak=0.1, mu_valley=0.2), SimpleNamespace(group_size=4), get_env("calculator"))


# ---- LUFFY ----------------------------------------------------------------------------------------------
def test_luffy_loss_by_hand_and_masked_gradient():
    cfg = cfg_of(luffy, loss_type="dapo", shaping_gamma=0.1)
    logps = torch.tensor([[math.log(0.5), math.log(0.45)], [math.log(0.2), math.log(0.6)]],
                         dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[math.log(0.5), math.log(0.5)], [0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    adv = torch.tensor([1.0, -0.5], dtype=torch.float64)
    off = torch.tensor([False, True])
    loss, _ = luffy.luffy_loss(logps, old, adv, mask, cfg, off_policy=off)
    # on row: ratios 1 and 0.9 (inside the clip range), A = 1 -> token losses -1, -0.9
    # off row: f(0.2) = 0.2 / 0.3, A = -0.5 -> +1/3; its second token is masked; token mean over 3 tokens
    assert float(loss) == pytest.approx((-1.0 - 0.9 + (0.2 / 0.3) * 0.5) / 3)
    loss.backward()
    # d/dlogp [-A f(e^logp)] = -A * gamma * p / (p + gamma)^2 = 0.5 * 0.1 * 0.2 / 0.09
    assert float(logps.grad[1, 0]) == pytest.approx(0.5 * 0.1 * 0.2 / 0.09 / 3)
    assert float(logps.grad[1, 1]) == 0.0
    assert logps.grad[0].tolist() == pytest.approx([-1.0 / 3, -0.9 / 3])


def test_luffy_off_policy_tokens_are_never_clipped():
    cfg = cfg_of(luffy, loss_type="dapo")
    logps = torch.tensor([[math.log(0.9)]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[math.log(0.1)]], dtype=torch.float64)  # on-policy this ratio (9) would be clipped
    mask, adv = torch.ones(1, 1, dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    on, _ = luffy.luffy_loss(logps, old, adv, mask, cfg, off_policy=torch.tensor([False]))
    on.backward()
    assert float(logps.grad) == 0.0  # clipped: no gradient
    logps.grad = None
    off, _ = luffy.luffy_loss(logps, old, adv, mask, cfg, off_policy=torch.tensor([True]))
    off.backward()
    assert float(off) == pytest.approx(-0.9 / 1.0) and float(logps.grad) != 0.0


def test_luffy_demonstration_is_a_scored_rollout_sample(tiny):
    _, tok = tiny
    task = get_env("calculator")
    problem = task.problems("train", n=1, seed=3)[0]
    demo = luffy.demonstration_with_reward(tok, task, problem)
    assert demo.reward == 1.0 and demo.info["correct"] and demo.info["off_policy"]
    assert len(demo.loss_mask) == len(demo.completion_ids) == len(demo.old_logprobs)
    # model segments are trained on, env results are masked
    model_text = tok.decode([t for t, m in zip(demo.completion_ids, demo.loss_mask) if m])
    assert "<calc>" in model_text and "<result>" not in model_text


def test_luffy_check_leaves_an_on_policy_rollout():
    with pytest.raises(ConfigError):
        luffy.LUFFY.check(cfg_of(luffy, off_policy_per_group=4), SimpleNamespace(group_size=4, max_completion_tokens=48), get_env("calculator"))


# ---- DARS -----------------------------------------------------------------------------------------------
def test_dars_extra_counts_by_hand():
    # G = 4, the authors' schedules (a = 0 read as 1/8); a cap of 64 never binds here
    acc = [0.0, 0.25, 0.5, 1.0]
    # equal: ceil(4 (1 / (4 a (1 - a)) - 1)): a = 1/8 -> ceil(36/7) = 6, a = 1/4 -> ceil(4/3) = 2
    assert dars.extra_counts(acc, "equal", 4, 64) == [6, 2, 0, 0]
    # hardness: ceil(4 (1 / (2a) - 1)): a = 1/8 -> 12, a = 1/4 -> 4
    assert dars.extra_counts(acc, "hardness", 4, 64) == [12, 4, 0, 0]
    assert dars.extra_counts(acc, "hardness", 4, 10) == [6, 4, 0, 0]  # capped at N_max - G


def test_dars_advantages_per_group_of_any_size():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    groups = [0, 0, 1, 1, 1, 2, 2]
    a = dars.grouped_advantages(rewards, groups)
    # group 0: mean 0.5, Bessel std sqrt(0.5); group 1: mean 2/3, std sqrt(((4/9) + 2 (1/9)) / 2) = sqrt(1/3)
    s0, s1 = math.sqrt(0.5), math.sqrt(1 / 3)
    expected = [0.5 / (s0 + 1e-4), -0.5 / (s0 + 1e-4), (-2 / 3) / (s1 + 1e-4), (1 / 3) / (s1 + 1e-4),
                (1 / 3) / (s1 + 1e-4), 0.0, 0.0]
    assert a.tolist() == pytest.approx(expected, rel=1e-5)


def _fake_rollout(reward_of):
    """A rollout stand-in: builds each problem's env (so prompt wrappers run) and scores with reward_of."""
    def rollout(model, tokenizer, task, problems, config):
        out = []
        for g, pr in enumerate(problems):
            for _ in range(config.group_size):
                user = task.make(pr).reset()[-1]["content"]
                out.append(Sample(prompt_ids=[1, 2, len(user)], completion_ids=[5, 6], loss_mask=[1, 1],
                                  old_logprobs=[-1.0, -1.0], reward=reward_of(pr, user), done=True, group=g,
                                  info={"user": user}))
        return out, {"rollout_s": 0.0, "generated_tokens": 2 * len(out)}
    return rollout


def test_dars_collect_tops_up_hard_groups(monkeypatch):
    import reference_impls.rollout as rollout_module

    task = get_env("calculator")
    problems = list(task.problems("train", n=2, seed=0))
    hard = problems[0]
    monkeypatch.setattr(rollout_module, "rollout", _fake_rollout(lambda pr, user: 0.0 if pr == hard else 1.0))
    # accuracy 0 counts as 1/(2G) = 1/8: equal treatment asks ceil(4 (16/7 - 1)) = 6 extra, capped at 7 - 4 = 3
    algo = dars.DARS(SimpleNamespace(config=cfg_of(dars, schedule="equal", max_rollouts=7)))
    ctx = _fake_ctx(task)
    ctx.rollout_config = rollout_module.RolloutConfig(group_size=4)
    batch, stats = algo.collect(ctx, problems)
    assert [s.group for s in batch.samples] == [0] * 7 + [1] * 4  # 4 + 3 extra for the hard one
    assert stats["generated_tokens"] == 2 * 11
    adv, keep = algo.advantages(ctx, batch)
    assert adv.abs().sum() == 0 and not keep.any()  # both groups constant here: the authors' filter drops both


# ---- GHPO -----------------------------------------------------------------------------------------------
def test_ghpo_hint_is_a_prefix_of_the_demonstration_without_the_answer():
    task = get_env("calculator")
    problem = next(p for p in task.problems("train", n=50, seed=0) if len(p.steps) >= 2)
    segments = task.demonstration(problem)  # calc, result, calc, result, ..., answer
    body = len(segments) - 1
    assert ghpo.hint_text(segments, 0.25) == "".join(t for _, t in segments[:max(1, body // 4)])
    assert ghpo.hint_text(segments, 1.0) == "".join(t for _, t in segments[:-1])
    assert "<answer>" not in ghpo.hint_text(segments, 1.0)
    assert ghpo.hint_text(segments, 0.0) == ""


def test_ghpo_rerolls_only_failed_groups_with_growing_hints(monkeypatch):
    import reference_impls.rollout as rollout_module

    task = get_env("calculator")
    problems = [p for p in task.problems("train", n=50, seed=0) if len(p.steps) >= 2][:2]
    easy = problems[1]
    lengths = []

    def reward_of(pr, user):  # the easy problem is solved; the other only with at least half a solution shown
        pr = getattr(pr, "problem", pr)  # hinted rollouts get HintedProblems
        if ghpo.HINT_INTRO in user:
            hint = user.split(ghpo.HINT_INTRO)[1]
            lengths.append(len(hint))
            return 1.0 if len(hint) >= len(ghpo.hint_text(task.demonstration(pr), 0.5)) else 0.0
        return 1.0 if pr == easy else 0.0

    monkeypatch.setattr(rollout_module, "rollout", _fake_rollout(reward_of))
    algo = ghpo.GHPO(SimpleNamespace(config=cfg_of(ghpo)))
    ctx = _fake_ctx(task)
    ctx.rollout_config = rollout_module.RolloutConfig(group_size=4)
    batch, _ = algo.collect(ctx, problems)
    first, second = batch.samples[:4], batch.samples[4:]
    assert all(s.info["hint_ratio"] == 0.5 and s.reward == 1.0 for s in first)  # stage 1 (0.25) failed, 0.5 worked
    assert all("hint_ratio" not in s.info and ghpo.HINT_INTRO not in s.info["user"] for s in second)
    assert lengths == sorted(lengths) and algo.hinted_frac == 0.5


# ---- StarPO-S -------------------------------------------------------------------------------------------
def test_starpo_keeps_the_highest_variance_groups():
    rewards = torch.tensor([1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0])  # G = 3, P = 4
    # stds: g0 = g1 = g2 = g3 = sqrt(1/3) except none are constant -> ties keep earlier groups
    keep = starpo.variance_filter(rewards, 3, 0.5)
    assert keep.tolist() == [True] * 6 + [False] * 6
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0])  # G = 4, P = 3
    # group 0 constant (std 0), group 1 std 0.5, group 2 std sqrt(1/3) = 0.577 -> top 1 of 3 (0.25 -> ceil 0.75 = 1)
    assert starpo.variance_filter(rewards, 4, 0.25).tolist() == [False] * 8 + [True] * 4
    assert starpo.variance_filter(rewards, 4, 1.0).all()


def test_starpo_defaults_are_starpo_s():
    cfg = cfg_of(starpo)
    assert cfg.epsilon_high == 0.28 and cfg.epsilon_low == 0.2 and cfg.beta == 0.0 and cfg.keep_fraction == 0.25


# ---- Skywork R1V2 selective sample buffer ---------------------------------------------------------------
def _sample(reward, ids):
    return Sample(prompt_ids=[1, 2], completion_ids=ids, loss_mask=[1] * len(ids), old_logprobs=[-0.5] * len(ids),
                  reward=reward, done=True)


def test_skywork_buffer_replaces_constant_groups_and_round_trips(monkeypatch):
    captured = {}

    def fake_update(ctx, batch, advantages, keep, loss_fn, num_iterations):
        from reference_impls.algorithm import Metrics

        captured.update(batch=batch, advantages=advantages, keep=keep)
        return Metrics()

    monkeypatch.setattr(skywork, "policy_gradient_update", fake_update)
    monkeypatch.setattr(skywork, "batch_from_samples", lambda ctx, samples, G: SimpleNamespace(samples=samples))
    algo = skywork.SkyworkSSB(SimpleNamespace(config=cfg_of(skywork, buffer_size=3)))
    ctx = _fake_ctx(group_size=2)

    def batch_of(samples):
        return RolloutBatch(samples=samples, rewards=torch.tensor([s.reward for s in samples]),
                            lengths=torch.tensor([2.0] * len(samples)), full={}, ref_logps=None, group_size=2)

    # step 0: group 0 has signal (A = +-1/(sqrt(.5)+1e-4)), group 1 is constant and the buffer is empty
    algo.update(ctx, batch_of([_sample(1.0, [7]), _sample(0.0, [8]), _sample(1.0, [9]), _sample(1.0, [10])]))
    assert [e["completion_ids"] for e in algo.buffer] == [[7], [8]]
    assert algo.buffer[0]["advantage"] == pytest.approx(0.5 / (math.sqrt(0.5) + 1e-4))
    # step 1: group 0 constant -> its 2 places go to the 2 buffered samples, with their stored advantages
    stored = {e["completion_ids"][0]: e["advantage"] for e in algo.buffer}
    ctx.step = 1
    algo.update(ctx, batch_of([_sample(0.0, [11]), _sample(0.0, [12]), _sample(1.0, [13]), _sample(0.0, [14])]))
    ids = [s.completion_ids for s in captured["batch"].samples]
    assert ids[:2] == [[13], [14]] and sorted(ids[2:]) == [[7], [8]]
    assert captured["advantages"][2:].tolist() == pytest.approx([stored[i[0]] for i in ids[2:]])
    assert captured["keep"].all()
    assert len(algo.buffer) == 3  # newest 3 kept: [8], [13], [14]
    state = json.loads(json.dumps(algo.state_dict()))
    other = skywork.SkyworkSSB(SimpleNamespace(config=cfg_of(skywork)))
    other.load_state_dict(state)
    assert other.buffer == algo.buffer and [e["completion_ids"] for e in other.buffer] == [[8], [13], [14]]


def test_skywork_draw_prefers_large_advantages():
    import random

    buffer = [{"advantage": 0.0}, {"advantage": 5.0}, {"advantage": -0.0}]
    assert skywork.draw_by_advantage(buffer, 1, random.Random(0)) == [1]  # zero-|A| entries are never drawn first


# ---- PAPO -----------------------------------------------------------------------------------------------
def test_papo_masks_the_numbers():
    assert papo.mask_numbers("Tom has 12 apples and buys 7.5 more.") == "Tom has __ apples and buys _._ more."


def test_papo_perception_kl_by_hand_and_gradient():
    full = torch.tensor([[math.log(0.5), math.log(0.2)]], dtype=torch.float64, requires_grad=True)
    masked = torch.tensor([[math.log(0.25), math.log(0.9)]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    kl = papo.perception_kl(full, masked, mask)
    # x = pi_mask / pi_full = 0.5 on the kept token: k3 = x - log x - 1
    assert kl.tolist()[0] == pytest.approx([0.5 - math.log(0.5) - 1, 0.0])
    kl.sum().backward()
    # d k3 / d masked = x - 1 = -0.5; d k3 / d full = 1 - x = 0.5; masked token: 0 on both
    assert masked.grad[0].tolist() == pytest.approx([-0.5, 0.0])
    assert full.grad[0].tolist() == pytest.approx([0.5, 0.0])


# ---- every implementation trains two steps through the CLI ----------------------------------------------
PART_B = ["calculator-chord", "calculator-luffy", "calculator-dars", "calculator-ghpo", "calculator-starpo",
          "calculator-treepo", "calculator-arpo",
          "calculator-skywork-r1v2", "calculator-papo",
          "calculator-aspo"]  # issue 19: ASPO


@pytest.mark.parametrize("impl", PART_B)
def test_cli_two_steps(tmp_path, impl):
    from reference_impls.train import main

    rc = main(["--impl", impl, "--model", "tiny", "--steps", "2", "--out", str(tmp_path / "run"), "--overwrite",
               "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "16",
               "--max-completion-tokens", "48"])
    assert rc == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)


# ---- TreePO / ARPO: branched rollouts keep the rollout's guarantees ----------------------------------
def _branching_ctx(tiny, group_size=4):
    from reference_impls.rollout import RolloutConfig
    from scripted_policies import nudged_tiny

    model, tok = nudged_tiny(tiny[0], tiny[1], ("<calc>7+8</calc>", "<calc>12*3</calc>")), tiny[1]  # calls the tool
    ctx = _fake_ctx(get_env("calculator"), group_size)
    ctx.policy = ctx.model = model
    ctx.tokenizer = tok
    ctx.train.max_completion_tokens = 96
    ctx.rollout_config = RolloutConfig(group_size=group_size, max_new_tokens_per_turn=16, max_completion_tokens=96)
    return ctx


def _assert_branches_match_fresh_scoring(ctx, batch, parents_of):
    from reference_impls.common import collate, completion_logprobs

    branched = [s for s in batch.samples if "branch_at" in s.info]
    assert branched, "no branch was made: the test policy must call the tool"
    for s in branched:
        parent, cut = parents_of(s), s.info["branch_at"]
        assert 0 < cut < len(s.completion_ids) and s.loss_mask[cut] == 1 and s.loss_mask[cut - 1] == 0
        assert s.completion_ids[:cut] == parent.completion_ids[:cut]
        assert s.loss_mask[:cut] == parent.loss_mask[:cut] and s.old_logprobs[:cut] == parent.old_logprobs[:cut]
        assert len(s.loss_mask) == len(s.completion_ids) == len(s.old_logprobs)
    # every env run of a branch is the tool's answer (loss mask 0), every model run is the policy's
    tok = ctx.tokenizer
    for s in branched:
        for start, end in _runs(s.loss_mask, 0):
            assert tok.decode(s.completion_ids[start:end]).startswith("<result>")
    # old log-probs = a fresh forward over the same tokens, on every model token (prefix and continuation)
    with torch.no_grad():
        full = collate(branched, tok.pad_token_id)
        fresh, _ = completion_logprobs(ctx.policy, full, ctx.train.temperature)
    mask = full["loss_mask"]
    assert float(((fresh - full["old_logprobs"]).abs() * mask).max()) < 1e-4


def _runs(mask, value):
    out, start = [], None
    for t, m in enumerate(list(mask) + [1 - value]):
        if m == value and start is None:
            start = t
        elif m != value and start is not None:
            out.append((start, t))
            start = None
    return out


def test_treepo_tree_groups_share_prefixes_with_exact_old_logprobs(tiny):
    from reference_impls.algorithms.grpo import treepo

    ctx = _branching_ctx(tiny)
    torch.manual_seed(0)
    problems = list(get_env("calculator").problems("train", n=3, seed=2))
    algo = treepo.TreePO(SimpleNamespace(config=cfg_of(treepo, branch_factor=2)))
    batch, _ = algo.collect(ctx, problems)
    assert [s.group for s in batch.samples] == [g for g in range(3) for _ in range(4)]
    roots = {s.info["subtree"]: s for s in batch.samples if "branch_at" not in s.info and s.info["subtree"] is not None}
    _assert_branches_match_fresh_scoring(ctx, batch, lambda s: roots[s.info["subtree"]])


def test_treepo_advantages_by_hand():
    from reference_impls.algorithms.grpo import treepo

    # one group of 4: subtree 0 = leaves 0, 1 (rewards 1, 0); subtree 1 = leaves 2, 3 (rewards 1, 1)
    adv = treepo.tree_advantages([1.0, 0.0, 1.0, 1.0], [0, 0, 0, 0], [0, 0, 1, 1], scale=False)
    # root: mean 0.75 -> 0.25, -0.75, 0.25, 0.25; subtree 0: +-0.5; subtree 1: constant -> 0
    assert adv == pytest.approx([(0.25 + 0.5) / 2, (-0.75 - 0.5) / 2, 0.125, 0.125])
    assert treepo.tree_advantages([1.0, 0.0], [0, 0], [None, None], scale=False) == pytest.approx([0.5, -0.5])


def test_treepo_eq5_whitens_once_over_the_batch_tokens_by_hand():
    """Eq. 5 as the authors' code: node-centred rewards averaged (the test above), then one whitening over the
    batch's model tokens (leaf i counted once per token), not one std per subtree."""
    from reference_impls.algorithms.grpo import treepo

    # group 0 as above (a = 0.375, -0.625, 0.125, 0.125) with 2, 1, 1, 2 model tokens; group 1: one leaf right
    # of two (no subtrees): a = 2/3, -1/3, -1/3, each with 1 token
    rewards, groups = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0], [0, 0, 0, 0, 1, 1, 1]
    subtrees = [0, 0, 1, 1, None, None, None]
    tokens = torch.tensor([2, 1, 1, 2, 1, 1, 1])
    a = [0.375, -0.625, 0.125, 0.125, 2 / 3, -1 / 3, -1 / 3]
    per_token = [v for v, n in zip(a, tokens.tolist()) for _ in range(n)]  # 9 tokens
    mean = sum(per_token) / 9
    std = math.sqrt(sum((v - mean) ** 2 for v in per_token) / 8 + 1e-8)
    adv = treepo.eq5_advantages(rewards, groups, subtrees, tokens)
    assert adv.tolist() == pytest.approx([(v - mean) / std for v in a], rel=1e-6)
    # one global scale: the ratio of two leaves' advantages is the ratio of their centred values (after the shift)
    assert float(adv[0] - adv[2]) / float(adv[4] - adv[5]) == pytest.approx((0.375 - 0.125) / 1.0)
    # the per-subtree-std variant differs on the same tree
    per_subtree = treepo.tree_advantages(rewards, groups, subtrees, scale=True)
    assert per_subtree[0] == pytest.approx((0.25 / (math.sqrt(0.25) + 1e-4) + 0.5 / (math.sqrt(0.5) + 1e-4)) / 2)
    assert per_subtree != pytest.approx(adv.tolist(), rel=1e-3)
    with pytest.raises(ValueError, match="at least 2 model tokens"):
        treepo.token_whiten(torch.tensor([1.0]), torch.tensor([1]))


def test_arpo_branches_after_tool_results_with_exact_old_logprobs(tiny):
    from reference_impls.algorithms.grpo import arpo

    ctx = _branching_ctx(tiny)
    torch.manual_seed(0)
    problems = list(get_env("calculator").problems("train", n=3, seed=2))
    # threshold below alpha: every tool-result boundary branches while the budget lasts
    algo = arpo.ARPO(SimpleNamespace(config=cfg_of(arpo, branch_alpha=1.0, branch_rule="threshold", branch_threshold=0.0,
                                                    attribution="hard")))
    batch, _ = algo.collect(ctx, problems)
    assert [s.group for s in batch.samples] == [g for g in range(3) for _ in range(4)]
    nodes = {s.info["node"]: s for s in batch.samples if "node" in s.info}
    _assert_branches_match_fresh_scoring(ctx, batch, lambda s: nodes[s.info["parent"]])


def test_arpo_branch_score_and_hard_attribution_by_hand():
    from reference_impls.algorithms.grpo import arpo

    entropy = [1.0, 3.0, 9.0, 9.0, 2.0, 4.0, 0.0]
    runs = [(0, 2), (4, 6)]  # first turn tokens 0-1 (H0 = 2), tool result 2-3, second turn 4-5 (H = 3)
    score = arpo.branch_score(entropy, runs, k=2, vocab=math.e ** 2, alpha=0.1, beta=2.0)
    assert score == pytest.approx([0.1 + 2.0 * (3.0 - 2.0) / 2.0])
    parent = Sample(prompt_ids=[1], completion_ids=[5] * 6, info={"node": 0})
    child_a = Sample(prompt_ids=[1], completion_ids=[5] * 6, info={"parent": 0, "branch_at": 4})
    child_b = Sample(prompt_ids=[1], completion_ids=[5] * 6, info={"parent": 0, "branch_at": 2})
    other = Sample(prompt_ids=[1], completion_ids=[5] * 6)
    adv = arpo.hard_token_advantages([parent, child_a, child_b, other], [1.0, -1.0, 0.5, 2.0], 6)
    # t < 2: shared by all three (mean 1/6); 2 <= t < 4: parent and child_a (mean 0); t >= 4: own
    assert adv[0].tolist() == pytest.approx([1 / 6, 1 / 6, 0.0, 0.0, 1.0, 1.0])
    assert adv[1].tolist() == pytest.approx([1 / 6, 1 / 6, 0.0, 0.0, -1.0, -1.0])
    assert adv[2].tolist() == pytest.approx([1 / 6, 1 / 6, 0.5, 0.5, 0.5, 0.5])
    assert adv[3].tolist() == pytest.approx([2.0] * 6)


def test_arpo_branches_at_random_as_the_authors_rollout():
    """The authors branch when clip(u - w dH, 0, 1) <= p (u uniform; p = 0.5, w = 0.2 in their scripts): with
    probability clip(p + w dH, 0, 1). Our random rule with alpha = p, beta = w decides the same on the same u'
    (u = u' - ... is a shift of the same draw: u < alpha + beta dH  <=>  u - beta dH < alpha)."""
    from reference_impls.algorithms.grpo import arpo

    cfg = cfg_of(arpo)
    assert (cfg.branch_rule, cfg.branch_alpha, cfg.branch_beta) == ("random", 0.5, 0.2)
    rng = random.Random(0)
    for _ in range(2000):
        dH, u = rng.uniform(-3, 3), rng.random()
        authors = min(max(u - 0.2 * dH, 0.0), 1.0) <= 0.5
        ours = arpo.branch_decisions([0.5 + 0.2 * dH], "random", 0.5, [u])[0]
        assert ours == authors or abs(u - (0.5 + 0.2 * dH)) < 1e-12
    # the branching rate is clip(alpha + beta dH, 0, 1); the threshold rule is deterministic
    draws = [rng.random() for _ in range(20000)]
    rate = sum(arpo.branch_decisions([0.7] * len(draws), "random", 0.5, draws)) / len(draws)
    assert rate == pytest.approx(0.7, abs=0.02)
    assert arpo.branch_decisions([0.4, 0.6], "threshold", 0.5, [0.0, 1.0]) == [False, True]
    assert arpo.branch_decisions([-0.5, 1.5], "random", 0.5, [0.0, 0.999]) == [False, True]


def test_token_advantage_loss_by_hand_and_masked_gradient():
    from reference_impls.algorithms.grpo import arpo
    from reference_impls.algorithms.grpo.branching import token_advantage_loss

    cfg = cfg_of(arpo, loss_type="dapo")
    logps = torch.zeros(1, 3, dtype=torch.float64, requires_grad=True)  # ratios 1: loss = -mean(A) over tokens
    old, mask = torch.zeros(1, 3, dtype=torch.float64), torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64)
    loss, _ = token_advantage_loss(logps, old, torch.tensor([9.0]), mask, cfg,
                                   token_advantages=torch.tensor([[0.5, 7.0, -2.0]]))
    assert float(loss) == pytest.approx(-(0.5 - 2.0) / 2)
    loss.backward()
    assert logps.grad[0].tolist() == pytest.approx([-0.25, 0.0, 1.0])
