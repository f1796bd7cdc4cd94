r"""KTO: Kahneman-Tversky Optimization on unpaired episodes (Ethayarajh et al. 2024, arXiv 2402.01306).

Data
    KTO needs no pairs, only a binary label per episode. For ``sample_prompts`` train problems the starting
    model samples ``group_size`` episodes each (the shared rollout); a correct episode is *desirable*, an
    incorrect one *undesirable*. Unlike DPO, a prompt whose samples are all right or all wrong still gives
    data. The labelled episodes are written to ``RUN/episodes.jsonl`` (``RunDir.episodes_path``) and ``--samples-file FILE`` reuses them.

Objective (Eq. (7) of the authors' first version of arXiv 2402.01306, the numbering TRL's KTOTrainer cites;
this docstring earlier took Eq. (8) and a v5 numbering from a secondary paper card, which is not relied on
here; the paper's own text is not readable here), with the implicit reward r(x, y) = log pi(y|x) -
log pi_ref(y|x) summed over *model* tokens::

    z_0 = max(0, mean_i [log pi(y_{i+1}|x_i) - log pi_ref(y_{i+1}|x_i)])   the reference point: a KL estimate
                                                      from mismatched (prompt, completion) pairs of the batch,
                                                      without gradient
    v(x, y) = lambda_D * sigmoid(beta * (r(x, y) - z_0))   if y is desirable
              lambda_U * sigmoid(beta * (z_0 - r(x, y)))   if y is undesirable
    L = mean over the batch of (lambda_y - v(x, y))

The value v is the prospect-theory utility: gains and losses are measured against the reference point
z_0 and saturate (the sigmoid), and lambda_D / lambda_U weigh gains against losses: with n_D, n_U the
desirable and undesirable counts, the authors' v1 advises lambda_D n_D / (lambda_U n_U) in [1, 4/3] (its
Eq. (8); TRL's KTOTrainer warns outside [1, 1.33] on the same grounds). The earlier [1, 3/2] came from the
same secondary card and is withdrawn.

Logged: rewards/chosen and rewards/rejected (beta * r averaged over the desirable / undesirable episodes, 0
if a batch has none), their difference rewards/margins (the progress bar's reward column), kl (z_0), and
``accuracy``: the fraction of episodes on the side of z_0 the loss wants. ``update(ctx, None)`` is one AdamW
step on ``samples_per_step`` episodes, drawn as a function of (seed, step) so resume is exact.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ...algorithm import Context
from ...common import seed_everything
from .dpo import _sample_json, sequence_logps
from ...implementations import latex_number
from ...options import Options, option
from ...rollout import Sample, rollout
from .offline import OfflineAlgorithm, epoch_indices


@dataclass
class Config(Options):
    """KTO switches."""

    beta: float = option(0.1, "beta: scale of the implicit reward inside the value function.", low=1e-6, high=100.0)
    desirable_weight: float = option(1.0, "lambda_D: weight of desirable (correct) episodes.", low=0.0, high=100.0)
    undesirable_weight: float = option(1.0, "lambda_U: weight of undesirable (incorrect) episodes.", low=0.0,
                                       high=100.0)
    samples_per_step: int = option(8, "Labelled episodes per optimizer step.", low=2, high=4096)
    sample_prompts: int = option(64, "Train prompts rolled out (group_size samples each) to build the data.", low=1,
                                 high=100000)
    samples_file: str = option("", "Reuse these labelled episodes (a RUN/episodes.jsonl) instead of sampling.")


def kto_loss(logps, ref_logps, desirable, kl, beta: float = 0.1, desirable_weight: float = 1.0,
             undesirable_weight: float = 1.0):
    """Sequence log-likelihoods (N,), labels (N,) bool and the reference point z_0 -> (mean loss, metrics)."""
    r = logps - ref_logps
    kl = torch.as_tensor(kl, dtype=r.dtype, device=r.device).detach()
    losses = torch.where(desirable, desirable_weight * (1 - torch.sigmoid(beta * (r - kl))),
                         undesirable_weight * (1 - torch.sigmoid(beta * (kl - r))))
    with torch.no_grad():
        rewards = beta * r.detach()
        n_d, n_u = int(desirable.sum()), int((~desirable).sum())
        chosen = float(rewards[desirable].mean()) if n_d else 0.0
        rejected = float(rewards[~desirable].mean()) if n_u else 0.0
        right_side = torch.where(desirable, r > kl, r < kl).float().mean()
        metrics = {"rewards/chosen": chosen, "rewards/rejected": rejected, "rewards/margins": chosen - rejected,
                   "kl": float(kl), "accuracy": float(right_side), "desirable_fraction": n_d / max(n_d + n_u, 1),
                   "logps/chosen": float(logps.detach()[desirable].mean()) if n_d else 0.0,
                   "logps/rejected": float(logps.detach()[~desirable].mean()) if n_u else 0.0}
    return losses.mean(), metrics


def mismatched(samples: list[Sample]) -> list[Sample]:
    """Sample i's prompt with sample i+1's completion (cyclically): draws from pi(y'|x) with y' unrelated to x,
    on which the KL reference point is estimated."""
    out = []
    for i, s in enumerate(samples):
        other = samples[(i + 1) % len(samples)]
        out.append(Sample(prompt_ids=s.prompt_ids, completion_ids=other.completion_ids, loss_mask=other.loss_mask,
                          old_logprobs=[0.0] * len(other.completion_ids)))
    return out


def save_samples(path: Path, samples: list[Sample], uids: list[str], stats: dict | None = None) -> None:
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        if stats is not None:
            f.write(json.dumps({"stats": stats}) + "\n")
        for uid, s in zip(uids, samples):
            f.write(json.dumps({"uid": uid, "prompt_ids": s.prompt_ids, "sample": _sample_json(s)}) + "\n")
    tmp.replace(path)


def load_samples(path: Path) -> list[Sample]:
    out = []
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        if "stats" in row:
            continue
        d = row["sample"]
        out.append(Sample(prompt_ids=row["prompt_ids"], completion_ids=d["completion_ids"], loss_mask=d["loss_mask"],
                          old_logprobs=[0.0] * len(d["completion_ids"]), reward=d["reward"], done=True,
                          segments=d["segments"], info={"correct": d["correct"]}))
    return out


class KTO(OfflineAlgorithm):
    name = "kto"
    Config = Config

    @classmethod
    def objective(cls, cfg: Config) -> str:
        b = latex_number(cfg.beta)
        return (r"\mathcal{L}=\mathbb{E}\big[\lambda_y-v(x,y)\big],\ v=\begin{cases}\lambda_D\,"
                rf"\sigma({b}(r_\theta-z_0)) & y\ \text{{desirable}}\\ \lambda_U\,"
                rf"\sigma({b}(z_0-r_\theta)) & y\ \text{{undesirable}}\end{{cases}},\ r_\theta=\log\tfrac{{\pi_\theta(y|x)}}"
                rf"{{\pi_{{ref}}(y|x)}},\ \lambda_D={latex_number(cfg.desirable_weight)},\ "
                rf"\lambda_U={latex_number(cfg.undesirable_weight)}")
    data_file_option = "samples_file"

    def __init__(self, ctx: Context):
        """Build (or load) the labelled episodes and their reference log-likelihoods."""
        super().__init__(ctx)
        path = self.run_dir(ctx).episodes_path  # not samples.jsonl: that is the trainer's per-step transcripts
        self.build_once(ctx, path, self.cfg.samples_file, lambda path: self._build(ctx, path))
        self.samples = load_samples(path)
        if len(self.samples) < 2:
            raise RuntimeError(f"fewer than 2 labelled episodes in {path}")
        self.ref_logps = self._logps(ctx, ctx.ref if ctx.ref is not None else ctx.policy, self.samples)

    def _build(self, ctx: Context, path: Path) -> None:
        problems = self.offline_prompts(ctx, self.cfg.sample_prompts)
        t0, samples, uids = time.time(), [], []
        with torch.random.fork_rng(devices=[]):
            seed_everything(self.offline_seed(ctx))
            for start in range(0, len(problems), 8):
                chunk = problems[start:start + 8]
                got, _ = rollout(ctx.policy, ctx.tokenizer, ctx.task, chunk, ctx.rollout_config)
                samples += got
                uids += [str(getattr(chunk[s.group], "uid", start + s.group)) for s in got]
        n_good = sum(bool(s.info.get("correct")) for s in samples)
        save_samples(path, samples, uids, {"sample_prompts": len(problems), "samples": len(samples),
                                           "desirable": n_good, "build_s": round(time.time() - t0, 1)})

    def _logps(self, ctx: Context, model, samples: list[Sample], grad: bool = False) -> torch.Tensor:
        """Sequence log-likelihoods in micro-batches (without gradient unless ``grad``)."""
        micro, pad = max(1, ctx.train.micro_batch_size), ctx.tokenizer.pad_token_id
        with torch.set_grad_enabled(grad):
            was = model.training
            if not grad:
                model.eval()
            parts = [sequence_logps(model, samples[i:i + micro], pad, ctx.device, ctx.train.temperature)
                     for i in range(0, len(samples), micro)]
            model.train(was)
        return torch.cat(parts)

    def sample_indices(self, seed: int, step: int) -> list[int]:
        """The step's episodes in epoch order (``offline.epoch_indices``)."""
        return epoch_indices(len(self.samples), self.cfg.samples_per_step, seed, step)

    def update(self, ctx: Context, batch=None) -> dict:
        cfg, tcfg = self.cfg, ctx.train
        idx = self.sample_indices(tcfg.seed, ctx.step)
        chosen = [self.samples[i] for i in idx]
        ref = ctx.ref if ctx.ref is not None else ctx.policy
        # the reference point z_0, for the whole batch before any gradient (it is a constant in the loss)
        swapped = mismatched(chosen)
        kl = (self._logps(ctx, ctx.model, swapped) - self._logps(ctx, ref, swapped)).mean().clamp(min=0).cpu()
        ctx.policy.train()
        ctx.optimizer.zero_grad(set_to_none=True)
        micro, pad = max(1, tcfg.micro_batch_size), ctx.tokenizer.pad_token_id
        rows, total = [], 0.0
        for start in range(0, len(chosen), micro):
            part = chosen[start:start + micro]
            logps = sequence_logps(ctx.model, part, pad, ctx.device, tcfg.temperature)
            dev = logps.device
            loss, metrics = kto_loss(logps, self.ref_logps[idx[start:start + micro]].to(dev),
                                     torch.tensor([bool(s.info.get("correct")) for s in part], device=dev),
                                     kl.to(dev), cfg.beta, cfg.desirable_weight, cfg.undesirable_weight)
            (loss * len(part) / len(chosen)).backward()
            total += float(loss.detach()) * len(part) / len(chosen)
            rows.append((metrics, part))
        grad_norm = float(torch.nn.utils.clip_grad_norm_(ctx.policy.parameters(), tcfg.max_grad_norm))
        ctx.optimizer.step()
        m = self._combine(rows, len(chosen))
        self.last_samples = chosen[:2]
        return {"loss": total, **m, "reward_mean": m["rewards/margins"], "grad_norm": grad_norm,
                "samples": len(self.samples)}

    @staticmethod
    def _combine(rows, n: int) -> dict:
        """Micro-batch metrics -> the batch's: per-class means weighted by each micro-batch's class counts."""
        nd = [sum(bool(s.info.get("correct")) for s in part) for _, part in rows]
        nu = [len(part) - d for (_, part), d in zip(rows, nd)]
        def wmean(key, weights):
            return sum(mt[key] * w for (mt, _), w in zip(rows, weights)) / max(sum(weights), 1)
        chosen, rejected = wmean("rewards/chosen", nd), wmean("rewards/rejected", nu)
        return {"rewards/chosen": chosen, "rewards/rejected": rejected, "rewards/margins": chosen - rejected,
                "logps/chosen": wmean("logps/chosen", nd), "logps/rejected": wmean("logps/rejected", nu),
                "kl": rows[0][0]["kl"], "accuracy": wmean("accuracy", [len(p) for _, p in rows]),
                "desirable_fraction": sum(nd) / n}


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation(
        "calculator-kto", "KTO on labelled tool-use episodes", "kto", "calculator", "Prospect-theoretic alignment on unpaired episodes: correct ones desirable, incorrect ones undesirable.",
        nodes=("alg-kto",),
        changes="KTO replaces DPO's pairs with a binary label per episode: every correct calculator episode is "
                "desirable and every incorrect one undesirable, so prompts whose samples are all right or all "
                "wrong still count. Each episode's implicit reward (its log-ratio to the reference model) is judged "
                "against a reference point, a batch estimate of the policy's KL from the reference on mismatched "
                "prompt/completion pairs, through a saturating sigmoid value function with separate weights for "
                "gains and losses."
                " Defaults: beta 0.1 and equal weights lambda_D = lambda_U = 1; the authors' v1 "
                "advises lambda_D n_D / (lambda_U n_U) in [1, 4/3] (eq. 8), so with more undesirable "
                "than desirable episodes lambda_D should be raised.",
        paper="KTO: Model Alignment as Prospect Theoretic Optimization (Ethayarajh, Xu, Muennighoff, Jurafsky, Kiela; "
              "arXiv 2402.01306)",
        survey_vs_paper="The survey's table expands KTO as 'Knowledge transfer optimization' with 'teacher "
                        "stabilization' and a 'teacher-student logit' signal; the paper's KTO is Kahneman-Tversky "
                        "Optimization, which has no teacher: it learns from a binary desirable/undesirable label per "
                        "output against a KL reference point."),
)
