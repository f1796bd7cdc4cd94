r"""GRESO: GRPO with Efficient Selective Rollout (Zheng et al. 2025, arXiv 2506.02177).

A prompt whose G samples all get the same reward ("zero variance": all right or all wrong) gives GRPO
nothing to learn from, and the paper observes that such prompts tend to stay zero-variance from one epoch
to the next. GRESO therefore skips them *before* rolling them out, probabilistically, from each prompt's
reward history (the paper's selective-rollout algorithm, as in its released code):

    z_i      = number of consecutive most recent rollouts of prompt i that were zero-variance, counted
               separately for "all correct" (easy) and "all wrong" (hard) streaks
    P_skip,i = 1 - max(p^{z_i}, 0.01)        p = p_easy or p_hard, the exploration probability of its kind

so a prompt never seen, or last seen with mixed outcomes, is always rolled out, and a long streak is
skipped with probability up to 0.99 (it is still re-tried now and then, in case the policy has changed).
Candidates are drawn uniformly from the pool and filtered until the step has its P prompts.

The exploration probabilities adapt (the paper's adaptive scheme): after each step from the second epoch
on, if the fraction of rolled-out prompts that were easy (hard) zero-variance is at or above its target,
p_easy (p_hard) drops by 0.01 (skip more), else rises by 0.01, within [0.05, 0.95]. The targets split the
overall zero-variance target alpha as alpha/3 for easy and 2 alpha/3 for hard (hard prompts are kept more
often, as they are the ones rising rewards turn informative). An epoch is one pool's worth of candidates
(``len(pool)`` draws); in the first no prompt has a history, nothing is skipped, and p stays where it
started (``greso_adapt_from_epoch``, 1; 0 adapts from the first step).

GRESO is a filter in front of dynamic sampling: the zero-variance groups that slip past it are dropped
before the update (``dynamic_sampling``, on by default here; DAPO eq. 11), so they do not dilute the
loss's mean. The authors' dynamic sampling then draws more prompts until the batch is full; the project's
(the same switch as DAPO's row, ``grpo.dynamic_sampling_keep``) trains on the smaller batch instead. The
update is GRPO's (``grpo.grpo_loss``).

History and probabilities live in ``state_dict`` so a resumed run skips exactly as the original would.

Checked against the authors' released code (github.com/Infini-AI-Lab/GRESO): ``filter_examples_all_probabilistic``
in ``verl/trainer/ttis/presampling_selector.py``, the adaptation of p (``epoch > 0``, +-0.01 within
[min_p 0.05, max_p 0.95], targets alpha/3 and 2 alpha/3) in ``verl/trainer/ppo/ray_trainer.py``, and the
training scripts ``train-scripts/*_greso.sh`` (p_easy = p_hard = 0.5, target_zero_variance = 0.25,
``ttis.type=dynamic_sampling``, no KL). Equation numbers: not verified: paper text not available here
(docs/algorithms_grpo_family.md).

Data parallel (torchrun): one history, the same on every rank. ``draw`` filters candidates for the
whole world (world x P prompts, with the rank-independent stream ``algorithm.shared_rng``) and each rank
rolls out its consecutive share; ``update`` gathers every rank's group outcomes (``all_gather_object``,
rank order) before updating streaks and p, so p adapts to the world's zero-variance fractions. Every rank
holds identical state, rank 0's checkpoint is exact for all; one process runs as before.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import grpo
from ... import distributed
from ...algorithm import Context, RolloutBatch, shared_rng
from ...options import option
from .successes import successes


@dataclass
class Config(grpo.Config):
    """GRPO's switches (GRESO: dynamic sampling on) plus GRESO's filter."""

    dynamic_sampling: bool = option(True, "Drop groups whose rewards are all equal before the update (GRESO runs "
                                    "on top of DAPO's dynamic sampling in the authors' scripts).")

    greso_p_init: float = option(0.5, "Initial exploration probability p of zero-variance prompts (easy and hard).",
                                 low=0.0, high=1.0)
    greso_target_zero_variance: float = option(0.25, "Target fraction alpha of zero-variance prompts among those "
                                               "rolled out: alpha/3 easy, 2 alpha/3 hard.", low=0.0, high=1.0)
    greso_p_step: float = option(0.01, "Step by which p adapts after each training step.", low=0.0, high=1.0)
    greso_p_min: float = option(0.05, "Lower bound of p.", low=0.0, high=1.0)
    greso_p_max: float = option(0.95, "Upper bound of p.", low=0.0, high=1.0)
    greso_adapt_from_epoch: int = option(1, "First epoch (0-based; one epoch = len(pool) candidates) after whose "
                                         "steps p adapts; the authors' code: 1.", low=0, high=1_000_000)


def skip_probability(streak: int, p: float) -> float:
    """P_skip = 1 - max(p^streak, 0.01); 0 for a prompt with no zero-variance streak."""
    return 0.0 if streak <= 0 else 1.0 - max(p ** streak, 0.01)


class GRESO(grpo.GRPO):
    """GRPO that skips prompts predicted to be zero-variance before rolling them out (GRESO)."""

    name = "greso"

    Config = Config
    SETTING = r"P_{\mathrm{skip}}(q)=1-\max\big(p^{z(q)},\,0.01\big),\ p\in\{p_{easy},p_{hard}\}"

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.p_easy = self.p_hard = float(self.cfg.greso_p_init)
        self.easy_streak: dict[int, int] = {}  # pool index -> consecutive all-correct rollouts
        self.hard_streak: dict[int, int] = {}  # pool index -> consecutive all-wrong rollouts
        self.drawn: list[int] = []
        self.skipped = 0
        self.candidates_seen = 0  # candidates drawn so far (kept or skipped): len(pool) of them make an epoch
        self.step_epoch = 0  # the epoch this step's draw started in

    def keep(self, index: int, rng) -> bool:
        """One filter decision: False = skip this candidate (draws from ``rng`` only for a streak)."""
        easy, hard = self.easy_streak.get(index, 0), self.hard_streak.get(index, 0)
        p_skip = skip_probability(easy, self.p_easy) if easy else skip_probability(hard, self.p_hard)
        return p_skip == 0.0 or rng.random() >= p_skip

    def draw(self, ctx: Context, rng) -> list:
        rng = shared_rng(ctx, rng)  # every rank filters the same candidates
        self.drawn, self.skipped = [], 0
        self.step_epoch = self.candidates_seen // max(len(ctx.pool), 1)
        P = ctx.train.prompts_per_step
        budget = 100 * P * ctx.world  # a pool the filter rejects almost entirely still trains
        while len(self.drawn) < P * ctx.world:
            index = rng.randrange(len(ctx.pool))
            if budget <= 0 or self.keep(index, rng):
                self.drawn.append(index)
            else:
                self.skipped += 1
            budget -= 1
            self.candidates_seen += 1
        return [ctx.pool[i] for i in self.drawn[ctx.rank * P:(ctx.rank + 1) * P]]

    def record(self, all_correct: list[bool], all_wrong: list[bool]) -> None:
        """Update streaks and adapt p from this step's groups (in draw order)."""
        for index, easy, hard in zip(self.drawn, all_correct, all_wrong):
            self.easy_streak[index] = self.easy_streak.get(index, 0) + 1 if easy else 0
            self.hard_streak[index] = self.hard_streak.get(index, 0) + 1 if hard else 0
        cfg = self.cfg
        if self.step_epoch < cfg.greso_adapt_from_epoch:  # first epoch: no history yet, p stays
            return
        n = max(len(all_correct), 1)
        target_easy, target_hard = cfg.greso_target_zero_variance / 3, cfg.greso_target_zero_variance * 2 / 3

        def adapt(p: float, ratio: float, target: float) -> float:
            p = p - cfg.greso_p_step if ratio >= target else p + cfg.greso_p_step
            return min(max(p, cfg.greso_p_min), cfg.greso_p_max)

        self.p_easy = adapt(self.p_easy, sum(all_correct) / n, target_easy)
        self.p_hard = adapt(self.p_hard, sum(all_wrong) / n, target_hard)

    def update(self, ctx: Context, batch: RolloutBatch):
        grouped = successes(batch).view(-1, batch.group_size)
        # the world's outcomes in rank order, aligned with self.drawn
        world = distributed.all_gather_object((grouped.all(dim=1).tolist(), (~grouped).all(dim=1).tolist()))
        self.record([x for easy, _ in world for x in easy], [x for _, hard in world for x in hard])
        metrics = super().update(ctx, batch)
        metrics.add("greso_skipped", self.skipped)
        metrics.add("greso_p_easy", self.p_easy)
        metrics.add("greso_p_hard", self.p_hard)
        return metrics

    def state_dict(self) -> dict:
        # JSON object keys are strings
        return {"p_easy": self.p_easy, "p_hard": self.p_hard, "candidates_seen": self.candidates_seen,
                "easy_streak": {str(k): v for k, v in self.easy_streak.items() if v},
                "hard_streak": {str(k): v for k, v in self.hard_streak.items() if v}}

    def load_state_dict(self, state: dict) -> None:
        if not state:
            return
        self.p_easy, self.p_hard = float(state["p_easy"]), float(state["p_hard"])
        self.candidates_seen = int(state.get("candidates_seen", 0))  # older checkpoints: adapt as in the first epoch
        self.easy_streak = {int(k): int(v) for k, v in state["easy_streak"].items()}
        self.hard_streak = {int(k): int(v) for k, v in state["hard_streak"].items()}


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-greso", "GRESO tool agent (calculator)", "greso", "calculator", "GRPO that skips, before rollout, prompts whose reward history predicts an all-equal group.",
        nodes=("alg-greso",),
        changes="Prompts whose samples all got the same reward are useless to GRPO and tend to stay that way, so "
                "GRESO skips a prompt before rolling it out with a probability that grows with its streak of "
                "all-correct or all-wrong groups (1 - p^streak). The exploration probabilities p adapt after "
                "every step to hold the share of zero-variance prompts near a target. The loss is GRPO's; only "
                "the rollouts spent on useless prompts are saved."
                " Zero-variance groups that slip past the filter are dropped by dynamic sampling, as in the "
                "authors' scripts; their dynamic sampling refills the batch, here the batch shrinks (as DAPO's "
                "row). Defaults as the authors' code (Infini-AI-Lab/GRESO: train-scripts/*_greso.sh, "
                "ray_trainer.py): p starts at 0.5, moves by 0.01 within [0.05, 0.95] from the second epoch "
                "on, towards a 0.25 share of zero-variance prompts.",
        paper="Act Only When It Pays: Efficient Reinforcement Learning for LLM Reasoning via Selective Rollouts "
              "(Zheng et al., 2025), arXiv 2506.02177"),
)
