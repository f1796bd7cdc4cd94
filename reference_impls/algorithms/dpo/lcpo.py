r"""LCPO: Length Controlled Preference Optimization (Hong, Liu, Zhang, Sun, Zhang, Huang; "Pruning Long
Chain-of-Thought of Large Reasoning Models via Small-Scale Preference Optimization", arXiv 2508.10164).

The idea: a reasoning model already writes short *and* long correct solutions to problems it has mastered;
prefer its own shortest one to its own longest one, offline, with a loss that converges on a few hundred
pairs without tuning.

Data (the paper's recipe, on our environments)
    For ``pair_prompts`` train problems the starting model samples ``group_size`` episodes each (the paper:
    16). A problem's pass rate s = (correct samples) / group_size sorts it into easy (s = 1), medium
    (0 < s < 1) or difficult (s = 0); the paper trains on the easy split only. The "reasoning length" of an
    episode is its number of *model* tokens (tool output does not count; on the calculator that is every
    turn the model wrote). On each kept problem the shortest episode is chosen (y_w) and the longest rejected
    (y_l); a problem whose episodes all have the same length gives no pair. ``split`` picks the problems:

    easy        s = 1 (the paper's choice): both episodes are correct, the pair differs only in length
    medium      0 < s < 1, shortest vs longest whatever their correctness (the paper's "w/ medium" ablation)
    difficult   s = 0, shortest vs longest, both wrong (the paper's "w/ difficult" ablation)
    unfiltered  every problem, shortest vs longest whatever their correctness (the paper's "w/o filter"
                ablation)
    solved      s > 0, and the pair is the shortest vs the longest *correct* episode (our extension, so a
                weak policy that rarely solves a problem every time still yields pairs; both stay correct)

    The paper's scale (as both notes give it): 16 samples per problem, 22k raw data points, about 0.8k
    training pairs, 50 training steps, on DeepSeek-R1-Distill-Qwen 1.5B / 7B. Its ablation (Table 4
    in the notes) finds that chosen episodes grow longer from easy to difficult problems and that the
    length reduction shrinks with them, which is why easy is the default.

Loss. With the length-normalised likelihood p_theta(y|x) = exp(log pi_theta(y|x) / |y|) (log pi summed over
model tokens, |y| their number), the paper writes NLL itself as a Bradley-Terry term on the implicit reward
r_theta(y|x) = log( p_theta(y|x) / (1 - p_theta(y|x)) ), since sigma(r_theta) = p_theta. LCPO keeps the
Bradley-Terry comparison of these rewards between the chosen and the rejected episode, with the margin
epsilon of the paper's general Bradley-Terry form (Eq. (8)) set to 0, and no NLL term::

    L_LCPO = -log sigmoid( lambda * [ r_theta(y_w|x) - r_theta(y_l|x) ] )
           = -log sigmoid( lambda * log[ odds_theta(y_w|x) / odds_theta(y_l|x) ] ),
    odds_theta(y|x) = p_theta(y|x) / (1 - p_theta(y|x))

which is ORPO's odds-ratio term without ORPO's SFT (NLL) term (dpo_variants.orpo_loss), and needs no
reference model.

What we could and could not verify (two passes; docs/algorithms_dpo_ppo_families.md lists the searches).
The paper's method section could not be read here: the stored arXiv html pages (v1 and v2) show only the
abstract and the start of the introduction, no repository in the code index keeps the paper's text or
LaTeX, and no code by the authors was found (a reviewer reports the paper's anonymous code link as dead).
What we have are two paper notes (an English and a Chinese summary of the ICLR 2026 version) and the four
OpenReview reviews. They agree that LCPO is the length-normalised odds-ratio Bradley-Terry loss without the
NLL term (a reviewer: "dropping the NLL term of ORPO and keeping the BT loss"; another: "using the log NLL
loss as a reward").

- Sign. Both notes print L_LCPO = log sigma(r_w - r_l), without a minus. They print the NLL identity the
  same way, L_NLL = -(1/|y|) log pi = log sigma(r), which is missing its minus too (the left side is
  -log p = -log sigma(r)). Read with the sign restored in both places, the loss is -log sigma(r_w - r_l),
  the one that minimising raises the chosen episode's reward; this is our reading, not the paper's text.
- lambda. A reviewer calls it "LCPO's single-parameter BT loss" and says the paper reports "only the best
  value of the key temperature lambda"; the notes instead say it needs no hyperparameter tuning and print
  no coefficient. Neither the place nor the value of lambda could be read, so ``lam`` scales the log-odds
  margin inside the sigmoid, where DPO's and SimPO's beta sit (a weight outside the log-sigmoid, as
  ORPO's lambda is, would leave a one-term loss's Adam updates almost unchanged, so it could hardly be a
  "key" temperature), and its default 1.0 is the formula the notes print.
- Numbers. Eq. (8) for the general Bradley-Terry form with margin epsilon is as the Chinese note cites it
  (the English note gives no number). The equation number of L_LCPO itself: not verified.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F

from ...algorithm import Context
from .dpo import DPO, Pair, PairOptions, build_pairs
from .dpo_variants import log1mexp
from ...implementations import latex_number
from ...options import option
from ...rollout import RolloutConfig, Sample


def length(s: Sample) -> int:
    """An episode's reasoning length: its model tokens (tool output excluded)."""
    return int(sum(s.loss_mask))


def length_pairs(samples: list[Sample], uids: list[str], split: str = "easy") -> list[Pair]:
    """One (shortest, longest) pair per group that ``split`` keeps (see the module docstring). Ties in
    length go to the earlier sample, so the choice is deterministic; equal lengths give no pair."""
    by_group: dict[int, list[Sample]] = {}
    for s in samples:
        by_group.setdefault(s.group, []).append(s)
    pairs = []
    for g, group in sorted(by_group.items()):
        correct = [s for s in group if s.info.get("correct")]
        if split == "easy":
            pool = group if len(correct) == len(group) else []
        elif split == "solved":
            pool = correct
        elif split == "medium":
            pool = group if 0 < len(correct) < len(group) else []
        elif split == "difficult":
            pool = group if not correct else []
        elif split == "unfiltered":
            pool = group
        else:
            raise ValueError(f"split must be easy, medium, difficult, unfiltered or solved, not {split!r}")
        if len(pool) < 2:
            continue
        shortest = min(pool, key=length)  # min/max return the first of equals: deterministic
        longest = max(pool, key=length)
        if length(shortest) < length(longest):
            pairs.append(Pair(uids[g], shortest, longest))
    return pairs


def lcpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, lam: float = 1.0):
    """Sequence log-likelihoods and model-token counts (N,) -> (mean L_LCPO, metrics). Rewards logged are
    the implicit rewards r_theta = log odds of the length-normalised likelihood."""
    chosen_avg = chosen_logps / chosen_lengths.clamp(min=1.0)  # log p_theta(y_w|x)
    rejected_avg = rejected_logps / rejected_lengths.clamp(min=1.0)
    chosen_reward = chosen_avg - log1mexp(chosen_avg)  # log p / (1 - p)
    rejected_reward = rejected_avg - log1mexp(rejected_avg)
    losses = -F.logsigmoid(lam * (chosen_reward - rejected_reward))
    rc, rr = chosen_reward.detach(), rejected_reward.detach()
    metrics = {"rewards/chosen": float(rc.mean()), "rewards/rejected": float(rr.mean()),
               "rewards/accuracies": float((rc > rr).float().mean()), "rewards/margins": float((rc - rr).mean()),
               "logps/chosen": float(chosen_avg.detach().mean()), "logps/rejected": float(rejected_avg.detach().mean()),
               "length/chosen": float(chosen_lengths.float().mean()),
               "length/rejected": float(rejected_lengths.float().mean())}
    return losses.mean(), metrics


@dataclass
class Config(PairOptions):
    """LCPO switches."""

    lam: float = option(1.0, "lambda: scale of the log-odds margin inside the sigmoid (1 = the objective as the "
                             "paper notes print it; its place in the paper is not verified here).",
                        low=1e-6, high=100.0, aliases=("lcpo_lambda",))
    split: str = option("easy", "Problems that give pairs: easy (every sample correct: the paper's filter); medium "
                                "(some correct) or difficult (none correct), shortest vs longest regardless of "
                                "correctness (the paper's ablations); unfiltered (every problem: the paper's no-filter "
                                "ablation); solved (any correct sample; shortest vs longest correct: our extension).",
                        choices=("easy", "medium", "difficult", "unfiltered", "solved"))


#: what y_w and y_l are under each ``split`` (length_pairs), as the objective shows it; s the problem's pass rate
SPLIT_PAIRS_LATEX = {
    "easy": r"y_w,\,y_l\text{ the shortest and the longest episode of a problem with }s=1\text{ (both correct)}",
    "medium": r"y_w,\,y_l\text{ the shortest and the longest episode of a problem with }0<s<1",
    "difficult": r"y_w,\,y_l\text{ the shortest and the longest episode of a problem with }s=0\text{ (both wrong)}",
    "unfiltered": r"y_w,\,y_l\text{ the shortest and the longest episode of any problem}",
    "solved": r"y_w,\,y_l\text{ the shortest and the longest correct episode of a problem with }s>0",
}


class LCPO(DPO):
    """DPO's offline machinery (pairs file, step draw, resume) with LCPO's pairs and loss."""

    name = "lcpo"

    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        lam = "" if cfg.lam == 1 else latex_number(cfg.lam)
        return (rf"\mathcal{{L}}=-\log\sigma\Big({lam}\big[\log\tfrac{{p_\theta(y_w|x)}}{{1-p_\theta(y_w|x)}}"
                r"-\log\tfrac{p_\theta(y_l|x)}{1-p_\theta(y_l|x)}\big]\Big),\ "
                r"p_\theta(y|x)=e^{\frac{1}{|y|}\log\pi_\theta(y|x)},\ " + SPLIT_PAIRS_LATEX[cfg.split])
    no_pairs_reason = "no kept problem had episodes of different lengths (see --split)"

    @classmethod
    def uses_reference(cls, cfg) -> bool:
        return False

    def build_pairs(self, ctx: Context, problems: list, rollout_cfg: RolloutConfig, seed: int):
        split = self.cfg.split
        pairs, stats = build_pairs(ctx.policy, ctx.tokenizer, ctx.task, problems, rollout_cfg, seed=seed,
                                   pair_fn=lambda samples, uids: length_pairs(samples, uids, split))
        if pairs:
            stats["chosen_length"] = sum(length(p.chosen) for p in pairs) / len(pairs)
            stats["rejected_length"] = sum(length(p.rejected) for p in pairs) / len(pairs)
        stats["split"] = split
        return pairs, stats

    def pair_loss(self, chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, chosen_lengths,
                  rejected_lengths):
        return lcpo_loss(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, self.cfg.lam)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-lcpo", "LCPO: prefer the shortest correct tool-use episode", "lcpo", "calculator", "Offline length preference: on problems the model always solves, its shortest episode is preferred to its "
        "longest, with a reference-free odds-ratio Bradley-Terry loss.",
        nodes=("alg-lcpo",),
        changes="LCPO learns brevity rather than correctness. The starting model samples a group of episodes per "
                "problem; only problems it solves in every sample are kept (the paper's easy split), and on each the "
                "episode with the fewest model tokens is chosen over the one with the most (tool output does not "
                "count towards length). The loss is ORPO's odds-ratio comparison of length-normalised likelihoods "
                "without ORPO's NLL term and without a reference model. Kept from the paper: difficulty filtering "
                "by pass rate, shortest vs longest self-generated pairs, the loss. Simplified: calculator episodes "
                "of tens of tokens instead of math chains of thought of thousands; a 'solved' split (shortest vs "
                "longest correct episode on any solved problem) is added for weak policies, next to the paper's "
                "medium, difficult and no-filter ablation splits; the loss was read from paper notes and reviews, "
                "not the paper's method section, so its sign, the place of its temperature and its equation "
                "number are unconfirmed (see lcpo.py).",
        paper="Pruning Long Chain-of-Thought of Large Reasoning Models via Small-Scale Preference Optimization "
              "(Hong, Liu, Zhang, Sun, Zhang, Huang; arXiv 2508.10164)",
        survey_vs_paper="The survey's Table 2 lists LCPO as preference optimisation without clipping and with a KL "
                        "penalty, for length preference with limited data and training. The last part agrees (about "
                        "0.8k pairs and 50 steps in the paper); the KL penalty does not: LCPO keeps no reference "
                        "model and has no KL term, the only anchor being the pairs themselves, both sampled from "
                        "the starting model."),
)
