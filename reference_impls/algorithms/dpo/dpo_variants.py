r"""Three DPO-family variants that keep DPO's preference pairs (``dpo.py``) and change only the loss or
which pairs a step trains on. Notation as in ``dpo.py``: y_w the correct episode, y_l the incorrect one of
the same prompt; log pi(y|x) sums over *model* tokens only and |y| counts them.

SimPO (Meng et al. 2024, arXiv 2405.14734): no reference model; the implicit reward is the length-
normalised log-likelihood (Eq. (4) of arXiv 2405.14734), and the Bradley-Terry comparison asks for a
target margin gamma (Eq. (5)), giving the loss (Eq. (6))::

    r(x, y) = beta / |y| * log pi(y|x)
    L = -log sigmoid( r(x, y_w) - r(x, y_l) - gamma )

ORPO (Hong et al. 2024, arXiv 2403.07691): no reference model; the SFT loss on y_w plus lambda times an
odds-ratio penalty, with P(y|x) the length-normalised likelihood exp(log pi(y|x) / |y|) (Eq. (3) of arXiv
2403.07691)::

    L_SFT = -log pi(y_w|x) / |y_w|                                    (its equation number: not verified)
    odds(y|x) = P(y|x) / (1 - P(y|x))                                 (Eq. (4))
    L_OR = -log sigmoid( log odds(y_w|x) - log odds(y_l|x) )          (Eqs. (5), (7))
    L = L_SFT + lambda * L_OR                                         (Eq. (6))

(SimPO's and ORPO's equation numbers agree with paper cards in the code index that state they were
checked against arXiv 2405.14734v3 and 2403.07691v2; the papers' own text is not readable here. See
docs/algorithms_dpo_ppo_families.md.)

beta-DPO (Wu et al. 2024, arXiv 2407.08639): DPO's loss with beta set per batch from the batch's reward
discrepancy, and a filter that drops outlying pairs. With M_i the pair's log-ratio margin
h_i = [log pi(y_w) - log pi_ref(y_w)] - [log pi(y_l) - log pi_ref(y_l)] (measured, as in the authors' code,
without the beta_0 factor), a running threshold M_0 and spread sigma (moving averages with momentum m)::

    M_0 <- m M_0 + (1 - m) mean_i M_i,   sigma <- m sigma + (1 - m) std_i M_i    (the running threshold;
                                                  std_i with Bessel's correction, as the authors' M.std())
    keep (1 - rho) of the batch, drawn without replacement with probability
         proportional to exp(-(M_i - M_0)^2 / (2 sigma^2))                  (beta-guided data filtering)
    beta_batch = beta_0 * (1 + alpha * (mean_{kept} M_i - M_0))              (batch-level beta calibration)
    L = mean_{kept} -log sigmoid(beta_batch * h_i)          (beta_batch is a constant for the gradient)

(Named by the paper's components rather than equation numbers: not verified, paper text not available
here; the order of the updates, the filter's draw, the unbiased batch std, the mean over the *kept* pairs
in beta_batch and the clamp beta_batch >= 1e-3 follow the authors' released code, github.com/junkangwu/beta-DPO,
``trainers.py``: ``update_and_sync_tensor_mean`` and ``preference_loss`` with ``mode_loss=beta_DPO``; the
defaults rho = 0.2, alpha = 0.6, beta_0 = 0.1 and m = 0.9 are its README's command line and its ``gamma=0.9``.)

A batch is a step's ``pairs_per_step`` pairs; their margins come from one extra forward pass without
gradient, so the statistics cover the whole step however it is split into micro-batches. M_0 and sigma
start from the first batch's mean and std (the authors' code starts them at 0) and are saved in
checkpoints (``state_dict``), and the draw is seeded by (seed, step), so a resumed run continues exactly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ...algorithm import Context
from .dpo import DPO, PairOptions, dpo_loss, sequence_logps
from ...implementations import latex_number
from ...options import option


def _metrics(chosen_rewards, rejected_rewards, chosen_logps, rejected_logps) -> dict:
    """The names TRL logs, from per-pair rewards and log-likelihoods."""
    rc, rr = chosen_rewards.detach(), rejected_rewards.detach()
    return {"rewards/chosen": float(rc.mean()), "rewards/rejected": float(rr.mean()),
            "rewards/accuracies": float((rc > rr).float().mean()), "rewards/margins": float((rc - rr).mean()),
            "logps/chosen": float(chosen_logps.detach().mean()),
            "logps/rejected": float(rejected_logps.detach().mean())}


# ----------------------------------------------------------------------------------------------------
# SimPO

def simpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, beta: float = 2.0, gamma: float = 1.0):
    """Sequence log-likelihoods and model-token counts (N,) -> (mean loss, metrics); rewards are eq. 4's."""
    chosen_avg = chosen_logps / chosen_lengths.clamp(min=1.0)
    rejected_avg = rejected_logps / rejected_lengths.clamp(min=1.0)
    losses = -F.logsigmoid(beta * (chosen_avg - rejected_avg) - gamma)
    return losses.mean(), _metrics(beta * chosen_avg, beta * rejected_avg, chosen_avg, rejected_avg)


@dataclass
class SimPOConfig(PairOptions):
    """SimPO switches."""

    beta: float = option(2.0, "Reward scale beta of the length-normalised reward (the paper uses 2.0-2.5).",
                         low=1e-6, high=100.0)
    gamma: float = option(1.0, "Target reward margin gamma (TRL: simpo_gamma; the paper tunes 0.5-1.6).", low=0.0,
                          high=100.0, aliases=("simpo_gamma",))


class SimPO(DPO):
    name = "simpo"
    Config = SimPOConfig

    @classmethod
    def objective(cls, cfg: SimPOConfig) -> str:
        b = latex_number(cfg.beta)
        return (rf"\mathcal{{L}}=-\log\sigma\Big(\tfrac{{{b}}}{{|y_w|}}\log\pi_\theta(y_w|x)"
                rf"-\tfrac{{{b}}}{{|y_l|}}\log\pi_\theta(y_l|x)-{latex_number(cfg.gamma)}\Big)")

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        return False

    def pair_loss(self, chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, chosen_lengths,
                  rejected_lengths):
        return simpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, self.cfg.beta, self.cfg.gamma)


# ----------------------------------------------------------------------------------------------------
# ORPO

def log1mexp(x: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(x)) for x < 0, accurate on both sides of -log 2."""
    return torch.where(x > -math.log(2.0), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def orpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, lam: float = 0.1):
    """Sequence log-likelihoods and model-token counts (N,) -> (mean L_SFT + lambda * L_OR, metrics)."""
    chosen_avg = chosen_logps / chosen_lengths.clamp(min=1.0)  # log P(y_w|x) of eq. 3
    rejected_avg = rejected_logps / rejected_lengths.clamp(min=1.0)
    log_odds = (chosen_avg - rejected_avg) - (log1mexp(chosen_avg) - log1mexp(rejected_avg))
    odds_ratio_loss = -F.logsigmoid(log_odds)
    nll = -chosen_avg
    metrics = _metrics(lam * chosen_avg, lam * rejected_avg, chosen_avg, rejected_avg)
    metrics.update({"nll_loss": float(nll.detach().mean()), "log_odds_ratio": float(-odds_ratio_loss.detach().mean()),
                    "log_odds_chosen": float(log_odds.detach().mean())})
    return (nll + lam * odds_ratio_loss).mean(), metrics


@dataclass
class ORPOConfig(PairOptions):
    """ORPO switches."""

    beta: float = option(0.1, "lambda: weight of the odds-ratio penalty beside the SFT loss (TRL calls it beta).",
                         low=0.0, high=100.0, aliases=("orpo_lambda",))


class ORPO(DPO):
    name = "orpo"
    Config = ORPOConfig

    @classmethod
    def objective(cls, cfg: ORPOConfig) -> str:
        return (rf"\mathcal{{L}}=-\tfrac{{1}}{{|y_w|}}\log\pi_\theta(y_w|x)-{latex_number(cfg.beta)}\log\sigma\Big(\log"
                r"\tfrac{\mathrm{odds}_\theta(y_w|x)}{\mathrm{odds}_\theta(y_l|x)}\Big),\ "
                r"\mathrm{odds}_\theta(y|x)=\tfrac{P_\theta(y|x)}{1-P_\theta(y|x)},\ P_\theta(y|x)=e^{\frac{1}{|y|}\log\pi_\theta(y|x)}")

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        return False

    def pair_loss(self, chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, chosen_lengths,
                  rejected_lengths):
        return orpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, self.cfg.beta)


# ----------------------------------------------------------------------------------------------------
# beta-DPO

def beta_dpo_select(margins: torch.Tensor, mean: float, std: float, beta0: float, alpha: float, rho: float,
                    generator: torch.Generator | None = None) -> tuple[torch.Tensor, float]:
    """The kept pairs' indices and beta_batch, given this batch's margins M_i and the (already updated)
    running threshold M_0 = ``mean`` and spread ``std``."""
    weights = torch.exp(-0.5 * ((margins - mean) / max(std, 1e-6)) ** 2)
    if not torch.isfinite(weights).all() or float(weights.sum()) <= 0.0:
        weights = torch.ones_like(margins)  # every pair is an outlier at this spread: draw uniformly
    n_keep = max(1, int(len(margins) * (1.0 - rho)))
    kept = torch.multinomial(weights, n_keep, replacement=False, generator=generator)
    beta = max(beta0 * (1.0 + alpha * (float(margins[kept].mean()) - mean)), 1e-3)
    return kept.sort().values, beta


@dataclass
class BetaDPOConfig(PairOptions):
    """beta-DPO switches."""

    beta: float = option(0.1, "beta_0: the base KL strength that each batch's beta is scaled from.", low=1e-6,
                         high=100.0)
    alpha: float = option(0.6, "alpha: how strongly beta follows the batch's margin above the running threshold.",
                          low=0.0, high=100.0)
    filter_ratio: float = option(0.2, "rho: fraction of each batch's pairs dropped by the margin filter.", low=0.0,
                                 high=0.95)
    momentum: float = option(0.9, "m: momentum of the running threshold M_0 and spread sigma.", low=0.0, high=1.0)


class BetaDPO(DPO):
    name = "beta-dpo"
    Config = BetaDPOConfig

    @classmethod
    def objective(cls, cfg: BetaDPOConfig) -> str:
        return (r"\mathcal{L}=-\log\sigma\big(\beta_{\mathrm{batch}}\,h\big),\ \beta_{\mathrm{batch}}="
                rf"{latex_number(cfg.beta)}\big(1+{latex_number(cfg.alpha)}(\mathrm{{mean}}_{{i\in\mathrm{{kept}}}}M_i-M_0)\big),\ "
                rf"\text{{kept: }}{latex_number(1 - cfg.filter_ratio)}\text{{ of the pairs, drawn}}\propto e^{{-(M_i-M_0)^2/2\sigma^2}}")

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.margin_mean: float | None = None
        self.margin_std: float | None = None

    def state_dict(self) -> dict:
        return {"margin_mean": self.margin_mean, "margin_std": self.margin_std}

    def load_state_dict(self, state: dict) -> None:
        self.margin_mean, self.margin_std = state.get("margin_mean"), state.get("margin_std")

    def step_pairs(self, ctx: Context):
        cfg, tcfg = self.cfg, ctx.train
        drawn = super().step_pairs(ctx)
        pad, micro = ctx.tokenizer.pad_token_id, max(1, tcfg.micro_batch_size // 2)
        margins = []
        with torch.no_grad():
            for start in range(0, len(drawn), micro):
                part = drawn[start:start + micro]
                lp = sequence_logps(ctx.model, [p.chosen for p in part] + [p.rejected for p in part], pad,
                                    ctx.device, tcfg.temperature).double().cpu()
                margins += [float(lp[j] - p.ref_chosen - lp[len(part) + j] + p.ref_rejected)
                            for j, p in enumerate(part)]
        m = torch.tensor(margins, dtype=torch.float64)
        batch_mean = float(m.mean())
        batch_std = float(m.std()) if len(m) > 1 else 0.0  # Bessel-corrected, as the authors' gap_local.std()
        if self.margin_mean is None:
            self.margin_mean, self.margin_std = batch_mean, batch_std
        else:
            self.margin_mean = cfg.momentum * self.margin_mean + (1 - cfg.momentum) * batch_mean
            self.margin_std = cfg.momentum * self.margin_std + (1 - cfg.momentum) * batch_std
        gen = torch.Generator().manual_seed(tcfg.seed * 1_000_003 + ctx.step)
        kept, self.step_beta = beta_dpo_select(m, self.margin_mean, self.margin_std, cfg.beta, cfg.alpha,
                                               cfg.filter_ratio, gen)
        self.step_stats = {"beta_batch": self.step_beta, "margin_threshold": self.margin_mean,
                           "kept_fraction": len(kept) / len(drawn)}
        return [drawn[i] for i in kept.tolist()]

    def pair_loss(self, chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, chosen_lengths,
                  rejected_lengths):
        # rewards are logged with beta_0 (comparable across steps); the loss uses this batch's beta
        _, metrics = dpo_loss(chosen_logps.detach(), rejected_logps.detach(), ref_chosen_logps, ref_rejected_logps,
                              self.cfg.beta)
        h = (chosen_logps - ref_chosen_logps) - (rejected_logps - ref_rejected_logps)
        return (-F.logsigmoid(self.step_beta * h)).mean(), metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-simpo", "SimPO on tool-use preference pairs", "simpo", "calculator", "Reference-free preference optimisation: length-normalised log-likelihood reward with a target margin.",
        nodes=("alg-simpo",),
        changes="SimPO drops DPO's reference model: an episode's implicit reward is its average log-probability per "
                "model token, scaled by beta, so the reward matches how the policy ranks text when it generates and "
                "long episodes earn no bonus for length. The loss also demands that the correct episode beat the "
                "incorrect one by a margin gamma, not just by any amount. Pairs are DPO's: a correct and an "
                "incorrect calculator episode of the same prompt."
                " Defaults against the paper: beta 2.0 (the paper uses 2.0-2.5) and gamma 1.0 (the "
                "paper tunes 0.5-1.6).",
        paper="SimPO: Simple Preference Optimization with a Reference-Free Reward (Meng, Xia, Chen; arXiv 2405.14734)",
        survey_vs_paper="The survey's table lists SimPO's KL penalty as 'Scaled'; the paper has no reference model "
                        "and no KL term at all: beta only scales the length-normalised reward."),
    Implementation(
        "calculator-orpo", "ORPO on tool-use preference pairs", "orpo", "calculator", "SFT on the correct episode plus an odds-ratio penalty against the incorrect one; no reference model.",
        nodes=("alg-orpo",),
        changes="ORPO folds preference learning into supervised fine-tuning: the loss is the (per-token averaged) "
                "negative log-likelihood of the correct episode plus lambda times a log-sigmoid penalty on the log "
                "odds ratio between the correct and the incorrect episode. It needs no reference model and no "
                "separate SFT stage, because the NLL term keeps the policy on the chosen answers while the odds "
                "ratio pushes the rejected ones down."
                " Defaults: lambda 0.1 (TRL's default; the paper's value was not checked here).",
        paper="ORPO: Monolithic Preference Optimization without Reference Model (Hong, Lee, Thorne; arXiv 2403.07691)",
        survey_vs_paper="The survey's table expands ORPO as 'Online regularized preference optimization' with a KL "
                        "penalty, 'online stabilization' and an 'online feedback reward'; the paper's ORPO is Odds "
                        "Ratio Preference Optimization, trained offline on fixed preference pairs, with no reference "
                        "model and no KL term."),
    Implementation(
        "calculator-beta-dpo", "beta-DPO on tool-use preference pairs", "beta-dpo", "calculator", "DPO whose beta is recalibrated every batch from the pairs' reward margins, with outlier pairs filtered.",
        nodes=("alg-beta-dpo",),
        changes="beta-DPO keeps DPO's loss but sets beta per batch: a batch whose pairs are already far apart (a "
                "large mean log-ratio margin relative to a running threshold) gets a larger beta, so the update is "
                "conservative, and a batch of close pairs a smaller one. Before that, pairs whose margin lies far "
                "from the running threshold are dropped by a Gaussian-weighted draw, so a few outlying pairs cannot "
                "set the batch's beta. The running threshold and spread are moving averages kept across steps "
                "(saved in checkpoints)."
                " Defaults as the authors' code (junkangwu/beta-DPO: README's command line, trainers.py): "
                "beta_0 0.1, alpha 0.6, 20% of pairs filtered, momentum 0.9, the unbiased batch std.",
        paper="beta-DPO: Direct Preference Optimization with Dynamic beta (Wu et al.; arXiv 2407.08639)"),
)
