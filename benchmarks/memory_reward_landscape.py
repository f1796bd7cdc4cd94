"""How much reward is there to learn? The memory env's reward for every valid operation on the same decisions.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/memory_reward_landscape.py --n 64 --questions 3 --out runs/memory_landscape.json

For each of ``--n`` training decisions (``envs.memory.problems("train")``: a dialogue turn and the bank a
noisy reference manager built before it), the frozen Answer Agent scores every operation the manager could
write there: ``ADD``, ``NOOP`` and ``UPDATE i`` / ``DELETE i`` for each entry the prompt shows. The table
(by the turn's kind) gives the mean reward of ADD, of NOOP, of the rule manager's choice, of the best
operation in hindsight (an upper bound for any manager on these decisions) and how often some operation
beats ADD strictly. If the best operation is barely above ADD, a policy trained on this reward has little
reason to leave ADD; that is the question docs/results_memory.md asks of the RL runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reference_impls.envs.memory import MemoryConfig, MemoryEnv, get_answer_agent, problems  # noqa: E402
from reference_impls.memory.managers import rule_op  # noqa: E402


def candidate_ops(env: MemoryEnv) -> list[str]:
    shown = env.problem.bank().retrieve(env.line, env.config.k)
    return ["ADD", "NOOP"] + [f"UPDATE {e.id}" for e in shown] + [f"DELETE {e.id}" for e in shown]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=64, help="training decisions to score")
    p.add_argument("--questions", type=int, default=3, help="questions per decision (env option)")
    p.add_argument("--levels", default="1,2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--answer-mode", default="extract", choices=("extract", "generate"))
    p.add_argument("--out", default="", help="write the per-decision rows and the summary here (JSON)")
    a = p.parse_args(argv)
    t0 = time.time()
    agent = get_answer_agent(mode=a.answer_mode)
    config = MemoryConfig(questions=a.questions, answer_mode=a.answer_mode)
    levels = tuple(int(x) for x in a.levels.split(","))
    rows = []
    for decision in problems("train", a.n, a.seed, levels):
        env = MemoryEnv(decision, config, agent)
        env.reset()
        scores = {op: env.step(op).reward for op in candidate_ops(env)}
        rule = rule_op(env.line, decision.bank().retrieve(env.line, config.k))
        rows.append({"uid": decision.uid, "kind": decision.family, "scores": scores,
                     "rule": rule, "rule_reward": scores[rule] if rule in scores else env.step(rule).reward})
    by_kind: dict[str, list] = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
        by_kind["all"].append(r)
    summary = {}
    for kind, rs in sorted(by_kind.items()):
        n = len(rs)
        summary[kind] = {
            "n": n,
            "add": sum(r["scores"]["ADD"] for r in rs) / n,
            "noop": sum(r["scores"]["NOOP"] for r in rs) / n,
            "rule": sum(r["rule_reward"] for r in rs) / n,
            "best": sum(max(r["scores"].values()) for r in rs) / n,
            "some_op_beats_add": sum(max(r["scores"].values()) > r["scores"]["ADD"] for r in rs) / n,
        }
    print("| turn kind | n | ADD | NOOP | rule op | best op (hindsight) | some op beats ADD |")
    print("|---|---|---|---|---|---|---|")
    for kind, s in summary.items():
        print(f"| {kind} | {s['n']} | {s['add']:.3f} | {s['noop']:.3f} | {s['rule']:.3f} | {s['best']:.3f} | "
              f"{s['some_op_beats_add']:.2f} |")
    print(f"({time.time() - t0:.0f} s, {agent.calls} Answer Agent calls)")
    if a.out:
        Path(a.out).write_text(json.dumps({"args": vars(a), "summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
