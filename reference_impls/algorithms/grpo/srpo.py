r"""SRPO: two-Staged history-Resampling Policy Optimization (Zhang et al. 2025, arXiv 2504.14286).

SRPO is GRPO (its objective unchanged here: ``grpo.grpo_loss``) with two changes to
*which prompts* are trained on:

History Resampling. A prompt on which every rollout of a group was correct gives
every sample the same reward, so its advantages are all 0 and it contributes no gradient. SRPO records
each prompt's rollout rewards over an epoch (one pass over the epoch's data) and, at the end of the epoch,
drops from the next epoch the prompts whose samples were *all* correct; prompts with mixed outcomes stay,
and so do prompts that every sample failed (they may become solvable and then carry signal). The set is
carried forward, so a dropped prompt stays out for the rest of its stage:

    D_1 = the stage's data,    D_{e+1} = { q in D_e : not (every rollout of q in epoch e had r = 1) }

(If D_{e+1} would be empty, every prompt is solved and the stage's data starts over.) Each outcome counts
for the epoch in which its prompt was drawn: when an epoch ends inside a step's draw, the last prompts of
epoch e are rolled out in the same step as the first of epoch e + 1, and a late "all correct" on one of
them removes it from D_{e+1} (what is left of its order) as soon as it is known.

Two-stage training. Stage 1 trains only on the hardest data to elicit long,
multi-step reasoning; stage 2 adds the rest. The paper's stages are math, then math + code; here they are
the calculator's multi-call levels (``--srpo-stage-one-levels``, default level 3) for
``--srpo-stage-one-steps`` steps, then the whole pool. A stage switch starts a fresh epoch from the new
stage's full data and an empty history.

Implementation: ``draw`` walks a shuffled order of D_e, one epoch at a time; ``update`` records which drawn
prompts were solved by every sample; both live in ``state_dict`` so a resumed run continues with the same
history.

Checked against the paper's description of history resampling as issue 62's audit quotes it (keep the
prompts with mixed or all-wrong outcomes, drop those every sample solved); no training code by the authors
was found in the code index. Equation numbers: not verified (the paper's text is not available here;
docs/algorithms_grpo_family.md).

Data parallel (torchrun): one history, the same on every rank. ``draw`` walks the shared order for the
whole world (world x P prompts, with the rank-independent stream ``algorithm.shared_rng``) and each rank
rolls out its consecutive share; ``update`` gathers every rank's outcomes (``all_gather_object``, in rank
order) before recording them. So every rank makes the same epoch and resampling decisions, rank 0's
checkpoint holds every rank's state, and a resumed run continues exactly; one process runs as before.
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
    """GRPO's switches plus SRPO's stages."""

    srpo_stage_one_steps: int = option(0, "Steps of stage 1 (only the hardest problems); 0 = a single stage on the "
                                       "whole pool.", low=0, high=1_000_000)
    srpo_stage_one_levels: tuple[int, ...] = option((3,), "Problem levels stage 1 trains on (problems without a "
                                                    "level count as in).", choices=(1, 2, 3))


class SRPO(grpo.GRPO):
    """GRPO with epoch-wise history resampling and two training stages (SRPO)."""

    name = "srpo"

    Config = Config
    SETTING = (r"\text{epoch }e+1\text{ draws from }\mathcal{D}_{e+1}=\{q\in\mathcal{D}_e:\neg\,\forall i\le G,\ "
               r"r_i^{(e)}(q)=1\},\ \mathcal{D}_1=\mathcal{D}_{\mathrm{stage}}")

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.stage = 0  # 0 = not started; 1, 2 = the stage whose epochs ``order`` walks
        self.epoch = 0
        self.active: set[int] = set()  # D_e: the prompts this epoch walks (carried forward, reset per stage)
        self.order: list[int] = []  # pool indices of D_e still to be drawn in this epoch
        self.solved_this_epoch: set[int] = set()  # drawn in this epoch and solved by every sample
        self.dropped = 0  # prompts of the stage no longer in D_e
        self.drawn: list[tuple[int, int]] = []  # this step's (pool index, epoch drawn in), whole world, rank by rank

    def stage_indices(self, ctx: Context, stage: int) -> list[int]:
        everything = list(range(len(ctx.pool)))
        if stage == 2:
            return everything
        levels = set(self.cfg.srpo_stage_one_levels)
        hard = [i for i in everything if getattr(ctx.pool[i], "level", None) in levels
                or getattr(ctx.pool[i], "level", None) is None]
        return hard or everything

    def start_epoch(self, ctx: Context, rng, stage: int) -> None:
        """D_{e+1} = D_e minus the prompts every sample solved in epoch e; a new stage starts from its full data."""
        candidates = self.stage_indices(ctx, stage)
        if stage != self.stage:
            self.stage, self.active = stage, set(candidates)
        else:
            self.active -= self.solved_this_epoch
        if not self.active:  # every prompt solved: nothing left to resample, start the stage over
            self.active = set(candidates)
        self.solved_this_epoch = set()
        self.epoch += 1
        self.dropped = len(candidates) - len(self.active)
        self.order = sorted(self.active)
        rng.shuffle(self.order)

    def draw(self, ctx: Context, rng) -> list:
        rng = shared_rng(ctx, rng)  # every rank walks the same order
        stage = 1 if ctx.step < self.cfg.srpo_stage_one_steps else 2
        if stage != self.stage:
            self.start_epoch(ctx, rng, stage)
        self.drawn = []
        P = ctx.train.prompts_per_step
        while len(self.drawn) < P * ctx.world:
            if not self.order:
                self.start_epoch(ctx, rng, stage)
            self.drawn.append((self.order.pop(), self.epoch))
        return [ctx.pool[i] for i, _ in self.drawn[ctx.rank * P:(ctx.rank + 1) * P]]

    def record(self, solved_by_all: list[bool]) -> None:
        """Note, per drawn prompt (in draw order), whether every sample of its group was correct, against the
        epoch in which it was drawn. A prompt of epoch e whose outcome arrives after epoch e + 1 was built (the
        epoch ended inside this step's draw) leaves epoch e + 1 now: what is left of its order and D_{e+1}."""
        for (index, epoch), solved in zip(self.drawn, solved_by_all):
            if epoch == self.epoch:
                if solved:
                    self.solved_this_epoch.add(index)
            elif solved and epoch == self.epoch - 1 and index in self.active:
                self.active.discard(index)
                self.dropped += 1
                if index in self.order:
                    self.order.remove(index)
                if not self.active:  # the late outcome emptied D_{e+1}: the next epoch starts the stage over
                    self.order = []

    def update(self, ctx: Context, batch: RolloutBatch):
        mine = successes(batch).view(-1, batch.group_size).all(dim=1).tolist()
        self.record([x for flags in distributed.all_gather_object(mine) for x in flags])  # the world's, rank order
        metrics = super().update(ctx, batch)
        metrics.add("srpo_epoch", self.epoch)
        metrics.add("srpo_stage", self.stage)
        metrics.add("srpo_dropped", self.dropped)
        return metrics

    def state_dict(self) -> dict:
        return {"stage": self.stage, "epoch": self.epoch, "active": sorted(self.active), "order": list(self.order),
                "solved_this_epoch": sorted(self.solved_this_epoch), "dropped": self.dropped}

    def load_state_dict(self, state: dict) -> None:
        if not state:
            return
        if "active" not in state:
            raise ValueError("SRPO state: no 'active' set: this checkpoint was written before the carried-forward "
                             "history of issue 62 and cannot resume it exactly")
        self.stage, self.epoch, self.order = int(state["stage"]), int(state["epoch"]), list(state["order"])
        self.active = set(state["active"])
        self.solved_this_epoch = set(state["solved_this_epoch"])
        self.dropped = int(state["dropped"])


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-srpo", "SRPO tool agent (calculator)", "srpo", "calculator", "GRPO with history resampling (prompts every sample solved last epoch are dropped) and two training stages.",
        {"srpo_stage_one_steps": 20},
        nodes=("alg-srpo",),
        changes="The update is GRPO's; what changes is the data. Each epoch records which prompts every sample "
                "solved (their advantages are all zero) and drops them from the next epoch, while keeping prompts "
                "that every sample failed, since those can still become informative. Training runs in two stages: "
                "the paper starts on hard math before adding code; here stage 1 uses the calculator's "
                "multi-call level-3 problems and stage 2 the whole pool."
                " Defaults against the paper: stage 1 lasts 20 steps; the paper's stage lengths were "
                "not checked here (no copy of its text).",
        paper="SRPO: A Cross-Domain Implementation of Large-Scale Reinforcement Learning on LLM (Zhang et al., 2025), "
              "arXiv 2504.14286"),
)
