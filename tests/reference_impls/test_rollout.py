"""The shared rollout: loss masks, env tokens, old log-probs, transcripts."""
from types import SimpleNamespace

import torch

from reference_impls.common import collate, completion_logprobs
from reference_impls.envs import get_env
from reference_impls.models import load_tokenizer
from reference_impls.rollout import RolloutConfig, rollout


class ScriptedModel(torch.nn.Module):
    """Writes a fixed text per turn (plus junk after the closing tag, which the rollout must cut)."""

    def __init__(self, tokenizer, turns):
        super().__init__()
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        self.tok, self.turns, self.calls = tokenizer, turns, 0
        self.generation_config = SimpleNamespace(eos_token_id=tokenizer.eos_token_id)

    def generate(self, input_ids, attention_mask, generation_config, stopping_criteria):
        text = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        new = self.tok(text + " junk junk", add_special_tokens=False, return_tensors="pt")["input_ids"]
        new = new.repeat(input_ids.shape[0], 1)
        V = len(self.tok)
        logits = tuple(torch.zeros(input_ids.shape[0], V) for _ in range(new.shape[1]))  # uniform policy
        return SimpleNamespace(sequences=torch.cat([input_ids, new], dim=1), logits=logits)


def test_multi_turn_masks_and_transcript():
    tok = load_tokenizer()
    task = get_env("calculator")
    problem = task.problems("train", n=1)[0]
    model = ScriptedModel(tok, ["<calc>2+3</calc>", f"<answer>{problem.answer}</answer>"])
    # the scripted double only implements generate(): the reference engine
    samples, stats = rollout(model, tok, task, [problem], RolloutConfig(group_size=2, engine="generate"))
    assert len(samples) == 2 and stats["generated_tokens"] > 0
    s = samples[0]
    assert s.reward == 1.0 and s.info["correct"] and s.turns == 2
    roles = [seg["role"] for seg in s.segments]
    assert roles == ["prompt", "model", "env", "model"]
    assert s.segments[1]["text"] == "<calc>2+3</calc>"  # cut right after the tag, junk dropped
    assert s.segments[2]["text"] == "<result>5</result>"
    env_ids = tok("<result>5</result>", add_special_tokens=False)["input_ids"]
    calc_ids = tok("<calc>2+3</calc>", add_special_tokens=False)["input_ids"]
    n_calc = len(calc_ids)
    assert s.completion_ids[:n_calc] == calc_ids
    assert s.loss_mask[:n_calc] == [1] * n_calc
    assert s.completion_ids[n_calc:n_calc + len(env_ids)] == env_ids
    assert s.loss_mask[n_calc:n_calc + len(env_ids)] == [0] * len(env_ids)
    assert s.loss_mask[n_calc + len(env_ids):] and all(m == 1 for m in s.loss_mask[n_calc + len(env_ids):])
    assert s.full_loss_mask[:len(s.prompt_ids)] == [0] * len(s.prompt_ids)
    # uniform logits -> every model token has log-prob -log V; env tokens carry 0
    V = len(tok)
    for m, lp in zip(s.loss_mask, s.old_logprobs):
        assert abs(lp - (-torch.log(torch.tensor(float(V))).item() if m else 0.0)) < 1e-4
    assert s.to_json()["segments"] == s.segments


def test_length_limit_truncates(tiny):
    model, tok = tiny
    task = get_env("calculator")
    samples, _ = rollout(model, tok, task, task.problems("train", n=2),
                         RolloutConfig(group_size=2, max_new_tokens_per_turn=5, max_completion_tokens=5))
    assert all(len(s.completion_ids) <= 5 and s.done for s in samples)
    assert all(s.reward == 0.0 for s in samples)


def test_old_logprobs_match_a_fresh_forward(tiny):
    """The log-probs recorded while sampling equal the trainer's scoring pass (left padding included)."""
    model, tok = tiny
    task = get_env("calculator")
    torch.manual_seed(0)
    samples, _ = rollout(model, tok, task, task.problems("train", n=3),
                         RolloutConfig(group_size=2, max_new_tokens_per_turn=6, max_completion_tokens=12))
    batch = collate(samples, tok.pad_token_id)
    with torch.no_grad():
        logps, _ = completion_logprobs(model, batch)
    diff = ((logps - batch["old_logprobs"]).abs() * batch["loss_mask"]).max()
    assert float(diff) < 1e-4
