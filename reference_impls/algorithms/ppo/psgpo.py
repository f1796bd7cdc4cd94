r"""PSGPO: PPO with step-level (process) rewards in addition to the outcome reward ("Process
Supervision-Guided Policy Optimization for Code Generation", Dai et al. 2024, arXiv 2410.17621).

The paper's problem: with only a pass/fail reward at the end, a policy that fails every test gets no
signal and long programs get poor credit assignment. It trains a process reward model (PRM) that scores
each line of a partial program and feeds those scores to PPO as *dense rewards* at the end of each line
(it also initialises the critic from the PRM, which needs a learned PRM and is not done here).

Steps and their verdicts here come from the environment's checked steps (``EnvSpec.steps``, a
``StepChecker``; PSGPO refuses an environment without them). The calculator's (``envs/calculator.py``,
``CalculatorSteps.verdicts``): the steps are the tool calls (one model turn each), and instead of a
learned PRM the verdict is checked against the problem: a call is a correct step when its value is
one of the intermediate values of the problem's reference solution (``Problem.steps``, the tool calls of
a correct solution) and that value was not already obtained earlier in the episode; it is a wrong step
when it does not parse, fails to evaluate, or yields a value off the solution path. Repeating a correct
value earns nothing (so the policy cannot farm step rewards by recomputing one value: the paper's concern
about reward hacking with dense PRM rewards). Turns that are not tool calls (the final answer) get no step
reward; the outcome reward covers them.

Per-token reward (PPO's, see ``ppo.py``, plus the step rewards on each call turn's last token; the
paper's "PRM as dense rewards" integration; equation numbers not verified: paper text not available here)::

    r_t = -beta * kl_t
          + c * v_j       on the last token of model turn j,   v_j = +1 correct step, -1 wrong step, 0 else
          + R             on the episode's last model token     (the outcome reward)

with c = ``step_reward``. GAE, the clipped policy and value losses and everything else are PPO's: the
dense step rewards shorten the horizon the critic must bridge, which is the paper's point.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...algorithm import Context, RolloutBatch, collect_batch
from ...envs import with_checked_steps
from ...options import ConfigError, option
from .ppo import PPO
from .ppo import Config as PPOConfig


@dataclass
class Config(PPOConfig):
    """PPO's switches plus the step-reward scale."""

    step_reward: float = option(0.2, "c: reward +c for each correct tool call (a new value on the reference solution's "
                                "path) and -c for a wrong one, on the call's last token.", low=0.0, high=10.0)


def step_token_rewards(samples, verdicts: list[list[int]], width: int, scale: float) -> torch.Tensor:
    """(B, width): scale * v_j on the last token of each model turn j."""
    out = torch.zeros(len(samples), width)
    for i, (s, vs) in enumerate(zip(samples, verdicts)):
        for (start, end), v in zip(s.turn_spans, vs):
            if v and end > start:
                out[i, end - 1] += scale * v
    return out


class PSGPO(PPO):
    """PPO with checked step rewards on the environment's steps (module docstring)."""

    name = "psgpo"

    Config = Config
    SETTING = r"r_t\mathrel{+}=c\,v_j\,[t=\text{end}(j)],\ v_j\in\{+1,-1,0\}\ \text{(checked steps)}"

    @classmethod
    def check(cls, cfg, train, env_spec) -> None:
        super().check(cfg, train, env_spec)
        if env_spec.steps is None:
            raise ConfigError(f"--env: PSGPO's step verdicts need an environment with checked steps; "
                              f"{env_spec.name!r} has none{with_checked_steps()}", field="env")

    def collect(self, ctx: Context, problems: list):
        batch, stats = collect_batch(ctx, problems)
        for s in batch.samples:
            texts = [ctx.tokenizer.decode(s.completion_ids[a:b], skip_special_tokens=True) for a, b in s.turn_spans]
            s.info["step_verdicts"] = ctx.task.steps.verdicts(problems[s.group], texts)
        return batch, stats

    def token_rewards(self, ctx: Context, batch: RolloutBatch, mask: torch.Tensor, kl) -> torch.Tensor:
        verdicts = [s.info["step_verdicts"] for s in batch.samples]
        dense = step_token_rewards(batch.samples, verdicts, mask.shape[1], self.cfg.step_reward).to(mask.device)
        return super().token_rewards(ctx, batch, mask, kl) + dense * mask

    def update(self, ctx: Context, batch: RolloutBatch) -> dict:
        metrics = super().update(ctx, batch)
        flat = [v for s in batch.samples for v in s.info["step_verdicts"] if v]
        metrics.update(step_correct_frac=sum(v > 0 for v in flat) / len(flat) if flat else 0.0,
                       steps_per_episode=len(flat) / max(len(batch.samples), 1))
        return metrics


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-psgpo", "PSGPO tool agent (calculator)", "psgpo", "calculator", "PPO with dense step rewards: each calculator call is checked against the problem's solution.",
                   nodes=("alg-psgpo",),
                   changes="Adds process rewards to PPO: besides the final answer's reward, every tool call earns "
                           "+0.2 when it produces a new value on the reference solution's path and -0.2 when it "
                           "fails or goes off the path, placed on the call's last token, so GAE gets signal inside "
                           "the episode. The paper scores lines of code with a learned process reward model; here the "
                           "steps are calculator tool turns and the verdict is checked exactly, and the paper's "
                           "critic initialisation from that model is left out."
                           " Defaults against the paper: step rewards of +-0.2 from an exact check, "
                           "where the paper's dense rewards are a learned PRM's scores; the PPO "
                           "settings are ppo.py's.",
                   paper="Process Supervision-Guided Policy Optimization for Code Generation (Dai et al. 2024, arXiv 2410.17621)"),
)
