"""Training health, read from the per-step diagnostics while a run trains: the failures users of the big RL
frameworks most often report (entropy collapse, completions that degenerate into one repeated token, lengths stuck
at the cap, a saturated clip, batches without signal, a runaway KL, reward that climbs while success falls), each
raised once, at the first step it shows, with what it means and what to try.

    monitor = HealthMonitor(max_completion_tokens=64)
    for step_metrics, step_samples in run:           # metrics.jsonl rows; samples as Sample.to_json() dicts
        for warning in monitor.update(step_metrics, step_samples):
            print(warning.line())

The trainer's ``callbacks.HealthLogger`` does that each step: a line in the log and one in ``health.jsonl``
(``RunDir.health_path``), which the Lab's run page shows. ``check_run`` replays a finished run's files.

The thresholds are fixed here, chosen so that the comparison grid's healthy cells (GRPO, Dr.GRPO, RLOO, GSPO, PPO
on the calculator: results/core) raise none of the metric rules, and a run built to collapse (a learning rate
far too high) raises the entropy and degeneration warnings within its first steps
(tests/reference_impls/test_health.py). They are rules of thumb, not tests: a warning says where to look.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass

#: entropy below this share of the run's first measured entropy: the policy has stopped exploring
ENTROPY_COLLAPSE_RATIO = 0.1
#: share of a step's completions that are degenerate (``degenerate``) before the warning fires
DEGENERATE_SHARE = 0.5
#: a completion is degenerate when one character runs this long, or one word is this share of 8 or more words
CHAR_RUN, WORD_SHARE, MIN_WORDS = 12, 0.5, 8
#: mean completion length at or above this share of the cap, or this share of episodes truncated
AT_CAP_SHARE, TRUNCATED_SHARE = 0.95, 0.5
#: token-level clip fraction at or above this (sequence-level clipping, as GSPO's, clips whole answers: its own bar)
CLIP_SATURATED, CLIP_SATURATED_SEQUENCE = 0.3, 0.8
#: share of groups whose rewards are all equal (no advantage, no gradient) for ``PERSIST`` steps in a row
ZERO_ADVANTAGE_SHARE, PERSIST = 0.9, 3
#: per-token KL to the reference above ``KL_LIMIT``, or above ``KL_RISING`` at ``KL_GROWTH`` times its value
#: ``PERSIST`` steps before when that value was at least ``KL_BASE`` (a KL that starts at ~0, the policy equal to its
#: reference, grows by any factor at once; PPO's healthy cells run 0.01-0.2)
KL_LIMIT, KL_RISING, KL_GROWTH, KL_BASE = 1.0, 0.3, 10.0, 0.01
#: reward up by at least this much (mean of the last ``PERSIST`` steps against the first) while accuracy fell as much
HACK_MARGIN = 0.1


@dataclass(frozen=True)
class HealthWarning:
    """One warning: ``code`` names the rule, ``step`` the first step it held, ``seen`` the figures that raised it,
    ``means`` what it usually means and ``action`` what to try."""

    code: str
    step: int
    title: str
    seen: str
    means: str
    action: str

    def line(self) -> str:
        """The warning as one log line."""
        return f"warning (step {self.step}): {self.title}: {self.seen}. {self.means} Try: {self.action}"

    def as_dict(self) -> dict:
        return asdict(self)


def _model_text(sample: dict) -> str:
    return "".join(seg.get("text", "") for seg in sample.get("segments", []) if seg.get("role") == "model")


def degenerate(text: str) -> bool:
    """Whether a completion has degenerated into repetition: one character repeated ``CHAR_RUN`` times in a row
    ("!!!!!!!!!!!!"), or one word making up at least ``WORD_SHARE`` of ``MIN_WORDS`` or more words."""
    if re.search(r"(.)\1{%d,}" % (CHAR_RUN - 1), text, flags=re.DOTALL):
        return True
    words = text.split()
    if len(words) < MIN_WORDS:
        return False
    return Counter(words).most_common(1)[0][1] / len(words) >= WORD_SHARE


class HealthMonitor:
    """Raises each rule's warning once, at the first step it holds. ``max_completion_tokens``: the run's cap (for the
    length rule); ``sequence_level_clip``: the algorithm clips whole sequences (GSPO), so a high clip fraction is
    its normal working."""

    def __init__(self, max_completion_tokens: int | None = None, sequence_level_clip: bool = False):
        self.cap = max_completion_tokens
        self.clip_bar = CLIP_SATURATED_SEQUENCE if sequence_level_clip else CLIP_SATURATED
        self.history: list[dict] = []
        self.raised: set[str] = set()

    def update(self, metrics: dict, samples: list[dict] | None = None) -> list[HealthWarning]:
        """The warnings that first hold at this step (``metrics``: the step's metrics row; ``samples``: its
        transcripts as ``Sample.to_json()`` dicts, or None where they are not at hand)."""
        self.history.append(metrics)
        found = [w for w in (self._entropy(), self._degenerate(samples or []), self._at_cap(samples or []),
                             self._clip(), self._zero_advantage(), self._kl(), self._hacking()) if w is not None]
        fresh = [w for w in found if w.code not in self.raised]
        self.raised.update(w.code for w in fresh)
        return fresh

    # each rule reads self.history (the last row is this step) and returns a warning or None
    def _step(self) -> int:
        return int(self.history[-1].get("step", len(self.history)))

    def _series(self, key: str) -> list[float]:
        return [float(m[key]) for m in self.history if isinstance(m.get(key), (int, float))]

    def _entropy(self) -> HealthWarning | None:
        values = [v for v in self._series("entropy") if v > 0] or [0.0]
        now = self.history[-1].get("entropy")
        if len(values) < 2 or not isinstance(now, (int, float)) or now >= ENTROPY_COLLAPSE_RATIO * values[0]:
            return None
        return HealthWarning(
            "entropy-collapse", self._step(), "entropy collapsed",
            f"{now:.3f} nats per token, {100 * now / values[0]:.0f}% of the first step's {values[0]:.3f}",
            "The policy now samples nearly one answer per prompt: groups stop differing, so the advantages and the "
            "learning signal vanish, and the model stops exploring.",
            "a lower learning rate or fewer updates per batch (--mini-batches), a higher sampling temperature, "
            "clip-higher (DAPO's epsilon_high), or an entropy bonus where the algorithm has one.")

    def _degenerate(self, samples: list[dict]) -> HealthWarning | None:
        texts = [_model_text(s) for s in samples]
        texts = [t for t in texts if t]
        if not texts:
            return None
        bad = sum(degenerate(t) for t in texts)
        if bad / len(texts) < DEGENERATE_SHARE:
            return None
        example = next(t for t in texts if degenerate(t))[:40]
        return HealthWarning(
            "degenerate", self._step(), "completions degenerated into repetition",
            f"{bad} of {len(texts)} completions repeat one token or character (e.g. {example!r})",
            "The update pushed probability onto a few tokens; the model is no longer writing answers, and it "
            "rarely recovers by itself.",
            "stop the run; restart from the last healthy checkpoint with a lower learning rate, a KL penalty to the "
            "reference (--beta), or gradient clipping (--max-grad-norm).")

    def _at_cap(self, samples: list[dict]) -> HealthWarning | None:
        m = self.history[-1]
        length = m.get("completion_len_mean")
        truncated = [bool(s.get("truncated")) for s in samples]
        share = sum(truncated) / len(truncated) if truncated else 0.0
        at_cap = (self.cap and isinstance(length, (int, float)) and length >= AT_CAP_SHARE * self.cap)
        if not at_cap and share < TRUNCATED_SHARE:
            return None
        seen = (f"mean completion {length:.0f} of {self.cap} tokens" if at_cap else
                f"{100 * share:.0f}% of episodes cut at the cap")
        return HealthWarning(
            "length-at-cap", self._step(), "completions run to the length cap", seen,
            "Answers are cut before they end, so they score 0 whatever they held; the reward then measures the cap.",
            "raise --max-completion-tokens (and the per-turn limit), add an overlong penalty (DAPO's "
            "overlong_buffer), or shorten the prompt's demonstrations.")

    def _clip(self) -> HealthWarning | None:
        clip = self.history[-1].get("clip_frac")
        if not isinstance(clip, (int, float)) or clip < self.clip_bar:
            return None
        return HealthWarning(
            "clip-saturated", self._step(), "the clip acts on most of the update",
            f"clip fraction {clip:.2f} (bar {self.clip_bar})",
            "The policy moves far from the one that sampled the batch in each update, so most tokens get no "
            "gradient: training slows and the ratio estimates are unreliable.",
            "a lower learning rate or fewer updates per batch (--mini-batches).")

    def _zero_advantage(self) -> HealthWarning | None:
        recent = self._series("zero_advantage_groups_frac")[-PERSIST:]
        if len(recent) < PERSIST or min(recent) < ZERO_ADVANTAGE_SHARE:
            return None
        return HealthWarning(
            "no-signal", self._step(), "most groups carry no advantage",
            f"{100 * min(recent):.0f}% or more of the groups had equal rewards in each of the last {PERSIST} steps",
            "When every sample of a prompt scores the same (all wrong or all right), a group-relative algorithm has "
            "nothing to learn from it: these steps change nothing.",
            "problems at a level the model solves some of the time (the environment's levels), a warm start "
            "(--sft-steps), larger groups (--group-size), or DAPO's dynamic sampling.")

    def _kl(self) -> HealthWarning | None:
        series = self._series("kl")
        if not series:
            return None
        now = series[-1]
        before = series[-1 - PERSIST] if len(series) > PERSIST else None
        grew = before is not None and before >= KL_BASE and now >= max(KL_RISING, KL_GROWTH * before)
        if now < KL_LIMIT and not grew:
            return None
        seen = f"KL {now:.3f}" + (f", {now / before:.0f}x its value {PERSIST} steps before" if grew else "")
        return HealthWarning(
            "kl-runaway", self._step(), "the policy is running away from the reference", seen,
            "The model drifts far from where it started, which often comes before reward hacking or broken text.",
            "a larger KL coefficient (--beta), a lower learning rate, or an earlier checkpoint.")

    def _hacking(self) -> HealthWarning | None:
        rewards, accuracy = self._series("reward_mean"), self._series("accuracy")
        if len(rewards) < 2 * PERSIST or len(accuracy) < 2 * PERSIST or rewards == accuracy:
            return None
        reward_gain = sum(rewards[-PERSIST:]) / PERSIST - sum(rewards[:PERSIST]) / PERSIST
        accuracy_gain = sum(accuracy[-PERSIST:]) / PERSIST - sum(accuracy[:PERSIST]) / PERSIST
        if reward_gain < HACK_MARGIN or accuracy_gain > -HACK_MARGIN:
            return None
        return HealthWarning(
            "reward-hacking", self._step(), "reward climbs while success falls",
            f"reward {reward_gain:+.2f} and success {accuracy_gain:+.2f} (mean of the last {PERSIST} steps against "
            f"the first {PERSIST})",
            "The model found a way to raise the reward without solving more problems (format or shaping terms, a "
            "loophole in the checker): the reward no longer measures the task.",
            "read the latest transcripts; lower or remove the shaping terms (format reward), or tighten the checker.")


def check_run(metrics: list[dict], samples: list[dict], max_completion_tokens: int | None = None,
              sequence_level_clip: bool = False) -> list[HealthWarning]:
    """Replay a run's ``metrics.jsonl`` rows and ``samples.jsonl`` rows (each with its ``step``) through a
    ``HealthMonitor``: every warning the run raised, in step order."""
    by_step: dict[int, list[dict]] = {}
    for s in samples:
        by_step.setdefault(s.get("step"), []).append(s)
    monitor = HealthMonitor(max_completion_tokens, sequence_level_clip)
    return [w for m in metrics for w in monitor.update(m, by_step.get(m.get("step")))]
