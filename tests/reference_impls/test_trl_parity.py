"""Our GRPO loss against TRL 1.16's real ``GRPOTrainer._compute_loss`` on identical tensors.

TRL's method is called unbound with a stub ``self`` that holds only the attributes it reads; the stub's
``_get_per_token_logps_and_entropies`` returns our fixed log-probs, so everything after the forward pass
(ratios, clipping, KL, aggregation) is TRL's own code.
"""
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch
import trl.trainer.grpo_trainer as trl_grpo  # pinned: a moved module fails here, it does not skip the parity tests

from reference_impls.algorithms.grpo import grpo

B, T, MAX_LEN = 6, 7, 9


class _Accelerator:
    num_processes = 1
    sync_gradients = True

    def reduce(self, x, reduction="sum"):
        return x

    def gather(self, x):
        return x

    def gather_for_metrics(self, x):
        return x


def _tensors(seed=0):
    g = torch.Generator().manual_seed(seed)
    logps = (-torch.rand(B, T, generator=g) * 3).double()
    old = logps + 0.3 * torch.randn(B, T, generator=g).double()  # ratios far enough from 1 to clip
    ref = logps + 0.2 * torch.randn(B, T, generator=g).double()
    mask = (torch.rand(B, T, generator=g) > 0.3).double()
    mask[:, 0] = 1.0
    adv = torch.randn(B, generator=g).double()
    return logps, old, ref, mask, adv


def trl_loss(loss_type, level, beta, logps, old, ref, mask, adv):
    args = SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1)
    stub = SimpleNamespace(
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level=level,
        beta=beta, args=args, loss_type=loss_type, epsilon_low=0.2, epsilon_high=0.28, use_vllm=False,
        vllm_importance_sampling_correction=False, model=SimpleNamespace(training=True),
        current_gradient_accumulation_steps=1, max_completion_length=MAX_LEN, accelerator=_Accelerator(),
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics={"train": defaultdict(list)},
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None),
    )
    inputs = {
        "prompt_ids": torch.zeros(B, 2, dtype=torch.long), "prompt_mask": torch.ones(B, 2, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": torch.ones(B, T, dtype=torch.long),
        "tool_mask": mask, "advantages": adv, "old_per_token_logps": old, "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    return trl_grpo.GRPOTrainer._compute_loss(stub, None, inputs), stub._metrics["train"]


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_matches_trl(loss_type, level, beta):
    logps, old, ref, mask, adv = _tensors()
    expected, trl_metrics = trl_loss(loss_type, level, beta, logps, old, ref, mask, adv)
    cfg = grpo.Config(loss_type=loss_type, importance_sampling_level=level, beta=beta,
                      epsilon_low=0.2, epsilon_high=0.28)
    ours, metrics = grpo.grpo_loss(logps, old, adv, mask, cfg, ref_logps=ref, max_completion_length=MAX_LEN)
    assert abs(float(ours) - float(expected)) < 1e-6, (float(ours), float(expected))
    # the clip fraction is TRL's clip_ratio/region_mean
    assert abs(metrics["clip_frac"] - trl_metrics["clip_ratio/region_mean"][0]) < 1e-6
    if beta:
        assert abs(metrics["kl"] - trl_metrics["kl"][0]) < 1e-6


def test_trl_parity_is_not_vacuous():
    """Some ratios are clipped and the variants give different numbers, so agreement means something."""
    logps, old, ref, mask, adv = _tensors()
    values = {lt: float(trl_loss(lt, "token", 0.0, logps, old, ref, mask, adv)[0]) for lt in ("grpo", "dr_grpo", "dapo")}
    assert len({round(v, 6) for v in values.values()}) == 3
    _, metrics = trl_loss("grpo", "token", 0.0, logps, old, ref, mask, adv)
    assert metrics["clip_ratio/region_mean"][0] > 0
