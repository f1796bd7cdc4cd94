"""``--micro-batch-tokens``: a bound on the padded tokens of one forward/backward (``common.micro_batches``), so
long transcripts (TextWorld's run to ~1,150 tokens) are not scored eight at a time. Memory only: the shared
policy-gradient update, PPO's update and the SFT warm start take the same step whatever the cut."""
from types import SimpleNamespace

import pytest
import torch

from reference_impls import common
from reference_impls.common import micro_batches, padded_tokens
from reference_impls.options import ConfigError
from reference_impls.run_config import TrainConfig, config_from_dict, resolve
from reference_impls.trainer import Trainer
from toy_env import make_task


def sample(prompt: int, completion: int) -> SimpleNamespace:
    return SimpleNamespace(prompt_ids=[1] * prompt, completion_ids=[2] * completion)


def check_partition(parts: list[list[int]], rows: list[int]) -> None:
    """Every row exactly once, in the given order, in contiguous parts."""
    assert [r for part in parts for r in part] == rows
    assert all(part for part in parts)


def test_padded_tokens_is_the_collate_layout():
    rows = [sample(3, 5), sample(7, 0), sample(1, 2)]
    batch = common.collate([SimpleNamespace(**vars(s), loss_mask=[1] * len(s.completion_ids),
                                            old_logprobs=[0.0] * len(s.completion_ids)) for s in rows], pad_id=0)
    assert padded_tokens(rows) == batch["input_ids"].numel() == 3 * (7 + 5)
    assert padded_tokens([sample(4, 0)]) == 5  # an empty completion still takes one column
    assert padded_tokens([]) == 0


def test_the_count_bound_alone_slices_rows_as_before():
    samples = [sample(10, 10) for _ in range(7)]
    rows = [6, 0, 3, 1, 5, 2, 4]
    parts = micro_batches(samples, rows, 3)
    assert parts == [[6, 0, 3], [1, 5, 2], [4]]
    assert micro_batches(samples, rows, 3, max_tokens=0) == parts  # 0: no token bound
    assert micro_batches(samples, rows, 3, max_tokens=60) == parts  # 3 x 20 fits exactly: does not bind
    assert micro_batches(samples, [], 3, 100) == []


def test_the_token_bound_cuts_by_padded_width():
    # widths (prompt + completion): 10, 10, 30, 10, 10, 10, 10
    samples = [sample(5, 5), sample(5, 5), sample(10, 20), sample(5, 5), sample(5, 5), sample(5, 5), sample(5, 5)]
    rows = list(range(7))
    parts = micro_batches(samples, rows, 8, max_tokens=40)
    # [0, 1] is 20 tokens; adding row 2 widens the batch to 3 x 30 = 90; row 2 then fills 30, and 2 x 30 > 40
    assert parts == [[0, 1], [2], [3, 4, 5, 6]]
    check_partition(parts, rows)
    assert all(padded_tokens([samples[r] for r in part]) <= 40 for part in parts)
    # the two bounds together: the count cuts the short rows, the tokens the wide one
    both = micro_batches(samples, rows, 3, max_tokens=40)
    assert both == [[0, 1], [2], [3, 4, 5], [6]]
    check_partition(both, rows)


def test_the_width_is_the_longest_prompt_plus_the_longest_completion():
    # neither row is wider than 12 alone, but together the layout is 2 x (10 + 10) = 40
    samples = [sample(10, 2), sample(2, 10)]
    assert micro_batches(samples, [0, 1], 8, max_tokens=39) == [[0], [1]]
    assert micro_batches(samples, [0, 1], 8, max_tokens=40) == [[0, 1]]


def test_a_row_wider_than_the_bound_is_a_micro_batch_of_its_own():
    samples = [sample(2, 2), sample(2, 2), sample(50, 50), sample(2, 2)]
    rows = [3, 2, 1, 0]  # order kept, whatever it is
    parts = micro_batches(samples, rows, 8, max_tokens=10)
    assert parts == [[3], [2], [1, 0]]
    check_partition(parts, rows)
    assert micro_batches(samples, [2], 8, max_tokens=1) == [[2]]


def test_a_negative_bound_is_refused():
    with pytest.raises(ValueError, match="micro_batch_tokens"):
        micro_batches([sample(1, 1)], [0], 1, max_tokens=-1)


def test_the_option_is_validated_by_name():
    with pytest.raises(ConfigError, match="micro_batch_tokens|micro-batch-tokens") as err:
        resolve(config_from_dict({"algo": "grpo", "env": "calculator", "out": "x", "micro_batch_tokens": -1}),
                check_model=False)
    assert err.value.field == "micro_batch_tokens"
    assert resolve(config_from_dict({"out": "x", "micro_batch_tokens": 0}), check_model=False).cfg.micro_batch_tokens == 0
    assert TrainConfig().micro_batch_tokens == 4096


def recorded_step(fresh_tiny, tmp_path, monkeypatch, algo: str, micro_batch_tokens: int):
    """(the gradient of each optimiser update, the micro-batches cut as (rows, padded tokens) lists) of one RL
    step from the same model, seed and rollout batch. Gradients rather than weights: AdamW's first step is about
    lr x sign(gradient), so round-off in a near-zero gradient would show in the weights."""
    model, tok = fresh_tiny()
    cfg = TrainConfig(algo=algo, env="half_vocab", model="tiny", out=str(tmp_path / f"{algo}-{micro_batch_tokens}"),
                      lr=3e-2, prompts_per_step=3, group_size=4, max_new_tokens_per_turn=4, max_completion_tokens=4,
                      micro_batch_size=16, micro_batch_tokens=micro_batch_tokens, train_pool=8,
                      mini_batches=1 if algo == "ppo" else 2)  # PPO splits its batch itself
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = 0.0
    grads, cuts, step = [], [], trainer.optimizer.step

    def recording_step(*args, **kwargs):
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
        return step(*args, **kwargs)

    def recording_cut(samples, rows, max_samples, max_tokens=0):
        parts = micro_batches(samples, rows, max_samples, max_tokens)
        cuts.append([(len(p), padded_tokens([samples[r] for r in p])) for p in parts])
        return parts

    trainer.optimizer.step = recording_step
    monkeypatch.setattr("reference_impls.policy_gradient.micro_batches", recording_cut)
    monkeypatch.setattr("reference_impls.algorithms.ppo.ppo.micro_batches", recording_cut)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainer.train_step()
    finally:
        torch.set_num_threads(threads)
    return grads, cuts


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_a_binding_token_bound_takes_the_same_step(fresh_tiny, tmp_path, monkeypatch, algo):
    """12 episodes, 2 or more optimiser steps (GRPO: 2 minibatches of 6; PPO: its own minibatches): unbounded, every cut is one pass; a bound of
    3 rows' padded width cuts them into passes of at most 3 rows (splitting groups and their shared prompt
    forward) and the gradients are the same up to float summation order."""
    free, free_cuts = recorded_step(fresh_tiny, tmp_path, monkeypatch, algo, 0)
    assert free_cuts and all(len(cut) == 1 for cut in free_cuts)
    widest_row = max(tokens // rows for cut in free_cuts for rows, tokens in cut)
    bound = 3 * widest_row
    bounded, bounded_cuts = recorded_step(fresh_tiny, tmp_path, monkeypatch, algo, bound)
    assert len(bounded_cuts) == len(free_cuts) and all(len(cut) > 1 for cut in bounded_cuts)  # the bound binds
    assert all(tokens <= bound and rows <= 3 for cut in bounded_cuts for rows, tokens in cut)
    assert len(free) == len(bounded) >= 2
    for a, b in zip(free, bounded):
        scale = float(a.abs().max())
        assert scale > 0
        # float32 accumulation over other passes moves single elements a little (measured on GRPO: 6e-7 and 2e-6,
        # the largest element ~0.09); a lost micro-batch or a per-pass normaliser moves them by a share of the scale
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4 * scale)


def test_a_binding_token_bound_gives_the_same_sft_steps(fresh_tiny, monkeypatch):
    """The warm start (``sft``) with a token bound that cuts its batches of 8 into passes of at most 2 transcripts ends
    with the same losses and weights as one forward/backward per batch."""
    from reference_impls import sft as sft_module
    from reference_impls.sft import demonstrations, sft

    cuts = []

    def recording_cut(samples, rows, max_samples, max_tokens=0):
        parts = micro_batches(samples, rows, max_samples, max_tokens)
        cuts.append(parts)
        return parts

    monkeypatch.setattr(sft_module, "micro_batches", recording_cut)
    results = []
    bound = None
    for tokens in (0, "two rows"):
        model, tokenizer = fresh_tiny()
        samples = demonstrations(tokenizer, "calculator", 16, seed=0, options={"levels": (1, 2, 3)})
        if tokens == "two rows":
            bound = tokens = 2 * max(padded_tokens([s]) for s in samples)
        cuts.clear()
        losses = sft(model, tokenizer, samples, steps=3, lr=3e-3, seed=0, micro_batch_tokens=tokens)
        results.append((losses, [p.detach().clone() for p in model.parameters()], [list(c) for c in cuts]))
    (full, full_params, full_cuts), (parts, part_params, part_cuts) = results
    assert len(full_cuts) == len(part_cuts) == 3 and all(len(c) == 1 for c in full_cuts)
    assert all(len(c) >= 4 for c in part_cuts)  # the bound binds: batches of 8 in passes of at most 2
    assert all(padded_tokens([samples[r] for r in p]) <= bound for c in part_cuts for p in c)
    assert parts == pytest.approx(full, rel=1e-5) and full[-1] < full[0]
    for a, b in zip(full_params, part_params):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_a_runs_warm_start_carries_the_bound():
    from reference_impls.sft import WarmStartSettings

    cfg = TrainConfig(env="calculator", micro_batch_size=4, micro_batch_tokens=777, sft_steps=2)
    settings = WarmStartSettings.of_run(cfg, None)
    assert (settings.micro_batch_size, settings.micro_batch_tokens) == (4, 777)
