"""Held-out exact match on the search env (Search-R1 style) with SmolLM2-135M-Instruct: base vs SFT vs
SFT+GRPO vs SFT+PPO, paired on the same held-out questions.

    nohup .venv/bin/python benchmarks/search_agent_eval.py --out runs/bench_search > runs/bench_search.log 2>&1 &
    .venv/bin/python benchmarks/search_agent_eval.py --out runs/bench_search --stages grpo,grpo-eval

Stages (each a CLI of reference_impls; a stage whose result exists in OUT/results.json is skipped, so
the script can be re-run to continue): ``base-eval``, ``sft``, ``sft-eval``, ``grpo``, ``grpo-eval``,
``ppo``, ``ppo-eval``. The RL stages run for ``--rl-steps`` steps at the same batch (P prompts x G
samples) and seed. Writes OUT/results.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.stages import StageResults, cli, last_json_line


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench_search")
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--stages", default="base-eval,sft,sft-eval,grpo,grpo-eval,ppo,ppo-eval")
    p.add_argument("--n", type=int, default=104, help="held-out questions (the held-out split has 104)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sft-n", type=int, default=96)
    p.add_argument("--sft-steps", type=int, default=12)
    p.add_argument("--rl-steps", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--prompts-per-step", type=int, default=4)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=40)
    p.add_argument("--max-completion-tokens", type=int, default=256)
    p.add_argument("--ppo-args", default="", help="extra trainer flags for the PPO stage, space-separated")
    p.add_argument("--tag", default="", help="suffix for the RL stages' names and run folders (a variant run)")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = StageResults(out)
    log = sys.stderr
    gen = ["--max-new-tokens-per-turn", str(a.max_new_tokens_per_turn), "--max-completion-tokens", str(a.max_completion_tokens)]
    rl = ["--env", "search", "--model", str(out / "sft"), "--steps", str(a.rl_steps), "--lr", str(a.lr),
          "--prompts-per-step", str(a.prompts_per_step), "--group-size", str(a.group_size), "--seed", str(a.seed),
          "--checkpoint-every", str(a.rl_steps), "--micro-batch-size", "8", *gen]

    def evaluate(model: str) -> dict:
        return last_json_line(cli("reference_impls.measure.evaluate", [
            "--model", model, "--env", "search", "--n", str(a.n), "--seed", str(a.seed), "--batch-size", "16",
            "--json", *gen], log))

    def ckpt(run: str) -> str:
        return str(sorted((out / run / "checkpoints").glob("step_*"))[-1])

    suffix = f"-{a.tag}" if a.tag else ""
    for stage in a.stages.split(","):
        algo = stage.split("-")[0]
        key = f"{algo}{suffix}{stage[len(algo):]}" if algo in ("grpo", "ppo") else stage  # ppo-eval -> ppo-TAG-eval
        if key in results:
            print(f"skip {key} (done)", file=log, flush=True)
            continue
        t0 = time.time()
        if stage == "base-eval":
            value = evaluate(a.model)
        elif stage == "sft":
            value = last_json_line(cli("reference_impls.sft", ["--model", a.model, "--env", "search", "--out",
                                                               str(out / "sft"), "--n", str(a.sft_n), "--steps",
                                                               str(a.sft_steps), "--seed", str(a.seed)], log))
        elif stage == "sft-eval":
            value = evaluate(str(out / "sft"))
        elif stage in ("grpo", "ppo"):
            extra = ["--loss-type", "dapo"] if stage == "grpo" else a.ppo_args.split()
            txt = cli("reference_impls.train", ["--algo", stage, "--out", str(out / key), *rl, *extra], log)
            rows = [json.loads(x) for x in (out / key / "metrics.jsonl").read_text().splitlines()]
            value = {"cli": txt.strip(), "steps": len(rows), "extra_args": extra,
                     "step_s_mean": sum(r["step_s"] for r in rows) / max(len(rows), 1),
                     "train_accuracy_by_step": [round(r["accuracy"], 3) for r in rows]}
        elif stage in ("grpo-eval", "ppo-eval"):
            value = evaluate(ckpt(algo + suffix))
        else:
            raise SystemExit(f"unknown stage {stage}")
        results.record(key, value, t0, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
