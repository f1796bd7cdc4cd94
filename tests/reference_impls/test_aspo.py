"""ASPO (issue 19, arXiv 2508.19201 eq. 2): shaped advantages by hand (clip binding and not binding, no sign
flip, all-correct groups untouched), the first tool call's position in model tokens, zero gradient on masked
tokens, and a clear error for an environment without a tool. The CLI run is in test_grpo_family_b.py."""
from types import SimpleNamespace

import pytest
import torch

from reference_impls.algorithms.grpo import grpo
from reference_impls.envs import calculator, get_env
from reference_impls.algorithms.grpo import aspo
from reference_impls.models import load_tokenizer
from reference_impls.options import ConfigError

# one group of 4: answers 0 and 1 correct and calling the tool at model tokens 2 and 10 of 20 and 40,
# answer 2 correct without a call, answer 3 wrong (A^correct given directly)
A = torch.tensor([0.5, 0.5, 0.5, -1.5])
ELIGIBLE = torch.tensor([True, True, False, False])
POSITIONS = torch.tensor([2.0, 10.0, 0.0, 7.0])
LENGTHS = torch.tensor([20.0, 40.0, 5.0, 9.0])


def test_shaping_by_hand_clip_not_binding():
    # mean(p) = 6, mean(L) = 30 over the eligible two; delta = -2: bias = -2 * (2 - 6) / 30 = +0.2667 and -0.2667,
    # inside +-k*A = +-0.35 -> A = [0.7667, 0.2333]; the call-free correct answer and the wrong one are unchanged
    shaped = aspo.aspo_advantages(A, ELIGIBLE, POSITIONS, LENGTHS, 4, delta=-2.0, k=0.7)
    assert shaped.tolist() == pytest.approx([0.5 + 8 / 30, 0.5 - 8 / 30, 0.5, -1.5])


def test_shaping_by_hand_clip_binds_and_no_sign_flips():
    # delta = -5: raw bias +-0.6667 exceeds k*A = 0.35 -> clipped to +-0.35: A = [0.85, 0.15], still positive
    shaped = aspo.aspo_advantages(A, ELIGIBLE, POSITIONS, LENGTHS, 4, delta=-5.0, k=0.7)
    assert shaped.tolist() == pytest.approx([0.85, 0.15, 0.5, -1.5])
    # a positive delta rewards the later call instead
    later = aspo.aspo_advantages(A, ELIGIBLE, POSITIONS, LENGTHS, 4, delta=5.0, k=0.7)
    assert later.tolist() == pytest.approx([0.15, 0.85, 0.5, -1.5])


def test_sign_never_flips_for_k_up_to_one():
    gen = torch.Generator().manual_seed(0)
    for k in (0.0, 0.3, 0.9, 1.0):
        base = torch.rand(64, generator=gen) * 2  # correct answers: A^correct >= 0
        eligible = torch.rand(64, generator=gen) < 0.7
        positions = torch.randint(0, 50, (64,), generator=gen).float()
        lengths = positions + torch.randint(1, 50, (64,), generator=gen).float()
        shaped = aspo.aspo_advantages(base, eligible, positions, lengths, 8, delta=-50.0, k=k)
        assert (shaped >= 0).all() and ((shaped - base).abs() <= k * base + 1e-6).all()
        assert (shaped[~eligible] == base[~eligible]).all()


def test_all_correct_group_gets_no_bias():
    # GRPO gives an all-correct group A^correct = 0 exactly, so the clip range is [0, 0]: nothing is shaped
    # (the reward-shaping rule, eq. 1, would instead leave only the position term and punish half of them)
    base = grpo.group_advantages(torch.ones(4), 4)
    shaped = aspo.aspo_advantages(base, torch.ones(4, dtype=torch.bool), torch.tensor([1.0, 5.0, 9.0, 30.0]),
                                  torch.full((4,), 40.0), 4, delta=-2.0, k=0.9)
    assert shaped.tolist() == [0.0, 0.0, 0.0, 0.0]


def test_groups_are_shaped_separately():
    # the same answers in two groups of 2: each group's mean(p) and mean(L) are its own
    base = torch.tensor([1.0, 1.0, 1.0, 1.0])
    shaped = aspo.aspo_advantages(base, torch.ones(4, dtype=torch.bool), torch.tensor([0.0, 10.0, 10.0, 10.0]),
                                  torch.full((4,), 20.0), 2, delta=-1.0, k=1.0)
    # group 0: mean p = 5, bias = -(0 - 5)/20 = +0.25 and -0.25; group 1: equal positions -> no bias
    assert shaped.tolist() == pytest.approx([1.25, 0.75, 1.0, 1.0])


# --- the first call's position in model tokens ---------------------------------------------------------------
@pytest.fixture(scope="module")
def tok():
    return load_tokenizer()


def episode(tok, turns):
    """A Sample-like episode from [(model text, env text or None), ...] with turn spans and loss mask."""
    ids, mask, spans = [], [], []
    for model_text, env_text in turns:
        pieces = [tok(p, add_special_tokens=False)["input_ids"] for p in model_text]
        turn = [t for p in pieces for t in p]
        spans.append((len(ids), len(ids) + len(turn)))
        ids += turn
        mask += [1] * len(turn)
        if env_text is not None:
            env = tok(env_text, add_special_tokens=False)["input_ids"]
            ids += env
            mask += [0] * len(env)
    return SimpleNamespace(completion_ids=ids, loss_mask=mask, turn_spans=spans)


def test_first_call_position_counts_model_tokens_only(tok):
    tool = calculator.TOOL
    lead = tok("I will add", add_special_tokens=False)["input_ids"]
    # one turn: the call opens right after the lead-in's tokens
    s = episode(tok, [(["I will add", "<calc>2+3</calc>"], None)])
    assert aspo.first_call_position(s, tool, tok) == len(lead)
    # the call is in the second turn, after an env reply: the reply's tokens are not counted
    first = tok("hmm", add_special_tokens=False)["input_ids"]
    s = episode(tok, [(["hmm"], "<result>error: no call</result>"), (["I will add", "<calc>2+3</calc>"], None)])
    assert len(s.completion_ids) > len(first) + len(lead)  # env tokens sit in between
    assert aspo.first_call_position(s, tool, tok) == len(first) + len(lead)
    # no complete call (an unclosed tag, an answer): None
    assert aspo.first_call_position(episode(tok, [(["<calc>2+3"], None)]), tool, tok) is None
    assert aspo.first_call_position(episode(tok, [(["<answer>5</answer>"], None)]), tool, tok) is None


def test_advantages_hook_shapes_correct_tool_callers(tok):
    # rewards [1, 1, 1, 0]: answers 0 and 1 call the tool at model tokens 0 and len("I will add"), answer 2 is
    # correct without a call, answer 3 wrong. Expected: GRPO's advantages, then eq. 2 over answers 0 and 1.
    turns = [[(["<calc>2+3</calc>"], "<result>5</result>"), (["<answer>5</answer>"], None)],
             [(["I will add", "<calc>2+3</calc>"], "<result>5</result>"), (["<answer>5</answer>"], None)],
             [(["<answer>5</answer>"], None)],
             [(["<answer>4</answer>"], None)]]
    samples = [episode(tok, t) for t in turns]
    for s, r in zip(samples, [1.0, 1.0, 1.0, 0.0]):
        s.reward, s.info = r, {"correct": r == 1.0}
    batch = SimpleNamespace(samples=samples, rewards=torch.tensor([1.0, 1.0, 1.0, 0.0]),
                            lengths=torch.tensor([float(len(s.completion_ids)) for s in samples]), group_size=4)
    cfg = aspo.Config(position_delta=-2.0, bias_clip=0.7)
    ctx = SimpleNamespace(config=cfg, train=SimpleNamespace(max_completion_tokens=48), tokenizer=tok,
                          task=get_env("calculator"), pool=[], env_config=get_env("calculator").config_of(), ref=None)
    algo = aspo.ASPO(ctx)
    shaped, keep = algo.advantages(ctx, batch)
    base = grpo.group_advantages(batch.rewards, 4)
    p = torch.tensor([0.0, float(len(tok("I will add", add_special_tokens=False)["input_ids"]))])
    L = torch.tensor([float(sum(samples[0].loss_mask)), float(sum(samples[1].loss_mask))])
    bias = (-2.0 * (p - p.mean()) / L.mean()).clamp(-0.7 * base[0], 0.7 * base[0])
    expected = torch.stack([base[0] + bias[0], base[1] + bias[1], base[2], base[3]])
    assert shaped.tolist() == pytest.approx(expected.tolist())
    assert shaped[0] > base[0] > shaped[1] > 0 and keep.all()
    assert algo.last["aspo_call_frac"] == 0.5


def test_loss_is_grpos_and_masked_tokens_get_no_gradient(tok):
    ctx = SimpleNamespace(config=aspo.Config(), train=SimpleNamespace(max_completion_tokens=48), tokenizer=tok,
                          task=get_env("calculator"), pool=[], env_config=get_env("calculator").config_of(), ref=None)
    loss_fn = aspo.ASPO(ctx).loss_fn(ctx)
    assert loss_fn.func is grpo.grpo_loss
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]]).double()
    old = torch.log(torch.tensor([[0.2, 0.5], [0.4, 0.1]])).double()
    logps = (old + torch.log(torch.tensor([[1.5, 0.9], [1.1, 7.0]])).double()).requires_grad_(True)
    shaped = aspo.aspo_advantages(torch.tensor([1.0, -1.0]).double(), torch.tensor([True, False]),
                                  torch.tensor([3.0, 0.0]), torch.tensor([9.0, 9.0]), 2, -2.0, 0.7)
    loss, _ = loss_fn(logps, old, shaped, mask)
    loss.backward()
    assert logps.grad[1, 1] == 0.0 and logps.grad[0, 1] != 0.0


def test_environment_without_a_tool_is_refused():
    task = SimpleNamespace(name="half_vocab", build=lambda problem, config: SimpleNamespace(), make=None)
    ctx = SimpleNamespace(config=aspo.Config(), train=SimpleNamespace(max_completion_tokens=8), task=task, pool=[],
                          env_config=get_env("calculator").config_of(), ref=None)
    with pytest.raises(ConfigError, match="--algo aspo.*'half_vocab' declares no tool"):
        aspo.ASPO(ctx)
