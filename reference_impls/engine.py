"""The cached rollout engine: each prompt is prefilled once, each row keeps its key/value cache across turns.

``rollout.rollout`` asks an engine for one *turn* of the still-active episodes at a time and does the
bookkeeping (env steps, masks, truncation) itself. The reference engine (``engine="generate"``) calls
``model.generate`` on the whole conversation so far, every turn. This one keeps one key/value cache for
the batch and only ever runs the model over tokens it has not seen::

    turn 1   prefill the U distinct prompts (U = P, not P*G), index their cache out to the P*G rows
    turn t   forward [last model token + env observation] of each row (a few dozen tokens), then decode
    decode   one token per step for the rows still writing; a row leaves the step when it closes a stop
             string, emits EOS or reaches its own length limit (min(tokens per turn, episode budget)):
             its cache rows are parked (copied out) and the step batch shrinks to the rows still writing
    between  parked rows whose episode goes on are merged back; rows whose episode ended are dropped
             from the cache; columns no row needs are cut off

Layout. All rows share the cache's columns, so a row has *holes*: left padding of its prompt, the steps
it sat out while other rows were still writing (filled with zero keys/values when its parked rows are
merged back), and the left padding of its block of env tokens. The 2D attention mask is 0 on holes, and
position ids are passed explicitly (the row's own token count), so every row sees exactly its own tokens
at its own positions: the same computation as a fresh forward over the row alone, up to float summation
order (which may differ with the batch's size). Padding holes are fed the pad token, so all keys/values
are finite and masked.

Sampling. Greedy takes the argmax of the logits (what ``generate`` does without sampling). Sampling at
temperature T draws the next token exactly as ``torch.multinomial(softmax(logits / T), 1)`` does (its
one-sample path: ``argmax(p / q)`` with ``q ~ Exp(1)`` drawn as one ``(rows, vocab)`` tensor), with one
draw per step over all rows of the turn, stopped ones included (rows that left the step batch get
their noise drawn and unused): the random stream is consumed as ``generate`` consumes it, so with the same seed the same episodes come out (up to float round-off at
near-ties), unless a row is cut by its episode budget in a turn where another row runs longer (the old
loop keeps drawing for it until the longest row stops). Old log-probs are ``log_softmax(logits / T)``
of the very logits the token was drawn from.

Stop strings. A row's turn ends after token ``j`` when the text of its last nine turn tokens contains a
stop string (the rule of :func:`cut_turn`, which the reference loop and vLLM apply to a whole turn). That
text is decoded only when token ``j`` can end a stop string (its own text contains one or begins with one's
suffix, see :class:`StopMatcher`); the verdict per token id is memoised, so most steps decode nothing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

#: tokens before the newest one whose text is searched for a stop string (by :func:`cut_turn`)
STOP_WINDOW = 8


@dataclass
class TurnOutput:
    """What one row wrote in one turn: the sampled ids, their log-probs under the sampling logits, and
    whether the turn ended on a stop string or EOS (False: it reached its length limit)."""

    tokens: list[int]
    logprobs: list[float]
    stopped: bool


def cut_turn(tokenizer, new_ids: list[int], eos_ids: set[int], stop_strings) -> tuple[list[int], bool]:
    """The turn-cutting rule every engine applies (the reference loop and vLLM cut with it; :class:`StopMatcher`
    is the same test, token by token): the tokens this row actually produced in this call, up to and including
    EOS or the token that closes a stop string (searched in the text of that token and the ``STOP_WINDOW`` tokens
    before it). Returns (tokens, stopped) where stopped says a stop string or EOS was reached."""
    for j, tok in enumerate(new_ids):
        if tok in eos_ids:
            return new_ids[:j + 1], True
        text = tokenizer.decode(new_ids[max(0, j - STOP_WINDOW):j + 1])
        if any(s in text for s in stop_strings):
            return new_ids[:j + 1], True
    return new_ids, False


class StopMatcher:
    """Stop-string and EOS test on the tokens of the current turn, decoding only where it can matter.

    ``ends_turn(tokens)`` is true when ``tokens[-1]`` is EOS, or when the text of ``tokens[-9:]`` holds a
    stop string (what :func:`cut_turn` tests). Called after every new token, it can skip the decode
    whenever the newest token cannot complete a stop string: an occurrence that was not in the previous
    window overlaps the newest token and ends inside it, so the newest token's text either contains the
    stop string or begins with one of its suffixes (``>`` or ``c>`` for ``</calc>``; ``calc`` or a digit
    begins with none). The verdict per token id is computed once, from the token decoded alone; a token
    decoded alone into U+FFFD (a piece of a multi-byte character) or, for stop strings that contain
    whitespace, one that may carry a leading space the lone decode drops, is always decoded in context."""

    def __init__(self, tokenizer, stop_strings, eos_ids):
        self.tokenizer, self.stop_strings = tokenizer, tuple(stop_strings)
        self.eos_ids = set(eos_ids)
        self._space = any(c.isspace() for s in self.stop_strings for c in s)
        self._ascii = all(s.isascii() for s in self.stop_strings)
        self._candidate: dict[int, bool] = {}
        self.decodes = 0  # how many windows were decoded (the cost the filter saves)

    def _may_end_in(self, text: str) -> bool:
        return any(s in text or any(s.endswith(text[:k]) for k in range(1, min(len(s), len(text)) + 1))
                   for s in self.stop_strings)

    def can_complete(self, token: int) -> bool:
        known = self._candidate.get(token)
        if known is None:
            text = self.tokenizer.decode([token])
            known = self._may_end_in(text) or (not self._ascii and "\ufffd" in text)
            if self._space and not known:  # sentencepiece drops a leading space when a token is decoded alone
                known = not text or self._may_end_in(" " + text)
            self._candidate[token] = known
        return known

    def ends_turn(self, tokens: list[int]) -> bool:
        last = tokens[-1]
        if last in self.eos_ids:
            return True
        if not self.stop_strings or not self.can_complete(last):
            return False
        self.decodes += 1
        text = self.tokenizer.decode(tokens[-(STOP_WINDOW + 1):])
        return any(s in text for s in self.stop_strings)


def cache_is_supported(cache) -> bool:
    """The engine cuts and indexes cache layers by column: only plain full-attention layers allow that
    (a sliding-window layer counts columns, holes included, as its window)."""
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None]))


class UnsupportedCache(RuntimeError):
    """The model's cache has layers the engine cannot index by column (e.g. sliding-window attention)."""


class CachedEngine:
    """One rollout's worth of state: the key/value cache of the episodes still running.

    ``turn(samples, active, limits)``: ``active`` are indices into ``samples`` (ascending, a subset of the
    previous call's), ``limits[k]`` the most tokens row ``active[k]`` may write in this turn. Everything a
    row has in ``samples[i].token_ids`` beyond what the cache holds (the last model token of the previous
    turn and the env observation) is run through the model first. ``timing`` accumulates seconds and
    counts of the prefill forwards (prompts and env tokens) and of the decoding steps."""

    def __init__(self, model, tokenizer, stop_strings, eos_ids, greedy: bool, temperature: float):
        self.model, self.tokenizer = model, tokenizer
        self.device = next(model.parameters()).device
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
        self.stop = StopMatcher(tokenizer, stop_strings, eos_ids)
        self.greedy, self.temperature = greedy, float(temperature)
        self.cache = None
        self.rows: list[int] = []  # sample index of each cache row
        self.mask: torch.Tensor | None = None  # (rows, columns) bool: 1 where the column holds the row's token
        self.fed: dict[int, int] = {}  # sample index -> how many of its token_ids the cache holds
        # rows that stopped during this turn's decode, set aside until the next turn: (sample indices,
        # [(keys, values)] per layer, mask), each as the running cache was when they stopped
        self.parked: list[tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]] = []
        self.timing = {"prefill_s": 0.0, "decode_s": 0.0, "prefill_tokens": 0, "prefill_forwards": 0,
                       "decode_steps": 0, "distinct_prompts": 0,
                       "decode_rows": 0, "decode_rows_if_kept": 0, "decode_compactions": 0, "parked_rows_resumed": 0}

    # ---- the model calls ------------------------------------------------------------------------------
    def _forward(self, input_ids, new_mask, positions):
        self.mask = new_mask if self.mask is None else torch.cat([self.mask, new_mask], dim=1)
        out = self.model(input_ids=input_ids, attention_mask=self.mask, position_ids=positions, cache=self.cache,
                         use_cache=True, logits_to_keep=1)
        self.cache = getattr(out, "cache", None) or out.past_key_values
        return out.logits[:, -1, :].float()

    def _block(self, seqs: list[list[int]], starts: list[int]):
        """Left-padded ids, mask and explicit positions (``starts[r]`` onwards) of one block of tokens."""
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.bool)
        positions = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, (s, start) in enumerate(zip(seqs, starts)):
            ids[r, width - len(s):] = torch.tensor(s, dtype=torch.long)
            mask[r, width - len(s):] = True
            positions[r, :] = start  # holes: any finite position (masked)
            positions[r, width - len(s):] = torch.arange(start, start + len(s))
        return ids.to(self.device), mask.to(self.device), positions.to(self.device)

    def _prefill_prompts(self, samples, active: list[int]) -> torch.Tensor:
        """One forward over the distinct prompts; their cache rows are indexed out to the episodes."""
        from transformers import DynamicCache

        t0 = time.perf_counter()
        distinct: dict[tuple[int, ...], int] = {}
        # a row's whole transcript so far: its prompt, plus the shared prefix when a rollout branches
        inverse = [distinct.setdefault(tuple(samples[i].token_ids), len(distinct)) for i in active]
        prompts = [list(p) for p in distinct]
        ids, mask, positions = self._block(prompts, [0] * len(prompts))
        self.cache = DynamicCache(config=self.model.config)
        logits = self._forward(ids, mask, positions)
        if not cache_is_supported(self.cache):
            raise UnsupportedCache("the cached rollout engine needs plain full-attention cache layers; "
                                   "use RolloutConfig(engine='generate') for this model")
        index = torch.tensor(inverse, device=self.device)
        if len(prompts) != len(active):
            self.cache.batch_select_indices(index)
            self.mask = self.mask[index]
        self.rows = list(active)
        self.fed = {i: len(samples[i].token_ids) for i in active}
        self.timing["prefill_s"] += time.perf_counter() - t0
        self.timing["prefill_tokens"] += sum(len(p) for p in prompts)
        self.timing["prefill_forwards"] += 1
        self.timing["distinct_prompts"] += len(prompts)
        return logits[index]

    def _keep_rows(self, active: list[int]) -> None:
        """Drop the cache rows of finished episodes, merge back the rows parked during the last turn's
        decode, and cut off the leading columns no remaining row uses."""
        if active == self.rows and not self.parked:
            return
        pieces = self.parked + [(self.rows, [(layer.keys, layer.values) for layer in self.cache.layers], self.mask)]
        where = {i: (p, r) for p, (rows, _, _) in enumerate(pieces) for r, i in enumerate(rows)}
        missing = [i for i in active if i not in where]
        if missing:
            raise ValueError(f"rows {missing} are not in the engine's cache (active rows may only shrink)")
        if not self.parked:
            index = torch.tensor([where[i][1] for i in active], device=self.device)
            self.cache.batch_select_indices(index)
            self.mask = self.mask[index]
        else:
            # one new tensor per layer, written piece by piece: a parked row's missing right columns stay
            # zero (finite) and masked, the holes it would have had had it sat the steps out
            width = self.mask.shape[1]
            mask = torch.zeros((len(active), width), dtype=torch.bool, device=self.device)
            moves = []  # (piece, source rows, destination rows)
            for p in range(len(pieces)):
                pairs = [(where[i][1], k) for k, i in enumerate(active) if where[i][0] == p]
                if pairs:
                    src, dst = (torch.tensor(x, device=self.device) for x in zip(*pairs))
                    moves.append((pieces[p], src, dst))
                    if p < len(pieces) - 1:
                        self.timing["parked_rows_resumed"] += len(pairs)
                    piece_mask = pieces[p][2]
                    mask[dst, :piece_mask.shape[1]] = piece_mask[src]
            for l, layer in enumerate(self.cache.layers):
                merged = []
                for kind in (0, 1):
                    ref = pieces[-1][1][l][kind]
                    out = ref.new_zeros((len(active),) + tuple(ref.shape[1:]))
                    for (_, tensors, _), src, dst in moves:
                        part = tensors[l][kind]
                        out[dst, :, :part.shape[2]] = part[src]
                    merged.append(out)
                layer.keys, layer.values = merged
            self.mask = mask
            self.parked = []
        self.rows = list(active)
        used = self.mask.any(dim=0)
        first = int(used.to(torch.uint8).argmax()) if bool(used.any()) else 0
        if first > 0:
            for layer in self.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, first:], layer.values[:, :, first:]
            self.mask = self.mask[:, first:]

    def _feed_pending(self, samples) -> torch.Tensor:
        """Run each row's not-yet-seen tokens (its stop token and the env observation) through the model."""
        t0 = time.perf_counter()
        pending = [samples[i].token_ids[self.fed[i]:] for i in self.rows]
        if min(len(p) for p in pending) == 0:
            raise RuntimeError("a continuing row has no new token; its next-token logits are unknown")
        ids, mask, positions = self._block(pending, [self.fed[i] for i in self.rows])
        logits = self._forward(ids, mask, positions)
        for i, p in zip(self.rows, pending):
            self.fed[i] += len(p)
        self.timing["prefill_s"] += time.perf_counter() - t0
        self.timing["prefill_tokens"] += sum(len(p) for p in pending)
        self.timing["prefill_forwards"] += 1
        return logits

    # ---- one turn -------------------------------------------------------------------------------------
    @torch.no_grad()
    def turn(self, samples, active: list[int], limits: list[int]) -> list[TurnOutput]:
        if len(active) != len(limits) or not active:
            raise ValueError("turn needs one limit per active row and at least one row")
        if min(limits) < 1:
            raise ValueError(f"every active row needs room for a token, got limits {limits}")
        if self.cache is None:
            logits = self._prefill_prompts(samples, active)
        else:
            self._keep_rows(active)
            logits = self._feed_pending(samples)
        return self._decode(logits, limits)

    def _decode(self, logits: torch.Tensor, limits: list[int]) -> list[TurnOutput]:
        t0 = time.perf_counter()
        R = len(self.rows)
        outs = [TurnOutput([], [], False) for _ in range(R)]
        live = list(range(R))  # the turn row of each row of the running cache (and of ``logits``)
        scale = 1.0 if self.greedy else self.temperature
        while True:
            scaled = logits / scale
            if self.greedy:
                nxt = logits.argmax(dim=-1)
            else:  # torch.multinomial(probs, 1)'s own algorithm, so the random stream is used the same way
                probs = torch.softmax(scaled, dim=-1)
                # one draw for every row of the turn, stopped ones too, then only the live rows' noise is used:
                # the generator advances as if no row had left, so each row's draws stay where they were
                noise = torch.empty((R, probs.shape[1]), dtype=probs.dtype, device=probs.device).exponential_(1)
                if len(live) < R:
                    noise = noise[torch.tensor(live, device=probs.device)]
                nxt = (probs / noise).argmax(dim=-1)
            logp = torch.log_softmax(scaled, dim=-1).gather(1, nxt[:, None])[:, 0]
            tokens, logps = nxt.tolist(), logp.tolist()
            still = []  # positions in ``live`` of the rows that go on writing
            for k, r in enumerate(live):
                out = outs[r]
                out.tokens.append(tokens[k])
                out.logprobs.append(logps[k])
                if self.stop.ends_turn(out.tokens):
                    out.stopped = True
                elif len(out.tokens) < limits[r]:
                    still.append(k)
            self.timing["decode_steps"] += 1
            self.timing["decode_rows"] += len(live)
            self.timing["decode_rows_if_kept"] += R  # what the step batch would hold without compaction
            if not still:
                break
            if len(still) < len(live):  # the rows that stopped leave the step batch (their last token joins
                self._park(still)       # the next turn's block, as for any row that sits a step out)
                tokens, live = [tokens[k] for k in still], [live[k] for k in still]
            feed = torch.tensor(tokens, device=self.device)[:, None]
            col = torch.ones((len(live), 1), dtype=torch.bool, device=self.device)
            positions = torch.tensor([self.fed[i] for i in self.rows], device=self.device)[:, None]
            logits = self._forward(feed, col, positions)
            for i in self.rows:
                self.fed[i] += 1
        self.timing["decode_s"] += time.perf_counter() - t0
        return outs

    def _park(self, keep: list[int]) -> None:
        """Set aside the cache rows not in ``keep`` (positions in the running cache) and go on with the rest.

        A parked row's keys/values are copied out as they are; it has no columns for the steps it sits
        out, which :meth:`_keep_rows` fills with masked holes when the rows are merged for the next turn."""
        kept = set(keep)
        gone = [r for r in range(len(self.rows)) if r not in kept]
        out_index = torch.tensor(gone, device=self.device)
        self.parked.append(([self.rows[r] for r in gone],
                            [(layer.keys[out_index], layer.values[out_index]) for layer in self.cache.layers],
                            self.mask[out_index]))
        index = torch.tensor(keep, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask = self.mask[index]
        self.rows = [self.rows[r] for r in keep]
        self.timing["decode_compactions"] += 1
