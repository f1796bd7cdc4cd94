r"""StepGRPO (R1-VL; Zhang et al. 2025, arXiv 2503.12937): rule-based step-wise rewards inside GRPO.

Outcome-only rewards are sparse: a wrong answer reached through mostly right steps scores the same as
noise. StepGRPO adds two rule-based, dense rewards, then normalises the total within the group as GRPO
does:

Step-wise reasoning accuracy reward (StepRAR, soft key-step matching): the fraction of a reference
solution's key steps that the response contains, added to the answer reward::

    r^acc_i = 1 + alpha * k_i / |K|     if the answer is correct
            =     alpha * k_i / |K|     otherwise

Step-wise reasoning validity reward (StepRVR): 1 when the response is complete and well ordered (the
paper: a description, reasoning steps, then the answer, logically consistent), else 0::

    r^val_i = 1[ complete and logical ]

    r_i = r^acc_i + r^val_i,      A_i = (r_i - mean_j r_j) / (std_j r_j + 1e-4)      (GRPO's, ``grpo.grpo_loss``)

On the calculator the key steps K are the intermediate values of a correct solution and k_i is how many of
them the episode's tool calls computed (``info["reference_steps_matched"]``); a response is valid when it
made at least one tool call, every call evaluated (no syntax errors), and it ended with an <answer>.

Checked against the authors' released code (github.com/jingyi0000/R1-VL): ``src/r1-vl/src/open_r1/grpo.py``
(``accuracy_reward`` adds 0.1 times the matched key-step share: alpha = 0.1) and its GRPO trainer
(``src/r1-vl/src/open_r1/trainer/grpo_trainer.py``: TRL's GRPO with a k3 KL term, ``beta = args.beta``, which the
training scripts leave at TRL's default 0.04). Deliberate difference: ``beta`` defaults to 0 here, as for
every GRPO-family row (no frozen reference model on a CPU run); ``--beta 0.04`` is the authors' setting.
Equation numbers: not verified: paper text not available here (docs/algorithms_grpo_family.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import grpo
from ...algorithm import Context, RolloutBatch
from ...options import option
from .successes import reshaped_advantages, successes


@dataclass
class Config(grpo.Config):
    """GRPO's switches plus StepRAR's weight and StepRVR's on/off."""

    step_accuracy_weight: float = option(0.1, "alpha: weight of the key-step match fraction (StepRAR).", low=0.0,
                                         high=10.0)
    step_validity: bool = option(True, "Add the validity reward (StepRVR): 1 for a complete, error-free tool "
                                 "trajectory ending in an answer.")


def key_step_fraction(sample) -> float:
    total = sample.info.get("reference_steps") or 0
    return sample.info.get("reference_steps_matched", 0) / total if total else 0.0


def is_valid(sample) -> bool:
    steps = sample.info.get("tool_steps") or []
    return bool(steps) and all(s.get("valid") for s in steps) and sample.info.get("answer") is not None


def step_rewards(correct: torch.Tensor, key_fraction: torch.Tensor, valid: torch.Tensor, alpha: float,
                 with_validity: bool = True) -> torch.Tensor:
    """r^acc + r^val per episode (module docstring); all arguments (N,)."""
    reward = correct.float() + alpha * key_fraction
    return reward + valid.float() if with_validity else reward


class StepGRPO(grpo.GRPO):
    """GRPO on step-wise accuracy and validity rewards (StepGRPO)."""

    name = "step-grpo"

    Config = Config
    SETTING = r"r_i=\mathbb{1}[\text{ans}_i=y]+\alpha\frac{k_i}{|K|}+r^{\mathrm{val}}_i"

    def advantages(self, ctx: Context, batch: RolloutBatch):
        key = torch.tensor([key_step_fraction(s) for s in batch.samples], dtype=torch.float32)
        valid = torch.tensor([is_valid(s) for s in batch.samples])
        rewards = step_rewards(successes(batch), key, valid, self.cfg.step_accuracy_weight, self.cfg.step_validity)
        return reshaped_advantages(ctx, batch, rewards, self.cfg)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-step-grpo", "StepGRPO tool agent (calculator)", "step-grpo", "calculator",
        "GRPO on rule-based step rewards: key-step accuracy (StepRAR) plus trajectory validity (StepRVR).",
        nodes=("alg-step-grpo",),
        changes="Outcome rewards say nothing about a wrong answer that got most steps right. StepGRPO adds two "
                "rule-based dense terms before GRPO's group normalisation: a small bonus for the share of a reference "
                "solution's key steps the response contains, and a validity reward for a complete, well-formed "
                "trajectory. The paper checks key steps in multimodal chains of thought; here key steps are the "
                "reference solution's intermediate values reached by calculator calls, and a trajectory is valid "
                "when every call evaluates and it ends with an answer."
                " Defaults against the authors' code (R1-VL's open_r1/grpo.py and GRPO trainer): alpha 0.1 "
                "for the key-step share as theirs, the validity reward on; deliberately no KL term (beta 0, no "
                "reference model on a CPU run) where their TRL-based trainer keeps TRL's beta 0.04: --beta 0.04 "
                "is theirs.",
        paper="R1-VL: Learning to Reason with Multimodal Large Language Models via Step-wise Group Relative Policy "
              "Optimization (Zhang et al., 2025), arXiv 2503.12937"),
)
