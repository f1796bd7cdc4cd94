"""mu minibatch updates per rollout batch (``--mini-batches``) and the mechanism diagnostics (issue 41).

With one update per batch the importance ratio is 1, so GSPO's sequence ratio, GMPO's geometric mean and
DAPO's clip-higher cannot act: each trains exactly as GRPO (as the audit found). At the core grid's mu they
do: the same batch from the same model then gives different weights. Both halves are shown here on the tiny
model and the half-vocabulary task, one step each from identical weights and an identical rollout batch."""
import pytest
import torch

from lab.compare.grid import Grid
from reference_impls.diagnostics import clip_bounds, episode_diagnostics
from reference_impls.options import ConfigError
from reference_impls.policy_gradient import split_minibatches
from reference_impls.registry import get_implementation
from reference_impls.run_config import TrainConfig, resolve
from reference_impls.trainer import Trainer
from toy_env import make_task

CORE_MU = Grid.load("core").mu


def one_step(fresh_tiny, tmp_path, algo: str, algo_config: dict, mu: int):
    """(the gradient of each optimiser update, the step's metrics) of one RL step from the same model, seed and
    batch every time. Gradients, not weights: AdamW's first update is about lr x sign(gradient), so float
    round-off in a near-zero gradient would show as a weight difference."""
    model, tok = fresh_tiny()
    cfg = TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(tmp_path / f"{algo}-{mu}"), lr=3e-2,
                      prompts_per_step=4, group_size=8, max_new_tokens_per_turn=4, max_completion_tokens=4,
                      micro_batch_size=32, train_pool=8, mini_batches=mu, algo_config=dict(algo_config))
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = 0.0
    grads, step = [], trainer.optimizer.step

    def recording_step(*args, **kwargs):
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
        return step(*args, **kwargs)

    trainer.optimizer.step = recording_step
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        metrics, _ = trainer.train_step()
    finally:
        torch.set_num_threads(threads)
    return grads, metrics


def row(impl: str) -> tuple[str, dict]:
    config = get_implementation(impl).config()
    return config.get("algo", "grpo"), dict(config.get("algo_config", {}))


def dapo_without(switch_off: bool) -> tuple[str, dict]:
    """DAPO's row (overlong shaping off: the toy episodes are 4 tokens), with clip-higher switched off when asked."""
    algo, config = row("calculator-dapo")
    config["overlong_buffer"] = 0
    if switch_off:
        config["epsilon_high"] = config.get("epsilon_low", 0.2)
    return algo, config


# (name, the variant's row, what it is compared with, its mu in the core grid)
PAIRS = [("gspo", lambda: row("calculator-gspo"), lambda: row("calculator-grpo"), CORE_MU["gspo"]),
         ("gmpo", lambda: row("calculator-gmpo"), lambda: row("calculator-grpo"), CORE_MU["gmpo"]),
         ("dapo", lambda: dapo_without(False), lambda: dapo_without(True), CORE_MU["dapo"])]


@pytest.mark.parametrize("name,variant,baseline,mu", PAIRS, ids=[p[0] for p in PAIRS])
def test_mechanism_acts_only_with_several_updates_per_batch(fresh_tiny, tmp_path, name, variant, baseline, mu):
    """mu = 1: the variant's step equals the baseline's (ratio 1: GSPO and GMPO are GRPO, clip-higher never
    clips). mu = the core grid's: the ratio moves off 1 after the first minibatch and the steps differ."""
    assert mu >= 2  # the core grid runs every clipped objective with at least two updates per batch
    v_algo, v_cfg = variant()
    b_algo, b_cfg = baseline()
    same_v, m1 = one_step(fresh_tiny, tmp_path / "one-v", v_algo, v_cfg, 1)
    same_b, _ = one_step(fresh_tiny, tmp_path / "one-b", b_algo, b_cfg, 1)
    assert m1["policy_updates"] == 1 and len(same_v) == len(same_b) == 1
    assert m1["ratio_max"] == pytest.approx(1.0, abs=1e-5)
    scale = float(same_b[0].abs().max())
    assert scale > 0 and torch.allclose(same_v[0], same_b[0], rtol=1e-4, atol=1e-6 * scale), (
        float((same_v[0] - same_b[0]).abs().max()), scale)

    many_v, mv = one_step(fresh_tiny, tmp_path / "many-v", v_algo, v_cfg, mu)
    many_b, mb = one_step(fresh_tiny, tmp_path / "many-b", b_algo, b_cfg, mu)
    assert mv["policy_updates"] == mb["policy_updates"] == len(many_v) == len(many_b) == mu
    assert mv["ratio_max"] > 1.01  # later minibatches see a moved policy
    # the first minibatch still has ratio 1 (same gradient); a later one's gradient differs
    assert torch.allclose(many_v[0], many_b[0], rtol=1e-4, atol=1e-6 * float(many_b[0].abs().max()))
    differs = max(float((v - b).abs().max() / b.abs().max().clamp(min=1e-12)) for v, b in zip(many_v[1:], many_b[1:]))
    assert differs > 1e-2, differs
    if name == "dapo":  # the switch that differs is clip-higher: the symmetric clip is what acted above 1.2
        assert mb["clip_frac_high"] > 0.0


def test_split_minibatches_by_hand():
    assert split_minibatches(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split_minibatches([4, 5], 2) == [[4], [5]]
    assert split_minibatches(list(range(4)), 1) == [[0, 1, 2, 3]]


def test_mini_batches_is_checked():
    """--mini-batches (alias mu): an online policy-gradient algorithm's option, at most the step's episodes."""
    def cfg(**kw):
        return TrainConfig(**{"model": "tiny", "out": "x", "prompts_per_step": 2, "group_size": 4, **kw})

    resolve(cfg(mini_batches=8), check_model=False)
    with pytest.raises(ConfigError, match="--mini-batches: 9 is more than the 8 episodes"):
        resolve(cfg(mini_batches=9), check_model=False)
    with pytest.raises(ConfigError, match="--mini-batches: 2 needs an online algorithm"):
        resolve(cfg(algo="dpo", mini_batches=2), check_model=False)
    with pytest.raises(ConfigError, match="set its --num-mini-batches"):
        resolve(cfg(algo="ppo", mini_batches=2), check_model=False)
    with pytest.raises(ConfigError, match="--mini-batches"):
        resolve(cfg(mini_batches=0), check_model=False)


class _S:
    def __init__(self, group, reward, correct):
        self.group, self.reward, self.info = group, reward, {"correct": correct}


def test_episode_diagnostics_by_hand():
    """Two groups: rewards (1, 0) and (1, 1). Lengths 4, 10, 6, 2: correct episodes 4, 6, 2 (mean 4), the
    incorrect one 10; one group of two has all-equal rewards."""
    samples = [_S(0, 1.0, True), _S(0, 0.0, False), _S(1, 1.0, True), _S(1, 1.0, True)]
    m = episode_diagnostics(samples, torch.tensor([4.0, 10.0, 6.0, 2.0])).reduce()
    assert m["len_correct"] == 4.0 and m["len_incorrect"] == 10.0
    assert m["zero_advantage_groups_frac"] == 0.5 and m["episodes"] == 4.0


def test_clip_bounds_follow_each_objective():
    from reference_impls.algorithms.grpo.gmpo import Config as GMPOConfig
    from reference_impls.algorithms.grpo.grpo import Config as GRPOConfig
    from reference_impls.algorithms.ppo.ppo import Config as PPOConfig
    from reference_impls.algorithms.reinforce.rloo import Config as RLOOConfig

    assert clip_bounds(GRPOConfig(epsilon_high=0.28)) == pytest.approx((0.8, 1.28))
    assert clip_bounds(GMPOConfig()) == pytest.approx((0.67032, 1.49182), abs=1e-5)  # e^-0.4, e^0.4
    assert clip_bounds(PPOConfig()) == pytest.approx((0.8, 1.2))
    assert clip_bounds(PPOConfig(epsilon_high=0.28)) == pytest.approx((0.8, 1.28))
    assert clip_bounds(RLOOConfig()) == pytest.approx((0.8, 1.2))


def test_mu_exports_to_trl_as_steps_per_generation():
    """TRL takes mu updates per generation batch as steps_per_generation = mu over P x G / mu rows each."""
    from reference_impls import export

    cfg = {**TrainConfig(model="tiny", out="x", prompts_per_step=4, group_size=8).__dict__, "mini_batches": 4}
    kwargs, _ = export.trl_config(cfg)
    assert (kwargs["steps_per_generation"], kwargs["per_device_train_batch_size"]) == (4, 8)
    assert export.verl_config(cfg, kwargs)["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] == 1
    with pytest.raises(ConfigError, match="--mini-batches 3 does not divide the step's 32 episodes"):
        export.trl_config({**cfg, "mini_batches": 3})


def test_grad_norm_is_the_mean_and_max_over_the_steps_updates(fresh_tiny, tmp_path, monkeypatch):
    """With mu updates per batch, ``grad_norm`` is the mean of the step's pre-clip norms and ``grad_norm_max`` their
    largest (issue 60: the logged figure was the last minibatch's only). The norms are recorded as torch computes
    them, so the check does not depend on their values."""
    import reference_impls.policy_gradient as pg

    seen, clip = [], torch.nn.utils.clip_grad_norm_

    def recording_clip(*args, **kwargs):
        norm = clip(*args, **kwargs)
        seen.append(float(norm))
        return norm

    monkeypatch.setattr(pg.torch.nn.utils, "clip_grad_norm_", recording_clip)
    algo, config = row("calculator-grpo")
    _, metrics = one_step(fresh_tiny, tmp_path, algo, config, mu=4)
    assert len(seen) == 4 and len(set(seen)) > 1
    assert metrics["grad_norm"] == pytest.approx(sum(seen) / 4)
    assert metrics["grad_norm_max"] == pytest.approx(max(seen))
