r"""LUFFY: mixed-policy GRPO with off-policy demonstrations and policy shaping (Yan et al. 2025, "Learning to
Reason under Off-Policy Guidance", arXiv 2504.14945).

Each group holds G - n_off on-policy rollouts and n_off off-policy demonstrations of the same problem (here
the environment's own correct transcript, ``sft.demonstration_sample``: tokenised like a rollout, env tokens
masked; its reward is the environment's verdict on it). Advantages are group-relative over the mixed group
(the paper's eq. 4, Sec. 3.1)::

    A_i = (r_i - mean(R_on u R_off)) / std(R_on u R_off)

On-policy tokens keep GRPO's clipped surrogate. Off-policy tokens use the importance ratio to the behaviour
policy pi_phi, which is unknown and taken as pi_phi = 1 (as in the paper), so the ratio is pi_theta itself,
passed through the policy-shaping function ("regularised importance sampling") and never clipped::

    on:   l_{i,t} = -min(w A_i, clip(w, 1 - eps_low, 1 + eps_high) A_i),  w = pi_theta / pi_old
    off:  l_{j,t} = -f(pi_theta(tau_{j,t})) A_j,   f(x) = x / (x + gamma)

f's gradient, gamma / (pi + gamma)^2 * grad pi, boosts low-probability demonstration tokens that a plain
ratio would barely move. The token losses are averaged as ``loss_type`` says: the paper's eqs. 5-6 divide by
Z = the number of tokens of the whole mixed group, the token-level mean (``dapo``, the row's setting).

Equation numbers checked against arXiv 2504.14945 (Sec. 2-3): GRPO's advantage and objective are its eqs. 2-3,
the mixed-group advantage eq. 4, Mixed-Policy GRPO eq. 5 (pi_phi = 1, no clip on off-policy tokens), the
policy-shaping objective eq. 6 with f(x) = x / (x + gamma), gamma = 0.1, and its gradient eqs. 7-8. The
authors' released training script (ElliottYan/LUFFY ``exp_scripts/train.sh``, loss in
``luffy/verl/verl/mix_src/mix_core_alg.py``) differs from those equations in three ways this row does not
copy: ``loss_remove_clip=True`` (no clip on the on-policy ratio either), ``loss_remove_token_mean=True`` (the
token losses are summed and divided by the padded length, a constant as Dr.GRPO's, not by the token count Z)
and ``grpo_use_std=False`` (no std in the advantage), with an entropy bonus of 0.001 and no KL. The row keeps
eqs. 4-6 as written (std, clipped on-policy ratio, token-level mean, no entropy bonus); ``--loss-type dr_grpo
--no-scale-rewards`` gives the script's normaliser and advantage (with one pass per batch the on-policy ratio
is 1, so its clip does not act).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from ...algorithm import Context, RolloutBatch, batch_from_samples, collect_batch
from .grpo import GRPO, aggregate_loss
from .grpo import Config as GRPOConfig
from ...options import ConfigError, option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus LUFFY's off-policy mixing."""

    off_policy_per_group: int = option(1, "Demonstrations that replace rollouts in each group.", low=1, high=1023)
    shaping_gamma: float = option(0.1, "gamma of the policy-shaping function f(x) = x / (x + gamma).", low=1e-6,
                                  high=100.0)


def demonstration_with_reward(tokenizer, task, problem, env_config=None):
    """The environment's demonstration of ``problem`` as a Sample (sft.demonstration_sample), with the
    reward and info the environment gives it when its model segments are played back."""
    from ...sft import demonstrated_config, demonstration_sample

    sample = demonstration_sample(tokenizer, task, problem, env_config)
    env = task.make(problem, demonstrated_config(task, env_config))
    env.reset()
    result = None
    for seg in sample.segments:
        if seg["role"] == "model":
            result = env.step(seg["text"])
            if result.done:
                break
    sample.reward = float(result.reward) if result is not None else 0.0
    sample.info = {**(dict(result.info) if result is not None else {}), "off_policy": True}
    sample.turns, sample.done = sum(seg["role"] == "model" for seg in sample.segments), True
    return sample


def luffy_loss(logps, old_logps, advantages, mask, cfg: Config, off_policy=None, ref_logps=None,
               max_completion_length=None, seq_normalizer=None, token_normalizer=None):
    """Mixed-policy loss on (B, T) tensors; ``off_policy`` (B,) bool marks demonstration rows."""
    A = advantages.unsqueeze(1)
    off = torch.zeros_like(advantages, dtype=torch.bool) if off_policy is None else off_policy.bool()
    off = off.unsqueeze(1)
    ratio = torch.exp((logps - old_logps) * mask)
    clipped = torch.clamp(ratio, 1 - cfg.epsilon_low, 1 + cfg.epsilon_high)
    on_token = -torch.min(ratio * A, clipped * A)
    p = torch.exp(logps * mask)  # pi_theta / pi_phi with pi_phi = 1
    off_token = -(p / (p + cfg.shaping_gamma)) * A
    per_token = torch.where(off, off_token, on_token)
    kl = None
    if cfg.beta != 0.0:
        delta = ref_logps - logps
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + cfg.beta * kl
    per_token = per_token * mask
    loss = aggregate_loss(per_token, mask, cfg.loss_type, max_completion_length, seq_normalizer, token_normalizer)
    with torch.no_grad():
        on_mask = mask * (~off).float()
        n = mask.sum().clamp(min=1.0)
        is_clipped = ((ratio < 1 - cfg.epsilon_low) & (A < 0)) | ((ratio > 1 + cfg.epsilon_high) & (A > 0))
        metrics = {"clip_frac": float((is_clipped.float() * on_mask).sum() / n),
                   "kl": float((kl * mask).sum() / n) if kl is not None else 0.0}
    return loss, metrics


class LUFFY(GRPO):
    """GRPO whose groups mix on-policy rollouts with off-policy demonstrations (policy-shaped)."""

    name = "luffy"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """luffy_loss under ``cfg``: GRPO's clipped surrogate on rollouts, the shaped pi_theta on demonstrations."""
        from .grpo import LOSS_NORMALISERS, advantage_definition, clipped_surrogate, join_equations, kl_term, latex_number

        body = (rf"\begin{{cases}}{clipped_surrogate(cfg)} & o_i\ \text{{on-policy}}\\ "
                rf"\frac{{\pi_\theta(o_{{i,t}})}}{{\pi_\theta(o_{{i,t}})+{latex_number(cfg.shaping_gamma)}}}\hat A_i"
                rf" & o_i\ \text{{a demonstration}}\end{{cases}}")
        return join_equations(rf"\mathcal{{L}}=-{LOSS_NORMALISERS[cfg.loss_type]}m_{{i,t}}\Big[{body}{kl_term(cfg)}\Big]",
                              advantage_definition(cfg))

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.off_policy_per_group >= train.group_size:
            raise ConfigError(f"--off-policy-per-group ({cfg.off_policy_per_group}) must leave at least one "
                              f"on-policy rollout in each group of --group-size {train.group_size}",
                              field="off_policy_per_group")
        if cfg.importance_sampling_level != "token":
            raise ConfigError("LUFFY's policy shaping is token-level: --importance-sampling-level must be token",
                              field="importance_sampling_level")

    def collect(self, ctx: Context, problems: list):
        G, n_off = ctx.train.group_size, self.cfg.off_policy_per_group
        on_batch, stats = collect_batch(ctx, problems, group_size=G - n_off)
        samples = []
        for g, problem in enumerate(problems):
            samples += on_batch.samples[g * (G - n_off):(g + 1) * (G - n_off)]
            for _ in range(n_off):
                demo = demonstration_with_reward(ctx.tokenizer, ctx.task, problem, ctx.rollout_config.env_config)
                demo.group = g
                samples.append(demo)
        return batch_from_samples(ctx, samples, G), stats

    def sample_inputs(self, ctx: Context, batch: RolloutBatch) -> dict:
        return {"off_policy": torch.tensor([bool(s.info.get("off_policy")) for s in batch.samples])}

    def loss_fn(self, ctx: Context, batch: RolloutBatch):
        return partial(luffy_loss, cfg=self.cfg, max_completion_length=ctx.train.max_completion_tokens)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-luffy", "LUFFY tool agent (calculator)", "luffy", "calculator", "Mixed-policy GRPO: one demonstration per group, policy-shaped by x/(x+gamma).",
                   {"loss_type": "dapo"}, nodes=("alg-luffy",),
                   changes="Each group trades one of its rollouts for an off-policy demonstration (the "
                           "calculator's correct transcript, scored by the environment), so advantages compare the "
                           "policy with an expert. Demonstration tokens are weighted by f(pi)=pi/(pi+gamma) of the "
                           "policy's own probability instead of a clipped ratio, which amplifies the gradient on "
                           "expert tokens the policy finds unlikely; on-policy tokens keep GRPO's clipped ratio. "
                           "The row follows the paper's eqs. 4-6 (std-normalised advantage, token-level mean). "
                           "The authors' released script differs: no clip on on-policy ratios, token sums over a "
                           "constant length, no std, entropy bonus 0.001; one demonstration per group of the "
                           "run's size (the script: 1 of 8).",
                   paper="Learning to Reason under Off-Policy Guidance (arXiv 2504.14945)",
                   survey_vs_paper="The survey's table says the objective is the same as GRPO's; the paper replaces "
                                   "the clipped importance ratio on off-policy tokens by the shaping function "
                                   "f(pi)=pi/(pi+gamma), unclipped."),
)
