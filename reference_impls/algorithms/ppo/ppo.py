r"""PPO with a learned critic and token-level GAE (Schulman et al. 2017; Ouyang et al. 2022 for the
LLM form; Search-R1, Jin et al. 2025, for masking retrieved tokens).

The MDP is over *model tokens only*: a state is the prefix, an action is the next model token.
Environment tokens (tool results, m_t = 0) are part of the next state, not actions, so GAE skips them:
they get no reward, no value target and no advantage, and the recursion jumps over them.

Per-token reward, with the KL penalty to the frozen reference in the reward (``kl_estimator``)::

    k1:  kl_t = log pi_old(a_t) - log pi_ref(a_t)
    k3:  kl_t = exp(ref_t - old_t) - (ref_t - old_t) - 1         (unbiased, >= 0; Schulman 2020)
    r_t = -beta * kl_t  (+ R, the episode reward, on the last model token)

Generalised advantage estimation over the model tokens t_1 < t_2 < ... < t_n of one episode
(``next(t)`` = the next model token; V after the last one = 0)::

    delta_t = r_t + gamma * V(next(t)) - V(t)
    A_t     = delta_t + gamma * lambda * A_next(t)       A = 0 and R = 0 where m_t = 0
    R_t     = A_t + V(t)                                 (value target)
    A_t    <- (A_t - mean A) / (std A + 1e-8)            whitening over the model tokens of the batch

Losses over a minibatch (token-level means over model tokens), ``w_t = pi_theta / pi_old``; L_pi is the
clipped surrogate L^CLIP, Eq. (7) of arXiv 1707.06347, negated, and L its combination with the value loss,
Eq. (9) without the entropy bonus (numbers as a reading note of the paper quotes them; the GAE equations'
numbers are not verified: paper text not available here). The paper's value loss is the plain squared
error; clipping it around V_old, as below, comes from the common PPO implementations, not from Eq. (9)::

    L_pi = mean_t max( -A_t w_t, -A_t clip(w_t, 1 - eps, 1 + eps) )
    L_V  = 1/2 mean_t max( (V_t - R_t)^2, (clip(V_t, V_old - eps_v, V_old + eps_v) - R_t)^2 )
    L    = L_pi + vf_coef * L_V

``num_iterations`` epochs over the rollout batch, each split into ``num_mini_batches`` shuffled
minibatches with one optimizer step each (so ratios move away from 1 after the first minibatch).

VAPO switches (Yue et al. 2025, "VAPO: Efficient and Reliable RL for Advanced Reasoning Tasks", arXiv
2504.05118; equation numbers checked against a copy of the paper's text in the code index: clipped
surrogate Eq. (2), GAE Eq. (3), length-adaptive lambda Eqs. (4)-(5), token-level loss Eq. (7), clip-higher
Eq. (8), positive-example NLL Eq. (9) and the total L_PPO + mu L_NLL Eq. (10)); all off by default, so
plain PPO is unchanged::

    value pre-training     (Sec. 4.1) critic_warmup_steps = N: the first N steps fit the critic on the initial
                           policy's episodes, the policy untouched (with lam_critic = 1 the targets are
                           Monte Carlo returns)
    decoupled GAE          R_t from GAE with lambda_critic (lam_critic, VAPO: 1.0: unbiased returns);
                           A_t from GAE with lambda_policy
    length-adaptive GAE    lambda_policy = 1 - 1 / (alpha * l) per episode (Eq. (5)), l = its model tokens
                           (length_adaptive_alpha, VAPO: 0.05): the longer the episode, the closer to 1,
                           so the bias-variance balance of A_t does not depend on length
    clip-higher            clip(w, 1 - eps_low, 1 + eps_high)   (Eq. (8); epsilon, epsilon_high; VAPO: 0.2 / 0.28)
    positive-example LM    L += mu * L_NLL (Eqs. (9)-(10)),  L_NLL = -(1/sum_{o correct} |o|) sum_{o correct} sum_t m_t log pi(o_t)
                           over the minibatch's correct episodes (positive_lm_coef = mu, VAPO: 0.1)

(Token-level loss, Eq. (7), VAPO's remaining technique, is PPO's aggregation here already; group sampling
is the trainer's ``group_size``. One difference: VAPO pre-trains the value model for 50 steps on a fixed
policy's samples starting from a reward model; here the critic starts from the policy's weights with a zero
head, as every critic in this project does.)

Diagnostics: ``approx_kl`` = mean (w - 1) - log w (k3 between pi_old and pi_theta), ``clip_frac`` (ratios
clipped in the direction of the advantage), ``value_loss``, ``vf_clip_frac``, ``explained_variance`` =
1 - Var(R - V_old) / Var(R) (how much of the return the critic predicted before the update).

The critic
    ``shared_backbone=False`` (default): a separate critic, a copy of the policy's transformer (same
    initial weights: it starts from the SFT model's features) with a scalar head initialised to 0.
    This is the layout of InstructGPT, TRL's PPOTrainer, OpenRLHF and veRL (which Search-R1 trained
    with): the value loss never moves the policy's features, so the two objectives need no balancing,
    and the critic can use its own learning rate (``critic_lr``). The price is a second model: twice
    the parameters and optimizer state, and one more forward+backward per token, which is exactly the
    cost GRPO removes (measured in docs/results_part2.md).
    ``shared_backbone=True``: a scalar head on the policy's last hidden state; one forward gives logits
    and values (cheap), but the value gradient flows into the policy's transformer, scaled by
    ``vf_coef``.

Data parallel (torchrun). Every rank rolls out its own episodes and keeps its own critic replica
(the same initial weights: rank 0's are broadcast). The update runs on the plain modules, not through
DDP, and sums the gradients over ranks itself (``distributed.sum_gradients``, one flat all-reduce per
minibatch) before the clip and the optimizer step, so the critic, the shared-backbone head and the
policy are synchronised alike and every rank steps identically. The losses are divided by the
*global* token counts (the minibatch's model tokens summed over ranks), and the advantages are
whitened with the global mean and std, so N ranks with B episodes each compute the update of one
process with their N*B episodes split into the same minibatches. Every rank takes as many optimizer
steps: a rank with fewer minibatches than another (a filter left it fewer episodes) runs empty ones,
whose zero gradients still join the all-reduce, so no rank waits forever.

Integration with the trainer (``reference_impls/algorithm.py``): :class:`PPO` builds the critic when
the run starts (its parameters join the trainer's optimizer; ``modules()`` hands it to the checkpoints)
and ``update(ctx, batch)`` is the optimisation phase of a step, after the shared rollout. Works with
any registered env: it only reads rewards and loss masks.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from ... import distributed
from ...algorithm import Algorithm, Context, RolloutBatch
from ...common import collate, entropy_from_logits, micro_batches, position_ids_from_mask, selective_log_softmax
from ...diagnostics import ratio_diagnostics
from ...implementations import join_equations, latex_number
from ...options import Options, option


@dataclass
class Config(Options):
    """PPO switches. Defaults follow common LLM-PPO settings (TRL / OpenRLHF), scaled for small runs."""

    beta: float = option(0.05, "KL-in-reward coefficient; 0 skips the reference model.", low=0.0, high=10.0)
    kl_estimator: str = option("k1", "Per-token KL estimator in the reward: k1 (log ratio) or k3 (unbiased, >= 0).",
                               choices=("k1", "k3"))
    gamma: float = option(1.0, "Discount over model tokens.", low=0.0, high=1.0)
    lam: float = option(0.95, "GAE lambda.", low=0.0, high=1.0)
    epsilon: float = option(0.2, "Clip range of the policy ratio.", low=0.0, high=10.0)
    cliprange_value: float = option(0.2, "Clip range of the value around the rollout's values.", low=0.0, high=100.0)
    vf_coef: float = option(0.1, "Weight of the value loss.", low=0.0, high=100.0)
    num_iterations: int = option(2, "PPO epochs over each rollout batch.", low=1, high=16)
    num_mini_batches: int = option(2, "Minibatches per epoch (one optimizer step each).", low=1, high=1024)
    whiten_advantages: bool = option(True, "Whiten advantages over the model tokens of the batch.")
    shared_backbone: bool = option(False, "Value head on the policy's transformer instead of a separate critic.")
    critic_lr: float = option(0.0, "Learning rate of the critic (0 = the policy's).", low=0.0, high=1.0)
    # the first N steps train the critic only (the policy term is left out): a critic copied from the LM
    # predicts nothing yet, and whitened advantages built on its values push the policy in random
    # directions (measured on the search env, docs/results_part2.md). With a shared backbone the value
    # loss still moves the shared layers.
    critic_warmup_steps: int = option(0, "The first N steps train only the critic; a cold critic's advantages are "
                                      "noise and can wreck the policy in the first steps.", low=0, high=10000)
    # VAPO (Yue et al. 2025, arXiv 2504.05118) switches; the defaults leave PPO as above
    lam_critic: float = option(-1.0, "GAE lambda of the value targets, decoupled from the policy's (VAPO: 1.0, "
                               "unbiased Monte Carlo returns); negative = the same as lam.", low=-1.0, high=1.0)
    length_adaptive_alpha: float = option(0.0, "VAPO length-adaptive GAE: the policy's lambda per episode is "
                                          "1 - 1/(alpha * l), l = its model tokens (VAPO: 0.05); 0 = off (lam).",
                                          low=0.0, high=100.0)
    epsilon_high: float = option(0.0, "Clip range above 1 (clip-higher, VAPO/DAPO: 0.28); 0 = epsilon.", low=0.0,
                                 high=10.0)
    positive_lm_coef: float = option(0.0, "Weight of a language-model (NLL) loss on the batch's correct episodes "
                                     "(VAPO's positive-example LM loss: 0.1); 0 = off.", low=0.0, high=100.0)


# ----------------------------------------------------------------------------------------------------
# the equations

def kl_penalty(old_logps: torch.Tensor, ref_logps: torch.Tensor, estimator: str = "k1") -> torch.Tensor:
    """Per-token KL(pi_old || pi_ref) estimate from the sampled token's log-probs."""
    if estimator == "k1":
        return old_logps - ref_logps
    if estimator == "k3":
        delta = ref_logps - old_logps
        return torch.exp(delta) - delta - 1
    raise ValueError(f"kl_estimator must be k1 or k3, not {estimator!r}")


def token_rewards(rewards: torch.Tensor, mask: torch.Tensor, kl: torch.Tensor | None = None,
                  beta: float = 0.0) -> torch.Tensor:
    """r_t = -beta kl_t on model tokens, plus the episode reward on each row's last model token."""
    out = torch.zeros_like(mask, dtype=torch.float32 if not mask.is_floating_point() else mask.dtype)
    if kl is not None and beta:
        out = out - beta * kl * mask
    T = mask.shape[1]
    positions = torch.arange(T, device=mask.device).expand_as(mask)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(dim=1).values  # (B,)
    rows = torch.nonzero(last >= 0).flatten()
    out[rows, last[rows]] += rewards[rows].to(out.dtype)
    return out


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0,
        lam: float | torch.Tensor = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level GAE that skips masked positions (module docstring). All (B, T); ``lam`` a float or one
    lambda per row, (B,). Returns (advantages, returns), both 0 where ``mask`` is 0."""
    B, T = mask.shape
    adv = torch.zeros_like(values)
    last_gae = torch.zeros(B, dtype=values.dtype, device=values.device)
    next_value = torch.zeros(B, dtype=values.dtype, device=values.device)
    for t in reversed(range(T)):
        m = mask[:, t] > 0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        cur = delta + gamma * lam * last_gae
        adv[:, t] = torch.where(m, cur, torch.zeros_like(cur))
        last_gae = torch.where(m, cur, last_gae)  # masked tokens carry the recursion through unchanged
        next_value = torch.where(m, values[:, t], next_value)
    returns = (adv + values) * mask
    return adv, returns


def length_adaptive_lambda(lengths: torch.Tensor, alpha: float) -> torch.Tensor:
    """VAPO's per-episode policy lambda, 1 - 1/(alpha * l), floored at 0 for episodes shorter than 1/alpha."""
    return (1.0 - 1.0 / (alpha * lengths.float().clamp(min=1.0))).clamp(min=0.0)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8, over_ranks: bool = False) -> torch.Tensor:
    """(x - mean) / (std + eps) over the positions where mask = 1 (population std); 0 elsewhere.
    ``over_ranks``: mean and std over the masked positions of every rank's ``x`` (DDP), not this rank's."""
    if not over_ranks:
        n = mask.sum().clamp(min=1.0)
        mean = (x * mask).sum() / n
        var = (((x - mean) * mask) ** 2).sum() / n
        return (x - mean) / (var.sqrt() + eps) * mask
    total, count = distributed.all_reduce([float((x * mask).sum()), float(mask.sum())])
    mean = total / max(count, 1.0)
    var = distributed.all_reduce([float((((x - mean) * mask) ** 2).sum())])[0] / max(count, 1.0)
    return (x - mean) / (math.sqrt(var) + eps) * mask


def policy_loss(logps, old_logps, advantages, mask, epsilon: float = 0.2, token_normalizer=None,
                epsilon_high: float | None = None):
    """Clipped surrogate, token-level mean over model tokens; ``epsilon_high`` (clip-higher) replaces the
    upper range when given. Returns (loss, metrics)."""
    log_ratio = (logps - old_logps) * mask
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - epsilon, 1 + (epsilon_high or epsilon))
    per_token = torch.max(unclipped, clipped) * mask
    n = token_normalizer if token_normalizer is not None else mask.sum().clamp(min=1.0)
    loss = per_token.sum() / n
    with torch.no_grad():
        m = mask.sum().clamp(min=1.0)
        metrics = {"clip_frac": float(((clipped > unclipped).float() * mask).sum() / m),
                   "approx_kl": float((((ratio - 1) - log_ratio) * mask).sum() / m),
                   "ratio_mean": float((ratio * mask).sum() / m)}
    return loss, metrics


def value_loss(values, old_values, returns, mask, cliprange_value: float = 0.2, token_normalizer=None):
    """Clipped value loss, 1/2 token-level mean over model tokens; returns (loss, metrics)."""
    clipped_v = old_values + torch.clamp(values - old_values, -cliprange_value, cliprange_value)
    err = (values - returns) ** 2
    err_clipped = (clipped_v - returns) ** 2
    per_token = 0.5 * torch.max(err, err_clipped) * mask
    n = token_normalizer if token_normalizer is not None else mask.sum().clamp(min=1.0)
    loss = per_token.sum() / n
    with torch.no_grad():
        m = mask.sum().clamp(min=1.0)
        metrics = {"vf_clip_frac": float(((err_clipped > err).float() * mask).sum() / m)}
    return loss, metrics


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 - Var(R - V) / Var(R) over model tokens (1 = perfect critic, 0 = no better than a constant;
    0 as well when the returns do not vary, so the logs never hold NaN)."""
    n = mask.sum().clamp(min=1.0)

    def var(x):
        mean = (x * mask).sum() / n
        return (((x - mean) * mask) ** 2).sum() / n

    v = float(var(returns))
    return 0.0 if v == 0 else 1.0 - float(var(returns - values)) / v


def ppo_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, max_completion_length=None,
             seq_normalizer=None, token_normalizer=None, values=None, old_values=None, returns=None,
             policy_coef: float = 1.0):
    """``policy_coef * L_pi + vf_coef * L_V`` on (B, T) tensors with per-token ``advantages``; the value term
    only when ``values`` is given; ``policy_coef=0`` during the critic warm-up (the policy term is still
    measured for the metrics). Same signature as the other algorithms' ``compute_loss`` plus the value tensors."""
    loss, metrics = policy_loss(logps, old_logps, advantages, mask, cfg.epsilon, token_normalizer,
                                getattr(cfg, "epsilon_high", 0.0) or None)
    if values is not None:
        vl, vm = value_loss(values, old_values, returns, mask, cfg.cliprange_value, token_normalizer)
        metrics.update(vm, value_loss=float(vl.detach()), policy_loss=float(loss.detach()))
        loss = policy_coef * loss + cfg.vf_coef * vl
    return loss, metrics



# ----------------------------------------------------------------------------------------------------
# the critic

def _backbone(model):
    """The transformer under a causal-LM head (``model.model`` for Llama)."""
    return getattr(model, model.base_model_prefix)


class ValueModel(nn.Module):
    """A transformer with a scalar head: V(prefix) for each completion position (aligned with the
    log-probs: the value at column t is read where the logits predicting token t are read)."""

    def __init__(self, backbone: nn.Module, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids, attention_mask, logits_to_keep: int) -> torch.Tensor:
        h = self.backbone(input_ids=input_ids, attention_mask=attention_mask,
                          position_ids=position_ids_from_mask(attention_mask)).last_hidden_state
        return self.head(h[:, -logits_to_keep - 1:-1, :]).squeeze(-1)


def make_critic(policy, cfg: Config) -> nn.Module:
    hidden = policy.config.hidden_size
    if cfg.shared_backbone:
        head = nn.Linear(hidden, 1)
        nn.init.zeros_(head.weight)
        nn.init.zeros_(head.bias)
        return head.to(next(policy.parameters()).device)
    critic = ValueModel(copy.deepcopy(_backbone(policy)), hidden)
    return critic.to(next(policy.parameters()).device)


def forward(policy, critic, batch: dict, cfg: Config, temperature: float = 1.0):
    """(logps, entropy, values), each (B, K). With a shared backbone one transformer pass feeds both
    heads; otherwise the policy and the critic each run their own."""
    K = batch["logits_to_keep"]
    ids, am = batch["input_ids"], batch["attention_mask"]
    if cfg.shared_backbone:
        h = _backbone(policy)(input_ids=ids, attention_mask=am,
                              position_ids=position_ids_from_mask(am)).last_hidden_state[:, -K - 1:-1, :]
        logits = policy.get_output_embeddings()(h) / temperature
        values = critic(h).squeeze(-1)
    else:
        out = policy(input_ids=ids, attention_mask=am, position_ids=position_ids_from_mask(am), logits_to_keep=K + 1)
        logits = out.logits[:, :-1, :] / temperature
        values = critic(ids, am, K)
    logps = selective_log_softmax(logits, ids[:, -K:])
    with torch.no_grad():
        entropy = entropy_from_logits(logits.detach())
    return logps, entropy, values


# ----------------------------------------------------------------------------------------------------
# the algorithm

def _chunks(idx: list[int], size: int):
    for i in range(0, len(idx), size):
        yield idx[i:i + size]


class PPO(Algorithm):
    """PPO with a critic (see the module docstring; under torchrun the gradients of policy and critic are
    summed over ranks before each optimizer step)."""

    name = "ppo"

    Config = Config
    #: LaTeX of what a variant changes around PPO (its samples, its rewards), shown before the objective
    SETTING: ClassVar[str] = ""

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """The losses ppo_loss computes under ``cfg`` (and the rewards and GAE feeding them), as shown beside its
        runs and on its node page."""
        n = latex_number
        high = n(cfg.epsilon_high or cfg.epsilon)
        nll = rf"+{n(cfg.positive_lm_coef)}\,\mathcal{{L}}_{{\mathrm{{NLL}}}}(o\ \text{{correct}})" if cfg.positive_lm_coef else ""
        parts = [rf"\mathcal{{L}}=\mathcal{{L}}_{{\mathrm{{clip}}}}+{n(cfg.vf_coef)}\,\mathcal{{L}}_V{nll}",
                 rf"\mathcal{{L}}_{{\mathrm{{clip}}}}=-\frac{{1}}{{\sum m}}\sum_t m_t\min\big(w_t\hat A_t,\mathrm{{clip}}(w_t,"
                 rf"1-{n(cfg.epsilon)},1+{high})\hat A_t\big)",
                 rf"\mathcal{{L}}_V=\frac{{1}}{{2\sum m}}\sum_t m_t\max\big((V_t-R_t)^2,(\mathrm{{clip}}(V_t,"
                 rf"V^{{old}}_t\pm{n(cfg.cliprange_value)})-R_t)^2\big)"]
        kl = {"k1": r"\log\tfrac{\pi_{old}}{\pi_{ref}}", "k3": r"\mathbb{D}^{k3}"}[cfg.kl_estimator]
        parts.append(r"r_t=R\,[t=T]" + (rf"-{n(cfg.beta)}\,{kl}(o_t)" if cfg.beta else ""))
        lam = (rf"\lambda_i=1-\frac{{1}}{{{n(cfg.length_adaptive_alpha)}\,|o_i|}}" if cfg.length_adaptive_alpha
               else rf"\lambda={n(cfg.lam)}")
        discount = r"\lambda" if cfg.gamma == 1 else rf"{n(cfg.gamma)}\lambda"
        parts.append(rf"\hat A_t=\sum_l({discount})^l\delta_{{t+l}},\ {lam}"
                     + (r",\ \text{whitened over the batch}" if cfg.whiten_advantages else ""))
        if cfg.lam_critic >= 0:
            parts.append(rf"R_t=\mathrm{{GAE}}_{{\lambda={n(cfg.lam_critic)}}}+V_t")
        if cfg.critic_warmup_steps:
            parts.append(rf"\text{{the first {cfg.critic_warmup_steps} steps train }}V\text{{ only}}")
        return join_equations(cls.SETTING, *parts)

    def __init__(self, ctx: Context):
        """Create the critic and add its parameters to the trainer's optimizer (own lr when ``critic_lr``)."""
        super().__init__(ctx)
        self.critic = make_critic(ctx.policy, self.cfg)
        distributed.broadcast_module(self.critic)  # every replica starts from rank 0's critic
        self.critic.train()
        group = {"params": [p for p in self.critic.parameters() if p.requires_grad]}
        if self.cfg.critic_lr:
            group["lr"] = self.cfg.critic_lr
        ctx.optimizer.add_param_group(group)

    def modules(self) -> dict[str, nn.Module]:
        return {"critic": self.critic}

    def token_rewards(self, ctx: Context, batch: RolloutBatch, mask: torch.Tensor, kl) -> torch.Tensor:
        """(B, T) per-token rewards r_t (module docstring); a subclass adds its own (PSGPO's step rewards)."""
        return token_rewards(batch.rewards.to(mask.device), mask, kl, self.cfg.beta)

    def update(self, ctx: Context, batch: RolloutBatch) -> dict:
        """The optimisation phase of one PPO step on a rollout batch. Returns metrics (``loss`` is the
        policy loss averaged over minibatches; the rest as named in the module docstring)."""
        cfg: Config = self.cfg
        tcfg = ctx.train
        policy, critic, device = ctx.policy, self.critic, ctx.device
        samples, full, ref_logps = batch.samples, batch.full, batch.ref_logps
        mask = full["loss_mask"]
        old_logps = full["old_logprobs"]
        B = mask.shape[0]
        micro, micro_tokens = max(1, tcfg.micro_batch_size), getattr(tcfg, "micro_batch_tokens", 0)

        # 1. values of the rollout (pi_old's critic), per-token rewards, GAE
        with torch.no_grad():
            old_values = torch.zeros_like(mask)
            for idx in micro_batches(samples, list(range(B)), micro, micro_tokens):
                mb = collate([samples[i] for i in idx], ctx.tokenizer.pad_token_id, device)
                _, _, v = forward(policy, critic, mb, cfg, tcfg.temperature)
                old_values[idx, :v.shape[1]] = v.float()
            old_values = old_values * mask
            kl = kl_penalty(old_logps, ref_logps, cfg.kl_estimator) * mask if ref_logps is not None else None
            r = self.token_rewards(ctx, batch, mask, kl)
            lam_policy = cfg.lam
            if cfg.length_adaptive_alpha:  # VAPO: longer episodes bootstrap less (lambda closer to 1)
                lam_policy = length_adaptive_lambda(mask.sum(dim=1), cfg.length_adaptive_alpha)
            advantages, returns = gae(r, old_values, mask, cfg.gamma, lam_policy)
            if cfg.lam_critic >= 0:  # VAPO decoupled GAE: value targets from their own lambda (1 = MC returns)
                _, returns = gae(r, old_values, mask, cfg.gamma, cfg.lam_critic)
            ev = explained_variance(old_values, returns, mask)
            adv_raw_mean = float((advantages * mask).sum() / mask.sum().clamp(min=1.0))
            if cfg.whiten_advantages:
                advantages = masked_whiten(advantages, mask, over_ranks=ctx.world > 1)

        # 2. epochs x minibatches, gradient accumulation over micro-batches inside a minibatch
        gen = torch.Generator().manual_seed(int(torch.randint(0, 2**31 - 1, (1,)).item()))
        mb_size = max(1, math.ceil(B / max(1, cfg.num_mini_batches)))
        policy_params = [p for p in policy.parameters() if p.requires_grad]
        critic_params = [p for p in critic.parameters() if p.requires_grad]
        rows, ent, ratios, grad_norms = [], [], [], []
        warmup = ctx.step < cfg.critic_warmup_steps
        # VAPO positive-example LM loss: the episodes that solved their problem, as an extra NLL target
        positive = torch.tensor([float(s.info.get("correct", s.reward > 0)) for s in samples], device=device)
        lm_rows = []
        policy.train()
        critic.train()
        # under DDP every rank takes the same number of minibatch steps (padded with empty ones)
        n_minibatches = len(list(_chunks(list(range(B)), mb_size)))
        if ctx.world > 1:
            n_minibatches = int(distributed.all_reduce([float(n_minibatches)], op="max")[0])
        for _ in range(max(1, cfg.num_iterations)):
            order = torch.randperm(B, generator=gen).tolist()
            minibatches = list(_chunks(order, mb_size))
            minibatches += [[] for _ in range(n_minibatches - len(minibatches))]
            for minibatch in minibatches:
                n_tok = mask[minibatch].sum()
                n_pos = (mask[minibatch] * positive[minibatch, None]).sum()
                if ctx.world > 1:  # global normalisers: the gradients are summed over ranks below
                    n_tok, n_pos = (torch.tensor(v, dtype=mask.dtype, device=device) for v in
                                    distributed.all_reduce([float(n_tok), float(n_pos)]))
                n_tok, n_pos = n_tok.clamp(min=1.0), n_pos.clamp(min=1.0)
                ctx.optimizer.zero_grad(set_to_none=True)
                for idx in micro_batches(samples, minibatch, micro, micro_tokens):
                    mb = collate([samples[i] for i in idx], ctx.tokenizer.pad_token_id, device)
                    K = mb["logits_to_keep"]
                    logps, entropy, values = forward(policy, critic, mb, cfg, tcfg.temperature)
                    m = mb["loss_mask"]
                    loss, metrics = ppo_loss(logps, mb["old_logprobs"], advantages[idx, :K], m, cfg,
                                             token_normalizer=n_tok, values=values, old_values=old_values[idx, :K],
                                             returns=returns[idx, :K], policy_coef=0.0 if warmup else 1.0)
                    if cfg.positive_lm_coef and not warmup:
                        nll = -(logps * m * positive[idx, None]).sum() / n_pos
                        loss = loss + cfg.positive_lm_coef * nll
                        lm_rows.append((float(nll.detach()) * float(n_pos), float((m * positive[idx, None]).sum())))
                    loss.backward()
                    w = float(m.sum())
                    rows.append((metrics, w))
                    ratios.append((ratio_diagnostics(logps, mb["old_logprobs"], advantages[idx, :K], m, cfg), w))
                    ent.append((float((entropy * m).sum()), w))
                if ctx.world > 1:
                    distributed.sum_gradients(policy_params + critic_params)
                grad_norms.append(float(torch.nn.utils.clip_grad_norm_(policy_params, tcfg.max_grad_norm)))
                torch.nn.utils.clip_grad_norm_(critic_params, tcfg.max_grad_norm)  # clipped apart from the policy
                ctx.optimizer.step()

        def weighted(key):
            tot = sum(w for _, w in rows)
            return sum(mt[key] * w for mt, w in rows) / tot if tot else 0.0

        n_mask = float(mask.sum().clamp(min=1.0))
        n_ratio = max(sum(w for _, w in ratios), 1.0)
        return {
            "ratio_mean": sum(r["ratio_sum"] for r, _ in ratios) / n_ratio,
            "ratio_max": max((r["ratio_max"] for r, _ in ratios), default=1.0),
            "clip_frac_low": sum(r["clip_low_sum"] for r, _ in ratios) / n_ratio,
            "clip_frac_high": sum(r["clip_high_sum"] for r, _ in ratios) / n_ratio,
            "loss": weighted("policy_loss"),
            "value_loss": weighted("value_loss"),
            "approx_kl": weighted("approx_kl"),
            "clip_frac": weighted("clip_frac"),
            "vf_clip_frac": weighted("vf_clip_frac"),
            "explained_variance": ev,
            "kl": float(kl.sum() / n_mask) if kl is not None else 0.0,
            "entropy": sum(e for e, _ in ent) / max(sum(w for _, w in ent), 1.0),
            "values_mean": float(old_values.sum() / n_mask),
            "returns_mean": float(returns.sum() / n_mask),
            "advantages_mean": adv_raw_mean,
            "grad_norm": sum(grad_norms) / len(grad_norms) if grad_norms else 0.0,  # mean over the step's updates
            "grad_norm_max": max(grad_norms, default=0.0),
            "critic_warmup": float(warmup),
            # the budget's count: a warm-up step fits the critic only, so it is no policy update (docs/compare.md)
            "policy_updates": 0.0 if warmup else float(max(1, cfg.num_iterations) * n_minibatches),
            "critic_updates": float(max(1, cfg.num_iterations) * n_minibatches),
            "positive_lm_loss": (sum(v for v, _ in lm_rows) / max(sum(w for _, w in lm_rows), 1.0)) if lm_rows else 0.0,
            "groups_kept_frac": 1.0,
        }


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-ppo", "PPO tool agent (calculator)", "ppo", "calculator", "PPO with a value head, token-level GAE over model tokens, clipped policy and value losses.",
                   nodes=("alg-ppo-family", "alg-ppo"),
                   changes=(
                           "Defaults are common LLM-PPO settings scaled down (TRL / OpenRLHF style: "
                           "KL 0.05 in the reward, k1, GAE lambda 0.95, gamma 1, clip 0.2, value "
                           "coefficient 0.1, 2 epochs of 2 minibatches, whitened advantages); the PPO "
                           "paper's own settings are for Atari and MuJoCo, not language.")),
    Implementation("calculator-vapo", "VAPO tool agent (calculator)", "ppo", "calculator", "PPO with VAPO's value-side fixes: value pre-training, decoupled and length-adaptive GAE, "
                   "clip-higher, an LM loss on correct episodes.",
                   {"beta": 0.0, "critic_warmup_steps": 5, "lam_critic": 1.0, "length_adaptive_alpha": 0.05,
                    "epsilon_high": 0.28, "positive_lm_coef": 0.1},
                   nodes=("alg-vapo",),
                   changes="Keeps PPO's critic but makes it trustworthy: the critic is first fitted alone on the "
                           "initial policy's episodes (5 steps here, 50 in the paper), its targets are unbiased "
                           "Monte Carlo returns (lambda 1) while the policy's GAE lambda grows with episode length "
                           "as 1 - 1/(0.05 l). It also raises the upper clip to 0.28 and adds a small NLL loss on "
                           "the correct episodes. Token-level loss and group sampling (G episodes per problem) are "
                           "already how PPO runs here; no KL term (beta 0)."
                           " Defaults as the paper: alpha 0.05, critic lambda 1, clip 0.2/0.28, NLL "
                           "weight 0.1; differs in 5 critic-only steps instead of 50 and a critic "
                           "that starts from the policy's weights (the paper: from a reward model).",
                   paper="VAPO: Efficient and Reliable Reinforcement Learning for Advanced Reasoning Tasks "
                         "(Yue et al. 2025, arXiv 2504.05118)",
                   survey_vs_paper="The survey's table describes VAPO as an adaptive KL penalty plus variance control; "
                                   "the paper's techniques are value pre-training, decoupled and length-adaptive GAE, "
                                   "clip-higher, token-level loss, a positive-example LM loss and group sampling, "
                                   "with no adaptive KL penalty among them."),
)
