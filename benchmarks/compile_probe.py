"""Probe: does a static key/value cache with a ``torch.compile``-d decode step speed up CPU decoding?

    OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.compile_probe --rows 32 --prompt-tokens 130 --steps 24 --json

Greedy decoding of ``rows`` copies of one prompt (no padding, so the three variants run the very same
computation), timed per decode step after one warm-up step:

  dynamic         the engine's cache (DynamicCache, keys/values concatenated every step), eager
  static          a StaticCache of fixed width (written in place at ``cache_position``), eager
  static+compile  the same with ``torch.compile(model.forward)``; its first calls are the compile time

It reports seconds per decode step of each, the compile time, and whether the greedy tokens of each
variant equal the dynamic cache's. A probe, not part of the engine: see docs/results_rollout.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from reference_impls.models import load_policy


def decode(model, forward, cache, ids, steps, static_width=None):
    rows, n = ids.shape
    width = static_width or (n + steps + 1)
    mask = torch.zeros((rows, width), dtype=torch.long)
    mask[:, :n] = 1
    pos = torch.arange(n)[None].expand(rows, n)
    kw = {"cache_position": torch.arange(n)} if static_width else {}
    out = forward(input_ids=ids, attention_mask=mask[:, :n] if not static_width else mask, position_ids=pos,
                  cache=cache, use_cache=True, logits_to_keep=1, **kw)
    tok = out.logits[:, -1].argmax(-1)
    tokens, times, seen = [tok], [], n
    for _ in range(steps):
        t0 = time.perf_counter()
        mask[:, seen] = 1
        kw = {"cache_position": torch.tensor([seen])} if static_width else {}
        out = forward(input_ids=tok[:, None], attention_mask=mask if static_width else mask[:, :seen + 1],
                      position_ids=torch.full((rows, 1), seen), cache=cache, use_cache=True,
                      logits_to_keep=1, **kw)
        tok = out.logits[:, -1].argmax(-1)
        times.append(time.perf_counter() - t0)
        tokens.append(tok)
        seen += 1
    return torch.stack(tokens, 1), times


def main(argv=None):
    from transformers import DynamicCache, StaticCache

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--prompt-tokens", type=int, default=130)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, tok = load_policy(args.model, device="cpu")
    text = "Search the corpus and answer the question about reinforcement learning for agents. " * 20
    ids = torch.tensor(tok(text, add_special_tokens=False)["input_ids"][: args.prompt_tokens])[None]
    ids = ids.expand(args.rows, -1).contiguous()
    width = args.prompt_tokens + args.steps + 1
    res = {"model": args.model, "rows": args.rows, "prompt_tokens": args.prompt_tokens, "steps": args.steps,
           "loadavg_before": list(os.getloadavg()), "torch": torch.__version__}
    with torch.no_grad():
        ref, t = decode(model, model.forward, DynamicCache(config=model.config), ids, args.steps)
        res["dynamic_step_s"] = round(sorted(t[1:])[len(t[1:]) // 2], 4)
        out, t = decode(model, model.forward, StaticCache(config=model.config, max_cache_len=width), ids,
                        args.steps, static_width=width)
        res["static_step_s"] = round(sorted(t[1:])[len(t[1:]) // 2], 4)
        res["static_identical"] = bool(torch.equal(out, ref))
        print("eager done", res, file=sys.stderr, flush=True)
        compiled = torch.compile(model.forward, dynamic=False)
        t0 = time.perf_counter()
        try:
            out, t = decode(model, compiled, StaticCache(config=model.config, max_cache_len=width), ids,
                            args.steps, static_width=width)
        except Exception as e:  # report what broke, do not hide it
            res["compile_error"] = f"{type(e).__name__}: {str(e)[:400]}"
        else:
            total = time.perf_counter() - t0
            res["compile_first_two_steps_s"] = round(total - sum(t[2:]), 2)  # prefill + first step compiles
            res["compiled_step_s"] = round(sorted(t[2:])[len(t[2:]) // 2], 4)
            res["compiled_identical"] = bool(torch.equal(out, ref))
            res["compiled_step_times"] = [round(x, 4) for x in t]
    res["loadavg_after"] = list(os.getloadavg())
    print(json.dumps(res) if args.json else res)


if __name__ == "__main__":
    sys.exit(main())
