"""Model loading. The tiny model is always tested; SmolLM2 only with `pytest -m slow`."""
import time

import pytest
import torch

from reference_impls.models import TINY_CONFIG, load_policy, load_tokenizer


def test_tiny_model_is_seeded_and_small(tiny):
    model, tok = tiny
    again, _ = load_policy("tiny", device="cpu", seed=0)
    other, _ = load_policy("tiny", device="cpu", seed=1)
    p = dict(model.named_parameters())["model.layers.0.mlp.up_proj.weight"]
    assert torch.equal(p, dict(again.named_parameters())["model.layers.0.mlp.up_proj.weight"])
    assert not torch.equal(p, dict(other.named_parameters())["model.layers.0.mlp.up_proj.weight"])
    assert model.config.hidden_size == TINY_CONFIG["hidden_size"] and model.config.tie_word_embeddings
    assert sum(x.numel() for x in model.parameters()) < 4_000_000
    assert tok.eos_token == "<|im_end|>" and tok.pad_token_id == tok.eos_token_id and tok.padding_side == "left"


def test_seeding_the_tiny_model_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_policy("tiny", device="cpu", seed=5)
    assert torch.equal(torch.rand(3), expected)


def test_unknown_model_name():
    with pytest.raises(ValueError, match="Unknown model"):
        load_policy("gpt-17")


def test_cached_tokenizer_loads_fast():
    load_tokenizer()
    t0 = time.time()
    load_tokenizer()
    assert time.time() - t0 < 2.0


@pytest.mark.slow
def test_smollm2_loads_from_the_converted_cache():
    load_policy("smollm2-135m-instruct", device="cpu")  # converts on first use (~20-40 s)
    t0 = time.time()
    model, tok = load_policy("smollm2-135m-instruct", device="cpu")
    assert time.time() - t0 < 5.0
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    ids = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}], add_generation_prompt=True,
                                  return_tensors="pt", return_dict=True)
    out = model.generate(**ids, max_new_tokens=8, do_sample=False)
    assert out.shape[1] > ids["input_ids"].shape[1]


@pytest.mark.slow
def test_smollm2_grpo_step(tmp_path):
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

    cfg = TrainConfig(algo="grpo", model="smollm2-135m-instruct", out=str(tmp_path), prompts_per_step=1, group_size=2,
                      max_new_tokens_per_turn=8, max_completion_tokens=16)
    trainer = Trainer(cfg)
    trainer.t_start = time.time()
    metrics, samples = trainer.train_step()
    assert metrics["step"] == 1 and len(samples) == 2
