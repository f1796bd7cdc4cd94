"""The GRPO family against its papers' settings (issue 43): DAPO's dynamic sampling decides on the unshaped
reward, sequence-level ratios with a per-token aggregation warn, rows run the papers' settings."""
import pytest
import torch

from reference_impls.algorithms.grpo import grpo
from reference_impls.algorithms.ppo import liteppo


def test_dapo_dynamic_sampling_filters_on_the_unshaped_reward():
    """DAPO eq. 11 keeps a group when 0 < #correct < G, counted on accuracy, not on the reward after overlong
    shaping (L_max 10, L_cache 4: free up to 6 tokens, -1 at 10 and beyond)."""
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    lengths = torch.tensor([5, 10, 5, 5, 12, 3, 4, 12])
    cfg = grpo.Config(dynamic_sampling=True, overlong_buffer=4, loss_type="dapo", epsilon_high=0.28)
    advantages, keep, shaped = grpo.prepare_batch(rewards, lengths, 2, cfg, 10)
    assert shaped.tolist() == pytest.approx([1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, -1.0])
    # group 0: both correct (only the length penalty differs): dropped; group 1: kept; group 2: one correct,
    # shaped rewards equal (the correct one ran over): kept, with zero advantages; group 3: none correct: dropped
    assert keep.tolist() == [False, False, True, True, True, True, False, False]
    assert advantages[4:6].tolist() == [0.0, 0.0]
    assert advantages[0] > 0 and advantages[6] > 0  # the advantages themselves come from the shaped reward


def test_liteppo_dynamic_sampling_filters_on_the_unshaped_reward_too():
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0])
    assert grpo.dynamic_sampling_keep(rewards, 2, True).tolist() == [False, False, True, True]
    assert grpo.dynamic_sampling_keep(rewards, 2, False).tolist() == [True] * 4
    assert liteppo.dynamic_sampling_keep is grpo.dynamic_sampling_keep


def _check(**options):
    from types import SimpleNamespace

    grpo.GRPO.check(grpo.Config(**options), SimpleNamespace(max_completion_tokens=64, group_size=4), None)


@pytest.mark.parametrize("loss_type", ["dapo", "dr_grpo"])
def test_sequence_ratios_with_a_summed_loss_warn_as_trl(loss_type):
    with pytest.warns(UserWarning, match=f"--loss-type {loss_type}.*use --loss-type grpo"):
        _check(importance_sampling_level="sequence", loss_type=loss_type)


def test_gspo_as_published_and_token_ratios_do_not_warn():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(importance_sampling_level="sequence", loss_type="grpo")
        _check(importance_sampling_level="token", loss_type="dapo")


def test_rows_run_the_papers_settings():
    from reference_impls import registry

    rows = registry.by_id()
    assert rows["calculator-gspo"].algo_options == {"importance_sampling_level": "sequence", "epsilon_low": 3e-4,
                                                    "epsilon_high": 4e-4}
    assert rows["search-gspo"].algo_options == rows["calculator-gspo"].algo_options  # the comparison rows follow
    assert rows["calculator-pass-at-k"].algo_options == {"loss_type": "dapo", "epsilon_high": 0.28}
    assert rows["calculator-treepo"].algo_options == {"loss_type": "dapo", "epsilon_high": 0.28}
