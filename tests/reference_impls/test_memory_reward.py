"""Reward of the memory env on hand-made episodes, the LM Answer Agent path, and the trainer CLI."""
import copy
import json

import pytest

from reference_impls.envs.memory import (Decision, MemoryConfig, MemoryEnv, asked_questions, make, make_decision,
                                        problems, set_answer_agent)
from reference_impls.memory.answer import (AnswerAgent, answer_spans, clean_answer, exact_match, f1, normalize,
                                           score_answers)
from reference_impls.memory.bank import Entry
from reference_impls.memory.dialogue import Dialogue, Question, Turn


class FirstEntryReader:
    """Test double for the Answer Agent: answers with the last word of the top retrieved entry."""

    k = 3

    def answer_many(self, items):
        out = []
        for _q, entries in items:
            word = entries[0].text.rstrip(".").split()[-1] if entries else ""
            out.append((word, [e.text for e in entries[:1]]))
        return out


def hand_decision(prefix_texts, turn_text, gold="oslo", question="Where does Alice live?"):
    turns = (Turn(0, 0, "Alice", "I live in Paris.", "set", "city", "paris"),
             Turn(1, 0, "Bob", "Wow, really?"),
             Turn(2, 0, "Alice", turn_text, "change", "city", gold))
    d = Dialogue("hand", "train", 1, ("Alice", "Bob"), turns, ())
    prefix = tuple(Entry(i + 1, t, i) for i, t in enumerate(prefix_texts))
    q = Question("updated", question, gold, "Alice", "city")
    return Decision(d, 2, prefix, len(prefix) + 1, (q,), "hand-t2", "change")


def run(decision, text, **options):
    env = MemoryEnv(decision, MemoryConfig(**options), agent=FirstEntryReader())
    env.reset()
    return env.step(text)


def test_rewards_of_each_operation():
    dec = hand_decision(["Alice: I live in Paris."], "I moved to Oslo.")
    assert run(dec, "UPDATE 1").reward == 1.0  # the stale entry is replaced by the turn
    assert run(dec, "UPDATE 1 Alice lives in Oslo.").reward == 1.0
    assert run(dec, "NOOP").reward == 0.0  # memory still says Paris
    assert run(dec, "DELETE 1").reward == 0.0  # nothing left to answer from
    r = run(dec, "I think we should remember this")
    assert r.reward == pytest.approx(-0.1) and r.info["op_status"] == "unparseable" and r.info["op"] == "NOOP"
    r = run(dec, "DELETE 7", format_penalty=0.5)
    assert r.reward == pytest.approx(-0.5) and r.info["op_status"] == "invalid"
    assert run(dec, "garbage", format_penalty=0.0).reward == 0.0
    r = run(dec, "UPDATE 1")
    assert r.done and r.info["correct"] and r.info["op"] == "UPDATE" and r.info["answer"] == "Oslo"


def test_add_on_an_empty_bank_and_the_prompt():
    dec = hand_decision([], "I moved to Oslo.")
    env = MemoryEnv(dec, agent=FirstEntryReader())
    messages = env.reset()
    assert "New message: Alice: I moved to Oslo." in messages[-1]["content"] and "(none)" in messages[-1]["content"]
    assert run(dec, "ADD").reward == 1.0
    assert run(dec, "NOOP").reward == 0.0


def three_fact_decision():
    """Alice lives in Paris, Bob is a chef, Alice has a dog Rex; then Alice moves to Oslo. The problem's own
    question order asks about Bob (an entry the turn does not retrieve) before Alice's pet (one it does)."""
    turns = (Turn(0, 0, "Alice", "I live in Paris.", "set", "city", "paris"),
             Turn(1, 0, "Bob", "I work as a chef.", "set", "job", "chef"),
             Turn(2, 0, "Alice", "I adopted a dog named Rex.", "set", "pet", "rex"),
             Turn(3, 0, "Alice", "I moved to Oslo.", "change", "city", "oslo"))
    d = Dialogue("hand3", "train", 1, ("Alice", "Bob"), turns, ())
    prefix = (Entry(1, "Alice: I live in Paris.", 0), Entry(2, "Bob: I work as a chef.", 1),
              Entry(3, "Alice: I adopted a dog named Rex.", 2))
    qs = (Question("updated", "Where does Alice live?", "oslo", "Alice", "city"),
          Question("single", "What is Bob's job?", "chef", "Bob", "job"),
          Question("single", "What is the name of Alice's pet?", "rex", "Alice", "pet"))
    return Decision(d, 3, prefix, 4, qs, "hand3-t3", "change")


def test_shown_focus_asks_about_the_entries_an_operation_can_destroy():
    dec = three_fact_decision()
    shown = dec.bank().retrieve(dec.dialogue.turns[3].line, 3)
    assert [e.id for e in shown] == [1, 3]  # Bob's entry shares no term with the turn
    assert [q.text for q in asked_questions(dec, shown)] == [
        "Where does Alice live?", "What is the name of Alice's pet?", "What is Bob's job?"]
    assert asked_questions(dec, shown, "own") == list(dec.questions)
    # two questions: with focus=shown overwriting the pet entry costs the pet question; with focus=own the
    # second question is Bob's, which no operation here can touch, so the overwrite looked free
    assert run(dec, "UPDATE 1", questions=2).reward == 1.0
    assert run(dec, "UPDATE 3", questions=2).reward == 0.5
    assert run(dec, "DELETE 3", questions=2).reward == 0.0
    assert run(dec, "UPDATE 3", questions=2, focus="own").reward == 1.0
    with pytest.raises(ValueError, match="focus"):
        MemoryConfig(focus="everything")


def test_kind_balanced_decisions_train_more_on_changed_facts():
    def share(balance):
        ds = [make_decision("train", 0, 2, i, balance_kinds=balance) for i in range(120)]
        return sum(d.family in ("change", "correct") for d in ds) / len(ds)

    assert share(True) > share(False) + 0.1
    # the switch reaches the decisions through problems() and is a valid env option (the trainer reads it)
    assert problems("train", 5, balance_kinds=False) == [make_decision("train", 0, lv, 0 if i < 3 else 1,
                                                                      balance_kinds=False)
                                                         for i, lv in enumerate((1, 2, 3, 1, 2))]
    assert make(problems("train", 1)[0], balance_kinds=False, focus="own").config.balance_kinds is False


def test_metrics():
    assert normalize("The  Oslo!") == "oslo"
    assert exact_match("oslo.", "Oslo") == 1.0 and exact_match("in oslo", "oslo") == 0.0
    assert f1("in oslo", "oslo") == pytest.approx(2 / 3) and f1("", "") == 1.0 and f1("x", "") == 0.0
    assert clean_answer("Answer: red\nmore") == "red" and clean_answer("  ") == ""
    assert score_answers(["a", "b"], ["a", "c"])["em"] == 0.5


def test_problems_are_deterministic_and_mostly_facts():
    a, b = problems("train", 30, seed=1), problems("train", 30, seed=1)
    assert [p.uid for p in a] == [p.uid for p in b] and a == b
    assert sum(p.family != "filler" for p in a) >= 18
    for p in a:
        assert p.questions, p.uid
        turn = p.dialogue.turns[p.turn]
        if turn.kind in ("set", "change", "correct"):  # the turn's own slot is asked first
            assert (p.questions[0].speaker, p.questions[0].slot) == (turn.speaker, turn.slot)
        assert max((e.id for e in p.prefix), default=0) < p.next_id
    assert {p.uid for p in problems("heldout", 10)}.isdisjoint(p.uid for p in a)


def test_lm_answer_agent_end_to_end(tiny):
    model, tok = tiny
    # the agent freezes the model it is given: give it a copy, not the session-wide fixture
    agent = AnswerAgent(copy.deepcopy(model), tok, max_new_tokens=3)
    dec = problems("train", 2, seed=0)[0]
    env = MemoryEnv(dec, agent=agent)
    env.reset()
    r = env.step("ADD")
    assert r.done and -0.1 <= r.reward <= 1.0 and isinstance(r.info["answer"], str)
    calls = agent.calls
    env.step("ADD")  # same bank -> same retrieved texts -> cached
    assert agent.calls == calls


def test_answer_spans_by_hand():
    assert answer_spans(["Hiro: I moved to Lima in January."]) == [
        "Hiro", "moved", "moved to Lima", "Lima", "Lima in January", "January"]
    # spans never cross a sentence mark, repeats are dropped (case-insensitively), max_words is honoured
    assert answer_spans(["Bo: A cat. A cat named Coco!"], max_words=1) == ["Bo", "cat", "Coco"]
    assert answer_spans([]) == [] and answer_spans(["I am the one."]) == ["one"]


def test_extract_mode_picks_the_span_the_lm_scores_highest(tiny):
    """Batched, right-padded scoring equals one unpadded forward per candidate, summed by hand."""
    import torch

    from reference_impls.memory.bank import MemoryBank

    model, tok = tiny
    agent = AnswerAgent(copy.deepcopy(model), tok, select=1, score_batch=4)  # several batches of candidates
    bank = MemoryBank()
    bank.add("Alice: I moved to Oslo in May.")
    question = "Where does Alice live?"
    answer, selected = agent.answer(question, bank)
    entry = bank.retrieve(question, 3)
    prompt = tok(tok.apply_chat_template(agent._messages(question, entry), add_generation_prompt=True, tokenize=False),
                 add_special_tokens=False)["input_ids"]
    end = tok.convert_tokens_to_ids("<|im_end|>")
    by_hand = {}
    with torch.no_grad():
        for span in answer_spans(["Alice: I moved to Oslo in May."]):
            a = tok(span, add_special_tokens=False)["input_ids"] + [end]
            ids = torch.tensor([prompt + a])
            logp = torch.log_softmax(agent.model(input_ids=ids).logits[0, :-1].float(), -1)
            by_hand[span] = sum(float(logp[len(prompt) - 1 + t, a[t]]) for t in range(len(a)))
    assert selected == ["Alice: I moved to Oslo in May."]
    assert answer == max(by_hand, key=by_hand.get)
    assert agent.extract([agent._messages(question, [])], [[]]) == [""]  # nothing to copy from


def test_answer_agent_rejects_an_unknown_mode(tiny):
    with pytest.raises(ValueError, match="mode must be one of"):
        AnswerAgent(copy.deepcopy(tiny[0]), tiny[1], mode="guess")


def test_train_cli_one_grpo_step(tiny, tmp_path):
    from reference_impls import train

    set_answer_agent(AnswerAgent(copy.deepcopy(tiny[0]), tiny[1], max_new_tokens=3), name="tiny")
    out = tmp_path / "run"
    rc = train.main(["--algo", "grpo", "--env", "memory", "--model", "tiny", "--steps", "1", "--out", str(out),
                     "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "8",
                     "--max-completion-tokens", "8", "--train-pool", "8", "--env-option", "answer_model=tiny"])
    assert rc == 0
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert row["step"] == 1 and -0.1 - 1e-6 <= row["reward_mean"] <= 1.0
    assert (out / "checkpoints" / "step_000001" / "model.safetensors").exists()
    assert make(problems("train", 1)[0], answer_model="tiny").config.answer_model == "tiny"


@pytest.mark.slow
def test_smollm2_answer_agent_reads_a_clean_memory():
    from reference_impls.memory.bank import MemoryBank
    from reference_impls.models import load_policy

    agent = AnswerAgent(*load_policy("smollm2-135m-instruct", device="cpu"))
    bank = MemoryBank()
    bank.add("Alice: I moved to Oslo in May.")
    bank.add("Bob: I work as a chef.")
    answer, selected = agent.answer("In which month did Alice move to Oslo?", bank)
    assert selected == ["Alice: I moved to Oslo in May."] and exact_match(answer, "may")


def test_batched_steps_equal_one_at_a_time(tiny):
    """``step_many`` (what the rollout calls) gives each episode the reward and info of its own ``step``,
    with the test reader and with the LM Answer Agent (whose selection is then batched across items)."""
    from reference_impls.envs import step_all

    decs = problems("train", 6, seed=3)
    ops = ["ADD", "NOOP", "UPDATE 1", "DELETE 2", "garbage", "ADD"]
    model, tok = tiny
    for make_agent in (FirstEntryReader, lambda: AnswerAgent(copy.deepcopy(model), tok)):
        config = MemoryConfig(questions=3)
        one = []
        for d, op in zip(decs, ops):
            env = MemoryEnv(d, config, agent=make_agent())  # a fresh agent: nothing cached
            env.reset()
            one.append(env.step(op))
        agent = make_agent()
        envs = [MemoryEnv(d, config, agent=agent) for d in decs]
        many = step_all(envs, ops)
        assert [(r.reward, r.info) for r in many] == [(r.reward, r.info) for r in one]


def test_select_many_equals_one_item_at_a_time(tiny):
    from reference_impls.memory.bank import MemoryBank

    model, tok = tiny
    agent = AnswerAgent(copy.deepcopy(model), tok, select=1)
    bank = MemoryBank()
    for text in ("Alice: I live in Paris.", "Alice: I moved to Oslo in May.", "Bob: I work as a chef at the harbour.",
                 "Bob: My dog is called Rex.", "Alice: I booked a trip to Lima."):
        bank.add(text)
    items = [(q, bank.retrieve(q, 3)) for q in ("Where does Alice live?", "What is Bob's job?",
                                                "What is the name of Bob's dog?", "Where is Alice's trip going?")]
    assert any(len(ents) > 1 for _, ents in items)
    batched = agent.select_many(items, batch_rows=5)  # rows of several items share a batch, split over batches
    assert batched == [agent.select_many([item])[0] for item in items]
    assert all(len(sel) == 1 and sel[0] in ents for sel, (_, ents) in zip(batched, items))


def test_step_all_falls_back_to_step_and_keeps_the_order():
    from reference_impls.envs import StepResult, step_all

    class Plain:
        def __init__(self, tag):
            self.tag = tag

        def step(self, text):
            return StepResult(None, True, 0.0, {"who": f"{self.tag}:{text}"})

    dec = hand_decision(["Alice: I live in Paris."], "I moved to Oslo.")
    mem = MemoryEnv(dec, MemoryConfig(), agent=FirstEntryReader())
    out = step_all([Plain("a"), mem, Plain("b")], ["x", "UPDATE 1", "y"])
    assert [r.info.get("who") for r in out] == ["a:x", None, "b:y"] and out[1].reward == 1.0
