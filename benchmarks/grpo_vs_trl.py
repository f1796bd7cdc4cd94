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
same problems, so what remains is sampling noise and the trainers' updates. The reward difference is also
reported with the seed as the unit (each seed's mean difference over its steps, a t-interval over seeds): the
steps of one run are not independent, so the (seed, step) interval is the narrower, less safe one.

How it is measured (issue 42): tokens are counted alike on both sides from the rollouts themselves: ``model``
tokens (what the policy wrote, loss-masked in) and ``completion`` tokens (the model's plus the tool results');
TRL's own ``completions/mean_length`` is kept beside them. Throughput is model tokens per second. The two
sides alternate which runs first (seed 0: ours first; seed 1: TRL first; ...), each child pins torch to
``--threads`` threads (recorded), and the 1-minute load is sampled every minute while the benchmark runs.
``--trl-engine generate,cached`` runs TRL once per engine beside one run of ours per seed, so the trainer's
share and the rollout engine's share of the difference are separate figures.
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
import threading
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
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

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
    times, tokens, rewards, model_tokens, completion_tokens = [], [], [], [], []
    for _ in range(a.steps):
        t0 = time.time()
        metrics, samples = trainer.train_step()
        times.append(time.time() - t0)
        tokens.append(metrics["completion_len_mean"])
        rewards.append(metrics["reward_mean"])
        model_tokens.append(sum(sum(s.loss_mask) for s in samples) / max(len(samples), 1))
        completion_tokens.append(sum(len(s.completion_ids) for s in samples) / max(len(samples), 1))
    return {"step_s": times, "completion_len_mean": tokens, "reward_mean": rewards, "model_tokens": model_tokens,
            "completion_tokens": completion_tokens}


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
    # TRL's completions/mean_length counts model tokens only (env_mask), our completion_len_mean model + tool
    # tokens: the comparison uses model_tokens / completion_tokens, counted alike from the rollouts
    return {"step_s": times, "completion_len_mean": [h["completions/mean_length"] for h in logs],
            "reward_mean": [sum(r) / len(r) for r in rollout.rewards], "tool_calls": rollout.tool_calls,
            "model_tokens": rollout.model_tokens, "completion_tokens": rollout.completion_tokens,
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
    lengths = [h["completions/mean_length"] for h in logs]
    return {"step_s": times, "completion_len_mean": lengths, "reward_mean": [h.get("reward") for h in logs],
            "model_tokens": lengths, "completion_tokens": lengths}  # single turn: no tool tokens


def child(which: str, a) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    result = run_ours(a) if which == "ours" else run_trl(a)
    result["peak_rss_mb"] = peak_rss_mb()
    result["torch_threads"] = torch.get_num_threads()
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
    p.add_argument("--trl-engine", default="generate",
                   help="--multi-turn: TRL's rollout engine(s), generate and/or cached, comma-separated "
                        "(one TRL run per engine and seed beside one of ours)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads in each side's process")
    p.add_argument("--sft-steps", type=int, default=0, help="--multi-turn: warm-start --model first into "
                   "/tmp/grpo_vs_trl_sft (then both sides start from it)")
    p.add_argument("--levels", default="1,2", help="--multi-turn: calculator levels of the problems, e.g. 1 or 1,2")
    p.add_argument("--seeds", default="0", help="--multi-turn: comma-separated seeds; both trainers run once per seed")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--results-dir", help="keep each (side, seed) result here and skip those already there (resume)")
    p.add_argument("--child", choices=["ours", "trl"])
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    engines = [e for e in str(a.trl_engine).split(",") if e]
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines or (len(engines) > 1 and not a.multi_turn):
        p.error(f"--trl-engine: one or more of {', '.join(ENGINES)} (several only with --multi-turn), not {a.trl_engine!r}")
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
    sides = ["ours"] + [side_name(e, engines) for e in engines]
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} CPU cores", "args": vars(a),
               "versions": versions(), "load_before": os.getloadavg(), "runs": {}}
    sampler = LoadSampler()
    for i, seed in enumerate(seeds):
        # alternate which side runs first, so a drift of the machine's load does not always favour one side
        for which in (sides if i % 2 == 0 else sides[::-1]):
            cell = out / f"{which}_seed{seed}.json" if out else None
            if cell and cell.exists():  # finished before a stop: keep it
                results["runs"][f"{which}/{seed}"] = json.loads(cell.read_text())
                continue
            engine = which.split("-", 1)[1] if "-" in which else engines[0]
            results["runs"][f"{which}/{seed}"] = r = run_child(which.split("-")[0], seed, a, engine)
            r["order"] = "ours first" if i % 2 == 0 else "trl first"
            if cell:
                cell.write_text(json.dumps(r))
    for which in sides:
        results[which] = summarise([results["runs"][f"{which}/{s}"] for s in seeds], a)
    for trl in sides[1:]:
        tag = "" if trl == "trl" else "_" + trl.split("-", 1)[1]
        results[f"ratio_s_per_step_ours_over_trl{tag}"] = results["ours"]["s_per_step_median"] / results[trl]["s_per_step_median"]
        results[f"throughput_ratio_ours_over_trl{tag}"] = (results["ours"]["model_tokens_per_s"]
                                                           / results[trl]["model_tokens_per_s"])
        results[f"ratio_peak_rss_ours_over_trl{tag}"] = results["ours"]["peak_rss_mb"] / results[trl]["peak_rss_mb"]
        if a.multi_turn:  # same problems on both sides only there
            results[f"same_problems_every_step{tag}"] = all(results["runs"][f"ours/{s}"]["problems"]
                                                           == results["runs"][f"{trl}/{s}"]["problems"] for s in seeds)
            results[f"reward_ours_minus_trl{tag}"] = paired_reward_difference(results["runs"], seeds, trl)
            results[f"reward_ours_minus_trl_by_seed{tag}"] = seed_reward_difference(results["runs"], seeds, trl)
    results["load_after"] = os.getloadavg()
    results["load_per_minute"] = sampler.stop()
    print(json.dumps(results, indent=None if a.json else 2))
    return 0


ENGINES = ("generate", "cached")


def side_name(engine: str, engines: list[str]) -> str:
    """``trl`` with one engine (the names earlier results folders used), ``trl-<engine>`` with several."""
    return "trl" if len(engines) == 1 else f"trl-{engine}"


def versions() -> dict:
    from importlib.metadata import version

    out = {}
    for name in ("torch", "transformers", "trl"):
        try:
            out[name] = version(name)
        except Exception:  # noqa: BLE001 - a missing package is recorded, not fatal
            out[name] = None
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        out["commit"] = None
    return out


class LoadSampler:
    """The 1-minute load average, sampled every ``every`` seconds in a daemon thread until ``stop()``."""

    def __init__(self, every: float = 60.0):
        self.samples = [(0.0, os.getloadavg()[0])]
        self.t0, self.every, self.done = time.time(), every, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.done.wait(self.every):
            self.samples.append((round(time.time() - self.t0, 1), os.getloadavg()[0]))

    def stop(self) -> list[tuple[float, float]]:
        self.done.set()
        return self.samples


def run_child(which: str, seed: int, a, engine: str) -> dict:
    argv = [sys.executable, "-m", "benchmarks.grpo_vs_trl", "--child", which, "--seed", str(seed), "--trl-engine", engine]
    argv += [x for k, v in vars(a).items()
             if k not in ("child", "json", "multi_turn", "seed", "seeds", "results_dir", "trl_engine")
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
    """One side over its seeds: median s/step (the first step of each run is warm-up), model and completion
    tokens per second over the timed steps (counted alike on both sides), mean reward over all steps and per
    step, the largest peak RSS, the torch threads."""
    timed = [t for r in runs for t in (r["step_s"][1:] or r["step_s"])]
    n = a.prompts * a.group_size

    def per_s(key):
        return sum(n * sum(r[key][1:] if len(r["step_s"]) > 1 else r[key]) for r in runs) / sum(timed)

    per_step = [statistics.mean(r["reward_mean"][k] for r in runs) for k in range(min(len(r["reward_mean"]) for r in runs))]
    return {"s_per_step_median": statistics.median(timed), "model_tokens_per_s": per_s("model_tokens"),
            "completion_tokens_per_s": per_s("completion_tokens"),
            "reward_mean_all_steps": statistics.mean(x for r in runs for x in r["reward_mean"]),
            "reward_mean_per_step": per_step, "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            "torch_threads": sorted({r.get("torch_threads") for r in runs}, key=str)}


def _t_interval(values: list[float]) -> list[float] | None:
    if len(values) < 2:
        return None
    from scipy import stats

    mean = statistics.mean(values)
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return [mean - half, mean + half]


def paired_reward_difference(runs: dict, seeds: list[int], trl: str = "trl") -> dict:
    """Mean over (seed, step) of reward(ours) - reward(TRL) on the same problems, with a 95% t-interval
    (each pair is one step's mean over its P x G episodes; steps of one run are not independent, see
    ``seed_reward_difference``)."""
    diffs = [o - t for s in seeds for o, t in zip(runs[f"ours/{s}"]["reward_mean"], runs[f"{trl}/{s}"]["reward_mean"])]
    return {"mean": statistics.mean(diffs), "n_pairs": len(diffs), "ci95": _t_interval(diffs)}


def seed_reward_difference(runs: dict, seeds: list[int], trl: str = "trl") -> dict:
    """reward(ours) - reward(TRL) with the seed as the unit: each seed's mean difference over its steps, and a
    95% t-interval over the seeds (None with one seed)."""
    per_seed = [statistics.mean(o - t for o, t in zip(runs[f"ours/{s}"]["reward_mean"], runs[f"{trl}/{s}"]["reward_mean"]))
                for s in seeds]
    return {"mean": statistics.mean(per_seed), "per_seed": per_seed, "n_seeds": len(seeds), "ci95": _t_interval(per_seed)}


if __name__ == "__main__":
    sys.exit(main())
