"""Our environments on TRL's GRPOTrainer (reference_impls/trl_bridge.py) and the export for a cluster
(reference_impls/export.py): the exported recipe trains 2 steps on CPU, our environment's tool is called
over several turns, TRL's logged reward is our environment's, and tool text is parsed, never run."""
import json
import subprocess
import sys

import pytest
import torch

from reference_impls import export, train, trl_bridge
from reference_impls.envs import get_env
from reference_impls.options import ConfigError
from scripted_policies import nudged_tiny

CALC_REPLIES = ("<calc>7+8</calc>", "<calc>12*3</calc>", "<answer>15</answer>")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    assert train.main(["--algo", "grpo", "--loss-type", "dapo", "--overlong-buffer", "8", "--env", "calculator",
                       "--model", "tiny", "--steps", "1", "--prompts-per-step", "2", "--group-size", "4",
                       "--max-new-tokens-per-turn", "16", "--max-completion-tokens", "48", "--out", str(out)]) == 0
    return out


def test_export_maps_every_setting_or_says_why_not(tiny_run, tmp_path):
    spec = export.export_trl(tiny_run, tmp_path / "x")
    g = spec["grpo_config"]
    assert g["num_generations"] == 4 and g["max_completion_length"] == 48 and g["loss_type"] == "dapo"
    assert g["per_device_train_batch_size"] == 8 and g["scale_rewards"] == "group" and g["max_steps"] == 1
    assert spec["overlong"] == {"buffer": 8, "penalty": 1.0}
    assert spec["model"].endswith("step_000001")  # the run's checkpoint, not the random model
    readme = (tmp_path / "x" / "README.md").read_text()
    for name in (*export.TRAIN_TO_TRL, *export.GRPO_TO_TRL, *export.NO_TRL_EQUIVALENT):
        assert f"`{name}`" in readme, name
    for f in ("train_trl.py", "accelerate_multi_gpu.yaml", "verl_grpo.yaml", "export.json"):
        assert (tmp_path / "x" / f).is_file()
    assert "NOT RUN HERE" in (tmp_path / "x" / "verl_grpo.yaml").read_text()


def test_export_refuses_algorithms_without_a_trl_counterpart(tmp_path):
    cfg = {"algo": "ppo", "algo_config": {}}
    with pytest.raises(ConfigError, match="'ppo'.*GRPO family"):
        export.trl_config(cfg)
    assert export.main(["--run", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2


def test_exported_script_trains_two_steps_on_cpu(tiny_run, tmp_path):
    out = tmp_path / "x"
    export.export_trl(tiny_run, out)
    proc = subprocess.run([sys.executable, str(out / "train_trl.py"), "--use-cpu", "--max-steps", "2",
                           "--output-dir", str(tmp_path / "trl")], capture_output=True, text=True, cwd=tmp_path,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rewards/environment_reward/mean" in proc.stderr + proc.stdout
    assert (tmp_path / "trl" / "model.safetensors").exists()


def test_trl_runs_our_multi_turn_rollout_and_logs_our_reward(tiny_run, tmp_path, tiny):
    spec = export.export_trl(tiny_run, tmp_path / "x")
    model = nudged_tiny(tiny[0], tiny[1], CALC_REPLIES)
    trainer = trl_bridge.build_trainer(spec, model=model, tokenizer=tiny[1], use_cpu=True, max_steps=2,
                                       output_dir=str(tmp_path / "trl"), save_strategy="no")
    trainer.train()
    rollout = trainer.atlas_rollout
    assert rollout.episodes == 16 and rollout.tool_calls > 0  # 2 steps x 2 prompts x 4 samples; tools called
    logged = [h["rewards/environment_reward/mean"] for h in trainer.state.log_history
              if "rewards/environment_reward/mean" in h]
    assert logged == pytest.approx([sum(r) / len(r) for r in rollout.rewards])


def test_rollout_func_masks_environment_tokens(tiny, tmp_path):
    _, problems, by_prompt = trl_bridge.prompt_dataset("calculator", "train", 3, 0, {})
    policy = nudged_tiny(tiny[0], tiny[1], CALC_REPLIES)

    class FakeTrainer:  # what AtlasRollout reads from GRPOTrainer
        model, processing_class = policy, tiny[1]

        class accelerator:
            @staticmethod
            def unwrap_model(m):
                return m

    prompts = [json.loads(k) for k in by_prompt for _ in range(2)]
    # sampling draws from torch's global stream: seed it, so that what the six episodes do does not depend on
    # which tests ran before in this process (with seeds 0-19, 18 of 20 batches call the tool at least once)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        atlas = trl_bridge.AtlasRollout("calculator", by_prompt, {}, 16, 64)
        out = atlas(prompts, FakeTrainer())
    assert len(out["completion_ids"]) == 6
    # the token counts a benchmark compares with our trainer's: the model's tokens apart from the tool results'
    assert atlas.model_tokens == [pytest.approx(sum(sum(m) for m in out["env_mask"]) / 6)]
    assert atlas.completion_tokens == [pytest.approx(sum(len(i) for i in out["completion_ids"]) / 6)]
    assert atlas.model_tokens[0] < atlas.completion_tokens[0]
    for ids, mask, lps in zip(out["completion_ids"], out["env_mask"], out["logprobs"]):
        assert len(ids) == len(mask) == len(lps)
        assert all(lp == 0.0 for lp, m in zip(lps, mask) if m == 0)  # environment tokens carry no log-prob
    assert any(0 in m for m in out["env_mask"])  # some episode called the tool and got a result back
    with pytest.raises(ValueError, match="not one of the dataset's problems"):
        trl_bridge.AtlasRollout("calculator", by_prompt, {}, 16, 64)([[{"role": "user", "content": "hi"}]],
                                                                      FakeTrainer())


def test_environment_factory_class_parses_tool_arguments_never_runs_them():
    _, problems, _ = trl_bridge.prompt_dataset("calculator", "train", 2, 0, {})
    Env = trl_bridge.environment_class("calculator", problems, {})
    tool = get_env("calculator").make(problems[0]).tool.name
    env = Env()
    env.reset(problem_index=0)
    assert getattr(env, tool)("2+3").strip() == "5"
    hostile = getattr(env, tool)("__import__('os').system('touch /tmp/pwned')")
    assert "error" in hostile.lower() or "invalid" in hostile.lower()
    problem = problems[0]
    answer = str(problem.answer) if hasattr(problem, "answer") else "0"
    assert trl_bridge.environment_answer_reward([[{"role": "assistant", "content": answer}]], [env])[0] > 0
    assert "Args:" in getattr(Env, tool).__doc__  # TRL builds the tool schema from the docstring
