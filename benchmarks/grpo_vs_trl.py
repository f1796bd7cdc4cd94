"""Our GRPO step vs TRL 1.16's GRPOTrainer on the same model, prompts, group size, lengths and loss type.

    .venv/bin/python benchmarks/grpo_vs_trl.py --steps 4 --json

Each side runs in its own subprocess (so peak memory is its own): the same SmolLM2-135M-Instruct,
the same calculator train prompts (chat messages), ``prompts x group_size`` completions per step,
single turn (TRL's plain GRPO has no tool loop, so ours runs with ``max_tool_calls=0``: the first tool
call or answer ends the episode), the same max completion length, temperature 1, ``loss_type`` and
beta 0, fp32 on CPU. Reports seconds per step (median over the steps after the first, which is
warm-up), completion tokens per second (the throughput: the two sides sample different lengths), the
mean training reward, and peak resident memory (ru_maxrss) for each, and their ratios.

``--multi-turn``: the calculator with its tool over several turns, both sides from the same checkpoint
(``--model``: a warm-started folder; ``--sft-steps N`` makes one first with ``reference_impls.sft``), the
same problem pool, group size, per-turn and episode lengths and loss type. TRL runs our environment through
``reference_impls.trl_bridge.AtlasRollout`` (its ``rollout_func``), by default with the ``generate`` engine:
``model.generate`` over the whole conversation every turn, which is what TRL's own tool loop does
(SmolLM2's chat template cannot render TRL's JSON tool calls, so its ``environment_factory`` path does not
apply; docs/scaling_out.md). ``--trl-engine cached`` gives TRL our engine instead, to separate the
engine's share of the difference from the trainer's.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def prompts(n: int):
    from reference_impls.envs import get_env
    from reference_impls.envs.calculator import CalculatorEnv

    return [CalculatorEnv(p) for p in get_env("calculator").problems("train", n=n, seed=123, levels=(1, 2))]


def run_ours(a) -> dict:
    from reference_impls.train import Trainer, TrainConfig

    if a.multi_turn:
        return _loop_ours(Trainer(TrainConfig(
            algo="grpo", env="calculator", model=a.model, out="/tmp/grpo_vs_trl_ours", lr=a.lr, seed=0,
            prompts_per_step=a.prompts, group_size=a.group_size, micro_batch_size=a.prompts * a.group_size,
            max_new_tokens_per_turn=a.turn_tokens, max_completion_tokens=a.max_completion_length, train_pool=256,
            env_options={"levels": [1, 2]}, algo_config={"loss_type": a.loss_type, "beta": 0.0})), a)
    cfg = TrainConfig(algo="grpo", env="calculator", model=a.model, out="/tmp/grpo_vs_trl_ours", lr=a.lr,
                      prompts_per_step=a.prompts, group_size=a.group_size, micro_batch_size=a.prompts * a.group_size,
                      max_new_tokens_per_turn=a.max_completion_length, max_completion_tokens=a.max_completion_length,
                      env_options={"levels": [1, 2], "max_tool_calls": 0}, algo_config={"loss_type": a.loss_type, "beta": 0.0})
    return _loop_ours(Trainer(cfg), a)


def _loop_ours(trainer, a) -> dict:
    trainer.t_start = time.time()
    times, tokens, rewards = [], [], []
    for _ in range(a.steps):
        t0 = time.time()
        metrics, _ = trainer.train_step()
        times.append(time.time() - t0)
        tokens.append(metrics["completion_len_mean"])
        rewards.append(metrics["reward_mean"])
    return {"step_s": times, "completion_len_mean": tokens, "reward_mean": rewards}


def step_timer():
    """A TRL callback recording each optimisation step's wall time in ``.times``."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times = []

        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.time()

        def on_step_end(self, args, state, control, **kw):
            self.times.append(time.time() - self.t0)

    return StepTimer()


def run_trl_multi_turn(a) -> dict:
    from trl import GRPOConfig, GRPOTrainer

    from reference_impls.models import load_policy
    from reference_impls.trl_bridge import AtlasRollout, environment_reward, prompt_dataset

    model, tok = load_policy(a.model, device="cpu")
    tok.padding_side = "left"
    options = {"levels": [1, 2]}
    data, _, by_prompt = prompt_dataset("calculator", "train", 256, 0, options)
    rollout = AtlasRollout("calculator", by_prompt, options, a.turn_tokens, a.max_completion_length, 1.0,
                           engine=a.trl_engine)
    timer = step_timer()
    times = timer.times

    n = a.prompts * a.group_size
    cfg = GRPOConfig(output_dir="/tmp/grpo_vs_trl_trl", use_cpu=True, bf16=False, report_to="none", max_steps=a.steps,
                     per_device_train_batch_size=n, num_generations=a.group_size, gradient_accumulation_steps=1,
                     max_completion_length=a.max_completion_length, temperature=1.0, learning_rate=a.lr,
                     loss_type=a.loss_type, beta=0.0, logging_steps=1, save_strategy="no", seed=0,
                     lr_scheduler_type="constant", adam_beta2=0.99, gradient_checkpointing=False,
                     dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=environment_reward, args=cfg, train_dataset=data,
                          processing_class=tok, rollout_func=rollout, callbacks=[timer])
    trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    # TRL's completion length counts model tokens only (env_mask); ours counts model + tool tokens: report
    # ours' definition on both sides, from the rollouts themselves
    return {"step_s": times, "completion_len_mean": [h["completions/mean_length"] for h in logs],
            "reward_mean": [sum(r) / len(r) for r in rollout.rewards], "tool_calls": rollout.tool_calls,
            "engine": a.trl_engine}


def run_trl(a) -> dict:
    import torch

    if a.multi_turn:
        return run_trl_multi_turn(a)
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from reference_impls.models import load_policy

    model, tok = load_policy(a.model, device="cpu")
    envs = prompts(256)
    by_question = {e.problem.question: e for e in envs}
    data = Dataset.from_list([{"prompt": e.reset(), "question": e.problem.question} for e in envs])

    def reward(completions, question, **_):
        out = []
        for c, q in zip(completions, question):
            text = c[0]["content"] if isinstance(c, list) else c
            out.append(by_question[q].step(text).reward if "<answer>" in text else 0.0)
        return out

    timer = step_timer()
    times = timer.times

    n = a.prompts * a.group_size
    cfg = GRPOConfig(output_dir="/tmp/grpo_vs_trl_trl", use_cpu=True, bf16=False, report_to="none", max_steps=a.steps,
                     per_device_train_batch_size=n, num_generations=a.group_size, gradient_accumulation_steps=1,
                     max_completion_length=a.max_completion_length, temperature=1.0, learning_rate=a.lr,
                     loss_type=a.loss_type, beta=0.0, logging_steps=1, save_strategy="no", seed=0, top_k=0,
                     dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=cfg, train_dataset=data, processing_class=tok,
                          callbacks=[timer])
    trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    return {"step_s": times, "completion_len_mean": [h["completions/mean_length"] for h in logs],
            "reward_mean": [h.get("reward") for h in logs]}


def child(which: str, a) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    torch.manual_seed(0)
    result = run_ours(a) if which == "ours" else run_trl(a)
    result["peak_rss_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(result), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--prompts", type=int, default=2)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-completion-length", type=int, default=32)
    p.add_argument("--loss-type", default="dapo")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--multi-turn", action="store_true", help="the calculator's tool over several turns (see above)")
    p.add_argument("--turn-tokens", type=int, default=24, help="--multi-turn: max new tokens per turn")
    p.add_argument("--trl-engine", choices=("generate", "cached"), default="generate")
    p.add_argument("--sft-steps", type=int, default=0, help="--multi-turn: warm-start --model first into "
                   "/tmp/grpo_vs_trl_sft (then both sides start from it)")
    p.add_argument("--child", choices=["ours", "trl"])
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.child:
        child(a.child, a)
        return 0
    if a.sft_steps:
        subprocess.run([sys.executable, "-m", "reference_impls.sft", "--model", a.model, "--out", "/tmp/grpo_vs_trl_sft",
                        "--steps", str(a.sft_steps)], cwd=ROOT, check=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
        a.model, a.sft_steps = "/tmp/grpo_vs_trl_sft", 0
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} CPU cores", "args": vars(a),
               "load_before": os.getloadavg()}
    for which in ("ours", "trl"):
        argv = [sys.executable, "-m", "benchmarks.grpo_vs_trl", "--child", which] + [x for k, v in vars(a).items()
                                                              if k not in ("child", "json", "multi_turn")
                                                              and v is not None and v is not False
                                                              for x in (f"--{k.replace('_', '-')}", str(v))]
        if a.multi_turn:
            argv.append("--multi-turn")
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
        if proc.returncode != 0 or not line:
            raise SystemExit(f"{which} failed:\n{proc.stderr[-4000:]}")
        r = json.loads(line[-1][len("RESULT "):])
        timed = r["step_s"][1:] or r["step_s"]
        r["s_per_step_median"] = statistics.median(timed)
        # completion tokens generated and trained on per second, over the timed steps: the fair throughput
        # figure when the two sides' samples differ in length
        n = a.prompts * a.group_size
        lens = r["completion_len_mean"][1:] if len(r["step_s"]) > 1 else r["completion_len_mean"]
        r["completion_tokens_per_s"] = n * sum(lens) / sum(timed) if timed and lens else None
        r["reward_mean_all_steps"] = statistics.mean(r["reward_mean"]) if r["reward_mean"] else None
        results[which] = r
    results["ratio_s_per_step_ours_over_trl"] = results["ours"]["s_per_step_median"] / results["trl"]["s_per_step_median"]
    results["throughput_ratio_ours_over_trl"] = (results["ours"]["completion_tokens_per_s"]
                                                 / results["trl"]["completion_tokens_per_s"])
    results["ratio_peak_rss_ours_over_trl"] = results["ours"]["peak_rss_mb"] / results["trl"]["peak_rss_mb"]
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=None if a.json else 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
