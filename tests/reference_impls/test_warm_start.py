"""The trainer's in-process SFT warm start (``--sft-steps``): its own logged phase, done before the reference
copy (so KL starts at 0 against the warm-started model), skipped on resume, stoppable."""
import json
import threading

import pytest
import torch

from reference_impls.run_config import TrainConfig
from reference_impls.trainer import Trainer, WarmStartStopped

FAST = dict(algo="grpo", env="calculator", model="tiny", prompts_per_step=2, group_size=2, max_new_tokens_per_turn=6,
            max_completion_tokens=10, checkpoint_every=1, sft_examples=16, sft_lr=3e-3)


def test_warm_start_is_logged_and_learns_the_demonstrations(tmp_path):
    trainer = Trainer(TrainConfig(**FAST, out=str(tmp_path / "run"), steps=1, sft_steps=8))
    rows = [json.loads(x) for x in (tmp_path / "run" / "warm_start.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 9)) and all(r["steps"] == 8 for r in rows)
    assert rows[-1]["loss"] < rows[0]["loss"] * 0.8  # the tiny model fits repeated transcripts quickly
    assert trainer.warm_start_losses == [r["loss"] for r in rows]
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["phase"] == "warm-start" and status["sft_step"] == 8


def test_reference_is_the_warm_started_model(tmp_path):
    # KL at the first step is ~0 only if the frozen reference was copied *after* the warm start
    trainer = Trainer(TrainConfig(**FAST, out=str(tmp_path / "run"), steps=1, sft_steps=4,
                                  algo_config={"beta": 0.04}))
    for p, q in zip(trainer.policy.parameters(), trainer.ref.parameters()):
        assert torch.equal(p, q)
    trainer.t_start = 0.0  # set by run(); train_step reads it for wall_s
    metrics, _ = trainer.train_step()
    assert abs(metrics["kl"]) < 1e-6


def test_warm_start_changes_the_policy(tmp_path, tiny):
    before = {k: v.clone() for k, v in tiny[0].state_dict().items()}
    plain = Trainer(TrainConfig(**FAST, out=str(tmp_path / "plain"), steps=1))
    warm = Trainer(TrainConfig(**FAST, out=str(tmp_path / "warm"), steps=1, sft_steps=2))
    same = [torch.equal(a, b) for a, b in zip(plain.policy.parameters(), warm.policy.parameters())]
    assert not all(same)
    # each trainer loads its own copy: the shared fixture model is untouched
    assert all(torch.equal(before[k], v) for k, v in tiny[0].state_dict().items())


def test_resume_skips_the_warm_start(tmp_path):
    cfg = TrainConfig(**FAST, out=str(tmp_path / "run"), steps=1, sft_steps=2)
    trainer = Trainer(cfg)
    trainer.run()
    resumed = Trainer(cfg, resume=True)
    assert resumed.warm_start_losses == [] and resumed.step == 1


def test_stop_during_warm_start(tmp_path):
    stop = threading.Event()
    stop.set()
    with pytest.raises(WarmStartStopped, match="SFT step 1/5"):
        Trainer(TrainConfig(**FAST, out=str(tmp_path / "run"), steps=1, sft_steps=5), stop_event=stop)
    assert len((tmp_path / "run" / "warm_start.jsonl").read_text().splitlines()) == 1


def test_resumed_run_keeps_the_warm_started_reference(tmp_path):
    """A resume skips the warm start (the policy comes from the checkpoint), so the reference must come
    from the run folder, not from a copy of the freshly loaded base model."""
    cfg = dict(**FAST, out=str(tmp_path / "run"), sft_steps=3, algo_config={"beta": 0.04})
    first = Trainer(TrainConfig(**cfg, steps=1))
    warm_ref = {k: v.clone() for k, v in first.ref.state_dict().items()}
    first.run()
    resumed = Trainer(TrainConfig(**cfg, steps=2), resume=True)
    assert resumed.step == 1
    for k, v in resumed.ref.state_dict().items():
        assert torch.equal(v, warm_ref[k]), k
    base = Trainer(TrainConfig(**{**FAST, "out": str(tmp_path / "base")}, steps=1, algo_config={"beta": 0.04}))
    assert any(not torch.equal(a, b) for a, b in zip(base.ref.parameters(), resumed.ref.parameters()))
    (tmp_path / "run" / "reference.safetensors").unlink()
    with pytest.raises(Exception, match="reference.safetensors"):
        Trainer(TrainConfig(**cfg, steps=2), resume=True)


def test_micro_batched_sft_takes_the_same_steps_as_one_pass(fresh_tiny):
    """``micro_batch_size`` is memory only: a batch of 8 in parts of 3 (uneven, padded differently) gives the
    same losses and the same weights as one forward/backward over the 8 (TextWorld's long transcripts need it)."""
    from reference_impls.sft import demonstrations, sft

    results = []
    for micro in (None, 3):
        model, tokenizer = fresh_tiny()
        samples = demonstrations(tokenizer, "calculator", 16, seed=0, options={"levels": (1, 2, 3)})
        assert len({len(s.completion_ids) for s in samples}) > 1  # the parts really pad to different lengths
        losses = sft(model, tokenizer, samples, steps=3, lr=3e-3, seed=0, micro_batch_size=micro)
        results.append((losses, [p.detach().clone() for p in model.parameters()]))
    (full, full_params), (parts, part_params) = results
    assert parts == pytest.approx(full, rel=1e-5) and full[-1] < full[0]
    for a, b in zip(full_params, part_params):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_trainer_runs_the_one_warm_start(tmp_path, fresh_tiny):
    """``Trainer.warm_start`` is ``sft.warm_start`` with the run's settings (``WarmStartSettings.of_run``): called
    directly on a fresh copy of the model with those settings, it gives the same losses and weights. Its episodes
    are the run's only when it demonstrates the run's own env; no steps, no change."""
    from reference_impls.sft import WarmStartSettings, warm_start

    cfg = TrainConfig(**FAST, out=str(tmp_path / "run"), steps=1, sft_steps=2)
    trainer = Trainer(cfg)
    settings = WarmStartSettings.of_run(cfg, trainer.env_config)
    assert (settings.env, settings.examples, settings.steps, settings.lr, settings.seed) == ("calculator", 16, 2, 3e-3, 0)
    assert settings.episode_config is trainer.env_config
    model, tokenizer = fresh_tiny()
    assert warm_start(model, tokenizer, settings) == trainer.warm_start_losses
    for a, b in zip(model.parameters(), trainer.policy.parameters()):
        assert torch.equal(a, b)
    other = TrainConfig(**FAST, out=str(tmp_path / "other"), steps=1, sft_steps=2, sft_env="memory-format")
    assert WarmStartSettings.of_run(other, trainer.env_config).episode_config is None
    before = [p.detach().clone() for p in model.parameters()]
    assert warm_start(model, tokenizer, WarmStartSettings("calculator", 16, 0, 1e-3, 0)) == []
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
