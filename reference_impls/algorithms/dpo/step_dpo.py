r"""Step-DPO: preferences over the first wrong step (Lai et al. 2024, arXiv 2406.18629), on the calculator.

Steps
    The paper's steps are the lines of a written solution; here a step is one *model turn*, judged by the
    environment's checked steps (``EnvSpec.steps``, a ``StepChecker``; Step-DPO refuses an environment
    without them). The calculator's (``envs/calculator.py``, ``CalculatorSteps``): a step of a calculator
    episode is a tool call ``<calc>expr</calc>`` or the final ``<answer>``, because a tool call can be
    checked against the problem. A call is correct when the calculator's value of its expression is one
    of the intermediate values of the problem's reference solution (``Problem.steps``, in any order); an
    answer is correct when it equals the problem's answer; a turn with no complete tag, a call that only
    restates a number, or an expression the calculator rejects, is wrong.

Pairs (the paper's data pipeline, Sec. 3.2)
    The starting model samples ``group_size`` episodes for each of ``pair_prompts`` train problems. In every
    incorrect episode the first wrong step k is located. The prompt of the pair is the problem *and* the
    episode's first k-1 (correct) steps with their tool results; the rejected continuation is step k as
    the model wrote it; the chosen one is a correct step k that the same model writes from that prefix
    (``step_samples`` one-turn samples; the paper prefers such in-distribution, self-generated steps). The
    paper's rectification (its Eq. (3), y_cont ~ pi_ref(y | x; s_1..s_{k-1})) samples whole continuations,
    keeps those whose final answer is right and takes their first step as s_win, with an optional manual or
    GPT-4 check that this step is itself right; we check the one sampled step directly against the
    reference solution instead, which is that optional check made exact and needs no full continuation. When
    none of them is correct and ``reference_fallback`` is on, the chosen step is the reference solution's
    next step instead (the first reference value the prefix has not computed yet, or the answer); this is
    what makes pairs possible at all for a model that never gets a step right (the paper instead discards
    such prefixes). Pairs are stored and reused exactly as DPO's (``RUN/pairs.jsonl``, ``--pairs-file``).

Loss (the paper's step-level DPO objective, Eq. (2), next to DPO's own loss as its Eq. (1); numbers checked
against the paper's PDF kept in the authors' repository, dvlab-research/Step-DPO ``paper/paper.pdf``), with
s_{<k} the shared prefix and s_w, s_l the chosen and rejected step::

    L = -log sigmoid( beta log [pi(s_w | x, s_{<k}) / pi_ref(s_w | x, s_{<k})]
                      - beta log [pi(s_l | x, s_{<k}) / pi_ref(s_l | x, s_{<k})] )

which is DPO's loss (``dpo.py``) on pairs whose prompt holds the prefix: only the step's tokens carry the
loss, so the credit goes to the step where the episode went wrong, not to the whole episode. The paper's
settings (Sec. 4.1): beta = 0.4 (0.5 for its 72B model), learning rate 5e-7, 8 epochs for 7B models, after
an SFT stage; our beta default is DPO's 0.1 (set ``--beta 0.4`` for the paper's value).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ...algorithm import Context
from ...common import seed_everything
from .dpo import DPO, Config as DPOConfig, Pair
from ...envs import with_checked_steps
from ...implementations import latex_number
from ...options import ConfigError, option
from ...rollout import RolloutConfig, Sample, _as_list, rollout


@dataclass
class Config(DPOConfig):
    """Step-DPO switches (DPO's, plus how chosen steps are found)."""

    step_samples: int = option(4, "One-turn samples from each erroneous prefix searched for a correct step "
                               "(0 = always take the reference solution's next step).", low=0, high=64)
    reference_fallback: bool = option(True, "When no sampled step is correct, use the reference solution's next "
                                      "step as the chosen one (off: drop that prefix, as the paper does).")


# ----------------------------------------------------------------------------------------------------
# steps of an episode (the env's StepChecker judges them: EnvSpec.steps)

def model_turns(loss_mask: list[int]) -> list[tuple[int, int]]:
    """[start, end) spans of the model's turns: the runs of 1 in the completion's loss mask."""
    spans, start = [], None
    for t, m in enumerate(list(loss_mask) + [0]):
        if m and start is None:
            start = t
        elif not m and start is not None:
            spans.append((start, t))
            start = None
    return spans


def first_wrong_step(texts: list[str], problem, steps) -> int | None:
    """Index of the first turn the env's step checker ``steps`` rejects, or None when every step is correct
    (e.g. a truncated episode)."""
    return next((k for k, text in enumerate(texts) if not steps.is_correct(problem, text)), None)


def _step_sample(prompt_ids, ids, correct, tokenizer) -> Sample:
    return Sample(prompt_ids=list(prompt_ids), completion_ids=list(ids), loss_mask=[1] * len(ids),
                  old_logprobs=[0.0] * len(ids), reward=float(correct), done=True, info={"correct": correct},
                  segments=[{"role": "model", "text": tokenizer.decode(ids)}])


# ----------------------------------------------------------------------------------------------------
# the algorithm

class StepDPO(DPO):
    name = "step-dpo"
    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        b = latex_number(cfg.beta)
        return (rf"\mathcal{{L}}=-\log\sigma\Big({b}\log\tfrac{{\pi_\theta(s_w|x,s_{{<k}})}}{{\pi_{{\mathrm{{ref}}}}(s_w|x,s_{{<k}})}}"
                rf"-{b}\log\tfrac{{\pi_\theta(s_l|x,s_{{<k}})}}{{\pi_{{\mathrm{{ref}}}}(s_l|x,s_{{<k}})}}\Big)")
    min_group_size = 1  # a pair comes from one incorrect episode, not from a group

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if env_spec.steps is None:
            raise ConfigError(f"--env: Step-DPO checks steps against the environment's reference solutions; "
                              f"{env_spec.name!r} has no checked steps{with_checked_steps()}", field="env")
        if cfg.demonstration_chosen:
            raise ConfigError("--demonstration-chosen: Step-DPO builds its own step-level pairs (a wrong step "
                              "against the reference step); whole-episode demonstration pairs are DPO's option",
                              field="demonstration_chosen")

    def build_pairs(self, ctx: Context, problems: list, rollout_cfg: RolloutConfig, seed: int):
        """Step-level pairs from the starting model's episodes (see the module docstring)."""
        cfg, tok = self.cfg, ctx.tokenizer
        seed_everything(seed)
        t0 = time.time()
        pairs, n_samples, n_correct, n_sampled, n_reference, n_dropped = [], 0, 0, 0, 0, 0
        for start in range(0, len(problems), 8):
            chunk = problems[start:start + 8]
            samples, _ = rollout(ctx.policy, tok, ctx.task, chunk, rollout_cfg)
            n_samples += len(samples)
            n_correct += sum(bool(s.info.get("correct")) for s in samples)
            sites = []  # (problem, prompt + prefix ids, step texts of the prefix, rejected step ids)
            for s in samples:
                if s.info.get("correct"):
                    continue
                problem = chunk[s.group]
                spans = model_turns(s.loss_mask)
                texts = [tok.decode(s.completion_ids[a:b], skip_special_tokens=True) for a, b in spans]
                k = first_wrong_step(texts, problem, ctx.task.steps)
                if k is None:
                    continue
                a, b = spans[k]
                sites.append((problem, s.prompt_ids + s.completion_ids[:a], texts[:k], s.completion_ids[a:b]))
            found = self._sample_correct_steps(ctx, sites, rollout_cfg)
            for (problem, prefix, prefix_texts, rejected), chosen in zip(sites, found):
                if chosen is not None:
                    n_sampled += 1
                elif cfg.reference_fallback:
                    chosen = tok(ctx.task.steps.next_step(problem, prefix_texts), add_special_tokens=False)["input_ids"]
                    n_reference += 1
                else:
                    n_dropped += 1
                    continue
                uid = f"{problem.uid}/step{len(prefix_texts) + 1}"
                pairs.append(Pair(uid, _step_sample(prefix, chosen, True, tok),
                                  _step_sample(prefix, rejected, False, tok)))
        stats = {"pair_prompts": len(problems), "pairs": len(pairs), "samples": n_samples,
                 "sample_accuracy": n_correct / max(n_samples, 1), "chosen_sampled": n_sampled,
                 "chosen_reference": n_reference, "dropped": n_dropped, "build_s": round(time.time() - t0, 1)}
        return pairs, stats

    def _sample_correct_steps(self, ctx: Context, sites: list, rollout_cfg: RolloutConfig) -> list:
        """For each site, the first of ``step_samples`` one-turn continuations of its prefix that is a
        correct step (its token ids), else None."""
        from ...generate_engine import GenerateTurns  # transformers: imported when a step is sampled

        n = self.cfg.step_samples
        if not sites or n == 0:
            return [None] * len(sites)
        tok, model = ctx.tokenizer, ctx.policy
        rows = [Sample(prompt_ids=prefix, completion_ids=[]) for _, prefix, _, _ in sites for _ in range(n)]
        eos_ids = {tok.eos_token_id} | set(_as_list(model.generation_config.eos_token_id))
        turns = GenerateTurns(model, tok, ctx.task.make(sites[0][0]).stop_strings, eos_ids, rollout_cfg)
        was = model.training
        model.eval()
        with torch.no_grad():
            outs = turns(rows, list(range(len(rows))), [rollout_cfg.max_new_tokens_per_turn] * len(rows))
        model.train(was)
        found = []
        for i, (problem, _, _, _) in enumerate(sites):
            tries = [o.tokens for o in outs[i * n:(i + 1) * n]]
            found.append(next((t for t in tries
                               if ctx.task.steps.is_correct(problem, tok.decode(t, skip_special_tokens=True))), None))
        return found


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-step-dpo", "Step-DPO on calculator tool steps", "step-dpo", "calculator", "DPO on the first wrong tool step: a correct vs the erroneous next step after a shared correct prefix.",
        nodes=("alg-step-dpo",),
        changes="Step-DPO moves DPO's preference from whole episodes to single steps. Here a step is a calculator "
                "turn (a tool call or the final answer), checkable against the problem's reference solution. For "
                "an incorrect episode, the first wrong step is found; the pair shares the prompt plus the correct "
                "steps before it, rejects the wrong step and prefers a correct step the same model writes from that "
                "prefix (or, when it writes none, the reference solution's next step), so the loss credits exactly "
                "the step where the episode went wrong. The paper finds the wrong step with GPT-4 or a person and "
                "takes the chosen step from sampled continuations whose final answer is right; we check steps "
                "against the reference solution instead."
                " Defaults against the paper: beta 0.1, DPO's default (the paper: 0.4, 0.5 for its 72B "
                "model; --beta 0.4).",
        paper="Step-DPO: Step-wise Preference Optimization for Long-chain Reasoning of LLMs (Lai et al.; "
              "arXiv 2406.18629)"),
)
