"""The Answer Agent (a frozen, prompted LM) and the QA metrics (exact match, token F1).

Memory distillation, then answer (Memory-R1's Answer Agent), both done by the frozen LM, greedy:

1. *Select*: the question retrieves the top ``k`` entries of the bank (``MemoryBank.retrieve``). The LM
   scores each entry by query likelihood, the mean log-probability of the question's tokens after
   ``"Memory: <entry>\\nQuestion: "``, and keeps the best ``select`` entries (default 1). Scoring is one
   batched forward pass; asking a 135M model to *write* the ids of the relevant entries gave
   unusable text on this task (docs/results_memory.md).
2. *Answer*: a short one-shot chat prompt with the selected entries and the question; greedy
   decoding of at most ``max_new_tokens`` tokens; the first line, with a leading "Answer:" removed,
   is the answer.

The agent has no gradient and never changes (no gradients, evaluation mode). Answers are cached
on (question, retrieved texts), so episodes whose banks agree on what the question retrieves cost
one LM call. Metrics follow SQuAD: lower case, punctuation and articles dropped, whitespace squeezed.
"""
from __future__ import annotations

import re
import string
from collections import Counter

import torch

from .bank import MemoryBank

SYSTEM = "Answer the question with one or two words copied from the memory."
SHOT_MEMORY = "[7] Carol: I drive a red car."
SHOT_QUESTION = "What color is Carol's car?"
SHOT_ANSWER = "red"

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(text: str) -> str:
    text = (text or "").lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(pred: str, gold: str) -> float:
    return float(normalize(pred) == normalize(gold))


def f1(pred: str, gold: str) -> float:
    p, g = normalize(pred).split(), normalize(gold).split()
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if not p or not g:
        return float(p == g)
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def clean_answer(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    line = re.sub(r"^(the\s+)?answer\s*(is)?\s*[:\-]?\s*", "", line, flags=re.I)
    return line.strip()


class AnswerAgent:
    """Frozen LM reader. ``answer(question, bank)`` -> (answer, selected entries)."""

    def __init__(self, model, tokenizer, k: int = 3, select: int = 1, max_new_tokens: int = 6):
        self.model, self.tokenizer = model.eval().requires_grad_(False), tokenizer
        self.k, self.select, self.max_new_tokens = k, select, max_new_tokens
        self.cache: dict = {}
        self.calls = 0

    def _device(self):
        return next(self.model.parameters()).device

    @torch.no_grad()
    def select_entries(self, question: str, entries) -> list:
        if len(entries) <= self.select:
            return list(entries)
        tok = self.tokenizer
        q_ids = tok(" " + question, add_special_tokens=False)["input_ids"]
        rows = [tok(f"Memory: {e.text}\nQuestion:", add_special_tokens=False)["input_ids"] + q_ids for e in entries]
        width = max(len(r) for r in rows)
        pad = tok.pad_token_id
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(rows):  # right padding: the question sits at a known offset per row
            ids[i, :len(r)] = torch.tensor(r)
            mask[i, :len(r)] = 1
        logits = self.model(input_ids=ids.to(self._device()), attention_mask=mask.to(self._device())).logits.float()
        logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:].unsqueeze(-1).to(logits.device)).squeeze(-1)
        scores = []
        for i, r in enumerate(rows):
            start = len(r) - len(q_ids)
            scores.append(float(logp[i, start - 1:len(r) - 1].mean()))
        order = sorted(range(len(entries)), key=lambda i: -scores[i])[: self.select]
        return [entries[i] for i in sorted(order)]

    def _messages(self, question: str, selected) -> list[dict]:
        mem = "\n".join(f"[{e.id}] {e.text}" for e in selected) if selected else "(no memory)"
        return [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Memory:\n{SHOT_MEMORY}\nQuestion: {SHOT_QUESTION}"},
                {"role": "assistant", "content": SHOT_ANSWER},
                {"role": "user", "content": f"Memory:\n{mem}\nQuestion: {question}"}]

    @torch.no_grad()
    def generate(self, batch_messages) -> list[str]:
        tok = self.tokenizer
        texts = [tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in batch_messages]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self._device()) for k, v in enc.items()}
        out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False,
                                  pad_token_id=tok.pad_token_id, temperature=None, top_p=None, top_k=None)
        width = enc["input_ids"].shape[1]
        return [tok.decode(o[width:], skip_special_tokens=True) for o in out]

    def answer_many(self, items) -> list[tuple[str, list]]:
        """``items``: [(question, entries retrieved for it)] -> [(answer, selected entries)], batched over
        the items not in the cache."""
        keys = [(q, tuple(e.text for e in ents)) for q, ents in items]
        todo = {}
        for key, (q, ents) in zip(keys, items):
            if key not in self.cache and key not in todo:
                todo[key] = (q, ents)
        if todo:
            selected = {key: self.select_entries(q, ents) for key, (q, ents) in todo.items()}
            outs = self.generate([self._messages(q, selected[key]) for key, (q, _) in todo.items()])
            self.calls += len(todo)
            for key, out in zip(todo, outs):
                self.cache[key] = (clean_answer(out), [e.text for e in selected[key]])
        return [self.cache[key] for key in keys]

    def answer(self, question: str, bank: MemoryBank) -> tuple[str, list]:
        return self.answer_many([(question, bank.retrieve(question, self.k))])[0]


def score_answers(preds, golds) -> dict:
    em = [exact_match(p, g) for p, g in zip(preds, golds)]
    fs = [f1(p, g) for p, g in zip(preds, golds)]
    n = max(len(em), 1)
    return {"em": sum(em) / n, "f1": sum(fs) / n, "n": len(em)}
