"""The cached rollout engine against the reference loop (``model.generate`` every turn).

Multi-turn episodes come from the tiny model nudged towards a few example replies
(``scripted_policies.nudged_tiny``); a small test env whose stop string is a newline drives the edge
cases (first-token stops, per-turn limits, observations longer than the remaining budget)."""
import copy
import random
from dataclasses import replace

import pytest
import torch

from reference_impls.common import collate, completion_logprobs
from reference_impls.engine import StopMatcher, cut_turn
from reference_impls.envs import EnvSpec, NoOptions, StepResult, ToolSpec, get_env
from reference_impls.rollout import RolloutConfig, rollout
from scripted_policies import nudged_tiny

CALC_REPLIES = ("<calc>7+8</calc>", "<calc>12*3</calc>")
SEARCH_REPLIES = ("<search>ReAct</search>", "<search>GRPO</search>")


def run_both(model, tok, task, problems, cfg, seed=0):
    runs = []
    for engine in ("generate", "cached"):
        torch.manual_seed(seed)
        runs.append(rollout(model, tok, task, problems, replace(cfg, engine=engine)))
    return runs


def assert_same_episodes(ref, new, tol=1e-5):
    assert len(ref) == len(new)
    for a, b in zip(ref, new):
        assert b.prompt_ids == a.prompt_ids and b.group == a.group
        assert b.completion_ids == a.completion_ids
        assert b.loss_mask == a.loss_mask
        assert (b.reward, b.turns, b.done, b.truncated) == (a.reward, a.turns, a.done, a.truncated)
        assert b.segments == a.segments and b.info == a.info
        assert len(b.old_logprobs) == len(a.old_logprobs)
        assert max((abs(x - y) for x, y in zip(a.old_logprobs, b.old_logprobs)), default=0.0) < tol


def assert_rows_left_the_decode_batch(stats):
    """Rows that stopped early left the decode batch (fewer row-steps than steps x rows would give) and
    some of them came back for a later turn with their cache merged in."""
    assert stats["decode_compactions"] > 0 and stats["parked_rows_resumed"] > 0
    assert stats["decode_rows"] < stats["decode_rows_if_kept"]


def assert_logprobs_match_a_fresh_forward(model, tok, samples, temperature=1.0, tol=1e-4):
    batch = collate(samples, tok.pad_token_id)
    with torch.no_grad():
        logps, _ = completion_logprobs(model, batch, temperature=temperature)
    diff = ((logps - batch["old_logprobs"]).abs() * batch["loss_mask"]).max()
    assert float(diff) < tol


@pytest.fixture(scope="module")
def calc_policy(tiny):
    return nudged_tiny(tiny[0], tiny[1], CALC_REPLIES + ("<answer>15</answer>",))


def test_greedy_calculator_multi_turn_matches_generate(tiny):
    model, tok = nudged_tiny(tiny[0], tiny[1], CALC_REPLIES), tiny[1]
    task = get_env("calculator")
    problems = task.problems("train", n=5, seed=2)
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=16, max_completion_tokens=96)
    (ref, _), (new, stats) = run_both(model, tok, task, problems, cfg)
    assert len({len(s.prompt_ids) for s in new}) > 1  # left padding of different widths
    assert max(s.turns for s in new) > 1 and any(seg["role"] == "env" for s in new for seg in s.segments)
    assert_same_episodes(ref, new)
    assert stats["engine"] == "cached" and stats["distinct_prompts"] == len(problems)


def test_greedy_search_multi_turn_and_long_observations_match_generate(tiny):
    model, tok = nudged_tiny(tiny[0], tiny[1], SEARCH_REPLIES), tiny[1]
    task = get_env("search")
    problems = task.problems("train", n=4, seed=0)
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=16, max_completion_tokens=240)
    (ref, _), (new, _) = run_both(model, tok, task, problems, cfg)
    assert max(s.turns for s in new) > 1
    assert_same_episodes(ref, new)
    # a budget the <information> block overruns: the observation is cut and the episode truncated
    (ref, _), (new, _) = run_both(model, tok, task, problems, replace(cfg, max_completion_tokens=40))
    assert_same_episodes(ref, new)
    cut = [s for s in new if s.truncated and s.segments[-1]["role"] == "env"]
    assert cut and all(len(s.completion_ids) == 40 and s.loss_mask[-1] == 0 for s in cut)


def test_greedy_memory_matches_generate(tiny):
    from reference_impls.envs.memory import set_answer_agent
    from reference_impls.memory.answer import AnswerAgent

    set_answer_agent(AnswerAgent(copy.deepcopy(tiny[0]), tiny[1], max_new_tokens=3), name="tiny")
    model, tok = nudged_tiny(tiny[0], tiny[1], ("ADD\n", "NOOP\n", "UPDATE 1\n")), tiny[1]
    task = get_env("memory")
    problems = task.problems("train", n=4, seed=0)
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=12, max_completion_tokens=12,
                        env_config=task.config_of({"answer_model": "tiny"}))
    (ref, _), (new, _) = run_both(model, tok, task, problems, cfg)
    assert_same_episodes(ref, new)
    assert all(s.done and s.turns == 1 for s in new) and any(s.info.get("op_status") == "ok" for s in new)
    # the plain random model, whose replies are not operations
    (ref, _), (new, _) = run_both(tiny[0], tok, task, problems, cfg)
    assert_same_episodes(ref, new)


def test_sampled_episodes_equal_generate_with_the_same_seed(calc_policy, tiny):
    """The engine draws its tokens as torch.multinomial does, one (rows, vocab) draw per step over the
    turn's rows, so with the same seed the same episodes come out; and the old log-probs are those of a
    fresh forward over the finished episodes."""
    tok = tiny[1]
    task = get_env("calculator")
    problems = task.problems("train", n=3, seed=4)
    cfg = RolloutConfig(group_size=4, temperature=0.9, max_new_tokens_per_turn=16, max_completion_tokens=160)
    (ref, _), (new, stats) = run_both(calc_policy, tok, task, problems, cfg, seed=3)
    assert_same_episodes(ref, new)
    assert max(s.turns for s in new) > 1
    assert len({len(s.completion_ids) for s in new}) > 2  # rows stop at different steps
    assert stats["distinct_prompts"] == 3  # each prompt prefilled once for its 4 rows
    assert_rows_left_the_decode_batch(stats)  # and the random stream was not disturbed by it
    assert_logprobs_match_a_fresh_forward(calc_policy, tok, new, temperature=0.9)


# ---- edge cases on a small env whose stop string (a newline) is often the very first token -----------

class LineEnv:
    """Each turn is one line; the env answers with an observation of ``obs_len[turn]`` x's and a
    newline, for ``max_turns`` turns; the reward is the number of lines written, as a check."""

    tool = ToolSpec("lines", "test", "", "\n", "", "")
    stop_strings = ("\n",)

    def __init__(self, problem, max_turns=4):
        self.problem, self.max_turns, self.turn = problem, max_turns, 0

    def reset(self):
        return [{"role": "user", "content": self.problem["question"]}]

    def step(self, text):
        self.turn += 1
        if self.turn >= self.max_turns:
            return StepResult(None, True, float(self.turn), {"correct": True})
        n = self.problem["obs_len"][(self.turn - 1) % len(self.problem["obs_len"])]
        return StepResult("obs " + "x" * n + "\n", False, 0.0, {})


def line_task():
    def problems(split, n, seed, config):
        rng = random.Random(seed)
        return [{"question": "Write a line." + " Then another one, please." * rng.randint(0, 4),
                 "obs_len": [rng.choice([1, 3, 40, 120]) for _ in range(3)]} for _ in range(n)]

    return EnvSpec("lines", NoOptions, problems, lambda p, config: LineEnv(p), lambda p: [("model", "a\n")])


@pytest.mark.parametrize("group_size", [1, 4])
def test_edge_cases_first_token_stops_turn_limits_and_long_observations(tiny, group_size):
    """Rows that stop on their first token and go on, rows cut by the per-turn limit, observations cut by
    the remaining budget, groups of one: the bookkeeping is the reference loop's, and the recorded
    log-probs equal a fresh forward's."""
    tok = tiny[1]
    model = nudged_tiny(tiny[0], tok, ("\n", "ab\n", "abc abc abc\n", "no no no no no no no no no no\n"))
    task = line_task()
    problems = task.problems(n=24 // group_size, seed=1)
    cfg = RolloutConfig(group_size=group_size, max_new_tokens_per_turn=4, max_completion_tokens=48)
    torch.manual_seed(0)
    samples, stats = rollout(model, tok, task, problems, cfg)
    # problems that share a question share one prefill, across groups too
    assert stats["distinct_prompts"] == len({p["question"] for p in problems}) < len(problems)
    first_token_stop = cut_mid_turn = obs_cut = multi_turn = False
    for s in samples:
        assert len(s.completion_ids) <= cfg.max_completion_tokens and s.done
        assert len(s.completion_ids) == len(s.loss_mask) == len(s.old_logprobs)
        pos = 0
        for k, seg in enumerate(s.segments[1:]):
            n = len(tok(seg["text"], add_special_tokens=False)["input_ids"]) if seg["role"] == "env" else None
            if seg["role"] == "model":
                n = next((j for j in range(pos, len(s.loss_mask)) if s.loss_mask[j] == 0), len(s.loss_mask)) - pos
                assert 1 <= n <= cfg.max_new_tokens_per_turn
                assert tok.decode(s.completion_ids[pos:pos + n]) == seg["text"]
                first_token_stop |= n == 1 and seg["text"] == "\n" and k + 2 < len(s.segments)
            else:
                assert s.loss_mask[pos:pos + n] == [0] * n and s.old_logprobs[pos:pos + n] == [0.0] * n
            pos += n
        assert pos == len(s.completion_ids)
        last = s.segments[-1]
        cut_mid_turn |= s.truncated and last["role"] == "model" and not last["text"].endswith("\n")
        obs_cut |= s.truncated and last["role"] == "env" and len(s.completion_ids) == cfg.max_completion_tokens
        multi_turn |= s.turns > 1
        if not s.truncated:
            assert s.reward == s.turns == 4
    assert first_token_stop and cut_mid_turn and obs_cut and multi_turn
    assert_rows_left_the_decode_batch(stats)
    assert_logprobs_match_a_fresh_forward(model, tok, samples)


def test_edge_cases_greedy_match_generate(tiny):
    tok = tiny[1]
    model = nudged_tiny(tiny[0], tok, ("\n", "ab\n", "abc abc abc\n"))
    task = line_task()
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=4, max_completion_tokens=48)
    (ref, _), (new, _) = run_both(model, tok, task, task.problems(n=6, seed=5), cfg)
    assert max(s.turns for s in new) > 1
    assert_same_episodes(ref, new)


def test_stop_matcher_cuts_where_the_reference_loop_cuts(tiny):
    """The engine decodes a window only when the newest token can be part of a stop string; on random
    token streams rich in tag pieces it ends every turn exactly where ``cut_turn`` does."""
    tok = tiny[1]
    stops = ("</calc>", "</answer>", "\n")
    eos = {tok.eos_token_id}
    pieces = [i for text in ("</calc>", "</answer>", "<calc>", "\n", " \n\n", "x>", "</", "calc>")
              for i in tok(text, add_special_tokens=False)["input_ids"]] + [tok.eos_token_id]
    rng = random.Random(0)
    matcher = StopMatcher(tok, stops, eos)
    checked = 0
    for _ in range(300):
        seq = [rng.choice(pieces) if rng.random() < 0.4 else rng.randrange(len(tok)) for _ in range(16)]
        cut, stopped = cut_turn(tok, seq, eos, stops)
        ends = [j for j in range(len(seq)) if matcher.ends_turn(seq[:j + 1])]
        checked += len(seq)
        assert (ends[0] + 1 if ends else len(seq)) == len(cut) and bool(ends) == stopped
    assert matcher.decodes < checked / 2  # most tokens were answered without decoding


def test_unknown_engine_is_rejected(tiny):
    task = get_env("calculator")
    with pytest.raises(ValueError, match="engine"):
        rollout(tiny[0], tiny[1], task, task.problems("train", n=1), RolloutConfig(engine="vllm"))


def greedy_alone(model, ids, limit, eos):
    """The row decoded by itself with full forwards and no cache: the ground truth for one turn."""
    ids, tokens, logps = list(ids), [], []
    with torch.no_grad():
        for _ in range(limit):
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
            t = int(logits.argmax())
            tokens.append(t)
            logps.append(float(torch.log_softmax(logits, -1)[t]))
            ids.append(t)
            if t in eos:
                break
    return tokens, logps


def test_rows_leaving_the_decode_batch_match_each_row_decoded_alone(tiny):
    """The engine driven directly over three turns: left-padded prompts of different lengths, rows cut
    by their own limits at different steps (the first token included), a row alone in a turn, rows that
    sat out the end of one turn continuing in the next (their parked cache merged back) and rows dropped
    between turns. Every turn's tokens equal the row decoded alone, log-probs within 1e-4."""
    from types import SimpleNamespace

    from reference_impls.engine import CachedEngine

    tok = tiny[1]
    model = nudged_tiny(tiny[0], tok, ())  # no bigrams: only the amplified view of the context
    eos = {tok.eos_token_id}
    prompts = ["Hi", "Write one line about the sea, please.", "2+2?", "A much longer prompt " * 4]
    samples = [SimpleNamespace(token_ids=tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    engine = CachedEngine(model, tok, (), eos, greedy=True, temperature=1.0)
    # rows 0 and 2 stop together and both go on; row 3 (the longest) is dropped after turn 1
    turns = [([0, 1, 2, 3], [3, 6, 3, 9]), ([0, 1, 2], [1, 4, 2]), ([1], [3])]
    for active, limits in turns:
        outs = engine.turn(samples, active, limits)
        for i, lim, out in zip(active, limits, outs):
            tokens, logps = greedy_alone(model, samples[i].token_ids, lim, eos)
            assert out.tokens == tokens and out.stopped == (tokens[-1] in eos)
            assert max(abs(a - b) for a, b in zip(out.logprobs, logps)) < 1e-4
            # the env's reply to this row: a few tokens, a different count per row
            samples[i].token_ids = samples[i].token_ids + tokens + [100 + i] * (i + 1)
    assert engine.timing["decode_compactions"] >= 3 and engine.timing["parked_rows_resumed"] >= 2
    assert engine.timing["decode_rows"] < engine.timing["decode_rows_if_kept"]
    assert not engine.parked and engine.rows == [1]


@pytest.mark.slow
def test_smollm2_greedy_matches_generate_on_all_envs():
    """SmolLM2 after a 4-step SFT warm start on calculator demonstrations (so it calls the tool and gets
    a second turn); search and memory with the base model."""
    from reference_impls.envs.memory import set_answer_agent
    from reference_impls.memory.answer import AnswerAgent
    from reference_impls.models import load_policy
    from reference_impls.sft import demonstrations, sft

    model, tok = load_policy("smollm2-135m-instruct", device="cpu")
    base = copy.deepcopy(model)
    set_answer_agent(AnswerAgent(copy.deepcopy(base), tok), name="smollm2-135m-instruct")
    for env, n, opts in (("search", 3, {}), ("memory", 3, {})):
        task = get_env(env)
        cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=24, max_completion_tokens=96, env_config=task.config_of(opts))
        (ref, _), (new, _) = run_both(base, tok, task, task.problems("train", n=n, seed=0), cfg)
        assert_same_episodes(ref, new, tol=1e-4)
    sft(model, tok, demonstrations(tok, "calculator", 32), steps=4)
    task = get_env("calculator")
    cfg = RolloutConfig(greedy=True, max_new_tokens_per_turn=32, max_completion_tokens=128)
    (ref, _), (new, _) = run_both(model, tok, task, task.problems("train", n=4, seed=1), cfg)
    assert max(s.turns for s in new) > 1
    assert_same_episodes(ref, new, tol=1e-4)
    cfg = replace(cfg, greedy=False, group_size=4)
    (ref, _), (new, _) = run_both(model, tok, task, task.problems("train", n=2, seed=1), cfg)
    assert_logprobs_match_a_fresh_forward(model, tok, new)
