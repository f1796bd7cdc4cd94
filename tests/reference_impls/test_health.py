"""Training health (reference_impls/health.py, issue 61): each rule on hand-made steps, none of the metric rules on
the comparison grid's healthy cells, DAPO's recorded entropy collapse caught, a run built to collapse warned within
its first steps (in the log and in health.jsonl), and the trainer's CLI writing the warnings."""
import json
from pathlib import Path

import pytest

from lab.shipped import RESULTS
from reference_impls.callbacks import HealthLogger
from reference_impls.health import check_run, degenerate
from reference_impls.rundir import RunDir
from reference_impls.run_config import TrainConfig
from reference_impls.trainer import Trainer
from toy_env import make_task

CELLS = RESULTS / "core" / "cells"


def _codes(rows, samples=None, **kw):
    return [w.code for w in check_run(rows, samples or [], **kw)]


def _sample(step, text, truncated=False):
    return {"step": step, "truncated": truncated, "segments": [{"role": "prompt", "text": "Q"},
                                                               {"role": "model", "text": text}]}


def test_degenerate_text():
    assert degenerate("!!!!!!!!!!!!!!!") and degenerate("the the the the the the the the cat")
    assert not degenerate("<calc>12*3</calc><answer>36</answer>") and not degenerate("a a a b")


def test_each_rule_on_hand_made_steps():
    steady = {"entropy": 0.7, "clip_frac": 0.01, "zero_advantage_groups_frac": 0.25, "kl": 0.01,
              "reward_mean": 0.4, "accuracy": 0.4, "completion_len_mean": 30}
    rows = [dict(steady, step=s) for s in range(1, 7)]
    assert _codes(rows, max_completion_tokens=64) == []
    assert _codes(rows[:2] + [dict(rows[2], entropy=0.05)]) == ["entropy-collapse"]
    assert _codes(rows[:1] + [dict(rows[1], clip_frac=0.4)]) == ["clip-saturated"]
    assert _codes(rows[:1] + [dict(rows[1], clip_frac=0.4)], sequence_level_clip=True) == []
    assert _codes([dict(r, zero_advantage_groups_frac=1.0) for r in rows[:2]]) == []  # two steps: not yet
    assert _codes([dict(r, zero_advantage_groups_frac=1.0) for r in rows[:3]]) == ["no-signal"]
    assert _codes(rows[:1] + [dict(rows[1], kl=2.0)]) == ["kl-runaway"]
    assert _codes([dict(r, kl=0.02 * 20 ** (r["step"] > 4)) for r in rows]) == ["kl-runaway"]
    assert _codes([dict(r, kl=0.015 * 11 ** (r["step"] > 4)) for r in rows]) == []  # 0.165: risen, not run away
    assert _codes([dict(r, completion_len_mean=63) for r in rows[:1]], max_completion_tokens=64) == ["length-at-cap"]
    hacked = [dict(r, reward_mean=0.2 + 0.1 * i, accuracy=0.5 - 0.05 * i) for i, r in enumerate(rows)]
    assert _codes(hacked) == ["reward-hacking"]
    samples = [_sample(2, "!" * 20), _sample(2, "!!!!!!!!!!!!!!!!"), _sample(2, "<answer>3</answer>")]
    warnings = check_run(rows[:2], samples)
    assert [w.code for w in warnings] == ["degenerate"] and warnings[0].step == 2
    assert "Try:" in warnings[0].line() and "step 2" in warnings[0].line()
    cut = [_sample(1, "x", truncated=True), _sample(1, "y", truncated=True)]
    assert _codes(rows[:1], cut) == ["length-at-cap"]
    # each warning once, at its first step
    assert _codes([dict(r, clip_frac=0.5) for r in rows]) == ["clip-saturated"]


def _cell_codes(path: Path) -> list[str]:
    cell = json.loads(path.read_text())
    rows = [d for d in cell["diagnostics"] if d.get("phase") != "critic"]
    return _codes(rows, max_completion_tokens=cell["config"]["max_completion_tokens"],
                  sequence_level_clip="gspo" in path.name)


@pytest.mark.parametrize("impl", ["grpo", "dr-grpo", "rloo", "gspo"])
def test_the_grids_healthy_cells_raise_no_metric_warning(impl):
    paths = sorted(CELLS.glob(f"calculator-{impl}-s*.json"))
    assert len(paths) == 10 and all(_cell_codes(p) == [] for p in paths)


def test_ppo_cells_raise_only_one_entropy_warning():
    """PPO's cells are healthy too except seed 9, whose entropy ended at 8% of its first step's (0.08 of the
    first: under the 10% bar); no other rule fires on any seed."""
    raised = {p.name: _cell_codes(p) for p in sorted(CELLS.glob("calculator-ppo-s*.json"))}
    assert {name: codes for name, codes in raised.items() if codes} == {"calculator-ppo-s9.json": ["entropy-collapse"]}


def test_dapos_recorded_entropy_collapse_is_caught():
    """The re-run's DAPO cells: entropy under 0.05 in 7 of 10 seeds at 16 updates per batch (issue 61)."""
    caught = sum("entropy-collapse" in _codes([d for d in json.loads(p.read_text())["diagnostics"]])
                 for p in CELLS.glob("calculator-dapo-s*.json"))
    assert caught >= 7


def test_a_run_built_to_collapse_is_warned_in_its_first_steps(fresh_tiny, tmp_path, capsys):
    """A learning rate far too high on a task where every batch carries signal: the policy piles onto a few tokens
    within a few steps; the log and health.jsonl say so."""
    model, tok = fresh_tiny()
    cfg = TrainConfig(algo="grpo", env="half_vocab", model="tiny", out=str(tmp_path / "run"), lr=0.5, steps=4,
                      prompts_per_step=2, group_size=8, max_new_tokens_per_turn=16, max_completion_tokens=16,
                      micro_batch_size=16, train_pool=8, temperature=1.0)
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    logger = HealthLogger(trainer.out, cfg.max_completion_tokens)
    trainer.out.mkdir(parents=True, exist_ok=True)
    trainer.add_callback("on_step_end", logger)
    trainer.t_start = 0.0
    for _ in range(cfg.steps):  # as Trainer.run does, without its checkpoints
        trainer.last_metrics, trainer.last_samples = trainer.train_step()
        trainer.trigger("on_step_end")
    raised = [json.loads(line) for line in RunDir(trainer.out).health_path.read_text().splitlines()]
    codes = {w["code"]: w["step"] for w in raised}
    assert "entropy-collapse" in codes and "degenerate" in codes, raised
    assert max(codes["entropy-collapse"], codes["degenerate"]) <= 4
    log = capsys.readouterr().err
    assert "entropy collapsed" in log and "degenerated into repetition" in log


def test_the_trainer_cli_writes_health_warnings(tmp_path, capsys):
    """The tiny random model on the calculator never answers right: every group has equal rewards, which the
    CLI's run warns about by its third step."""
    from reference_impls.train import main

    out = tmp_path / "run"
    assert main(["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--steps", "3", "--group-size", "2",
                 "--prompts-per-step", "2", "--max-completion-tokens", "8", "--max-new-tokens-per-turn", "8",
                 "--out", str(out)]) == 0
    raised = [json.loads(line) for line in RunDir(out).health_path.read_text().splitlines()]
    assert [w["code"] for w in raised if w["code"] == "no-signal"] == ["no-signal"]
    assert "most groups carry no advantage" in capsys.readouterr().err


def test_a_learning_rate_of_zero_is_a_no_update_control(fresh_tiny, tmp_path):
    """lr 0 is accepted (a learning claim's control) and leaves every weight as it was, through a real update."""
    import torch

    model, tok = fresh_tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = TrainConfig(algo="grpo", env="half_vocab", model="tiny", out=str(tmp_path / "run"), lr=0.0, steps=1,
                      prompts_per_step=2, group_size=4, max_new_tokens_per_turn=4, max_completion_tokens=4,
                      micro_batch_size=8, train_pool=4, weight_decay=0.1)
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = 0.0
    metrics, _ = trainer.train_step()
    assert metrics["grad_norm"] > 0  # there was a gradient; the rate kept it from moving anything
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def _rewards_by_step(fresh_tiny, tmp_path, name: str, **options) -> tuple[list[float], dict]:
    model, tok = fresh_tiny()
    cfg = TrainConfig(algo="grpo", env="half_vocab", model="tiny", out=str(tmp_path / name), steps=3,
                      prompts_per_step=2, group_size=4, max_new_tokens_per_turn=6, max_completion_tokens=6,
                      micro_batch_size=8, train_pool=8, **options)
    trainer = Trainer(cfg, task=make_task(model, tok), model=model, tokenizer=tok)
    trainer.t_start = 0.0
    rewards = [trainer.train_step()[0]["reward_mean"] for _ in range(cfg.steps)]
    return rewards, model.state_dict()


def test_no_update_samples_what_the_lr_0_run_samples(fresh_tiny, tmp_path):
    """--no-update (the learning benchmark's control arm) skips the loss: its rewards are the lr-0 run's, step by
    step, and its weights stay the starting model's; a run that learns samples other rewards (the check bites)."""
    import torch

    start = fresh_tiny()[0].state_dict()
    with_update, _ = _rewards_by_step(fresh_tiny, tmp_path, "lr0", lr=0.0)
    without, weights = _rewards_by_step(fresh_tiny, tmp_path, "no-update", lr=0.0, update=False)
    learning, _ = _rewards_by_step(fresh_tiny, tmp_path, "learns", lr=0.5)
    assert without == with_update
    assert learning[0] == with_update[0] and learning[1:] != with_update[1:]
    assert all(torch.equal(start[k], v) for k, v in weights.items())


def test_no_update_needs_lr_0_and_a_default_draw():
    from reference_impls.options import ConfigError
    from reference_impls.run_config import resolve

    with pytest.raises(ConfigError, match="set --lr 0") as err:
        resolve(TrainConfig(algo="grpo", model="tiny", lr=1e-5, update=False))
    assert err.value.field == "update"
    with pytest.raises(ConfigError, match="draws its problems") as err:
        resolve(TrainConfig(algo="greso", model="tiny", lr=0.0, update=False))
    assert err.value.field == "update"
    assert resolve(TrainConfig(algo="grpo", model="tiny", lr=0.0, update=False)).cfg.update is False


def test_a_no_update_run_goes_through_the_cli(tmp_path, capsys):
    """The CLI's callbacks (progress line, health, metrics.jsonl) take a step without a loss."""
    from reference_impls.train import main

    out = tmp_path / "run"
    assert main(["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--steps", "2", "--group-size", "2",
                 "--prompts-per-step", "2", "--max-completion-tokens", "8", "--max-new-tokens-per-turn", "8",
                 "--lr", "0", "--no-update", "--out", str(out)]) == 0
    rows = RunDir(out).metrics()
    assert [r["step"] for r in rows] == [1, 2] and all(r["policy_updates"] == 0 and "loss" not in r for r in rows)
    assert "loss none (no update)" in capsys.readouterr().err
