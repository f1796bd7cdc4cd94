"""The Answer Agent (a frozen, prompted LM) and the QA metrics (exact match, token F1).

Memory distillation, then answer (Memory-R1's Answer Agent), both done by the frozen LM, greedy:

1. *Select*: the question retrieves the top ``k`` entries of the bank (``MemoryBank.retrieve``). The LM
   scores each entry by query likelihood, the mean log-probability of the question's tokens after
   ``"Memory: <entry>\\nQuestion: "``, and keeps the best ``select`` entries (default 1). Asking a 135M
   model to *write* the ids of the relevant entries gave unusable text on this task
   (docs/results_memory.md).
2. *Answer*, one of two modes, both from a short one-shot chat prompt with the selected entries and
   the question:

   - ``extract`` (default): the answer is the span of the selected entries that the LM itself finds
     most likely as its reply. Candidates are the spans of 1 to ``max_span_words`` words of the
     selected entries (punctuation stripped, spans that begin or end with a function word dropped);
     each is scored by ``sum_t log p(span_t | prompt, span_<t) + log p(<|im_end|> | prompt, span)``
     and the best one is the answer. This is constrained decoding of the prompt's own instruction
     ("copied from the memory"): the same frozen model, forced to copy. With free generation the 135M
     model read the right entry and still answered wrongly half of the time (``Lima: Peru``,
     ``Norway`` for Oslo, ``prussia`` for Prague; docs/results_memory.md), which hid the difference
     between a clean and a cluttered bank from the manager's reward.
   - ``generate``: greedy decoding of at most ``max_new_tokens`` tokens; the first line, with a
     leading "Answer:" removed, is the answer.

The agent has no gradient and never changes (no gradients, evaluation mode). Answers are cached
on (question, retrieved texts), so episodes whose banks agree on what the question retrieves cost
one LM call. The key leaves out the entry ids, which the answer prompt does show (``[3] ...``): two
banks holding the same texts under other ids share the answer computed first (an id is a number
token in a ~100-token prompt; ids never decide which entries are retrieved or selected; re-answering
96 cached items under other ids changed one answer, between two wrong spans of a small-talk entry).

Cost: the model reads each token once. A memory line retrieved for several questions of a batch runs
once, each question on top of its keys/values; the answer prompt's fixed head (system prompt, one-shot
example) runs once per agent, each item's own part once on top of it, and each candidate span on top of
that; the vocabulary projection (a fifth of SmolLM2's weights) is applied only where a scored token is
predicted. The scores equal those of one plain forward per sequence up to float rounding
(tests/reference_impls/test_memory_answer_fast.py); checked on 60 held-out evaluation questions and
48 training episodes with SmolLM2, that rounding changed no selection, answer or reward. The Answer
Agent is still most of a memory training step.

Metrics follow SQuAD: lower case, punctuation and articles dropped, whitespace squeezed.
"""
from __future__ import annotations

import re
import string

import torch

from ..scoring import normalize_answer as normalize
from ..scoring import token_f1 as f1
from .bank import Entry, MemoryBank

SYSTEM = "Answer the question with one or two words copied from the memory."
SHOT_MEMORY = "[7] Carol: I drive a red car."
SHOT_QUESTION = "What color is Carol's car?"
SHOT_ANSWER = "red"

def exact_match(pred: str, gold: str) -> float:
    """1.0 when the normalised strings are equal (two empty strings count as equal here)."""
    return float(normalize(pred) == normalize(gold))


def clean_answer(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    line = re.sub(r"^(the\s+)?answer\s*(is)?\s*[:\-]?\s*", "", line, flags=re.I)
    return line.strip()


# Words an answer span may not begin or end with (pronouns, articles, prepositions, auxiliaries).
FUNCTION_WORDS = frozenset("""a an the i we my our me us you your he she his her they their it its this that these
those to of in on at for from with by as and or but not no is are was were be been am have has had do did
will would can so then there here about after before into instead called named new""".split())
MODES = ("extract", "generate")


def answer_spans(texts, max_words: int = 3) -> list[str]:
    """Candidate answers: every span of 1..max_words words of ``texts``, in order of first appearance.

    Words are split on whitespace with surrounding punctuation stripped; a span never crosses a sentence
    mark or the ``Speaker:`` colon, and never begins or ends with a function word."""
    spans: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for chunk in re.split(r"[.:;!?,]\s", f"{text} "):
            words = [w.strip(string.punctuation + "“”‘’") for w in chunk.split()]
            words = [w for w in words if w]
            for i in range(len(words)):
                for j in range(i + 1, min(i + max_words, len(words)) + 1):
                    if words[i].lower() in FUNCTION_WORDS or words[j - 1].lower() in FUNCTION_WORDS:
                        continue
                    span = " ".join(words[i:j])
                    if span.lower() not in seen:
                        seen.add(span.lower())
                        spans.append(span)
    return spans


class AnswerAgent:
    """Frozen LM reader. ``answer(question, bank)`` -> (answer, selected entries).

    ``mode``: ``"extract"`` (answer = the selected entries' span the LM scores highest) or ``"generate"``
    (greedy free text); see the module docstring.
    """

    def __init__(self, model, tokenizer, k: int = 3, select: int = 1, max_new_tokens: int = 6,
                 mode: str = "extract", max_span_words: int = 3, score_batch: int = 64):
        if mode not in MODES:
            raise ValueError(f"AnswerAgent mode must be one of {MODES}, got {mode!r}")
        self.model, self.tokenizer = model.eval().requires_grad_(False), tokenizer
        self.k, self.select, self.max_new_tokens = k, select, max_new_tokens
        self.mode, self.max_span_words, self.score_batch = mode, max_span_words, score_batch
        self.cache: dict = {}
        self.calls = 0
        self._prefix = None  # (token ids, keys/values) of the fixed prompt head, see _fixed_prefix

    def _device(self):
        return next(self.model.parameters()).device

    @torch.inference_mode()
    def select_many(self, items, batch_rows: int = 64) -> list[list]:
        """Step 1 for many (question, entries) items at once: every (entry, question) pair is one row,
        ``"Memory: <entry>\\nQuestion:"`` followed by the question, scored by the mean log-probability of the
        question's tokens; per item the best ``select`` entries, in bank order. Rows are scored
        ``batch_rows`` at a time (:meth:`_question_logps`)."""
        tok = self.tokenizer
        rows = []  # (item, entry index, entry text, question ids)
        out: list[list] = []
        for i, (question, entries) in enumerate(items):
            out.append(list(entries))
            if len(entries) <= self.select:
                continue
            q_ids = tok(" " + question, add_special_tokens=False)["input_ids"]
            rows += [(i, j, e.text, q_ids) for j, e in enumerate(entries)]
        scores: dict[int, list[tuple[float, int]]] = {}
        for b in range(0, len(rows), batch_rows):
            chunk = rows[b:b + batch_rows]
            for (i, j, _, _), logps in zip(chunk, self._question_logps([(t, q) for _, _, t, q in chunk])):
                scores.setdefault(i, []).append((float(logps.mean()), j))
        for i, scored in scores.items():
            keep = sorted(j for _, j in sorted(scored, key=lambda x: -x[0])[: self.select])
            out[i] = [out[i][j] for j in keep]
        return out

    def _question_logps(self, pairs) -> list[torch.Tensor]:
        """``pairs``: [(entry text, question ids)] -> per pair, log p(question token | memory line, earlier
        question tokens) for each question token.

        An entry retrieved for several questions is read once: the distinct memory lines run as one
        right-padded batch, and each pair's question runs on top of its line's keys/values (positions
        continue after the line, the padding is masked). The vocabulary projection is applied only where a
        question token is predicted. Equal, up to float rounding, to one plain forward per pair
        (tests/reference_impls/test_memory_answer_fast.py)."""
        from transformers import DynamicCache

        tok, dev = self.tokenizer, self._device()
        decoder, project = self.model.get_decoder(), self.model.get_output_embeddings()
        pad = tok.pad_token_id
        texts = list(dict.fromkeys(t for t, _ in pairs))  # distinct entry texts, in first-seen order
        line_of = {t: n for n, t in enumerate(texts)}
        lines = [tok(f"Memory: {t}\nQuestion:", add_special_tokens=False)["input_ids"] for t in texts]
        width = max(len(x) for x in lines)
        ids = torch.full((len(lines), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, x in enumerate(lines):
            ids[r, :len(x)] = torch.tensor(x)
            mask[r, :len(x)] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        cache = DynamicCache()
        hidden = decoder(input_ids=ids, attention_mask=mask, cache=cache, use_cache=True).last_hidden_state
        line_len = torch.tensor([len(x) for x in lines], device=dev)
        first = torch.log_softmax(project(hidden[torch.arange(len(lines), device=dev), line_len - 1]).float(), -1)
        owner = torch.tensor([line_of[t] for t, _ in pairs], device=dev)
        qs = [q for _, q in pairs]
        logps = _continuation_logps(decoder, project, cache, first, owner, qs, mask, line_len, pad)
        return [logps[r, :len(q)] for r, q in enumerate(qs)]

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

    def _prompt_ids(self, messages) -> list[int]:
        tok = self.tokenizer
        return tok(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
                   add_special_tokens=False)["input_ids"]

    def _fixed_prefix(self) -> tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]]]:
        """The prompt tokens every answer prompt begins with (the system prompt and the one-shot example, up
        to the last user turn's ``Memory:``), and their keys/values, computed once per agent."""
        if self._prefix is None or self._prefix[1][0][0].device != self._device():
            a = self._prompt_ids(self._messages("?", []))
            b = self._prompt_ids(self._messages("Who?", [Entry(1, "x")]))
            n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            if n == 0:
                raise ValueError("AnswerAgent: the tokenizer's chat template gives the answer prompts no common "
                                 "first token (expected the system prompt and the one-shot example)")
            self._prefix = (a[:n], self._keys_values(a[:n]))
        return self._prefix

    def _keys_values(self, ids: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        from transformers import DynamicCache

        cache = DynamicCache()
        self.model.get_decoder()(input_ids=torch.tensor([ids], device=self._device()), cache=cache, use_cache=True)
        return [(layer.keys, layer.values) for layer in cache.layers]

    def extract(self, batch_messages, batch_entries) -> list[str]:
        """Per item, the span of its entries maximising log p(span, end of turn | prompt) (the first of equal
        maxima); "" if none."""
        return [max(scored, key=lambda x: x[1])[0] if scored else ""
                for scored in self.span_scores(batch_messages, batch_entries)]

    @torch.inference_mode()
    def span_scores(self, batch_messages, batch_entries) -> list[list[tuple[str, float]]]:
        """Per item, [(candidate span, log p(span, end of turn | prompt))] in :func:`answer_spans` order.

        The model runs over each token once: the prompt's fixed head (system prompt, one-shot example) once
        per agent, each item's own prompt tail once on top of its keys/values, and each candidate's tokens
        on top of its item's. The vocabulary projection is applied only where a candidate token is
        predicted. Items are grouped so that a group's candidates fill at most ``score_batch`` rows (an
        item's candidates are never split). The scores are those of one plain forward per candidate up to
        float rounding (padding and batch shapes change the last bits; tests/reference_impls/
        test_memory_answer_fast.py compares them)."""
        tok = self.tokenizer
        end = tok.convert_tokens_to_ids("<|im_end|>")
        prompts = [self._prompt_ids(m) for m in batch_messages]
        cands = [[(span, tok(span, add_special_tokens=False)["input_ids"] + [end])
                  for span in answer_spans([e.text for e in ents], self.max_span_words)] for ents in batch_entries]
        out: list[list[tuple[str, float]]] = [[] for _ in batch_messages]
        todo = [i for i, c in enumerate(cands) if c]
        if not todo:
            return out
        head, head_kv = self._fixed_prefix()
        shared = min(len(head), *(len(prompts[i]) - 1 for i in todo))  # every item keeps >= 1 token of its own
        for i in todo:
            if prompts[i][:shared] != head[:shared]:
                raise ValueError(f"answer prompt {i} does not begin with the fixed prompt head")
        groups, rows = [[]], 0
        for i in todo:
            if groups[-1] and rows + len(cands[i]) > self.score_batch:
                groups.append([])
                rows = 0
            groups[-1].append(i)
            rows += len(cands[i])
        for group in groups:
            for i, scores in zip(group, self._candidate_scores(group, prompts, cands, shared, head_kv)):
                out[i] = [(span, score) for (span, _), score in zip(cands[i], scores)]
        return out

    def _candidate_scores(self, group, prompts, cands, shared, head_kv) -> list[list[float]]:
        """Per item of ``group``, the score of each of its candidates (``cands[i]``: [(span, token ids)]),
        ``sum_t log p(token_t | prompt, earlier tokens)``."""
        from transformers import DynamicCache

        dev = self._device()
        decoder, project = self.model.get_decoder(), self.model.get_output_embeddings()
        pad = self.tokenizer.pad_token_id
        # 1. each item's own prompt tail, left-padded, on top of the fixed head
        tails = [prompts[i][shared:] for i in group]
        width = max(len(t) for t in tails)
        ids = torch.full((len(group), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, t in enumerate(tails):
            ids[r, width - len(t):] = torch.tensor(t)
            mask[r, width - len(t):] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        ones = torch.ones((len(group), shared), dtype=torch.long, device=dev)
        cache = DynamicCache(ddp_cache_data=[(k[:, :, :shared].expand(len(group), -1, -1, -1),
                                              v[:, :, :shared].expand(len(group), -1, -1, -1)) for k, v in head_kv])
        positions = (shared + mask.cumsum(-1) - 1).clamp(min=shared)
        hidden = decoder(input_ids=ids, attention_mask=torch.cat([ones, mask], 1), position_ids=positions,
                         cache=cache, use_cache=True).last_hidden_state
        first = torch.log_softmax(project(hidden[:, -1]).float(), -1)  # predicts each candidate's first token
        # 2. every candidate's tokens but its last, right-padded, on top of its item's keys/values
        owner = [r for r, i in enumerate(group) for _ in cands[i]]
        toks = [c for i in group for _, c in cands[i]]
        logps = _continuation_logps(decoder, project, cache, first, torch.tensor(owner, device=dev), toks,
                                    torch.cat([ones, mask], 1), shared + mask.sum(-1), pad)
        scores = logps.sum(-1).tolist()
        out = [[] for _ in group]
        for r, score in zip(owner, scores):
            out[r].append(score)
        return out

    def answer_many(self, items) -> list[tuple[str, list]]:
        """``items``: [(question, entries retrieved for it)] -> [(answer, selected entries)], batched over
        the items not in the cache."""
        keys = [(q, tuple(e.text for e in ents)) for q, ents in items]
        todo = {}
        for key, (q, ents) in zip(keys, items):
            if key not in self.cache and key not in todo:
                todo[key] = (q, ents)
        if todo:
            selected = dict(zip(todo, self.select_many(list(todo.values()))))
            messages = [self._messages(q, selected[key]) for key, (q, _) in todo.items()]
            if self.mode == "extract":
                outs = self.extract(messages, [selected[key] for key in todo])
            else:
                outs = [clean_answer(o) for o in self.generate(messages)]
            self.calls += len(todo)
            for key, out in zip(todo, outs):
                self.cache[key] = (out, [e.text for e in selected[key]])
        return [self.cache[key] for key in keys]

    def answer(self, question: str, bank: MemoryBank) -> tuple[str, list]:
        return self.answer_many([(question, bank.retrieve(question, self.k))])[0]


def score_answers(preds, golds) -> dict:
    em = [exact_match(p, g) for p, g in zip(preds, golds)]
    fs = [f1(p, g) for p, g in zip(preds, golds)]
    n = max(len(em), 1)
    return {"em": sum(em) / n, "f1": sum(fs) / n, "n": len(em)}


def _continuation_logps(decoder, project, cache, first: torch.Tensor, owner: torch.Tensor, seqs: list[list[int]],
                        prefix_mask: torch.Tensor, start: torch.Tensor, pad: int) -> torch.Tensor:
    """log p of every token of each sequence in ``seqs``, read on top of its ``owner`` row of ``cache`` (the
    keys/values of a batch of prefixes): ``first`` (one row per prefix, over the vocabulary) predicts each
    sequence's first token; one forward of every sequence but its last token, right-padded, at positions
    ``start[owner] + t``, attending to ``prefix_mask[owner]`` (what the cache holds) and to its own tokens,
    predicts the rest. The vocabulary projection is applied only where a token is predicted. Returns
    (sequences x longest) log-probabilities, 0 past each sequence's end. The one step shared by the selection
    (questions on top of memory lines) and the extraction (spans on top of answer prompts)."""
    from transformers import DynamicCache

    dev = first.device
    longest = max(len(x) for x in seqs)
    logps = torch.zeros((len(seqs), longest), dtype=torch.float32, device=dev)
    logps[:, 0] = first[owner, torch.tensor([x[0] for x in seqs], device=dev)]
    if longest > 1:
        ids = torch.full((len(seqs), longest - 1), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, x in enumerate(seqs):
            ids[r, :len(x) - 1] = torch.tensor(x[:-1])
            mask[r, :len(x) - 1] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        row_cache = DynamicCache(ddp_cache_data=[(layer.keys[owner], layer.values[owner]) for layer in cache.layers])
        positions = start[owner].unsqueeze(1) + torch.arange(longest - 1, device=dev).unsqueeze(0)
        hidden = decoder(input_ids=ids, attention_mask=torch.cat([prefix_mask[owner], mask], 1),
                         position_ids=positions, cache=row_cache, use_cache=True).last_hidden_state
        at_row = torch.tensor([r for r, x in enumerate(seqs) for _ in range(len(x) - 1)], device=dev)
        at_pos = torch.tensor([t for x in seqs for t in range(len(x) - 1)], device=dev)
        target = torch.tensor([x[t + 1] for x in seqs for t in range(len(x) - 1)], device=dev)
        picked = torch.log_softmax(project(hidden[at_row, at_pos]).float(), -1)
        logps[at_row, at_pos + 1] = picked.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return logps
