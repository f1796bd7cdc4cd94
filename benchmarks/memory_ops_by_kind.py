"""Where does a manager's operation land? Its operations on the held-out dialogues, by the turn's kind.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/memory_ops_by_kind.py runs/bench_memory2/ppo_k1 --k 1

Runs the greedy LM manager of a checkpoint (or ``rule`` / ``add_only``) over the same held-out dialogues
as ``memory_eval.py`` and counts (turn kind, operation). An UPDATE is split by what it overwrote:
``UPDATE-same`` (an entry of the same speaker and slot as the turn: the stale value, what a change or
correction should replace) or ``UPDATE-other`` (any other entry: a live fact destroyed). Speaker and
slot of an entry are read with the rule manager's keyword rules; this is an analysis of where the
operations went, not part of any reward.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reference_impls.memory.dialogue import dialogues  # noqa: E402
from reference_impls.memory.managers import (AddOnlyManager, LMManager, RuleManager, run_manager, slot_of,  # noqa: E402
                                             speaker_of)


def ops_by_turn_kind(manager, ds, k: int = 3) -> Counter:
    """(turn kind, op tag) counts of ``manager`` run over ``ds`` (through ``managers.run_manager``)."""
    counts: Counter = Counter()

    def observe(turn, bank, op):
        applied = bank.copy().apply(op, turn.line, turn.index)
        tag = applied.kind if applied.status == "ok" else applied.status
        if tag == "UPDATE":
            old = bank.entries[op.id].text
            same = speaker_of(old) == turn.speaker and slot_of(old) == slot_of(turn.line) is not None
            tag = "UPDATE-same" if same else "UPDATE-other"
        counts[(turn.kind, tag)] += 1

    run_manager(manager, ds, k, observe=observe)
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("manager", help="a run folder (its latest checkpoint), a checkpoint, 'rule' or 'add_only'")
    p.add_argument("--k", type=int, default=3, help="memories shown to the manager per turn")
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--levels", default="1,2")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    ds = dialogues("heldout", a.n, a.seed, tuple(int(x) for x in a.levels.split(",")))
    if a.manager in ("rule", "add_only"):
        manager = RuleManager() if a.manager == "rule" else AddOnlyManager()
    else:
        from reference_impls.models import load_policy
        from reference_impls.trainer import latest_checkpoint

        path = Path(a.manager)
        ckpt = latest_checkpoint(path) if (path / "config.json").exists() and (path / "checkpoints").exists() else path
        manager = LMManager(*load_policy(str(ckpt), device="cpu"))
    counts = ops_by_turn_kind(manager, ds, a.k)
    kinds = sorted({kind for kind, _ in counts})
    tags = sorted({tag for _, tag in counts})
    print("| turn kind | " + " | ".join(tags) + " |\n|---|" + "---|" * len(tags))
    for kind in kinds:
        print(f"| {kind} | " + " | ".join(str(counts.get((kind, t), 0)) for t in tags) + " |")
    print(json.dumps({f"{kind}:{tag}": n for (kind, tag), n in sorted(counts.items())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
