"""Held-out calculator accuracy of SmolLM2-135M-Instruct: SFT vs SFT+DPO vs SFT+GRPO (paired, same problems).

    nohup .venv/bin/python benchmarks/calculator_dpo_eval.py --out runs/bench_calc_dpo > runs/bench_calc_dpo.log 2>&1 &

Stages (skipped when OUT/results.json already has them): ``sft`` (narrow ``SFT_FAMILIES``), ``sft-eval``,
``dpo`` (pairs sampled from the SFT model on the train split, saved to OUT/dpo/pairs.jsonl; pass
``--pairs-file`` to repeat a run on the same pairs), ``dpo-eval``, ``grpo``, ``grpo-eval``. DPO and
GRPO start from the same SFT model with the same seed and learning rate. ``--sft-from DIR`` reuses an SFT
model trained elsewhere (run only ``--stages dpo,dpo-eval`` then, to add DPO to that run's table).
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
    p.add_argument("--out", default="runs/bench_calc_dpo")
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--stages", default="sft,sft-eval,dpo,dpo-eval,grpo,grpo-eval")
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--levels", default="2,3")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sft-n", type=int, default=96)
    p.add_argument("--sft-steps", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--dpo-steps", type=int, default=10)
    p.add_argument("--pair-prompts", type=int, default=32)
    p.add_argument("--pairs-per-step", type=int, default=8)
    p.add_argument("--pairs-file", default="")
    p.add_argument("--grpo-steps", type=int, default=6)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--prompts-per-step", type=int, default=4)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=48)
    p.add_argument("--max-completion-tokens", type=int, default=160)
    p.add_argument("--sft-from", default="", help="reuse this SFT model folder (e.g. the one "
                   "benchmarks/calculator_learning.py trained) instead of training one; it is linked as OUT/sft")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = StageResults(out)
    results["args"] = vars(a)
    log = sys.stderr
    if a.sft_from and not (out / "sft").exists():
        (out / "sft").symlink_to(Path(a.sft_from).resolve(), target_is_directory=True)
    gen = ["--max-new-tokens-per-turn", str(a.max_new_tokens_per_turn),
           "--max-completion-tokens", str(a.max_completion_tokens)]
    rl = ["--env", "calculator", "--model", str(out / "sft"), "--lr", str(a.lr), "--seed", str(a.seed),
          "--levels", a.levels, "--group-size", str(a.group_size), "--micro-batch-size", "8", *gen]

    def evaluate(model: str) -> dict:
        return last_json_line(cli("reference_impls.measure.evaluate", [
            "--model", model, "--env", "calculator", "--n", str(a.n), "--seed", str(a.seed), "--levels", a.levels,
            "--batch-size", "16", "--json", *gen], log))

    def ckpt(run):
        return str(sorted((out / run / "checkpoints").glob("step_*"))[-1])

    for stage in a.stages.split(","):
        if stage in results:
            continue
        t0 = time.time()
        if stage == "sft":
            value = last_json_line(cli("reference_impls.sft", ["--model", a.model, "--out", str(out / "sft"), "--n",
                                                               str(a.sft_n), "--steps", str(a.sft_steps), "--seed",
                                                               str(a.seed)], log))
        elif stage == "dpo":
            extra = ["--pairs-file", a.pairs_file] if a.pairs_file else []
            cli("reference_impls.train", ["--algo", "dpo", "--out", str(out / "dpo"), *rl, "--steps", str(a.dpo_steps),
                                          "--checkpoint-every", str(a.dpo_steps), "--pair-prompts", str(a.pair_prompts),
                                          "--pairs-per-step", str(a.pairs_per_step), *extra], log)
            rows = [json.loads(x) for x in (out / "dpo" / "metrics.jsonl").read_text().splitlines()]
            stats = json.loads((out / "dpo" / "pairs.jsonl").read_text().splitlines()[0]).get("stats", {})
            value = {"pairs": stats, "steps": len(rows),
                     "reward_accuracy_by_step": [round(r["rewards/accuracies"], 3) for r in rows],
                     "margin_by_step": [round(r["rewards/margins"], 3) for r in rows],
                     "step_s_mean": sum(r["step_s"] for r in rows) / len(rows)}
        elif stage == "grpo":
            cli("reference_impls.train", ["--algo", "grpo", "--out", str(out / "grpo"), *rl, "--steps", str(a.grpo_steps),
                                          "--checkpoint-every", str(a.grpo_steps), "--prompts-per-step",
                                          str(a.prompts_per_step), "--loss-type", "dapo"], log)
            rows = [json.loads(x) for x in (out / "grpo" / "metrics.jsonl").read_text().splitlines()]
            value = {"steps": len(rows), "train_accuracy_by_step": [round(r["accuracy"], 3) for r in rows],
                     "step_s_mean": sum(r["step_s"] for r in rows) / len(rows)}
        elif stage == "sft-eval":
            value = evaluate(str(out / "sft"))
        elif stage in ("dpo-eval", "grpo-eval"):
            value = evaluate(ckpt(stage.split("-")[0]))
        else:
            raise SystemExit(f"unknown stage {stage}")
        results.record(stage, value, t0, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
