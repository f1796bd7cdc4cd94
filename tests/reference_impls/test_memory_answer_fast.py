"""The Answer Agent's shared-prefix scoring equals the straightforward computation: one plain, unpadded
forward per scored sequence, log-softmax over the whole vocabulary at every position, summed by hand."""
import copy

import pytest
import torch

from reference_impls.memory.answer import AnswerAgent, answer_spans
from reference_impls.memory.bank import Entry, MemoryBank

TEXTS = ("Alice: I live in Paris.", "Alice: I moved to Oslo in May.", "Bob: I work as a chef at the harbour.",
         "Bob: My dog is called Rex.", "Alice: I booked a trip to Lima.")
QUESTIONS = ("Where does Alice live?", "What is Bob's job?", "What is the name of Bob's dog?", "Who?")


def plain_logps(model, prefix: list[int], continuation: list[int]) -> list[float]:
    """log p(continuation_t | prefix, continuation_<t) from one forward of the unpadded sequence."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prefix + continuation])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return [float(logp[len(prefix) - 1 + t, c]) for t, c in enumerate(continuation)]


@pytest.fixture
def agent(tiny):
    model, tok = tiny
    return AnswerAgent(copy.deepcopy(model), tok, select=1, score_batch=5)


def test_question_scores_equal_one_plain_forward_per_pair(agent):
    tok = agent.tokenizer
    # entries shared by several questions (read once), lines and questions of different lengths, a
    # two-token question (one token on top of the line's keys/values)
    pairs = [(t, tok(" " + q, add_special_tokens=False)["input_ids"]) for q in QUESTIONS for t in TEXTS[:3]]
    pairs.append((TEXTS[4], tok(" Who?", add_special_tokens=False)["input_ids"]))
    assert len({t for t, _ in pairs}) < len(pairs) and min(len(q) for _, q in pairs) == 2
    fast = agent._question_logps(pairs)
    for (text, q), got in zip(pairs, fast):
        line = tok(f"Memory: {text}\nQuestion:", add_special_tokens=False)["input_ids"]
        want = torch.tensor(plain_logps(agent.model, line, q))
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=0, atol=1e-4)


def test_selection_equals_the_plain_ranking(agent):
    bank = MemoryBank()
    for text in TEXTS:
        bank.add(text)
    items = [(q, bank.retrieve(q, 3)) for q in QUESTIONS[:3]]
    tok = agent.tokenizer
    want = []
    for q, entries in items:
        q_ids = tok(" " + q, add_special_tokens=False)["input_ids"]
        means = [sum(plain_logps(agent.model, tok(f"Memory: {e.text}\nQuestion:", add_special_tokens=False)
                                 ["input_ids"], q_ids)) / len(q_ids) for e in entries]
        ranked = sorted(means, reverse=True)
        assert ranked[0] - ranked[1] > 1e-4  # no near-tie, so float rounding cannot decide the choice
        want.append([entries[means.index(ranked[0])]])
    assert agent.select_many(items, batch_rows=4) == want  # several batches, an item split over two


def test_span_scores_equal_one_plain_forward_per_candidate(agent):
    tok = agent.tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    selected = [[Entry(2, TEXTS[1])], [Entry(3, TEXTS[2]), Entry(9, TEXTS[3])], [], [Entry(5, TEXTS[4])]]
    messages = [agent._messages(q, s) for q, s in zip(QUESTIONS, selected)]
    fast = agent.span_scores(messages, selected)  # score_batch=5: the items fall into several groups
    assert agent._prefix is not None and len(agent._prefix[0]) > 20  # the fixed prompt head was shared
    assert fast[2] == [] and agent.extract(messages[2:3], selected[2:3]) == [""]
    for msgs, entries, got in zip(messages, selected, fast):
        spans = answer_spans([e.text for e in entries])
        assert [span for span, _ in got] == spans
        prompt = agent._prompt_ids(msgs)
        for span, score in got:
            want = sum(plain_logps(agent.model, prompt, tok(span, add_special_tokens=False)["input_ids"] + [end]))
            assert score == pytest.approx(want, abs=1e-4), span
    answers = agent.extract(messages, selected)
    for got, answer in zip(fast, answers):
        if got:
            assert answer == max(got, key=lambda x: x[1])[0]


def test_fixed_prompt_head_is_a_prefix_of_every_prompt(agent):
    head, kv = agent._fixed_prefix()
    assert len(kv) == agent.model.config.num_hidden_layers and kv[0][0].shape[-2] == len(head)
    for q, entries in (("?", []), ("Where does Alice live?", [Entry(12, TEXTS[0])])):
        prompt = agent._prompt_ids(agent._messages(q, entries))
        assert prompt[:len(head)] == head and len(prompt) > len(head)
