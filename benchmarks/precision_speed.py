"""What ``--precision bf16`` buys on this machine: SmolLM2-135M-Instruct's update-shaped forward + backward and its
sampling, float32 against ``torch.autocast`` to bfloat16 (``reference_impls.common.precision_context``), and how far
the log-probabilities move.

bf16 is only faster where the CPU computes in it (AVX512-BF16, AMX); on an AVX2 CPU it is slower (STACK-NOTES). So
the record keeps the CPU's ISA flags beside the times, and a learning preset that sets ``precision: bf16`` was
measured with it (docs/learn_presets.md, "Precision").

    python -m benchmarks.precision_speed [--out benchmarks/results/precision_speed/<date>.json]

Run it on an otherwise idle machine: the record keeps the 1-minute load at its start and end.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import date
from pathlib import Path

import torch

from lab.compare.folder import atomic_json
from lab.compare.provenance import Host, provenance
from reference_impls.common import collate, completion_logprobs, precision_context
from reference_impls.models import load_policy

ROWS, PROMPT, COMPLETION = 32, 96, 64  # a 4 x 8 GRPO batch of calculator-sized episodes
REPEATS = 3


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(threads: int, model_name: str = "smollm2-135m-instruct") -> dict:
    torch.set_num_threads(threads)
    cpu = torch.device("cpu")
    model, tok = load_policy(model_name, device=cpu, seed=0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(100, 20000, (ROWS, PROMPT + COMPLETION), generator=g)
    from types import SimpleNamespace
    rows = [SimpleNamespace(prompt_ids=r[:PROMPT].tolist(), completion_ids=r[PROMPT:].tolist(),
                            loss_mask=[1] * COMPLETION, old_logprobs=[0.0] * COMPLETION) for r in ids]
    batch = collate(rows, tok.pad_token_id)
    prompts = ids[:8, :PROMPT]

    def update():
        model.train()
        logps, _ = completion_logprobs(model, batch)
        (-logps.mean()).backward()
        model.zero_grad(set_to_none=True)

    def sample():
        model.eval()
        with torch.no_grad():
            model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=32,
                           do_sample=True, pad_token_id=tok.pad_token_id)

    out = {}
    for precision in ("fp32", "bf16"):
        with precision_context(precision, cpu):
            timed(update)  # warm-up: oneDNN picks its kernels on the first call
            upd = [timed(update) for _ in range(REPEATS)]
            smp = [timed(sample) for _ in range(REPEATS)]
        out[precision] = {"update_s": [round(x, 2) for x in upd], "sample_s": [round(x, 2) for x in smp],
                          "update_s_median": round(statistics.median(upd), 2),
                          "sample_s_median": round(statistics.median(smp), 2)}
    model.eval()
    with torch.no_grad():
        exact, _ = completion_logprobs(model, batch)
        with precision_context("bf16", cpu):
            low, _ = completion_logprobs(model, batch)
    gap = (low - exact).abs().flatten()
    out["logprob_gap"] = {"mean": round(float(gap.mean()), 4), "p99": round(float(gap.quantile(0.99)), 4),
                          "max": round(float(gap.max()), 4)}
    out["speedup"] = {k: round(out["fp32"][f"{k}_s_median"] / out["bf16"][f"{k}_s_median"], 2)
                      for k in ("update", "sample")}
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default="smollm2-135m-instruct", choices=("smollm2-135m-instruct", "tiny"),
                    help="tiny: a check of the script, not a measurement")
    ap.add_argument("--out", type=Path,
                    default=Path("benchmarks/results/precision_speed") / f"{date.today().isoformat()}.json")
    args = ap.parse_args(argv)
    host = Host.sample()
    result = {"shape": {"rows": ROWS, "prompt": PROMPT, "completion": COMPLETION, "sample_rows": 8,
                        "sample_new_tokens": 32, "repeats": REPEATS, "threads": args.threads, "model": args.model},
              **measure(args.threads, args.model)}
    result["provenance"] = provenance(host)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("fp32", "bf16", "speedup", "logprob_gap")}))


if __name__ == "__main__":
    main()
