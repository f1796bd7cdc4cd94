"""Memory managers (the policy's prompt, the baselines) and the end-of-dialogue evaluation.

A manager sees one dialogue turn at a time together with the top-``k`` entries the turn retrieves from
the bank, and writes one operation (format in ``bank.py``). Managers here:

``AddOnlyManager``  every turn is ADDed verbatim (the Mem0-style simplification: nothing is ever
                    updated or deleted, filler included).
``RuleManager``     keyword rules on the turn text: small talk -> NOOP; a statement about a slot
                    (job / city / pet / trip) -> UPDATE the retrieved entry of the same speaker and
                    slot, or ADD when there is none; a retraction -> DELETE that entry.
``LMManager``       an LM (base or RL-trained SmolLM2) prompted with :func:`manager_messages`, greedy;
                    unparseable output is applied as NOOP.
The *no memory* baseline has no manager: the Answer Agent reads the last ``window`` turns.

``run_manager`` processes many dialogues in lock-step (turn t of every dialogue is one batch), and
``evaluate`` answers each dialogue's end-of-dialogue questions with the frozen Answer Agent.
"""
from __future__ import annotations

import re
from collections import defaultdict

import torch

from .answer import AnswerAgent, exact_match, f1
from .bank import MemoryBank, parse_op, render_entries

MANAGER_SYSTEM = (
    "You keep a memory of facts about two people. Read the new message and the related memories, "
    "then write one line:\n"
    "ADD - store the message as a new memory\n"
    "UPDATE <id> - the message replaces memory <id>\n"
    "DELETE <id> - the message says memory <id> is no longer true\n"
    "NOOP - small talk, nothing to remember"
)


def manager_messages(turn_line: str, retrieved) -> list[dict]:
    return [{"role": "system", "content": MANAGER_SYSTEM},
            {"role": "user", "content": f"Memories:\n{render_entries(retrieved)}\nNew message: {turn_line}"}]


# ---- rule-based manager ----------------------------------------------------------------------------
_SLOT_RULES = (  # checked in order; the first match names the slot
    ("trip", re.compile(r"\btrip\b", re.I)),
    ("pet", re.compile(r"\b(named|called|adopted|pet|my parents)\b", re.I)),
    ("job", re.compile(r"\b(work(ing)? as|job as|quit being|no longer an? |am an? \w+, not)", re.I)),
    ("city", re.compile(r"\b(live in|moved to|living in|don't live)\b", re.I)),
)
_RETRACT = re.compile(r"\b(cancelled|canceled|no longer|anymore|went to live with my parents\.)", re.I)


def slot_of(text: str) -> str | None:
    for slot, rx in _SLOT_RULES:
        if rx.search(text):
            return slot
    return None


def speaker_of(text: str) -> str:
    return text.split(":", 1)[0].strip() if ":" in text else ""


def rule_op(turn_line: str, retrieved) -> str:
    slot = slot_of(turn_line)
    if slot is None:
        return "NOOP"
    speaker = speaker_of(turn_line)
    same = [e for e in retrieved if speaker_of(e.text) == speaker and slot_of(e.text) == slot]
    retract = bool(_RETRACT.search(turn_line)) and not re.search(r"\badopted\b", turn_line, re.I)
    if retract:
        return f"DELETE {same[0].id}" if same else "NOOP"
    return f"UPDATE {same[0].id}" if same else "ADD"


class AddOnlyManager:
    name = "add_only"

    def decide_many(self, items) -> list[str]:
        return ["ADD" for _ in items]


class RuleManager:
    name = "rule"

    def decide_many(self, items) -> list[str]:
        return [rule_op(line, retrieved) for line, retrieved in items]


class LMManager:
    """Greedy LM manager (the policy at evaluation time)."""

    name = "lm"

    def __init__(self, model, tokenizer, max_new_tokens: int = 24, batch_size: int = 16):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size

    @torch.no_grad()
    def decide_many(self, items) -> list[str]:
        tok, out = self.tokenizer, []
        for s in range(0, len(items), self.batch_size):
            chunk = items[s:s + self.batch_size]
            texts = [tok.apply_chat_template(manager_messages(line, ret), add_generation_prompt=True, tokenize=False)
                     for line, ret in chunk]
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
            dev = next(self.model.parameters()).device
            gen = self.model.generate(**{k: v.to(dev) for k, v in enc.items()}, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, pad_token_id=tok.pad_token_id, temperature=None, top_p=None,
                                      top_k=None)
            w = enc["input_ids"].shape[1]
            out += [tok.decode(g[w:], skip_special_tokens=True) for g in gen]
        return out


def run_manager(manager, dialogues, k: int = 3, observe=None):
    """Process every dialogue turn by turn; returns (banks, op statistics). ``observe(turn, bank, op)``,
    if given, sees each parsed operation with the bank it is about to be applied to."""
    banks = [MemoryBank() for _ in dialogues]
    stats = defaultdict(int)
    for t in range(max(len(d.turns) for d in dialogues)):
        live = [i for i, d in enumerate(dialogues) if t < len(d.turns)]
        items = [(dialogues[i].turns[t].line, banks[i].retrieve(dialogues[i].turns[t].line, k)) for i in live]
        texts = manager.decide_many(items)
        for i, text in zip(live, texts):
            op = parse_op(text)
            if observe is not None:
                observe(dialogues[i].turns[t], banks[i], op)
            applied = banks[i].apply(op, dialogues[i].turns[t].line, t)
            stats[applied.kind if applied.status == "ok" else applied.status] += 1
    return banks, dict(stats)


def window_banks(dialogues, window: int = 4):
    """No-memory baseline: the last ``window`` turns as the only 'memories'."""
    banks = []
    for d in dialogues:
        b = MemoryBank()
        for t in d.turns[-window:]:
            b.add(t.line, t.index)
        banks.append(b)
    return banks


def evaluate(agent: AnswerAgent, dialogues, banks) -> dict:
    """EM and F1 over every end-of-dialogue question, overall and by kind, plus the per-question rows."""
    items, rows = [], []
    for d, b in zip(dialogues, banks):
        for q in d.questions:
            items.append((q.text, b.retrieve(q.text, agent.k)))
            rows.append({"dialogue": d.uid, "level": d.level, "kind": q.kind, "question": q.text, "gold": q.answer})
    answers = []
    for s in range(0, len(items), 16):
        answers += agent.answer_many(items[s:s + 16])
    by_kind = defaultdict(lambda: [0.0, 0.0, 0])
    for row, (pred, selected) in zip(rows, answers):
        row.update(pred=pred, selected=selected, em=exact_match(pred, row["gold"]), f1=f1(pred, row["gold"]))
        for key in (row["kind"], "all"):
            by_kind[key][0] += row["em"]
            by_kind[key][1] += row["f1"]
            by_kind[key][2] += 1
    summary = {k: {"em": v[0] / v[2], "f1": v[1] / v[2], "n": v[2]} for k, v in by_kind.items()}
    return {"summary": summary, "rows": rows}
