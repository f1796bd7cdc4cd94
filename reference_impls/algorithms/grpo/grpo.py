r"""GRPO and the variants that changed one line of it: Dr.GRPO, DAPO, GSPO.

Notation: a prompt q, a group of G sampled completions o_1..o_G with rewards r_1..r_G, |o_i| the
number of *model* tokens of o_i (environment tokens are masked: m_{i,t} = 0), pi_old the sampling
policy, pi_ref a frozen reference.

Advantage (GRPO, Shao et al. 2024, Sec. 4.1.2 "outcome supervision", unnumbered: the group-normalised reward
of o_i is the advantage of every one of its tokens, then used in the objective, eq. 3)::

    A_i = (r_i - mean_j r_j) / (std_j r_j + 1e-4)        scale_rewards=True   (GRPO)
    A_i =  r_i - mean_j r_j                              scale_rewards=False  (Dr.GRPO, Liu et al. 2025,
                                                                              Sec. 3.1-3.2: std scaling biases
                                                                              towards too easy/hard questions)
    (std with Bessel's correction, as TRL.)

Importance ratio (``importance_sampling_level``)::

    token:     w_{i,t} = pi_theta(o_{i,t} | q, o_{i,<t}) / pi_old(o_{i,t} | q, o_{i,<t})
    sequence:  w_i     = exp( (1/|o_i|) sum_t m_{i,t} log w_{i,t} )     (GSPO, Zheng et al. 2025, eq. 7;
                                                                         objective eq. 5, advantage eq. 6)

Clipped surrogate with decoupled ranges (DAPO clip-higher, Yu et al. 2025, eq. 10)::

    l_{i,t} = -min( w A_i, clip(w, 1 - eps_low, 1 + eps_high) A_i ) + beta * KL_{i,t}

k3 KL estimator to the reference (Schulman 2020; GRPO eq. 4), skipped entirely when beta = 0::

    KL_{i,t} = exp(ref - logp) - (ref - logp) - 1,    ref = log pi_ref, logp = log pi_theta

Aggregation (``loss_type``)::

    grpo     L = (1/G) sum_i (1/|o_i|) sum_t m l           per-sequence mean, then mean  (GRPO eq. 3)
    dr_grpo  L = (1/(G * L_max)) sum_i sum_t m l          constant normaliser           (Dr.GRPO Sec. 3.2,
                                                                                          Listing 1)
    dapo     L = (1/sum_i |o_i|) sum_i sum_t m l          token-level mean              (DAPO eqs. 8, 12)

What the Lab and the node pages show is ``GRPO.objective(cfg)``: the LaTeX of these same terms composed from
the options below (``grpo_objective``), so each configuration shows only the terms it computes; a variant states
its own advantage, reward or sampling (``ADVANTAGE`` / ``SETTING``) or overrides ``objective`` beside its loss.

A group whose rewards are all equal carries no signal: its advantages are exactly 0 (computed, not left to
float round-off: with rewards of 2/3 a float32 mean leaves |A| ~ 6e-4 of one sign after std scaling).

Batch-level switches (``prepare_batch``)::

    dynamic_sampling: drop groups whose *unshaped* rewards (the environment's, DAPO's accuracy) are all equal
                      (DAPO eq. 11: 0 < |{o_i : is_equivalent(a, o_i)}| < G; verl's filter_groups on the acc
                      metric), decided before overlong shaping, so a group of all-correct answers of different
                      lengths is dropped too; DAPO then over-samples to refill the batch, here the batch shrinks
    overlong shaping: r_i += R_len(|o_i|) with L_cache = overlong_buffer                   (DAPO eq. 13)
        R_len(y) = 0                               if |y| <= L_max - L_cache
                 = ((L_max - L_cache) - |y|) / L_cache * overlong_penalty   if L_max - L_cache < |y| <= L_max
                 = -overlong_penalty               if |y| > L_max

Equation numbers checked (issue 19, docs/algorithms_grpo_family.md) against full-text copies of the papers:
DeepSeekMath (arXiv 2402.03300) eq. 3 (GRPO objective) and eq. 4 (k3 KL estimator); "Understanding R1-Zero-Like
Training" (2503.20783) Sec. 3.1 eq. 3 (GRPO as it analyses it) and Sec. 3.2 with Listing 1 (Dr.GRPO: drop
1/|o_i| and the std, divide the token sum by a constant such as the generation budget; no equation number of
its own); DAPO (2503.14476, v1 of 17 March 2025) eq. 8 (objective), eq. 9 (ratio and advantage), eq. 10
(clip-higher), eq. 11 (dynamic sampling), eq. 12 (token-level loss), eq. 13 (soft overlong punishment); GSPO
(2507.18071) eqs. 5-7. Where this code differs from those texts:
    - the std gets + 1e-4 and Bessel's correction (TRL's convention; the papers write std);
    - GRPO's paper trains with a KL weight of 0.04 (DeepSeekMath Sec. 4.2); ``beta`` defaults to 0 (as DAPO,
      Sec. 2.3, and Dr.GRPO's eq. 3 drop the term), so the KL term of eq. 3 is there only when beta is set;
    - DAPO's dynamic sampling over-samples until the batch is full (eq. 11, Algorithm 1); here the batch shrinks;
      the soft overlong punishment of eq. 13 has unit depth, ``overlong_penalty`` scales it (1 = the paper);
    - GSPO's paper uses clip ranges of order 1e-4 for its sequence ratio (3e-4 left, 4e-4 right, Sec. 5.1): its
      row sets them; ``epsilon_low`` / ``epsilon_high`` keep their token-level defaults (0.2) otherwise. A
      sequence-level ratio under ``dr_grpo`` or ``dapo`` aggregation counts each sequence once per token (TRL
      warns alike): ``check`` warns.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import torch

from ...algorithm import Algorithm, Context, RolloutBatch
from ...implementations import join_equations, latex_number
from ...options import ConfigError, Options, option
from ...policy_gradient import policy_gradient_update


@dataclass
class Config(Options):
    """GRPO family switches. Defaults = GRPO as published (with beta = 0, as most recent recipes)."""

    loss_type: str = option("grpo", "How token losses are averaged: grpo (per sequence, then mean), dr_grpo "
                            "(sum / constant), dapo (token mean).", choices=("grpo", "dr_grpo", "dapo"))
    scale_rewards: bool = option(True, "Divide advantages by the group's reward std (GRPO); off = Dr.GRPO.")
    epsilon_low: float = option(0.2, "Clip range below 1 for the importance ratio.", low=0.0, high=1.0,
                                aliases=("epsilon",))
    epsilon_high: float = option(0.2, "Clip range above 1; DAPO's clip-higher raises it to 0.28.", low=0.0,
                                 high=10.0)
    beta: float = option(0.0, "Weight of the k3 KL penalty to the frozen reference; 0 skips the reference model.",
                         low=0.0, high=10.0)
    importance_sampling_level: str = option("token", "token ratios (GRPO) or one sequence-level ratio per sample "
                                            "(GSPO).", choices=("token", "sequence"))
    dynamic_sampling: bool = option(False, "Drop groups whose rewards are all equal (they carry no gradient): DAPO.")
    overlong_buffer: int = option(0, "DAPO overlong shaping: tokens before the length limit where a soft penalty "
                                  "starts (0 = off).", low=0, high=4096)
    overlong_penalty: float = option(1.0, "DAPO overlong shaping: penalty reached at the length limit.", low=0.0,
                                     high=100.0)
    num_iterations: int = option(1, "Optimisation passes over each rollout batch (ratios differ from 1 when > 1).",
                                 low=1, high=16)


def constant_groups(grouped: torch.Tensor) -> torch.Tensor:
    """(P, 1) bool: True for a group whose rewards are all equal."""
    return (grouped.max(dim=1, keepdim=True).values == grouped.min(dim=1, keepdim=True).values)


def group_advantages(rewards: torch.Tensor, group_size: int, scale_rewards: bool = True) -> torch.Tensor:
    """A_i = (r_i - mean_group) [/ (std_group + 1e-4)] for rewards laid out group by group; exactly 0 in a
    group whose rewards are all equal."""
    grouped = rewards.view(-1, group_size)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if scale_rewards:
        std = grouped.std(dim=1, keepdim=True) if group_size > 1 else torch.zeros_like(centred[:, :1])
        centred = centred / (std + 1e-4)
    centred = torch.where(constant_groups(grouped), torch.zeros_like(centred), centred)
    return centred.reshape(-1)


def overlong_reward(lengths: torch.Tensor, max_length: int, buffer: int, penalty: float = 1.0) -> torch.Tensor:
    """DAPO soft overlong punishment R_len(|y|) (module docstring). ``buffer`` = L_cache."""
    lengths = lengths.float()
    if buffer <= 0:
        return torch.zeros_like(lengths)
    start = max_length - buffer
    soft = (start - lengths) / buffer * penalty
    return torch.where(lengths <= start, torch.zeros_like(lengths),
                       torch.where(lengths <= max_length, soft, torch.full_like(lengths, -penalty)))


def nonzero_variance_groups(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """Per-sample bool: True when the sample's group has some reward variance (DAPO dynamic sampling)."""
    grouped = rewards.view(-1, group_size)
    varied = (grouped.max(dim=1).values - grouped.min(dim=1).values) > 0
    return varied.repeat_interleave(group_size)


def prepare_batch(rewards: torch.Tensor, lengths: torch.Tensor, group_size: int, cfg: Config,
                  max_completion_length: int):
    """Rewards -> (advantages, keep mask, shaped rewards). The advantages come from the shaped rewards; the keep
    mask of dynamic sampling from the unshaped ones (DAPO eq. 11 filters on accuracy)."""
    shaped = rewards + overlong_reward(lengths, max_completion_length, cfg.overlong_buffer, cfg.overlong_penalty)
    advantages = group_advantages(shaped, group_size, cfg.scale_rewards)
    return advantages, dynamic_sampling_keep(rewards, group_size, cfg.dynamic_sampling), shaped


def dynamic_sampling_keep(rewards: torch.Tensor, group_size: int, enabled: bool) -> torch.Tensor:
    """Per-sample keep mask of DAPO's dynamic sampling, decided on the unshaped ``rewards`` (all True when off)."""
    if not enabled:
        return torch.ones_like(rewards, dtype=torch.bool)
    return nonzero_variance_groups(rewards, group_size)


def aggregate_loss(per_token, mask, loss_type: str, max_completion_length=None, seq_normalizer=None,
                   token_normalizer=None) -> torch.Tensor:
    """Masked (B, T) token losses -> one scalar by ``loss_type`` (module docstring, Aggregation)."""
    B = per_token.shape[0]
    if loss_type == "grpo":
        return (per_token.sum(-1) / mask.sum(-1).clamp(min=1.0)).sum() / (seq_normalizer or B)
    if loss_type == "dr_grpo":
        return per_token.sum() / ((seq_normalizer or B) * max_completion_length)
    if loss_type == "dapo":
        return per_token.sum() / (token_normalizer or mask.sum().clamp(min=1.0))
    raise ValueError(f"loss_type must be grpo, dr_grpo or dapo, not {loss_type!r}")


def grpo_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, max_completion_length=None,
              seq_normalizer=None, token_normalizer=None):
    """The GRPO-family objective on (B, T) tensors; returns (loss, metrics).

    ``seq_normalizer`` / ``token_normalizer`` override the local B / sum(mask) when a batch is split into
    micro-batches or across DDP ranks (pass global count / world size: DDP averages gradients)."""
    # (B, 1): one outcome advantage per sequence; a (B, K) per-token advantage (variants) is cut to this width
    A = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages[:, :logps.shape[1]]
    log_ratio = (logps - old_logps) * mask  # masked positions contribute exactly 0 (and get 0 gradient)
    if cfg.importance_sampling_level == "token":
        log_w = log_ratio  # (B, T)
    elif cfg.importance_sampling_level == "sequence":  # GSPO: length-normalised sequence ratio, (B, 1)
        log_w = log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
    else:
        raise ValueError(f"importance_sampling_level must be token or sequence, not {cfg.importance_sampling_level!r}")
    ratio = torch.exp(log_w)
    clipped = torch.clamp(ratio, 1 - cfg.epsilon_low, 1 + cfg.epsilon_high)
    per_token = -torch.min(ratio * A, clipped * A)  # pessimistic bound of the two surrogates
    kl = None
    if cfg.beta != 0.0:
        delta = ref_logps - logps
        kl = torch.exp(delta) - delta - 1  # k3: unbiased, always >= 0
        per_token = per_token + cfg.beta * kl
    per_token = per_token * mask  # (B,1) broadcasts to (B,T) for sequence-level ratios
    loss = aggregate_loss(per_token, mask, cfg.loss_type, max_completion_length, seq_normalizer, token_normalizer)

    with torch.no_grad():  # diagnostics, token-weighted over model tokens
        n = mask.sum().clamp(min=1.0)
        is_clipped = ((ratio < 1 - cfg.epsilon_low) & (A < 0)) | ((ratio > 1 + cfg.epsilon_high) & (A > 0))
        metrics = {
            "clip_frac": float((is_clipped.float().expand_as(mask) * mask).sum() / n),
            "ratio_mean": float((ratio.expand_as(mask) * mask).sum() / n),
            "kl": float((kl * mask).sum() / n) if kl is not None else 0.0,
        }
    return loss, metrics


#: loss types that sum token contributions across the batch: with a sequence-level ratio each sequence then
#: weighs by its length instead of once (TRL warns alike)
SUMMED_LOSS_TYPES = ("dr_grpo", "dapo")
SEQUENCE_RATIO_WARNING = ("--importance-sampling-level sequence with --loss-type {loss_type}: the loss sums token "
                          "contributions, so each sequence's ratio counts once per token and long sequences weigh "
                          "more; GSPO's objective (eq. 5) averages per sequence: use --loss-type grpo")


# -- the objective as shown (the Lab, the node pages): LaTeX composed from the options grpo_loss and
# prepare_batch read, so each configuration shows the terms it computes and no others --

#: loss_type -> the normaliser and sums as aggregate_loss computes them, i over the B samples of the batch
LOSS_NORMALISERS = {
    "grpo": r"\frac{1}{B}\sum_{i=1}^{B}\frac{1}{|o_i|}\sum_{t}",
    "dr_grpo": r"\frac{1}{B\,L_{\max}}\sum_{i=1}^{B}\sum_{t}",
    "dapo": r"\frac{1}{\sum_{i=1}^{B}|o_i|}\sum_{i=1}^{B}\sum_{t}",
}


def clipped_surrogate(cfg: Config, advantage: str = r"\hat A_i") -> str:
    """The min of the ratio and its clipped value times the advantage, at the configured ratio level."""
    if cfg.importance_sampling_level == "sequence":
        ratio = "s_i"
    else:
        ratio = "w_{i,t}"
    low, high = latex_number(cfg.epsilon_low), latex_number(cfg.epsilon_high)
    return (rf"\min\big({ratio}{advantage},\;\mathrm{{clip}}({ratio},1-{low},1+{high}){advantage}\big)")


def ratio_definition(cfg: Config) -> str:
    if cfg.importance_sampling_level == "sequence":
        return r"s_i=\Big(\frac{\pi_\theta(o_i\mid q)}{\pi_{old}(o_i\mid q)}\Big)^{1/|o_i|}"
    return r"w_{i,t}=\frac{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}{\pi_{old}(o_{i,t}\mid q,o_{i,<t})}"


def kl_term(cfg) -> str:
    """The k3 KL penalty of the token loss, or "" when beta = 0 (grpo_loss skips it)."""
    return rf"-{latex_number(cfg.beta)}\,\mathbb{{D}}^{{k3}}_{{i,t}}" if cfg.beta else ""


def advantage_definition(cfg: Config) -> str:
    if cfg.scale_rewards:
        return r"\hat A_i=\frac{r_i-\mathrm{mean}_{g(i)}r}{\mathrm{std}_{g(i)}r}"
    return r"\hat A_i=r_i-\mathrm{mean}_{g(i)}r"


def batch_definitions(cfg: Config) -> str:
    """prepare_batch's switches: overlong shaping of the reward, dynamic sampling on the unshaped one."""
    parts = []
    if cfg.overlong_buffer:
        parts.append(rf"r_i=\mathrm{{acc}}_i+R_{{len}}(|o_i|;\,L_{{cache}}={cfg.overlong_buffer},"
                     rf"\,{latex_number(cfg.overlong_penalty)})")
    if cfg.dynamic_sampling:
        parts.append(r"\text{only groups with }\mathrm{std}_g(\mathrm{acc})>0")
    return join_equations(*parts)


TOKEN_ADVANTAGE = r"\hat A_{i,t}"  # an advantage definition that starts so is per token


def grpo_objective(cfg: Config, advantage: str = "", lhs: str = r"\mathcal{L}", symbol: str = r"\hat A_i") -> str:
    """LaTeX of the loss grpo_loss computes under ``cfg``, with the advantage ``advantage`` defines (default:
    the group-normalised one of ``cfg.scale_rewards``; ``symbol`` names it) and prepare_batch's reward switches."""
    body = clipped_surrogate(cfg, symbol) + kl_term(cfg)
    loss = rf"{lhs}=-{LOSS_NORMALISERS[cfg.loss_type]}m_{{i,t}}\Big[{body}\Big]"
    return join_equations(loss, ratio_definition(cfg), advantage or advantage_definition(cfg), batch_definitions(cfg))


class GRPO(Algorithm):
    """GRPO and its one-line variants (Dr.GRPO, DAPO, GSPO) on the shared policy-gradient update."""

    name = "grpo"

    Config = Config
    min_group_size = 2
    # The objective as shown, written beside the code that computes it: a variant that only changes the
    # advantage, the reward or the sampling states that part here; one with a loss of its own overrides objective
    #: LaTeX of the advantage a variant computes (its ``advantages`` hook), "" for GRPO's group-normalised one
    ADVANTAGE: ClassVar[str] = ""
    #: LaTeX of what a variant changes around the loss (its reward, its sampling), shown before the objective
    SETTING: ClassVar[str] = ""

    @classmethod
    def advantage_latex(cls, cfg: Config) -> str:
        return cls.ADVANTAGE

    @classmethod
    def setting_latex(cls, cfg: Config) -> str:
        return cls.SETTING

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """The loss this class computes under ``cfg``, as shown beside its runs and on its node page."""
        advantage = cls.advantage_latex(cfg)
        symbol = TOKEN_ADVANTAGE if advantage.startswith(TOKEN_ADVANTAGE) else r"\hat A_i"
        return join_equations(cls.setting_latex(cfg), grpo_objective(cfg, advantage, symbol=symbol))

    @classmethod
    def check(cls, cfg: Config, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if cfg.overlong_buffer and cfg.overlong_buffer >= train.max_completion_tokens:
            raise ConfigError(f"--overlong-buffer: {cfg.overlong_buffer} must be smaller than "
                              f"--max-completion-tokens ({train.max_completion_tokens})", field="overlong_buffer")
        if cfg.importance_sampling_level == "sequence" and cfg.loss_type in SUMMED_LOSS_TYPES:
            warnings.warn(SEQUENCE_RATIO_WARNING.format(loss_type=cfg.loss_type), UserWarning, stacklevel=2)

    # ---- hooks for variants (subclasses override one; each default is GRPO itself) --------------------
    def advantages(self, ctx: Context, batch: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(advantages, keep): (N,) per-sample (or (N, K) per-token) advantages and an (N,) bool keep mask."""
        advantages, keep, _ = prepare_batch(batch.rewards, batch.lengths, batch.group_size, self.cfg,
                                            ctx.train.max_completion_tokens)
        return advantages, keep

    def loss_fn(self, ctx: Context, batch: RolloutBatch | None = None):
        """The per-micro-batch loss (signature: policy_gradient.LossFn); ``batch`` for variants whose loss
        depends on it (LUFFY's demonstration rows, ARPO's shared prefixes)."""
        return partial(grpo_loss, cfg=self.cfg, max_completion_length=ctx.train.max_completion_tokens)

    def sample_inputs(self, ctx: Context, batch: RolloutBatch) -> dict | None:
        """Per-sample tensors (N, ...) that the loss takes as keyword arguments, sliced per micro-batch."""
        return None

    def auxiliary(self, ctx: Context, batch: RolloutBatch):
        """None, or a callable run once per optimiser step before the step, given that step's minibatch (sample
        indices): it backpropagates an extra loss of its own (an SFT or perception term) and returns its
        metrics."""
        return None

    def update(self, ctx: Context, batch: RolloutBatch):
        advantages, keep = self.advantages(ctx, batch)
        return policy_gradient_update(ctx, batch, advantages, keep, self.loss_fn(ctx, batch), self.cfg.num_iterations,
                                      sample_inputs=self.sample_inputs(ctx, batch),
                                      auxiliary=self.auxiliary(ctx, batch))


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation, CALCULATOR_NODES  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-grpo", "GRPO tool agent (calculator)", "grpo", "calculator", "A policy that calls a calculator tool over several turns, trained with group-relative advantages.",
                   nodes=("rl-algorithms", "alg-grpo-family", "alg-grpo", *CALCULATOR_NODES),
                   changes="GRPO as published (eq. 3): group-normalised outcome advantages, a clipped token "
                           "ratio (0.2), per-answer mean then batch mean. Defaults that differ from the paper: "
                           "beta = 0 (the paper trains with a k3 KL of weight 0.04, Sec. 4.2; --beta 0.04 turns it "
                           "on) and one optimisation pass per rollout batch (the paper: one update per "
                           "exploration stage too, so the ratio is 1 and the clip inactive, as here).",
                   paper="DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models "
                         "(arXiv 2402.03300)"),
    Implementation("calculator-dapo", "DAPO tool agent (calculator)", "grpo", "calculator", "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32},
                   nodes=("alg-dapo",),
                   changes="Four switches on GRPO, as in the paper (eqs. 8-13): the clip range above 1 is raised to "
                           "0.28, groups whose samples all got the same accuracy (the unshaped reward) are dropped, "
                           "token losses are averaged over the whole batch's tokens, and answers that run into the "
                           "last 32 tokens before the length limit lose reward linearly; no KL term. Differences "
                           "from the paper: after dropping groups the paper keeps sampling until the batch is full "
                           "again, this run trains on the smaller batch; the overlong buffer is 32 tokens of a "
                           "short budget (the paper: 4096 of 20480); the paper makes 16 gradient updates per "
                           "rollout step (Sec. 4.1), this row one pass (num_iterations 1), so the clip acts only "
                           "when num_iterations is raised.",
                   paper="DAPO: An Open-Source LLM Reinforcement Learning System at Scale (arXiv 2503.14476)"),
    Implementation("calculator-dr-grpo", "Dr.GRPO tool agent (calculator)", "grpo", "calculator", "GRPO without length and std normalisation bias: constant normaliser, no std scaling.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}, nodes=("alg-dr-grpo",),
                   changes="Two of GRPO's normalisations are removed (Sec. 3.1-3.2, Listing 1): the advantage is "
                           "the reward minus the group mean, not divided by the group's std (which favours "
                           "questions that are too easy or too hard), and the token losses are summed and divided "
                           "by a constant (batch size times the completion budget) instead of each answer's own "
                           "length (which lets long wrong answers off lightly). No KL term, as the paper.",
                   paper="Understanding R1-Zero-Like Training: A Critical Perspective (arXiv 2503.20783)"),
    Implementation("calculator-gspo", "GSPO tool agent (calculator)", "grpo", "calculator", "GRPO with a sequence-level importance ratio (GSPO).",
                   {"importance_sampling_level": "sequence", "epsilon_low": 3e-4, "epsilon_high": 4e-4},
                   nodes=("alg-gspo",),
                   changes="One importance ratio per answer, the geometric mean of its token ratios (eq. 7), is "
                           "clipped and multiplies the answer's advantage (eq. 5), so all tokens of an answer are "
                           "weighted alike, averaged per sequence as GRPO (a token-level or constant-normaliser loss "
                           "with sequence ratios is warned about, as TRL does). The clip range is the paper's, "
                           "3e-4 below and 4e-4 above (Sec. 5.1). Differences from the paper: no KL term (as the "
                           "paper); the paper splits each rollout batch into 4 minibatches with an update each, "
                           "this row makes one pass (num_iterations 1), so its ratio is 1 at every update and the "
                           "clip never acts unless num_iterations is raised.",
                   paper="Group Sequence Policy Optimization (arXiv 2507.18071)"),
)
