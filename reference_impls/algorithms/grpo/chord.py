r"""CHORD: supervised fine-tuning on expert demonstrations as a dynamically weighted auxiliary term of
on-policy GRPO (Zhang et al. 2025, "On-Policy RL Meets Off-Policy Experts: Harmonizing Supervised
Fine-Tuning and Reinforcement Learning via Dynamic Weighting", arXiv 2508.11408).

The hybrid objective (the paper's eq. 3, L_Hybrid, Sec. 3.2; GRPO's loss is its eq. 2, SFT's its eq. 1)::

    L = (1 - mu) * L_GRPO + mu * L_SFT

L_GRPO is grpo.py's loss on the step's own rollouts (every GRPO switch applies). L_SFT is the negative
log-likelihood of the model tokens of expert transcripts (here: the environment's own demonstrations of the
step's first ``sft_per_step`` problems, tokenised exactly like rollouts by ``sft.demonstration_sample``; env
tokens are masked)::

    L_SFT = -(1 / sum_t m_t) sum_t m_t * phi_t * log pi_theta(y*_t | x, y*_<t)

Two controls ("dual control"):

    CHORD-mu   global coefficient mu(step): linear warm-up 0 -> mu_peak over ``mu_warmup_steps``, then a
               cosine decay mu_peak -> mu_valley over ``mu_decay_steps`` (then constant), so training moves
               from imitation to exploration; phi_t = 1.
    CHORD-phi  token weights phi_t = p_t (1 - p_t), p_t = pi_theta(y*_t) (the paper's eq. 5; L_SFT-phi is its
               eq. 6, Sec. 3.3), largest for uncertain tokens, ~0 for tokens the policy already predicts
               (p ~ 1) or that are far from it (p ~ 0). Used as a weight: no gradient flows through phi.

Equation numbers checked against arXiv 2508.11408 (Sec. 3.2-3.3). The authors' code
(modelscope/Trinity-RFT, ``trinity/algorithm/policy_loss_fn/chord_policy_loss.py``) is what this follows
where it is more specific than eq. 6: phi is detached there too (a stop-gradient weight), the SFT term is a
token-level mean over the expert tokens (``use_token_level_loss_in_sft``; eq. 6 writes a sum), and mu follows
the same warm-up-then-cosine schedule (their ``mu_schedule_function``; their warm-up starts at 0 on step 0,
ours at mu_peak / warmup). Their example config (``examples/mix_chord/mix_chord.yaml``) gives the paper's two
settings: CHORD-mu = no warm-up, mu 0.9 -> 0.05 over 200 steps, no phi; CHORD-phi = a constant mu of 0.1
with phi. Our defaults are neither (mu 0.5 -> 0.05 over 50 steps, no phi: a CHORD-mu shape shortened for
runs of tens of steps); set ``--mu-peak 0.9 --mu-decay-steps 200`` for CHORD-mu, or ``--mu-peak 0.1
--mu-valley 0.1 --mu-decay-steps 0 --token-weighting phi`` for CHORD-phi.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch
from ...common import collate, completion_logprobs
from .grpo import GRPO
from .grpo import Config as GRPOConfig
from ...options import ConfigError, option


@dataclass
class Config(GRPOConfig):
    """GRPO's switches plus CHORD's two controls."""

    mu_peak: float = option(0.5, "Peak weight mu of the SFT term (L = (1-mu) L_GRPO + mu L_SFT).", low=0.0, high=1.0)
    mu_valley: float = option(0.05, "Weight mu after the decay.", low=0.0, high=1.0)
    mu_warmup_steps: int = option(0, "Steps of linear warm-up of mu from 0 to mu_peak.", low=0, high=1_000_000)
    mu_decay_steps: int = option(50, "Steps of cosine decay of mu from mu_peak to mu_valley (0 = stay at peak).",
                                 low=0, high=1_000_000)
    token_weighting: str = option("none", "Per-token weight of the SFT loss: none (CHORD-mu) or phi = p(1-p) "
                                  "(CHORD-phi).", choices=("none", "phi"))
    sft_per_step: int = option(4, "Expert demonstrations in the SFT term of each step.", low=1, high=4096)


def mu_schedule(step: int, peak: float, valley: float, warmup: int, decay: int) -> float:
    """CHORD-mu's global coefficient at (0-based) ``step``: linear warm-up, then cosine decay, then valley."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = step - warmup
    if decay <= 0:
        return peak
    if t >= decay:
        return valley
    return valley + (peak - valley) * 0.5 * (1.0 + math.cos(math.pi * t / decay))


def sft_loss(logps: torch.Tensor, mask: torch.Tensor, token_weighting: str = "none",
             token_normalizer: float | None = None) -> torch.Tensor:
    """Masked (weighted) negative log-likelihood, summed and divided by ``token_normalizer`` (default: the
    model tokens of this batch)."""
    weight = mask
    if token_weighting == "phi":
        p = logps.detach().exp()
        weight = mask * p * (1.0 - p)
    elif token_weighting != "none":
        raise ValueError(f"token_weighting must be none or phi, not {token_weighting!r}")
    return -(weight * logps).sum() / (token_normalizer or mask.sum().clamp(min=1.0))


class CHORD(GRPO):
    """GRPO + mu-weighted SFT on the environment's demonstrations (CHORD-mu / CHORD-phi)."""

    name = "chord"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """(1 - mu_t) times GRPO's loss under ``cfg`` plus mu_t times the (phi-weighted) token-mean SFT loss."""
        from .grpo import grpo_objective, join_equations

        phi = r"\,\mathrm{sg}\big[p_t(1-p_t)\big]" if cfg.token_weighting == "phi" else ""
        return join_equations(
            rf"\mathcal{{L}}=(1-\mu_t)\,\mathcal{{L}}_{{\mathrm{{GRPO}}}}-\mu_t\,\frac{{1}}{{\sum m}}\sum_t m_t{phi}"
            r"\log\pi_\theta(y^*_t\mid x,y^*_{<t})",
            grpo_objective(cfg, lhs=r"\mathcal{L}_{\mathrm{GRPO}}"))

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.mu_valley > cfg.mu_peak:
            raise ConfigError(f"--mu-valley ({cfg.mu_valley}) must not exceed --mu-peak ({cfg.mu_peak})",
                              field="mu_valley")

    def collect(self, ctx: Context, problems: list):
        from ...sft import demonstration_sample

        env_config = ctx.rollout_config.env_config
        self.demos = [demonstration_sample(ctx.tokenizer, ctx.task, p, env_config)
                      for p in problems[:self.cfg.sft_per_step]]
        return super().collect(ctx, problems)

    def mu(self, ctx: Context) -> float:
        c = self.cfg
        return mu_schedule(ctx.step, c.mu_peak, c.mu_valley, c.mu_warmup_steps, c.mu_decay_steps)

    def loss_fn(self, ctx: Context, batch: RolloutBatch):
        grpo_part, scale = super().loss_fn(ctx, batch), 1.0 - self.mu(ctx)

        def scaled(*args, **kwargs):
            loss, metrics = grpo_part(*args, **kwargs)
            return scale * loss, metrics
        return scaled

    def auxiliary(self, ctx: Context, batch: RolloutBatch):
        mu, demos, mbs = self.mu(ctx), self.demos, ctx.train.micro_batch_size
        n_tokens = float(sum(sum(d.loss_mask) for d in demos))

        def sft_term(part: list[int]) -> dict:  # the demonstrations, whatever the minibatch ``part``
            total = 0.0
            for start in range(0, len(demos), mbs):
                mb = collate(demos[start:start + mbs], ctx.tokenizer.pad_token_id, ctx.device)
                logps, _ = completion_logprobs(ctx.model, mb, ctx.train.temperature)
                loss = sft_loss(logps, mb["loss_mask"], self.cfg.token_weighting, max(n_tokens, 1.0))
                (mu * loss).backward()
                total += float(loss.detach())
            return {"sft_loss": total, "mu": mu}
        return sft_term


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-chord", "CHORD tool agent (calculator)", "chord", "calculator", "GRPO plus a decaying, mu-weighted SFT loss on the environment's demonstrations.",
                   nodes=("alg-chord",),
                   changes="GRPO's loss gets a supervised term on expert transcripts (here the calculator's own "
                           "demonstrations of the step's problems), mixed as (1-mu) RL + mu SFT. mu warms up and then "
                           "decays on a cosine, so early steps imitate and later steps explore; the phi switch "
                           "weights each expert token by p(1-p) so tokens the policy already knows, or finds very "
                           "unlikely, barely move it. As the authors' code: phi is a detached weight, the SFT "
                           "term is a per-token mean (eq. 6 writes a sum) and mu warms up then decays on a cosine. "
                           "Defaults that differ from the paper: mu 0.5 -> 0.05 over 50 steps without phi; the "
                           "paper's CHORD-mu decays 0.9 -> 0.05 over 200 steps, its CHORD-phi keeps mu at 0.1 "
                           "with phi; 4 expert transcripts per step, from the environment's own demonstrations.",
                   paper="On-Policy RL Meets Off-Policy Experts: Harmonizing Supervised Fine-Tuning and "
                         "Reinforcement Learning via Dynamic Weighting (arXiv 2508.11408)"),
)
