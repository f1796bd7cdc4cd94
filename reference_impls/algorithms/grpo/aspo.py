r"""ASPO: Advantage Shaping Policy Optimization (Lin and Xu 2025, "Understanding Tool-Integrated Reasoning",
arXiv 2508.19201, Sec. 3.3, eqs. 1-2 of v1).

Tool-integrated models tend to reason in text first and call the tool only at the end. To pull the first call
earlier the paper first tried *reward* shaping (its eq. 1): for a correct response that contains a call,
R_i = 1 + delta * clip((p_i - mean(p)) / std(p), -c, c). Under GRPO's group normalisation this breaks when a
whole group is correct: the constant 1 cancels, the shaping term is blown up to the size of the correctness
signal, and about half of the correct answers get a negative advantage. ASPO leaves the reward alone and
shapes the *advantage* after GRPO has computed it (the paper's eq. 2). For every response i that is correct
and contains a tool call::

    A_i = A^correct_i + clip( delta * (p_i - mean(p)) / mean(L),  -k * A^correct_i,  k * A^correct_i )

    A^correct_i   GRPO's group-normalised advantage of the correctness reward (grpo.prepare_batch)
    p_i           the position of response i's first tool call, in tokens of the response
    L_i           the response's length in tokens
    p, L          taken over the correct, tool-calling responses of the same group only
    delta < 0     earlier calls (p_i below the group's mean) get more advantage (paper: delta = -2.0, k = 0.7
                  "conservative", delta = -2.5, k = 0.9 "aggressive", Sec. 4.5)
    k             the bias stays within a fraction k of the correctness advantage

Every other response keeps A^correct_i. Two properties follow and are tested: the bias never exceeds
k * |A^correct_i|, so with k <= 1 a correct answer's advantage never changes sign (it stays >= (1 - k) A);
and a group whose answers are all correct has A^correct = 0 and so gets no bias at all (the clip range
collapses to 0): unlike eq. 1, ASPO never makes a correct answer look worse than the group. Dividing by
mean(L) rather than std(p) is the paper's choice: std(p) of tightly clustered calls would inflate the term.

Here (the calculator): p_i is the index, among the episode's *model* tokens (environment tokens are not part
of what the policy wrote), of the token where the first complete tool call (``ToolSpec.find_call``, e.g.
``<calc>...</calc>``) begins, and L_i the episode's number of model tokens. The paper counts positions in
its responses' tokens with the interpreter's output included; on the calculator no tool output can come
before the first call (a turn without a call or an answer ends the episode), so the two counts of p agree,
and L differs by the result tags.
The clip bounds are written with |A^correct_i|: a correct answer has its group's highest reward (also with
the calculator's optional format bonus), so A^correct_i >= 0 and this is the paper's rule.
The loss is GRPO's (``grpo.grpo_loss``); the paper trains with DAPO, which ``--loss-type dapo
--epsilon-high 0.28`` gives.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch
from ...options import ConfigError, option
from .successes import successes


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus ASPO's two: the shaping coefficient delta and the clip fraction k."""

    position_delta: float = option(-2.0, "delta: coefficient of the first tool call's position relative to the "
                                   "group's, over the mean response length; negative favours earlier calls "
                                   "(paper: -2.0).", low=-100.0, high=100.0)
    bias_clip: float = option(0.7, "k: the bias is clipped to +-k times the correctness advantage; k <= 1 keeps "
                              "every correct answer's advantage from changing sign (paper: 0.7).", low=0.0, high=1.0)


def first_call_position(sample, tool, tokenizer) -> int | None:
    """Index, among ``sample``'s model tokens, of the token where its first complete tool call begins; None
    when no model turn contains a complete call. Model text is only matched against the tool's tags, never run."""
    model_tokens_before = 0  # model tokens of earlier turns (env tokens between turns are not counted)
    for start, end in sample.turn_spans:
        ids = sample.completion_ids[start:end]
        text = tokenizer.decode(ids, skip_special_tokens=True)
        match = tool.find_call(text)
        if match is not None:
            # the first token whose decoded prefix reaches past the call's first character holds that character
            for j in range(1, len(ids) + 1):
                if len(tokenizer.decode(ids[:j], skip_special_tokens=True)) > match.start():
                    return model_tokens_before + j - 1
            return model_tokens_before + len(ids) - 1
        model_tokens_before += sum(sample.loss_mask[start:end])
    return None


def aspo_advantages(advantages: torch.Tensor, eligible: torch.Tensor, positions: torch.Tensor,
                    lengths: torch.Tensor, group_size: int, delta: float, k: float) -> torch.Tensor:
    """Eq. 2 on (N,) tensors laid out group by group: ``advantages`` = A^correct, ``eligible`` = correct and
    calling the tool, ``positions`` = p (any value where not eligible), ``lengths`` = L. Returns the shaped (N,)."""
    A = advantages.view(-1, group_size)
    ok = eligible.view(-1, group_size)
    p = torch.where(ok, positions.view(-1, group_size).to(A.dtype), torch.zeros_like(A))
    L = torch.where(ok, lengths.view(-1, group_size).to(A.dtype), torch.zeros_like(A))
    n = ok.sum(dim=1, keepdim=True).clamp(min=1)
    mean_p, mean_L = p.sum(dim=1, keepdim=True) / n, L.sum(dim=1, keepdim=True) / n
    raw = delta * (p - mean_p) / mean_L.clamp(min=1.0)
    bound = k * A.abs()
    bias = torch.maximum(torch.minimum(raw, bound), -bound)
    return (A + torch.where(ok, bias, torch.zeros_like(bias))).reshape(-1)


def find_tool(ctx: Context):
    """The environment's ToolSpec (its env class's ``tool``), or None."""
    tool = getattr(ctx.task.build, "tool", None)
    if tool is None and getattr(ctx, "pool", None):
        tool = getattr(ctx.task.make(ctx.pool[0], ctx.env_config), "tool", None)
    return tool


class ASPO(grpo.GRPO):
    """GRPO whose correct, tool-calling answers get a clipped bias towards an earlier first call (ASPO)."""

    name = "aspo"

    Config = Config

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.tool = find_tool(ctx)
        if self.tool is None:
            raise ConfigError(f"--algo aspo shapes advantages by the position of the first tool call; the "
                              f"environment {getattr(ctx.task, 'name', '?')!r} declares no tool (ToolSpec)")
        self.last = {}

    def advantages(self, ctx: Context, batch: RolloutBatch):
        base, keep = super().advantages(ctx, batch)
        found = [first_call_position(s, self.tool, ctx.tokenizer) for s in batch.samples]
        has_call = torch.tensor([p is not None for p in found])
        positions = torch.tensor([float(p) if p is not None else 0.0 for p in found])
        lengths = torch.tensor([float(sum(s.loss_mask)) for s in batch.samples])
        eligible = successes(batch) & has_call
        shaped = aspo_advantages(base, eligible, positions, lengths, batch.group_size, self.cfg.position_delta,
                                 self.cfg.bias_clip)
        self.last = {"aspo_call_frac": float(has_call.float().mean()),
                     "aspo_first_call_pos": float(positions[has_call].mean()) if has_call.any() else 0.0,
                     "aspo_bias_abs": float((shaped - base).abs().mean())}
        return shaped, keep

    def update(self, ctx: Context, batch: RolloutBatch):
        metrics = super().update(ctx, batch)
        for name, value in self.last.items():  # how often the tool is called, how early, how much was shaped
            metrics.add(name, value)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-aspo", "ASPO tool agent (calculator, earlier tool calls)", "aspo", "calculator",
        "GRPO whose correct answers that call the calculator get a clipped advantage bonus for calling it earlier "
        "than the group's other correct callers.",
        nodes=("alg-aspo",),
        changes="Shaping the reward to favour early tool calls breaks under GRPO's normalisation: in an all-correct "
                "group only the shaping term is left, and half the correct answers are punished. ASPO instead adds "
                "a bias to the advantage GRPO already computed, only for correct answers that call the tool: "
                "delta times the first call's position minus the group mean, over the mean response length, "
                "clipped to k times the correctness advantage, so the bonus stays a nudge and never flips a "
                "correct answer's sign. The paper steers Python calls in long math solutions with DAPO as the "
                "base; here the tool is the calculator, the position is counted in the episode's model tokens "
                "(the first <calc> tag), and the base is GRPO's defaults (DAPO's switches are options).",
        paper="Understanding Tool-Integrated Reasoning (Heng Lin and Zhongwen Xu, 2025), arXiv 2508.19201, "
              "Sec. 3.3, eq. 2",
        survey_vs_paper="The survey's table marks ASPO with a KL term; the paper trains with DAPO, which has none, and "
                        "its eq. 2 only changes the advantage. Here beta defaults to 0 as for every GRPO variant "
                        "(--beta turns the k3 penalty on). The survey's 'clipped bias' is eq. 2's clip to "
                        "+-k times the correctness advantage.",
        equation=r"A_i=A^{\mathrm{correct}}_i+\mathrm{clip}\Big(\delta\,rac{p_i-\mathrm{mean}(\mathbf{p})}"
                 r"{\mathrm{mean}(\mathbf{L})},\,-k\,A^{\mathrm{correct}}_i,\,k\,A^{\mathrm{correct}}_i\Big)"),
)
