"""The critic's cost, measured: seconds per step and peak memory of PPO vs GRPO at equal batch.

    .venv/bin/python benchmarks/ppo_vs_grpo_cost.py --out runs/bench_cost

Each configuration is a separate ``reference_impls.train`` process (so its peak RSS is its own) on the
same env, model, seed and batch (P prompts x G samples), with one optimisation pass over the batch,
so the only difference is the critic:

``grpo``        GRPO, beta = 0 (no reference model), one pass, one full forward per sample as PPO does
``grpo-shared-prompts``  the same with the trainer's default one-prompt-forward-per-group (for reference)
``ppo``         PPO with a separate critic (a copy of the transformer + scalar head), beta = 0, one epoch,
                one minibatch
``ppo-shared``  PPO with a value head on the policy's transformer, otherwise as ``ppo``

With the same seed, step 1 samples the very same rollouts in every configuration (same policy, same
random stream), so step 1's update time compares the algorithms on identical batches.
Writes OUT/results.json: per configuration, rollout and update seconds per step, peak RSS (MiB) and
parameter counts.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    # like PPO's update, one full forward per sample (no shared prompt forward): only the critic differs
    "grpo": ["--algo", "grpo", "--beta", "0.0", "--no-share-prompts"],
    "grpo-shared-prompts": ["--algo", "grpo", "--beta", "0.0"],
    "ppo": ["--algo", "ppo", "--beta", "0.0", "--num-iterations", "1", "--num-mini-batches", "1"],
    "ppo-shared": ["--algo", "ppo", "--beta", "0.0", "--num-iterations", "1", "--num-mini-batches", "1",
                   "--shared-backbone"],
}
CODE = ("import resource, sys, json, reference_impls.algorithms.ppo.ppo, reference_impls.algorithms.dpo.dpo; "
        "from reference_impls.train import main; rc = main(sys.argv[1:]); "
        "print(json.dumps({'peak_rss_mib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})); sys.exit(rc)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench_cost")
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--env", default="calculator")
    p.add_argument("--configs", default="grpo,ppo,ppo-shared")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--prompts-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--micro-batch-size", type=int, default=8)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=32)
    p.add_argument("--max-completion-tokens", type=int, default=96)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    res_path = out / "results.json"
    results = json.loads(res_path.read_text()) if res_path.exists() else {}
    results["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores"
    common = ["--env", a.env, "--model", a.model, "--steps", str(a.steps), "--seed", "0", "--lr", "1e-5",
              "--prompts-per-step", str(a.prompts_per_step), "--group-size", str(a.group_size),
              "--micro-batch-size", str(a.micro_batch_size), "--checkpoint-every", "1000",
              "--max-new-tokens-per-turn", str(a.max_new_tokens_per_turn),
              "--max-completion-tokens", str(a.max_completion_tokens)]
    for name in a.configs.split(","):
        run_dir = out / name
        args = [*CONFIGS[name], *common, "--out", str(run_dir)]
        print("$ python -m reference_impls.train " + " ".join(args), file=sys.stderr, flush=True)
        t0 = time.time()
        proc = subprocess.run([sys.executable, "-c", CODE, *args], cwd=ROOT, capture_output=True, text=True,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-3000:])
        peak = json.loads(proc.stdout.strip().splitlines()[-1])["peak_rss_mib"]
        rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
        results[name] = {
            "args": args, "process_s": round(time.time() - t0, 1), "peak_rss_mib": round(peak),
            "rollout_s": [round(r["rollout_s"], 2) for r in rows], "update_s": [round(r["update_s"], 2) for r in rows],
            "step_s": [round(r["step_s"], 2) for r in rows],
            "completion_len_mean": [round(r["completion_len_mean"], 1) for r in rows],
        }
        res_path.write_text(json.dumps(results, indent=2))
        print(json.dumps({name: results[name]})[:800], file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
