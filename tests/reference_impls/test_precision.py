"""``--precision``: fp32 (the default) or bf16, torch.autocast to bfloat16 around the warm start, the rollouts and
the update (``common.precision_context``). The weights, their gradients and the log-probabilities the losses see
stay float32."""
import pytest
import torch

from reference_impls.common import collate, completion_logprobs, native_bf16, precision_context, resolve_precision
from reference_impls.options import ConfigError
from reference_impls.run_config import TrainConfig, config_from_dict, resolve
from reference_impls.trainer import Trainer
from toy_env import make_task


def test_bf16_autocasts_and_fp32_does_not():
    cpu = torch.device("cpu")
    with precision_context("bf16", cpu):
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert (torch.ones(2, 3) @ torch.ones(3, 2)).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")
    with precision_context("fp32", cpu):
        assert not torch.is_autocast_enabled("cpu")
        assert (torch.ones(2, 3) @ torch.ones(3, 2)).dtype == torch.float32


def test_an_unknown_precision_is_refused_by_name():
    with pytest.raises(ValueError, match="precision: 'fp16'"):
        precision_context("fp16", torch.device("cpu"))
    with pytest.raises(ConfigError, match="precision") as err:
        resolve(config_from_dict({"out": "x", "precision": "fp16"}), check_model=False)
    assert err.value.field == "precision"
    assert TrainConfig().precision == "fp32"
    assert resolve(config_from_dict({"out": "x", "precision": "bf16"}), check_model=False).cfg.precision == "bf16"


def test_auto_is_bf16_only_where_the_cpu_computes_in_it():
    cpu = torch.device("cpu")
    zen4 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_bf16\n"
    avx2 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n"
    sapphire = "flags : avx2 avx512f amx_tile amx_bf16\n"
    assert native_bf16(cpu, zen4) and native_bf16(cpu, sapphire)
    assert not native_bf16(cpu, avx2) and not native_bf16(cpu, "no flags line\n")
    assert resolve_precision("auto", cpu) == ("bf16" if native_bf16(cpu) else "fp32")
    assert resolve_precision("fp32", cpu) == "fp32" and resolve_precision("bf16", cpu) == "bf16"
    with precision_context("auto", cpu):
        assert torch.is_autocast_enabled("cpu") == native_bf16(cpu)


def test_forwards_after_an_optimiser_step_see_the_new_weights():
    """One context spans many optimiser steps (the warm start, minibatch updates): autocast's cached bf16 copy
    of the weights would keep the forwards on the first step's weights unless each step clears it."""
    layer = torch.nn.Linear(4, 4)
    x = torch.ones(1, 4)
    opt = torch.optim.SGD(layer.parameters(), lr=0.5)
    with precision_context("bf16", torch.device("cpu")):
        first = layer(x)
        first.sum().backward()
        opt.step()
        second = layer(x)
    assert not torch.equal(first, second)
    # the hook that clears autocast's cast cache lives as long as the context
    from torch.optim.optimizer import _global_optimizer_post_hooks
    assert not _global_optimizer_post_hooks


def batch_of(tok, prompts: list[list[int]], completions: list[list[int]]) -> dict:
    from types import SimpleNamespace
    rows = [SimpleNamespace(prompt_ids=p, completion_ids=c, loss_mask=[1] * len(c), old_logprobs=[0.0] * len(c))
            for p, c in zip(prompts, completions)]
    return collate(rows, tok.pad_token_id or 0)


def test_log_probs_are_float32_under_bf16_and_near_the_fp32_ones(fresh_tiny):
    model, tok = fresh_tiny()
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (5, 7, 5)]
    completions = [torch.randint(3, 200, (n,), generator=g).tolist() for n in (4, 2, 4)]
    batch = batch_of(tok, prompts, completions)
    with torch.no_grad():
        exact, _ = completion_logprobs(model, batch)
        with precision_context("bf16", torch.device("cpu")):
            low, entropy = completion_logprobs(model, batch, with_entropy=True)
    assert low.dtype == torch.float32 and entropy.dtype == torch.float32
    mask = batch["loss_mask"].bool()
    gap = (low - exact)[mask].abs().max()
    # bf16 keeps 8 bits of mantissa: the log-probs move, by far less than they differ from token to token
    assert 0 < gap < 0.1, gap
    assert float(exact[mask].std()) > 10 * float(gap)


def test_a_bf16_step_trains_float32_weights(fresh_tiny, tmp_path):
    model, tok = fresh_tiny()
    cfg = TrainConfig(algo="grpo", env="half_vocab", model="tiny", out=str(tmp_path / "bf16"), lr=3e-2,
                      prompts_per_step=2, group_size=4, max_new_tokens_per_turn=4, max_completion_tokens=4,
                      train_pool=8, precision="bf16")
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = 0.0
    before = {k: v.clone() for k, v in model.state_dict().items()}
    metrics, _ = trainer.train_step()
    assert not torch.is_autocast_enabled("cpu")  # the context ends with the step
    assert all(v.dtype == torch.float32 for v in model.state_dict().values())
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # the update moved weights
    assert metrics["policy_updates"] >= 1
    trainer.write_status("running")
    assert (tmp_path / "bf16" / "status.json").read_text().count('"precision": "bf16"') == 1
    # on-policy: sampling and the update ran in the same precision, so the ratio starts near 1
    assert abs(metrics["ratio_mean"] - 1.0) < 0.05, metrics["ratio_mean"]


def test_the_cached_casts_give_the_gradients_of_fresh_casts(fresh_tiny):
    """Micro-batches accumulate gradients through the same cached bf16 weights; the sum equals that of
    recasting the weights for every forward (autocast without its cache)."""
    import copy

    model, _ = fresh_tiny()
    model.train()
    g = torch.Generator().manual_seed(1)
    parts = [torch.randint(3, 200, (3, 12), generator=g) for _ in range(2)]

    def gradient(context):
        m = copy.deepcopy(model)
        with context:
            for ids in parts:
                m(input_ids=ids).logits.float().log_softmax(-1)[..., 5].mean().backward()
        return torch.cat([p.grad.flatten() for p in m.parameters() if p.grad is not None])

    cached = gradient(precision_context("bf16", torch.device("cpu")))
    fresh = gradient(torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False))
    assert cached.abs().max() > 0 and torch.equal(cached, fresh)
