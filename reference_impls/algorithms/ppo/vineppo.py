r"""VinePPO: PPO whose values are Monte Carlo estimates from extra rollouts at intermediate states, not a
learned critic (Kazemnejad et al. 2024, "VinePPO: Refining Credit Assignment in RL Training of LLMs",
arXiv 2410.01679).

The paper's point: a value network on reasoning text predicts poorly, so GAE's credit assignment is
mostly noise. A language environment can be reset to any prefix, so the value of a state can instead be
estimated without bias by sampling K continuations from it with the current policy and averaging their
returns; the advantage of a step is then the one-step TD error with these estimates.

States and steps here: the *turn boundaries* of a multi-turn episode. State s_0 is the prompt; state s_j
(j >= 1) is the prompt plus the first j model turns and the environment's answers to them (the tool
results). Step j is model turn j, taken in s_j. (The paper splits a chain of thought into reasoning steps
at line breaks; in tool-use episodes the tool result closes a step, so that is where a state begins.)

With an outcome reward R at the end, gamma = 1 and V(s_n) = R for the terminal state after the last
turn (0 for a truncated episode, as its reward); the paper's §4 (section references here: equation
numbers not verified, paper text not available here)::

    V_hat(s_j) = (1/K) sum_k R(tau_k),   tau_k ~ pi_old( . | s_j ),  k = 1..K     (MC value estimate)
    A(s_j, a_j) = r(s_j, a_j) + gamma * V_hat(s_{j+1}) - V_hat(s_j)                (one-step advantage)
               = V_hat(s_{j+1}) - V_hat(s_j)      j < n - 1
               = R - V_hat(s_{n-1})               j = n - 1 (the last turn)

Every model token of turn j carries A(s_j, a_j); environment tokens are not actions (mask 0). The advantages
of the batch are then whitened over its model tokens (the authors' PPO trainer, ``whiten_advantages: true``)::

    A_t <- (A_t - mean A) / (std A + 1e-8)    over the model tokens of the batch (whiten_advantages)

(their whitening divides by the Bessel-corrected std, ours by the population std: the same up to a factor
sqrt((n - 1) / n) over n model tokens), so a batch whose rewards and continuation rewards are all equal has A = 0 everywhere and no policy-gradient
signal. Deliberate difference in *where* it whitens: here once, over the model tokens of the whole rollout
batch, before the update; the authors' trainer whitens inside each training step, over that step's
precomputed advantages (``ppo_trainer.py``, ``masked_whiten(..., distributed=True, unbiased_variance=True)`` in
its step's loss), so each optimiser step's advantages have mean 0 and std 1 on their own. The two agree when a
batch is one optimiser step (``--mini-batches 1``, the default); with several minibatches each minibatch here
keeps the batch's mean and scale. The KL to the reference stays out of the advantages: as in the authors' VinePPO configs
(McGill-NLP/VinePPO ``configs/polIter_*_vineppo_*.jsonnet`` import ``trainers/refKl0.0001.jsonnet`` and
``trainers/klLoss.jsonnet``; the loss in ``src/treetune/trainers/ppo_trainer.py``) it is a loss term of its own,
the k3 estimate per token clipped to [0, 10], summed over a sequence's tokens and averaged over sequences::

    L = (1/sum m) sum_{i,t} m_{i,t} * -min(w A, clip(w, 1 - eps, 1 + eps) A)
        + beta * (1/B) sum_i sum_t clip(m_{i,t} * k3_{i,t}, 0, 10)
    k3_{i,t} = exp(ref - logp) - (ref - logp) - 1,   ref = log pi_ref, logp = log pi_theta     (beta = 1e-4)

(``beta`` = 0 skips the reference model.)

The ablation of the vines (``intermediate_states: false``, issue 61's claim ``vineppo-mc-values``): only the
prompt's value is estimated (the same K continuations of s_0), and every later state takes it::

    V_hat(s_j) = V_hat(s_0)   for every j,   so   A = 0 on turns j < n - 1,   A = R - V_hat(s_0) on the last

(credit for the whole episode on its last turn, against a Monte Carlo baseline of the prompt). It is not the
paper's contrast, a learned value network (Sec. 7); that would be PPO's critic inside VinePPO. It removes what
the extra rollouts at intermediate states add: a value for each step.

Diagnostic: ``explained_variance`` = 1 - Var(R - V_hat) / Var(R) over the batch's model tokens, each token
carrying the MC value of the state its turn is taken in and its episode's reward R: how much of the returns the
Monte Carlo values predict, the same estimator PPO applies to its critic's values (``ppo.explained_variance``),
so the two read alike (the paper's Sec. 7 compares the two kinds of value estimate on how well they predict).

Continuations: the environment of a sampled episode is rebuilt (reset, then stepped with the episode's
own model turns, so a deterministic env returns to the same state), the prefix tokens become the prompt
the engine conditions on (the K continuations of one state share one prefill), and each continuation may
write what the episode had left of ``max_completion_tokens``. The K samples of s_0 are shared by the
group (one prompt). Continuations only feed V_hat; the trained episodes keep their own tokens, loss masks
and sampling log-probs. Cost: K extra episodes per distinct state, which is VinePPO's price for
dropping the critic.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import torch

from ...algorithm import Algorithm, Context, RolloutBatch, collect_batch
from ...envs import step_all
from ...options import Options, option
from ...policy_gradient import policy_gradient_update
from .ppo import explained_variance, masked_whiten
from ...rollout import Sample, run_episodes


@dataclass
class Config(Options):
    """VinePPO switches."""

    mc_rollouts: int = option(4, "K: continuations sampled from each intermediate state to estimate its value "
                              "(the paper uses 9).", low=1, high=256)
    epsilon: float = option(0.2, "Clip range of the importance ratio.", low=0.0, high=10.0)
    beta: float = option(1e-4, "Weight of the KL loss term (k3 per token, clipped to [0, 10], summed over a "
                         "sequence, averaged over sequences; the authors' klLoss with refKl 1e-4); 0 skips the "
                         "reference model.", low=0.0, high=10.0)
    whiten_advantages: bool = option(True, "Whiten advantages over the model tokens of the whole rollout batch "
                                     "(the authors whiten per training step: the same with --mini-batches 1).")
    num_iterations: int = option(2, "Optimisation passes over each rollout batch (the paper: 2 PPO epochs).", low=1,
                                 high=16)
    intermediate_states: bool = option(True, "Estimate the value of every turn boundary (VinePPO); off: only the "
                                       "prompt's, which every later state then takes (the ablation of the vines).")


# ----------------------------------------------------------------------------------------------------
# the equations

def state_prefixes(sample: Sample) -> list[int]:
    """Completion length of each intermediate state s_0..s_{n-1}: the start of each model turn."""
    return [start for start, _ in sample.turn_spans]


def token_advantages(sample: Sample, values: list[float], width: int) -> torch.Tensor:
    """(width,) advantages: A_j = V(s_{j+1}) - V(s_j) on the tokens of turn j, with V(s_n) = R; 0 elsewhere."""
    adv = torch.zeros(width)
    nxt = list(values[1:]) + [sample.reward]
    for (start, end), v, v_next in zip(sample.turn_spans, values, nxt):
        adv[start:end] = v_next - v
    return adv * torch.tensor(sample.loss_mask + [0] * (width - len(sample.loss_mask)), dtype=torch.float32)


def token_values(sample: Sample, values: list[float], width: int) -> torch.Tensor:
    """(width,) the value estimate V_hat(s_j) on the tokens of turn j (the state the turn is taken in); 0 elsewhere."""
    out = torch.zeros(width)
    for (start, end), v in zip(sample.turn_spans, values):
        out[start:end] = v
    return out * torch.tensor(sample.loss_mask + [0] * (width - len(sample.loss_mask)), dtype=torch.float32)


#: the most one token's k3 estimate adds to the KL loss (the authors' kl_penalty_loss_clip_max)
KL_CLIP_MAX = 10.0


def vine_loss(logps, old_logps, advantages, mask, cfg: Config, ref_logps=None, seq_normalizer=None,
              token_normalizer=None):
    """Clipped surrogate with per-token advantages (B, >= T), token-level mean, plus beta times the clipped k3
    KL summed over each sequence and averaged over sequences (module docstring); returns (loss, metrics)."""
    A = advantages[:, :mask.shape[1]]
    log_ratio = (logps - old_logps) * mask
    ratio = torch.exp(log_ratio)
    clipped = torch.clamp(ratio, 1 - cfg.epsilon, 1 + cfg.epsilon)
    per_token = -torch.min(ratio * A, clipped * A)
    loss = (per_token * mask).sum() / (token_normalizer or mask.sum().clamp(min=1.0))
    kl = None
    if cfg.beta != 0.0:
        delta = (ref_logps - logps) * mask
        kl = torch.clamp((torch.exp(delta) - delta - 1) * mask, 0.0, KL_CLIP_MAX)
        loss = loss + cfg.beta * kl.sum() / (seq_normalizer or logps.shape[0])
    with torch.no_grad():
        n = mask.sum().clamp(min=1.0)
        is_clipped = ((ratio < 1 - cfg.epsilon) & (A < 0)) | ((ratio > 1 + cfg.epsilon) & (A > 0))
        metrics = {"clip_frac": float((is_clipped.float() * mask).sum() / n),
                   "kl": float(kl.sum() / n) if kl is not None else 0.0}
    return loss, metrics


# ----------------------------------------------------------------------------------------------------
# Monte Carlo values

def replay_env(ctx: Context, problem, sample: Sample, turns: int):
    """A fresh env of ``problem`` stepped with the first ``turns`` model turns of ``sample``."""
    env = ctx.task.make(problem, ctx.rollout_config.env_config)
    env.reset()
    for start, end in sample.turn_spans[:turns]:
        text = ctx.tokenizer.decode(sample.completion_ids[start:end], skip_special_tokens=True)
        result = step_all([env], [text])[0]
        if result.done:
            raise RuntimeError("replaying an episode ended it before the state to continue from; VinePPO needs a "
                               "deterministic environment")
    return env


def distinct_states(samples: list[Sample]) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """The distinct intermediate states of a batch, as (sample, turn) of their first occurrence, and for
    every sample the index of each of its states (a group's s_0, the shared prompt, is one state)."""
    keys, starts, state_of = {}, [], []
    for i, s in enumerate(samples):
        row = []
        for j, length in enumerate(state_prefixes(s)):
            key = (s.group, tuple(s.completion_ids[:length]))
            if key not in keys:
                keys[key] = len(starts)
                starts.append((i, j))
            row.append(keys[key])
        state_of.append(row)
    return starts, state_of


def continuations(ctx: Context, problems: list, samples: list[Sample], starts, K: int):
    """K unstarted episodes per state: (replayed envs, samples whose prompt is the state's prefix, budgets)."""
    envs, conts, budgets = [], [], []
    for i, j in starts:
        s = samples[i]
        length = s.turn_spans[j][0]
        for _ in range(K):
            envs.append(replay_env(ctx, problems[s.group], s, j))
            conts.append(Sample(prompt_ids=s.prompt_ids + s.completion_ids[:length], group=s.group))
            budgets.append(ctx.rollout_config.max_completion_tokens - length)
    return envs, conts, budgets


def prompt_states_only(starts, state_of):
    """The ablation's states: only each group's prompt s_0, which every later state of a sample stands for
    (its value is V_hat(s_0)); (starts, state_of) as ``distinct_states`` gives them."""
    keep = [k for k, (_, j) in enumerate(starts) if j == 0]
    index = {k: n for n, k in enumerate(keep)}
    return [starts[k] for k in keep], [[index[row[0]]] * len(row) for row in state_of]


def mc_values(ctx: Context, problems: list, samples: list[Sample], K: int,
              intermediate_states: bool = True) -> tuple[list[list[float]], dict]:
    """V_hat(s_j) for every state of every sample (K continuations per distinct state) and rollout stats;
    without ``intermediate_states``, V_hat(s_0) for every state (``prompt_states_only``)."""
    starts, state_of = distinct_states(samples)
    if not intermediate_states:
        starts, state_of = prompt_states_only(starts, state_of)
    envs, conts, budgets = continuations(ctx, problems, samples, starts, K)
    if not conts:
        return [[] for _ in samples], {"generated_tokens": 0, "states": 0}
    stats = run_episodes(ctx.policy, ctx.tokenizer, envs, conts, ctx.rollout_config, budgets)
    value = torch.tensor([c.reward for c in conts], dtype=torch.float32).view(len(starts), K).mean(dim=1).tolist()
    return [[value[k] for k in row] for row in state_of], {**stats, "states": len(starts)}


# ----------------------------------------------------------------------------------------------------
# the algorithm

class VinePPO(Algorithm):
    """Critic-free PPO with MC values at turn boundaries (module docstring)."""

    name = "vineppo"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        """vine_loss under ``cfg`` and the Monte Carlo advantages feeding it."""
        from ...implementations import join_equations, latex_number as n

        kl = (rf"+{n(cfg.beta)}\,\frac{{1}}{{B}}\sum_i\sum_t\mathrm{{clip}}\big(m_{{i,t}}\mathbb{{D}}^{{k3}}_{{i,t}},0,10\big)"
              if cfg.beta else "")
        return join_equations(
            rf"\mathcal{{L}}=\mathcal{{L}}_{{\mathrm{{clip}}}}{kl}",
            rf"\mathcal{{L}}_{{\mathrm{{clip}}}}=-\frac{{1}}{{\sum m}}\sum_{{i,t}}m_{{i,t}}\min\big(w_{{i,t}}\hat A_{{i,t}},"
            rf"\mathrm{{clip}}(w_{{i,t}},1-{n(cfg.epsilon)},1+{n(cfg.epsilon)})\hat A_{{i,t}}\big)",
            rf"\hat A_{{i,t}}=\hat V(s_{{j+1}})-\hat V(s_j)\ \text{{on turn }}j"
            + (r"\text{, whitened over the batch}" if cfg.whiten_advantages else ""),
            (rf"\hat V(s_j)=\hat V(s_0)=\tfrac1{{{cfg.mc_rollouts}}}\sum_{{k=1}}^{{{cfg.mc_rollouts}}}R(\tau_k),"
             r"\ \tau_k\sim\pi(\cdot\mid s_0),\ \hat V(s_n)=R" if not cfg.intermediate_states else
             rf"\hat V(s_j)=\tfrac1{{{cfg.mc_rollouts}}}\sum_{{k=1}}^{{{cfg.mc_rollouts}}}R(\tau_k),\ \tau_k\sim\pi(\cdot\mid s_j),"
             r"\ \hat V(s_n)=R"))

    def collect(self, ctx: Context, problems: list):
        batch, stats = collect_batch(ctx, problems)
        t0 = time.time()
        values, mc = mc_values(ctx, problems, batch.samples, self.cfg.mc_rollouts,
                               self.cfg.intermediate_states)
        mask = batch.full["loss_mask"].cpu()
        adv = torch.stack([token_advantages(s, v, mask.shape[1]) for s, v in zip(batch.samples, values)])
        batch.step_advantages = adv
        if self.cfg.whiten_advantages:
            adv = masked_whiten(adv, mask)
        batch.advantages = adv  # the per-token advantages update() trains on
        batch.state_values = [v for row in values for v in row]
        # how much of the returns the MC values predict, as PPO's explained_variance reads its critic's
        returns = torch.stack([torch.full((mask.shape[1],), float(s.reward)) for s in batch.samples])
        batch.values_explained_variance = explained_variance(
            torch.stack([token_values(s, v, mask.shape[1]) for s, v in zip(batch.samples, values)]), returns, mask)
        stats = dict(stats, generated_tokens=stats["generated_tokens"] + mc["generated_tokens"],
                     mc_rollout_s=time.time() - t0, mc_states=mc["states"])
        return batch, stats

    def update(self, ctx: Context, batch: RolloutBatch):
        adv = batch.advantages
        keep = torch.ones(len(batch.samples), dtype=torch.bool)
        loss_fn = partial(vine_loss, cfg=self.cfg)
        metrics = policy_gradient_update(ctx, batch, adv, keep, loss_fn, self.cfg.num_iterations)
        mask = batch.full["loss_mask"].cpu()
        n = float(mask.sum().clamp(min=1.0))
        step = batch.step_advantages
        metrics.add("advantages_mean", float((step * mask).sum()) / n)  # before whitening
        metrics.add("advantages_abs_mean", float((step.abs() * mask).sum()) / n)
        metrics.add("mc_value_mean", sum(batch.state_values) / max(len(batch.state_values), 1))
        metrics.add("explained_variance", batch.values_explained_variance)
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-vineppo", "VinePPO tool agent (calculator)", "vineppo", "calculator", "PPO without a critic: values are Monte Carlo estimates from K extra rollouts at each turn boundary.",
                   nodes=("alg-vineppo",),
                   changes="Drops PPO's value network and GAE: the value of a state is the mean reward of K fresh "
                           "continuations sampled from it, and each step's advantage is the next state's estimate "
                           "minus this one's. The paper cuts reasoning text into steps; here the intermediate states "
                           "are the turn boundaries of the calculator episode (the prompt, then after each tool "
                           "result), reached again by replaying the episode's own turns in a fresh environment. The "
                           "rest is the authors' PPO setup: whitened advantages, clipped ratio (0.2), 2 passes per "
                           "batch, and the KL to the reference as its own loss term (k3 clipped to [0, 10], summed "
                           "over tokens, averaged over sequences, beta 1e-4), never inside the advantages. It trades "
                           "extra generation for unbiased credit per tool turn. Defaults that differ from the "
                           "authors' configs: K = 4 continuations per state (the paper: 9); advantages are whitened "
                           "once over the whole rollout batch where the authors' ppo_trainer.py whitens inside each "
                           "training step (the same with one minibatch, the default).",
                   paper="VinePPO: Refining Credit Assignment in RL Training of LLMs (Kazemnejad et al. 2024, arXiv 2410.01679)"),
)
