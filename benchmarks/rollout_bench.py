"""Rollout throughput: the reference loop (``model.generate`` every turn) vs the cached engine.

    .venv/bin/python -m benchmarks.rollout_bench --model runs/sft_calc --prompts 4 --group-size 8 --json
    PYTHONPATH=. .venv/bin/python benchmarks/rollout_bench.py --model smollm2-135m-instruct --env search \
        --prompts 4 --group-size 8 --json

(from the repository root: ``-m`` or ``PYTHONPATH=.`` makes ``reference_impls`` importable.)

One process, one model. Each round runs both engines on the same problems with the same seed (the
cached engine draws its samples as ``generate`` does, so the episodes are normally the very same; the
JSON says how many were), alternating which goes first so that drifting load on a shared machine hits
both alike. Then one greedy rollout per engine (G = 1) checks ``greedy_identical``.

Tokens per second counts the model's own tokens (``generated_tokens``) over the rollout's wall time,
env steps included (the memory env's Answer Agent runs inside the rollout). ``prefill_s`` and
``decode_s`` are the cached engine's split (forwards over prompts and env observations vs one-token
steps), per round. ``peak_rss_mb`` is the process's peak resident memory; where Linux lets a process
reset its peak (``/proc/self/clear_refs``), ``baseline_peak_rss_mb`` / ``engine_peak_rss_mb`` are each
engine's own. ``loadavg`` is read before and after: on a shared machine it says what the figures ran
beside. ``--model`` takes a registry name or a folder written by ``save_pretrained`` (an SFT output).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from reference_impls.envs import get_env
from reference_impls.models import load_policy
from reference_impls.rollout import RolloutConfig, rollout

ENGINES = ("generate", "cached")
CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _reset_peak() -> bool:
    """Reset the kernel's per-process RSS high-water mark (VmHWM); False where not allowed."""
    try:
        CLEAR_REFS.write_text("5")
        return True
    except OSError:
        return False


def _vm_hwm_mb() -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def _option(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--env-option expects KEY=VALUE, got {text!r}")
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def run(args) -> dict:
    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    model, tokenizer = load_policy(args.model, seed=args.seed)
    task = get_env(args.env)
    problems = task.problems("train", n=args.prompts, seed=args.seed)
    cfg = RolloutConfig(group_size=args.group_size, max_new_tokens_per_turn=args.max_new_tokens_per_turn,
                        max_completion_tokens=args.max_completion_tokens, temperature=args.temperature,
                        env_config=task.config_of(dict(args.env_option or [])))
    if args.env.startswith("memory"):  # load the frozen Answer Agent before anything is timed
        env = task.make(problems[0], cfg.env_config)
        env.reset()
        env.step("NOOP")
    rounds = []
    peaks = {e: [] for e in ENGINES}
    can_reset = _reset_peak()
    for r in range(args.rounds):
        order = ENGINES if r % 2 == 0 else ENGINES[::-1]
        row = {"first": order[0]}
        episodes = {}
        for engine in order:
            if can_reset:
                _reset_peak()
            torch.manual_seed(args.seed + r)
            t0 = time.perf_counter()
            samples, stats = rollout(model, tokenizer, task, problems, replace(cfg, engine=engine))
            wall = time.perf_counter() - t0
            if can_reset:
                peaks[engine].append(_vm_hwm_mb())
            episodes[engine] = samples
            row[engine] = {"s": round(wall, 3), "generated_tokens": stats["generated_tokens"],
                           "completion_tokens": stats["completion_tokens"], "env_s": round(stats["env_s"], 3),
                           "tokens_per_s": round(stats["generated_tokens"] / wall, 2),
                           "turns_mean": round(sum(s.turns for s in samples) / len(samples), 3),
                           "reward_mean": round(sum(s.reward for s in samples) / len(samples), 4)}
            if engine == "cached":
                row[engine].update({k: stats[k] for k in ("prefill_s", "decode_s", "prefill_tokens",
                                                            "decode_steps", "distinct_prompts", "decode_rows",
                                                            "decode_rows_if_kept")})
        row["sampled_identical"] = sum(a.completion_ids == b.completion_ids
                                       for a, b in zip(episodes["generate"], episodes["cached"]))
        rounds.append(row)
        print(f"round {r + 1}/{args.rounds}: generate {row['generate']['s']:.1f}s, cached {row['cached']['s']:.1f}s, "
              f"same episodes {row['sampled_identical']}/{len(episodes['cached'])}", file=sys.stderr, flush=True)
    greedy = {}
    for engine in ENGINES:
        greedy[engine], _ = rollout(model, tokenizer, task, problems, replace(cfg, engine=engine, greedy=True))
    greedy_same = sum(a.completion_ids == b.completion_ids for a, b in zip(greedy["generate"], greedy["cached"]))

    def total(engine, key):
        return sum(r[engine][key] for r in rounds)

    base_tps = total("generate", "generated_tokens") / total("generate", "s")
    eng_tps = total("cached", "generated_tokens") / total("cached", "s")
    return {
        "model": args.model, "env": args.env, "prompts": args.prompts, "group_size": args.group_size,
        "max_new_tokens_per_turn": args.max_new_tokens_per_turn, "max_completion_tokens": args.max_completion_tokens,
        "temperature": args.temperature, "env_options": dict(args.env_option or []), "seed": args.seed, "rounds": args.rounds,
        "baseline_tokens_per_s": round(base_tps, 2),
        "engine_tokens_per_s": round(eng_tps, 2),
        "speedup": round(eng_tps / base_tps, 2),
        "baseline_s_per_rollout": round(total("generate", "s") / args.rounds, 2),
        "engine_s_per_rollout": round(total("cached", "s") / args.rounds, 2),
        "prefill_s": round(total("cached", "prefill_s") / args.rounds, 2),
        "decode_s": round(total("cached", "decode_s") / args.rounds, 2),
        "env_s": round(total("cached", "env_s") / args.rounds, 2),
        # row-steps the decode ran vs what it would have run had stopped rows stayed in the batch
        "decode_rows": total("cached", "decode_rows"), "decode_rows_if_kept": total("cached", "decode_rows_if_kept"),
        "turns_mean": rounds[-1]["cached"]["turns_mean"],
        "reward_mean": round(sum(r["cached"]["reward_mean"] for r in rounds) / args.rounds, 4),
        "sampled_identical": f"{sum(r['sampled_identical'] for r in rounds)}/{args.rounds * len(problems) * args.group_size}",
        "greedy_identical": greedy_same == len(problems),
        "greedy_identical_count": f"{greedy_same}/{len(problems)}",
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "baseline_peak_rss_mb": round(max(peaks["generate"]), 1) if peaks["generate"] else None,
        "engine_peak_rss_mb": round(max(peaks["cached"]), 1) if peaks["cached"] else None,
        "per_round": rounds,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "device": str(next(model.parameters()).device), "torch": torch.__version__, "python": platform.python_version(),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m-instruct", help="registry name or a save_pretrained folder")
    p.add_argument("--prompts", type=int, default=4, help="P distinct problems")
    p.add_argument("--group-size", type=int, default=8, help="G samples per problem")
    p.add_argument("--env", default="calculator")
    p.add_argument("--env-option", action="append", type=_option, metavar="KEY=VALUE")
    p.add_argument("--rounds", type=int, default=2, help="rounds of (baseline, engine), order alternating")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens-per-turn", type=int, default=RolloutConfig.max_new_tokens_per_turn)
    p.add_argument("--max-completion-tokens", type=int, default=RolloutConfig.max_completion_tokens)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--json", action="store_true", help="print only the JSON result")
    p.add_argument("--out", help="also write the JSON here")
    args = p.parse_args(argv)
    for name in ("prompts", "group_size", "rounds"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    result = run(args)
    text = json.dumps(result, indent=None if args.json else 2)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
