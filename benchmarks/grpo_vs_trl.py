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

Same problems on both sides (``--multi-turn``): one problem sequence per seed (the train pool shuffled with
that seed), handed to TRL as an unshuffled dataset (``shuffle_dataset=False``, so step k sees problems
``kP..kP+P-1``, each repeated G times) and to our trainer through its ``draw`` seam (the same P problems at
step k). ``--seeds 0,1,2`` runs both trainers once per seed (the seed also seeds sampling) and reports the
per-step reward difference ours - TRL, paired on (seed, step), with a 95% t-interval: the two sides see the
same problems, so what remains is sampling noise and the trainers' updates.
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


def levels(a) -> list[int]:
    return [int(x) for x in str(a.levels).split(",")]


def problem_sequence(a) -> list:
    """The problems both trainers see, in order: the train pool shuffled with the run's seed; step k takes
    problems ``k*P .. k*P+P-1``."""
    import random

    from reference_impls.envs import get_env

    pool = list(get_env("calculator").problems("train", n=256, seed=0, levels=levels(a)))
    random.Random(a.seed).shuffle(pool)
    need = a.steps * a.prompts
    return (pool * (need // len(pool) + 1))[:need]


def prompts(n: int):
    from reference_impls.envs import get_env
    from reference_impls.envs.calculator import CalculatorEnv

    return [CalculatorEnv(p) for p in get_env("calculator").problems("train", n=n, seed=123, levels=(1, 2))]


def run_ours(a) -> dict:
    from reference_impls.train import Trainer, TrainConfig

    if a.multi_turn:
        trainer = Trainer(TrainConfig(
            algo="grpo", env="calculator", model=a.model, out="/tmp/grpo_vs_trl_ours", lr=a.lr, seed=a.seed,
            prompts_per_step=a.prompts, group_size=a.group_size, micro_batch_size=a.prompts * a.group_size,
            max_new_tokens_per_turn=a.turn_tokens, max_completion_tokens=a.max_completion_length, train_pool=256,
            env_options={"levels": levels(a)}, algo_config={"loss_type": a.loss_type, "beta": 0.0}))
        sequence = problem_sequence(a)
        # the algorithm's draw seam: step k gets the same P problems TRL's unshuffled sampler hands it
        drawn = []

        def draw(ctx, rng):
            chosen = [sequence.pop(0) for _ in range(a.prompts)]
            drawn.append([q.question for q in chosen])
            return chosen

        trainer.algo.draw = draw
        return {**_loop_ours(trainer, a), "problems": drawn}
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
    from reference_impls.trl_bridge import AtlasRollout, _key, environment_reward, prompt_dataset

    model, tok = load_policy(a.model, device="cpu")
    tok.padding_side = "left"
    options = {"levels": levels(a)}
    data, _, by_prompt = prompt_dataset("calculator", "train", 0, 0, options, problems=problem_sequence(a))
    rollout = AtlasRollout("calculator", by_prompt, options, a.turn_tokens, a.max_completion_length, 1.0,
                           engine=a.trl_engine)
    seen = []  # each step's problems, in TRL's order (one per group of G equal prompts)

    def rollout_func(prompts, trainer):
        seen.append([by_prompt[_key(m)].question for m in prompts[::a.group_size]])
        return rollout(prompts, trainer)

    timer = step_timer()
    times = timer.times

    n = a.prompts * a.group_size
    cfg = GRPOConfig(output_dir="/tmp/grpo_vs_trl_trl", use_cpu=True, bf16=False, report_to="none", max_steps=a.steps,
                     per_device_train_batch_size=n, num_generations=a.group_size, gradient_accumulation_steps=1,
                     max_completion_length=a.max_completion_length, temperature=1.0, learning_rate=a.lr,
                     loss_type=a.loss_type, beta=0.0, logging_steps=1, save_strategy="no", seed=a.seed,
                     lr_scheduler_type="constant", adam_beta2=0.99, gradient_checkpointing=False,
                     dataloader_num_workers=0, shuffle_dataset=False)
    trainer = GRPOTrainer(model=model, reward_funcs=environment_reward, args=cfg, train_dataset=data,
                          processing_class=tok, rollout_func=rollout_func, callbacks=[timer])
    trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h]
    # TRL's completion length counts model tokens only (env_mask); ours counts model + tool tokens: report
    # ours' definition on both sides, from the rollouts themselves
    return {"step_s": times, "completion_len_mean": [h["completions/mean_length"] for h in logs],
            "reward_mean": [sum(r) / len(r) for r in rollout.rewards], "tool_calls": rollout.tool_calls,
            "engine": a.trl_engine, "problems": seen}


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

    torch.manual_seed(a.seed)
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
    p.add_argument("--levels", default="1,2", help="--multi-turn: calculator levels of the problems, e.g. 1 or 1,2")
    p.add_argument("--seeds", default="0", help="--multi-turn: comma-separated seeds; both trainers run once per seed")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--results-dir", help="keep each (side, seed) result here and skip those already there (resume)")
    p.add_argument("--child", choices=["ours", "trl"])
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    if a.child:
        child(a.child, a)
        return 0
    out = Path(a.results_dir) if a.results_dir else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    if a.sft_steps:
        sft_dir = (out / "sft") if out else Path("/tmp/grpo_vs_trl_sft")
        if not (out and (sft_dir / "config.json").exists()):  # a results folder keeps its warm start
            subprocess.run([sys.executable, "-m", "reference_impls.sft", "--model", a.model, "--out", str(sft_dir),
                            "--steps", str(a.sft_steps)], cwd=ROOT, check=True,
                           env=dict(os.environ, HF_HUB_OFFLINE="1"))
        a.model, a.sft_steps = str(sft_dir), 0
    seeds = [int(x) for x in str(a.seeds).split(",")] if a.multi_turn else [a.seed]
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} CPU cores", "args": vars(a),
               "load_before": os.getloadavg(), "runs": {}}
    for seed in seeds:
        for which in ("ours", "trl"):
            cell = out / f"{which}_seed{seed}.json" if out else None
            if cell and cell.exists():  # finished before a stop: keep it
                results["runs"][f"{which}/{seed}"] = json.loads(cell.read_text())
                continue
            results["runs"][f"{which}/{seed}"] = r = run_child(which, seed, a)
            if cell:
                cell.write_text(json.dumps(r))
    for which in ("ours", "trl"):
        results[which] = summarise([results["runs"][f"{which}/{s}"] for s in seeds], a)
    results["ratio_s_per_step_ours_over_trl"] = results["ours"]["s_per_step_median"] / results["trl"]["s_per_step_median"]
    results["throughput_ratio_ours_over_trl"] = (results["ours"]["completion_tokens_per_s"]
                                                 / results["trl"]["completion_tokens_per_s"])
    results["ratio_peak_rss_ours_over_trl"] = results["ours"]["peak_rss_mb"] / results["trl"]["peak_rss_mb"]
    if a.multi_turn:  # same problems on both sides only there
        results["same_problems_every_step"] = all(results["runs"][f"ours/{s}"]["problems"]
                                                  == results["runs"][f"trl/{s}"]["problems"] for s in seeds)
        results["reward_ours_minus_trl"] = paired_reward_difference(results["runs"], seeds)
    results["load_after"] = os.getloadavg()
    print(json.dumps(results, indent=None if a.json else 2))
    return 0


def run_child(which: str, seed: int, a) -> dict:
    argv = [sys.executable, "-m", "benchmarks.grpo_vs_trl", "--child", which, "--seed", str(seed)]
    argv += [x for k, v in vars(a).items() if k not in ("child", "json", "multi_turn", "seed", "seeds", "results_dir")
             and v is not None and v is not False for x in (f"--{k.replace('_', '-')}", str(v))]
    if a.multi_turn:
        argv.append("--multi-turn")
    t0 = time.time()
    load = os.getloadavg()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"{which} (seed {seed}) failed:\n{proc.stderr[-4000:]}")
    r = json.loads(line[-1][len("RESULT "):])
    r.update(seed=seed, wall_s=time.time() - t0, load_before=load, load_after=os.getloadavg())
    return r


def summarise(runs: list[dict], a) -> dict:
    """One side over its seeds: median s/step (the first step of each run is warm-up), completion tokens
    per second over the timed steps, mean reward over all steps and per step, the largest peak RSS."""
    timed = [t for r in runs for t in (r["step_s"][1:] or r["step_s"])]
    n = a.prompts * a.group_size
    tokens = sum(n * sum(r["completion_len_mean"][1:] if len(r["step_s"]) > 1 else r["completion_len_mean"])
                 for r in runs)
    per_step = [statistics.mean(r["reward_mean"][k] for r in runs) for k in range(min(len(r["reward_mean"]) for r in runs))]
    return {"s_per_step_median": statistics.median(timed), "completion_tokens_per_s": tokens / sum(timed),
            "reward_mean_all_steps": statistics.mean(x for r in runs for x in r["reward_mean"]),
            "reward_mean_per_step": per_step, "peak_rss_mb": max(r["peak_rss_mb"] for r in runs)}


def paired_reward_difference(runs: dict, seeds: list[int]) -> dict:
    """Mean over (seed, step) of reward(ours) - reward(TRL) on the same problems, with a 95% t-interval
    (each pair is one step's mean over its P x G episodes)."""
    diffs = [o - t for s in seeds for o, t in zip(runs[f"ours/{s}"]["reward_mean"], runs[f"trl/{s}"]["reward_mean"])]
    mean = statistics.mean(diffs)
    if len(diffs) < 2:
        return {"mean": mean, "n_pairs": len(diffs), "ci95": None}
    from scipy import stats

    half = stats.t.ppf(0.975, len(diffs) - 1) * statistics.stdev(diffs) / len(diffs) ** 0.5
    return {"mean": mean, "n_pairs": len(diffs), "ci95": [mean - half, mean + half]}


if __name__ == "__main__":
    sys.exit(main())
