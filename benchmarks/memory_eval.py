"""Memory-R1-style benchmark: exact match / F1 of the frozen Answer Agent on held-out dialogues, for every
memory manager (docs/results_memory.md).

    python benchmarks/memory_eval.py --out runs/bench_memory --n 24 --levels 1,2 \\
        --stages baselines,base,format,eval-format,train-grpo,eval-grpo,train-ppo,eval-ppo --steps 12

Stages (comma-separated, run in order; results accumulate in OUT/results.json):
    baselines   no memory (last ``--window`` turns), add-only and rule-based managers
    base        the base SmolLM2 as manager (prompted, greedy)
    format      label-free format warm-up: SFT on uniformly random *valid* operations (OUT/format_sft);
                training then starts from it; ``eval-format`` measures it
    rule-sft    a supervised reference, NOT an RL result: SFT on the rule manager's operations (labels)
                (OUT/rule_sft); ``eval-rule`` measures whether the 135M policy can represent a good
                manager at all
    train-ALGO  train the manager with ``reference_impls.train --algo ALGO --env memory`` (OUT/ALGO, or
                OUT/ALGO_TAG with ``--tag TAG``)
    eval-ALGO   the trained manager (latest checkpoint of that folder) on the same held-out dialogues
    report      markdown tables of everything in OUT/results.json (paired wins/losses against add-only)

The Answer Agent is always the frozen base SmolLM2-135M-Instruct; the held-out dialogues are a pure
function of (n, seed, levels), so every row is measured on the very same questions (paired).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.stages import cli  # noqa: E402

from reference_impls.memory.answer import AnswerAgent  # noqa: E402
from reference_impls.memory.dialogue import dialogues  # noqa: E402
from reference_impls.memory.managers import (AddOnlyManager, LMManager, RuleManager, evaluate,  # noqa: E402
                                             run_manager, window_banks)

MODEL = "smollm2-135m-instruct"


def load(out: Path) -> dict:
    f = out / "results.json"
    return json.loads(f.read_text()) if f.exists() else {}


def save(out: Path, results: dict) -> None:
    """Merge into what is on disk (stages may run in separate processes), then write."""
    merged = {**load(out), **results}
    results.update(merged)
    (out / "results.json").write_text(json.dumps(merged, indent=2))


def load_cache(out: Path, agent) -> None:
    """Answers are a pure function of (question, retrieved texts) for the frozen greedy agent, so they are
    shared across stages and processes through OUT/answer_cache_<mode>.jsonl."""
    f = out / f"answer_cache_{agent.mode}.jsonl"
    if f.exists():
        for line in f.read_text().splitlines():
            row = json.loads(line)
            agent.cache[(row["q"], tuple(row["texts"]))] = (row["answer"], row["selected"])


def save_cache(out: Path, agent) -> None:
    with open(out / f"answer_cache_{agent.mode}.jsonl", "w") as f:
        for (q, texts), (answer, selected) in agent.cache.items():
            f.write(json.dumps({"q": q, "texts": list(texts), "answer": answer, "selected": selected}) + "\n")


def record(out, results, name, banks, stats, agent, ds, t0):
    calls = agent.calls
    r = evaluate(agent, ds, banks)
    save_cache(out, agent)
    results[name] = {"summary": r["summary"], "ops": stats, "wall_s": round(time.time() - t0, 1),
                     "answer_calls": agent.calls - calls,
                     "entries_mean": sum(len(b) for b in banks) / len(banks)}
    with open(out / f"rows_{name}.jsonl", "w") as f:
        for row in r["rows"]:
            f.write(json.dumps(row) + "\n")
    save(out, results)
    s = r["summary"]["all"]
    print(f"{name:12s} EM {s['em']:.3f} F1 {s['f1']:.3f} n {s['n']} ops {stats} ({time.time() - t0:.0f}s)", flush=True)


def run_dir(algo: str, args, out: Path) -> Path:
    """OUT/ALGO, or OUT/ALGO_TAG for a variant run (``--tag``), so variants sit side by side."""
    return out / (f"{algo}_{args.tag}" if args.tag else algo)


def sft(env: str, folder: Path, n: int, steps: int, args) -> None:
    cli("reference_impls.sft", ["--env", env, "--model", MODEL, "--out", str(folder), "--n", str(n),
                                "--steps", str(steps), "--lr", "5e-5", "--seed", str(args.seed)], sys.stderr)


def train(algo: str, args, out: Path) -> None:
    run = run_dir(algo, args, out)
    start = out / "format_sft" if (out / "format_sft" / "config.json").exists() else MODEL
    argv = ["--algo", algo, "--env", "memory", "--model", str(start), "--out", str(run), "--steps", str(args.steps),
            "--prompts-per-step", str(args.prompts), "--group-size", str(args.group), "--lr", str(args.lr),
            "--max-new-tokens-per-turn", str(args.max_new), "--max-completion-tokens", str(args.max_new),
            "--seed", str(args.seed), "--max-wall-s", str(args.max_wall_s),
            "--checkpoint-every", str(args.steps), "--levels", args.levels, "--train-pool", "2048",
            "--micro-batch-size", "8", "--env-option", f"answer_mode={args.answer_mode}",
            "--env-option", f"questions={args.questions}", "--env-option", f"k={args.k}"] + args.extra.get(algo, [])
    if (run / "config.json").exists():
        argv = ["--resume", str(run), "--steps", str(args.steps)]
    t0 = time.time()
    cli("reference_impls.train", argv, sys.stderr)
    print(f"train-{algo}: {time.time() - t0:.0f}s", flush=True)


LABELS = {"no_memory": "no memory (last 4 turns)", "add_only": "add-only (Mem0-style)", "rule": "rule-based manager",
          "base_lm": "SmolLM2 prompted, zero-shot", "format_lm": "format warm-up (RL start)",
          "grpo_lm": "GRPO-trained manager", "ppo_lm": "PPO-trained manager",
          "grpo_lr3e-5_lm": "GRPO-trained manager, first try (lr 3e-5)",
          "rule_lm": "SFT on the rule manager's operations (labels; reference, not RL)",
          # variant runs (--tag q3 / q8: questions per training decision; env options focus=own and
          # balance_kinds=false, the defaults when they ran)
          "grpo_q3_lm": "GRPO-trained manager (questions=3, focus=own)",
          "ppo_q3_lm": "PPO-trained manager (questions=3, focus=own)",
          "grpo_q8_lm": "GRPO-trained manager (questions=8, focus=own)",
          "ppo_q8_lm": "PPO-trained manager (questions=8, focus=own)",
          # --tag shown: questions=3 asked about the turn's slot and the shown entries' facts (focus=shown),
          # kind-balanced training turns (reference_impls/envs/memory.py)
          "grpo_shown_lm": "GRPO-trained manager (questions=3, focus=shown)",
          "ppo_shown_lm": "PPO-trained manager (questions=3, focus=shown)",
          "grpo_shown_b02_lm": "GRPO-trained manager (questions=3, focus=shown, beta 0.2)",
          # --tag k1: the manager is shown the one memory its turn retrieves best (--k 1)
          "grpo_k1_lm": "GRPO-trained manager (k=1, questions=3, focus=shown)",
          "ppo_k1_lm": "PPO-trained manager (k=1, questions=3, focus=shown)"}


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided exact sign test on the discordant pairs: P(a split at least this uneven | each question
    goes either way with probability 1/2). Questions both managers get right or both wrong carry no
    information about which is better and are left out."""
    n = better + worse
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def report(out: Path, results: dict) -> str:
    """Markdown tables: overall EM/F1 with paired wins/losses against add-only, and EM by question kind."""
    names = [k for k in results if not k.startswith("_")]

    def rows(name):
        f = out / f"rows_{name}.jsonl"
        return [json.loads(line) for line in f.read_text().splitlines()] if f.exists() else []

    base = rows("add_only")
    lines = ["| manager | EM | F1 | vs add-only (paired, EM): better / worse (sign test p) | ops | entries |",
             "|---|---|---|---|---|---|"]
    for name in names:
        r = results[name]
        s = r["summary"]["all"]
        mine = rows(name)
        paired = "-"
        if base and mine and name != "add_only":
            better = sum(a["em"] > b["em"] for a, b in zip(mine, base))
            worse = sum(a["em"] < b["em"] for a, b in zip(mine, base))
            paired = f"{better} / {worse} (p={sign_test_p(better, worse):.2g})"
        ops = ", ".join(f"{k} {v}" for k, v in sorted(r.get("ops", {}).items())) or "-"
        lines.append(f"| {LABELS.get(name, name)} | {s['em']:.3f} | {s['f1']:.3f} | {paired} | {ops} | "
                     f"{r.get('entries_mean', 0):.1f} |")
    kinds = ("single", "updated", "multi_hop", "temporal")
    lines += ["", "| manager | " + " | ".join(f"{k} (n={results[names[0]]['summary'][k]['n']})" for k in kinds) + " |",
              "|---|" + "---|" * len(kinds)]
    for name in names:
        sm = results[name]["summary"]
        lines.append(f"| {LABELS.get(name, name)} | " + " | ".join(f"{sm[k]['em']:.3f}" for k in kinds) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench_memory")
    p.add_argument("--n", type=int, default=24, help="held-out dialogues")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--levels", default="1,2")
    p.add_argument("--window", type=int, default=4, help="turns the no-memory baseline keeps")
    p.add_argument("--stages", default="baselines")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--format-n", type=int, default=64, help="random-operation transcripts of the format warm-up")
    p.add_argument("--format-steps", type=int, default=8)
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--max-new", type=int, default=8, help="tokens the manager may write per decision")
    p.add_argument("--max-wall-s", type=float, default=0.0, help="training time budget per algorithm (0 = none)")
    p.add_argument("--answer-mode", default="extract", choices=("extract", "generate"),
                   help="how the frozen Answer Agent answers (reference_impls/memory/answer.py); training uses the same")
    p.add_argument("--questions", type=int, default=3, help="questions per training decision (env option)")
    p.add_argument("--k", type=int, default=3,
                   help="memories shown to an LM manager per turn, in training (env option) and evaluation alike")
    p.add_argument("--tag", default="", help="variant run: train/eval use OUT/ALGO_TAG and the row ALGO_TAG_lm")
    p.add_argument("--ppo-args", default="", help="extra trainer flags for PPO, space-separated")
    p.add_argument("--grpo-args", default="", help="extra trainer flags for GRPO, space-separated")
    args = p.parse_args(argv)
    args.extra = {"ppo": args.ppo_args.split(), "grpo": args.grpo_args.split()}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    levels = tuple(int(x) for x in args.levels.split(","))
    ds = dialogues("heldout", args.n, args.seed, levels)
    results = load(out)
    results["_setup"] = {"n_dialogues": len(ds), "n_questions": sum(len(d.questions) for d in ds), "levels": levels,
                         "seed": args.seed, "turns_mean": sum(len(d.turns) for d in ds) / len(ds),
                         "answer_agent": MODEL, "answer_mode": args.answer_mode, "threads": __import__("torch").get_num_threads()}
    agent = None

    def get_agent():
        nonlocal agent
        if agent is None:
            from reference_impls.models import load_policy

            agent = AnswerAgent(*load_policy(MODEL, device="cpu"), mode=args.answer_mode)
            load_cache(out, agent)
        return agent

    for stage in [s for s in args.stages.split(",") if s]:
        if stage == "baselines":
            t0 = time.time()
            record(out, results, "no_memory", window_banks(ds, args.window), {}, get_agent(), ds, t0)
            for mgr in (AddOnlyManager(), RuleManager()):
                t0 = time.time()
                banks, stats = run_manager(mgr, ds)
                record(out, results, mgr.name, banks, stats, get_agent(), ds, t0)
        elif stage == "base":
            t0 = time.time()
            banks, stats = run_manager(LMManager(get_agent().model, get_agent().tokenizer), ds)
            record(out, results, "base_lm", banks, stats, get_agent(), ds, t0)
        elif stage == "format":  # label-free format warm-up (random valid operations), see envs/memory.py
            sft("memory-format", out / "format_sft", args.format_n, args.format_steps, args)
        elif stage == "rule-sft":  # supervised on the rule manager's operations: labels, a reference only
            sft("memory", out / "rule_sft", args.format_n * 2, args.format_steps * 2, args)
        elif stage.startswith("train-"):
            train(stage.split("-", 1)[1], args, out)
        elif stage.startswith("eval-"):
            algo = stage.split("-", 1)[1]
            from reference_impls.models import load_policy
            from reference_impls.trainer import latest_checkpoint

            run = out / f"{algo}_sft" if algo in ("format", "rule") else run_dir(algo, args, out)
            ckpt = run if algo in ("format", "rule") else latest_checkpoint(run)
            if ckpt is None or not ckpt.exists():
                raise SystemExit(f"no checkpoint in {run}")
            t0 = time.time()
            model, tok = load_policy(str(ckpt), device="cpu")
            banks, stats = run_manager(LMManager(model, tok, max_new_tokens=args.max_new), ds, k=args.k)
            name = f"{algo}_lm" if algo in ("format", "rule") else f"{run.name}_lm"
            record(out, results, name, banks, stats, get_agent(), ds, t0)
            results[name]["checkpoint"] = str(ckpt)
            save(out, results)
        elif stage == "report":
            print(report(out, load(out)))
            continue
        else:
            raise SystemExit(f"unknown stage {stage!r}")
    print(json.dumps({k: v["summary"]["all"] for k, v in results.items() if not k.startswith("_")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
