"""Held-out calculator accuracy of SmolLM2-135M-Instruct: base, SFT-only, SFT+GRPO (paired, same problems).

    nohup .venv/bin/python benchmarks/calculator_learning.py --out runs/bench_calc > runs/bench_calc.log 2>&1 &

Steps (each a CLI of reference_impls, so this is also a worked example of the pipeline):
1. evaluate the base model on N held-out problems (levels 2-3: held-out phrasings, unseen seeds);
2. SFT warm start on synthetic transcripts of the narrow ``SFT_FAMILIES`` only;
3. evaluate the SFT model on the same problems;
4. GRPO from the SFT model on the train split of every level-2/3 family, for a wall-clock budget;
5. evaluate the last GRPO checkpoint on the same problems;
6. the curve: evaluate every kept GRPO checkpoint on the same problems and draw OUT/curve.svg (training
   reward per step and held-out accuracy per checkpoint, base and SFT as reference lines).
Writes OUT/results.json (and the runs under OUT/). Targets: SFT+GRPO >= base + 20 points and >= SFT + 5.
``--curve-only`` redoes step 6 on an existing OUT (checkpoints also looked for in OUT/ckpt_keep).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from benchmarks.stages import cli, last_json_line
from benchmarks.svgplot import line_chart


def evaluate(model: str, a, log) -> dict:
    result = last_json_line(cli("reference_impls.measure.evaluate", [
        "--model", model, "--n", str(a.n), "--levels", a.levels, "--json", "--batch-size", str(a.eval_batch_size),
        "--max-new-tokens-per-turn", str(a.max_new_tokens_per_turn),
        "--max-completion-tokens", str(a.max_completion_tokens)], log))
    print(json.dumps(result), file=log, flush=True)
    return result


def curve(out: Path, results: dict, a, log) -> None:
    """Held-out accuracy of every kept GRPO checkpoint (step 0 = the SFT model) and the training reward."""
    done = {c["step"]: c for c in results.get("curve", [])}
    done.setdefault(0, {"step": 0, **results["sft"]})
    if "sft_grpo" in results:  # the final checkpoint is already measured
        final = Path(results["sft_grpo"]["model"]).name
        done.setdefault(int(final.split("_")[1]), {"step": int(final.split("_")[1]), **results["sft_grpo"]})
    ckpts = {int(d.name.split("_")[1]): d for folder in (out / "grpo" / "checkpoints", out / "ckpt_keep")
             if folder.exists() for d in folder.glob("step_*")}
    for step, path in sorted(ckpts.items()):
        if step not in done:
            done[step] = {"step": step, **evaluate(str(path), a, log)}
            results["curve"] = [done[k] for k in sorted(done)]
            (out / "results.json").write_text(json.dumps(results, indent=2))
    results["curve"] = [done[k] for k in sorted(done)]
    rows = [json.loads(x) for x in (out / "grpo" / "metrics.jsonl").read_text().splitlines()]
    window = 5  # the per-step reward is a mean over 4 prompts: smooth it for the eye
    smooth = [(r["step"], sum(x["reward_mean"] for x in rows[max(0, i - window + 1):i + 1]) / min(i + 1, window))
              for i, r in enumerate(rows)]
    hlines = {f"SFT {results['sft']['accuracy']:.3f}": results["sft"]["accuracy"]}
    if "base" in results:
        hlines[f"base {results['base']['accuracy']:.3f}"] = results["base"]["accuracy"]
    line_chart({"train reward (5-step mean)": smooth,
                "held-out accuracy (n=%d)" % a.n: [(c["step"], c["accuracy"]) for c in results["curve"]]},
               out / "curve.svg", "SmolLM2-135M-Instruct, GRPO from the SFT model (calculator, levels %s)" % a.levels,
               "GRPO step", "reward / accuracy", ymin=0.0, ymax=1.0, hlines=hlines)


def recipe() -> dict:
    """The Lab's "smollm2" preset for GRPO on the calculator (lab/recipes/smollm2.yaml): this benchmark and
    the Lab read the same file, so the numbers the Lab quotes come from the recipe it runs."""
    from lab import recipes

    merged: dict = {}
    for layer in recipes.layers("smollm2", "calculator", "grpo"):
        merged.update(layer)
    return merged


def main() -> int:
    r = recipe()
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench_calc")
    p.add_argument("--model", default=r["model"])
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--levels", default=",".join(map(str, r["env_options"]["levels"])))
    p.add_argument("--sft-n", type=int, default=96)
    p.add_argument("--sft-steps", type=int, default=r["sft_steps"])
    p.add_argument("--grpo-minutes", type=float, default=20.0)
    p.add_argument("--lr", type=float, default=r["lr"])
    p.add_argument("--prompts-per-step", type=int, default=r["prompts_per_step"])
    p.add_argument("--group-size", type=int, default=r["group_size"])
    p.add_argument("--loss-type", default="dapo")
    p.add_argument("--max-new-tokens-per-turn", type=int, default=r["max_new_tokens_per_turn"])
    p.add_argument("--max-completion-tokens", type=int, default=r["max_completion_tokens"])
    p.add_argument("--eval-batch-size", type=int, default=25)
    p.add_argument("--skip-base", action="store_true")
    p.add_argument("--curve-only", action="store_true", help="only (re)do the curve of an existing OUT")
    a = p.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr
    results = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores", "args": vars(a)}

    def save():
        (out / "results.json").write_text(json.dumps(results, indent=2))

    if a.curve_only:
        results = json.loads((out / "results.json").read_text())
        curve(out, results, a, log)
        save()
        return 0

    if not a.skip_base:
        results["base"] = evaluate(a.model, a, log)
        save()
    t0 = time.time()
    sft_dir = out / "sft"
    cli("reference_impls.sft", ["--model", a.model, "--out", str(sft_dir), "--n", str(a.sft_n),
                                "--steps", str(a.sft_steps)], log)
    results["sft_train_s"] = round(time.time() - t0, 1)
    results["sft"] = evaluate(str(sft_dir), a, log)
    save()
    grpo_dir = out / "grpo"
    t0 = time.time()
    cli("reference_impls.train", [
        "--algo", "grpo", "--env", "calculator", "--model", str(sft_dir), "--out", str(grpo_dir),
        "--steps", "100000", "--max-wall-s", str(a.grpo_minutes * 60), "--levels", a.levels, "--lr", str(a.lr),
        "--prompts-per-step", str(a.prompts_per_step), "--group-size", str(a.group_size),
        "--loss-type", a.loss_type, "--micro-batch-size", "8", "--checkpoint-every", "10", "--keep-checkpoints", "1000",
        "--max-new-tokens-per-turn", str(a.max_new_tokens_per_turn),
        "--max-completion-tokens", str(a.max_completion_tokens)], log)
    results["grpo_train_s"] = round(time.time() - t0, 1)
    rows = [json.loads(x) for x in (grpo_dir / "metrics.jsonl").read_text().splitlines()]
    results["grpo_steps"] = len(rows)
    results["grpo_train_reward_first10"] = sum(r["reward_mean"] for r in rows[:10]) / max(1, len(rows[:10]))
    results["grpo_train_reward_last10"] = sum(r["reward_mean"] for r in rows[-10:]) / max(1, len(rows[-10:]))
    from reference_impls.trainer import latest_checkpoint  # (only for the path)

    results["sft_grpo"] = evaluate(str(latest_checkpoint(grpo_dir)), a, log)
    if "base" in results:
        results["targets"] = {
            "sft_grpo_minus_base_points": round(100 * (results["sft_grpo"]["accuracy"] - results["base"]["accuracy"]), 1),
            "sft_grpo_minus_sft_points": round(100 * (results["sft_grpo"]["accuracy"] - results["sft"]["accuracy"]), 1),
        }
    save()
    curve(out, results, a, log)
    save()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
