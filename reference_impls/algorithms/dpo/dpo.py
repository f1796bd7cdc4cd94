r"""DPO and IPO on preference pairs built from the environments (Rafailov et al. 2023; Azar et al. 2024).

Pairs
    For ``pair_prompts`` train problems, the starting model (normally the SFT model) samples
    ``group_size`` episodes each with the shared rollout (temperature ``cfg.temperature``); a pair is
    (a correct episode, an incorrect episode) of the *same prompt*: chosen y_w, rejected y_l. Prompts
    whose samples are all right or all wrong give no pair, unless ``demonstration_chosen`` is on: then
    a prompt with no correct sample pairs the environment's own demonstration (``EnvSpec.demonstration``,
    replayed through a fresh episode of the env and kept only if the env scores it correct: the chosen
    episode is a verified one, tokenised as a rollout would be, with the env's observations masked)
    against its first wrong sample. That is how a model that never solves a problem yet (the untrained
    tiny model, a base model before the warm start) still gets pairs; the chosen side is then off-policy
    (written by the env's solver, not sampled), as in SFT-then-DPO setups that take the reference
    answer as y_w. The pairs are written to
    ``RUN/pairs.jsonl`` (token ids, loss masks, transcripts), and a run started with
    ``--pairs-file FILE`` trains on exactly those pairs, so a run can be repeated exactly.

Log-likelihood of an episode = sum over *model* tokens only (tool output is masked as everywhere
else): ``log pi(y|x) = sum_t m_t log pi(y_t | x, y_<t)``. pi_ref is the frozen starting model; its
log-likelihoods are computed once when the pairs are loaded.

Losses (``Config.loss``), with h = [log pi(y_w) - log pi_ref(y_w)] - [log pi(y_l) - log pi_ref(y_l)]::

    sigmoid (DPO, Eq. (7) of arXiv 2305.18290):  L = -log sigmoid(beta * h)
    ipo     (IPO, Eq. (17) of arXiv 2310.12036):  L = (h_bar - 1 / (2 beta))^2,  h_bar = h with each log-ratio
                           divided by the episode's number of model tokens (TRL's normalisation, agreed
                           with the IPO authors; the paper's own loss uses the unnormalised h)

Equation numbers (docs/algorithms_dpo_ppo_families.md): DPO's Eq. (7) agrees with a paper card that
states it was checked against arXiv v3 (the paper's own text is not readable here). IPO's Eq. (17), the
sampled loss E[(h_pi(y_w, y_l) - tau^-1 / 2)^2] (Section 5.2, with Algorithm 1 "Sampled IPO"; our beta is
its tau), was checked against a copy of the paper's full text (version not stated in it): it follows from the
identity-Psi objective, Eq. (8), through the population losses Eqs. (13) and (16).

Implicit rewards r_w = beta (log pi(y_w) - log pi_ref(y_w)), r_l likewise; logged: reward accuracy
(r_w > r_l), margin (r_w - r_l), chosen/rejected rewards and log-probs (the names TRL logs).

Data parallel (torchrun): rank 0 builds and writes the pairs, the other ranks wait and read the same
file. A step's ``pairs_per_step`` pairs are the same on every rank and split across ranks (rank r takes
every world-th pair from r); each rank weighs its pairs' losses by their share of the step, and every rank
runs as many micro-batches (zero-weight passes where it has fewer), so the averaged gradient is the
gradient of the mean loss over the step's pairs, as in one process.

Integration with the trainer (``reference_impls/algorithm.py``): DPO is offline (``online = False``: the
trainer runs no rollout per step). :class:`DPO` builds or loads the pairs and their reference log-probs
when the run starts, and ``update(ctx, None)`` is one AdamW step on ``pairs_per_step`` pairs, drawn as a
function of (seed, step) so resume is exact. The run directory, seeding, step counting, metrics,
checkpoints, resume and signals are the trainer's.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ...algorithm import Context, Metrics
from ...common import collate, completion_logprobs, seed_everything
from ...options import Options, option
from ...rollout import RolloutConfig, Sample, rollout
from .offline import OfflineAlgorithm, epoch_indices


@dataclass
class PairOptions(Options):
    """Where the preference pairs come from and how many a step trains on (shared by the DPO family)."""

    pairs_per_step: int = option(8, "Preference pairs per optimizer step.", low=1, high=4096)
    pair_prompts: int = option(64, "Train prompts rolled out (group_size samples each) to build pairs.", low=1,
                               high=100000)
    pairs_file: str = option("", "Reuse these pairs (a RUN/pairs.jsonl) instead of sampling new ones.")
    demonstration_chosen: bool = option(False, "A prompt whose samples are all wrong pairs the env's demonstration "
                                        "(replayed and verified correct) as chosen with a wrong sample as rejected, "
                                        "so a model that solves nothing yet still gets pairs.")


@dataclass
class Config(PairOptions):
    """DPO switches."""

    beta: float = option(0.1, "KL strength (IPO's tau); a reference model is always kept.", low=1e-6, high=100.0)
    loss: str = option("sigmoid", "sigmoid (DPO) or ipo (IPO's squared loss on the preference margin).",
                       choices=("sigmoid", "ipo"), aliases=("loss_type",))


# ----------------------------------------------------------------------------------------------------
# the loss

def dpo_loss(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, beta: float = 0.1,
             loss_type: str = "sigmoid", chosen_lengths=None, rejected_lengths=None):
    """Per-pair sequence log-likelihoods (N,) -> (mean loss, metrics). ``*_lengths`` (model tokens per
    episode) are needed by ``ipo`` only."""
    chosen_logratios = chosen_logps - ref_chosen_logps
    rejected_logratios = rejected_logps - ref_rejected_logps
    if loss_type == "sigmoid":
        losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    elif loss_type == "ipo":
        h = chosen_logratios / chosen_lengths.clamp(min=1.0) - rejected_logratios / rejected_lengths.clamp(min=1.0)
        losses = (h - 1 / (2 * beta)) ** 2
    else:
        raise ValueError(f"loss_type must be sigmoid or ipo, not {loss_type!r}")
    with torch.no_grad():
        rc, rr = beta * chosen_logratios.detach(), beta * rejected_logratios.detach()
        metrics = {"rewards/chosen": float(rc.mean()), "rewards/rejected": float(rr.mean()),
                   "rewards/accuracies": float((rc > rr).float().mean()), "rewards/margins": float((rc - rr).mean()),
                   "logps/chosen": float(chosen_logps.detach().mean()),
                   "logps/rejected": float(rejected_logps.detach().mean())}
    return losses.mean(), metrics



def sequence_logps(model, samples: list[Sample], pad_id: int, device, temperature: float = 1.0) -> torch.Tensor:
    """sum_t m_t log pi(y_t | ...) per sample, (N,)."""
    batch = collate(samples, pad_id, device)
    logps, _ = completion_logprobs(model, batch, temperature)
    return (logps * batch["loss_mask"]).sum(-1)


# ----------------------------------------------------------------------------------------------------
# pairs

@dataclass
class Pair:
    uid: str
    chosen: Sample
    rejected: Sample
    ref_chosen: float = 0.0
    ref_rejected: float = 0.0


def pairs_from_samples(samples: list[Sample], uids: list[str]) -> list[Pair]:
    """One pair per group with both a correct and an incorrect episode: the first of each (in sample
    order, so the choice is deterministic)."""
    by_group: dict[int, list[Sample]] = {}
    for s in samples:
        by_group.setdefault(s.group, []).append(s)
    pairs = []
    for g, group in sorted(by_group.items()):
        good = [s for s in group if s.info.get("correct")]
        bad = [s for s in group if not s.info.get("correct")]
        if good and bad:
            pairs.append(Pair(uids[g], good[0], bad[0]))
    return pairs


def demonstration_episode(tokenizer, task, problem, env_config, prompt_ids: list[int]) -> Sample | None:
    """The env's demonstration of ``problem`` replayed through a fresh episode, laid out as a rollout lays
    out a sample: each model segment tokenised as written (the last one ending with EOS, as the warm start
    teaches), each observation the env actually returns appended as masked env tokens. ``None`` unless
    the env ends the episode with ``info["correct"]`` (a demonstration that does not verify is no chosen
    episode). ``prompt_ids``: the prompt it answers (the rejected sample's)."""
    env = task.make(problem, env_config)
    env.reset()
    sample = Sample(prompt_ids=list(prompt_ids), segments=[{"role": "prompt", "text": tokenizer.decode(prompt_ids)}])
    model_segments = [text for role, text in task.demonstrate(problem, env_config) if role == "model"]
    for k, text in enumerate(model_segments):
        written = text + (tokenizer.eos_token if k == len(model_segments) - 1 else "")
        ids = tokenizer(written, add_special_tokens=False)["input_ids"]
        sample.completion_ids += ids
        sample.loss_mask += [1] * len(ids)
        sample.old_logprobs += [0.0] * len(ids)
        sample.segments.append({"role": "model", "text": written})
        sample.turns += 1
        result = env.step(text)
        if result.done:
            if k != len(model_segments) - 1 or not result.info.get("correct"):
                return None
            sample.done, sample.reward, sample.info = True, float(result.reward), dict(result.info)
            return sample
        obs = tokenizer(result.observation or "", add_special_tokens=False)["input_ids"]
        sample.completion_ids += obs
        sample.loss_mask += [0] * len(obs)
        sample.old_logprobs += [0.0] * len(obs)
        sample.segments.append({"role": "env", "text": tokenizer.decode(obs)})
    return None  # the demonstration ended without the env's verdict


def build_pairs(policy, tokenizer, task, problems, rollout_cfg: RolloutConfig, seed: int = 0,
                batch_prompts: int = 8, pair_fn=pairs_from_samples,
                demonstration_chosen: bool = False) -> tuple[list[Pair], dict]:
    """Sample ``group_size`` episodes per problem with ``policy`` and pair them with ``pair_fn`` (default:
    correct with incorrect ones; LCPO, lcpo.py, pairs the shortest with the longest). ``demonstration_chosen``:
    a group with no correct sample pairs the verified demonstration with a wrong sample instead."""
    seed_everything(seed)
    t0 = time.time()
    pairs, n_samples, n_correct, n_demo, generated = [], 0, 0, 0, 0
    for start in range(0, len(problems), batch_prompts):
        chunk = problems[start:start + batch_prompts]
        samples, rstats = rollout(policy, tokenizer, task, chunk, rollout_cfg)
        n_samples += len(samples)
        generated += int(rstats["generated_tokens"])
        n_correct += sum(bool(s.info.get("correct")) for s in samples)
        uids = [str(getattr(p, "uid", start + i)) for i, p in enumerate(chunk)]
        found = pair_fn(samples, uids)
        if demonstration_chosen:
            paired = {p.uid for p in found}
            for g, problem in enumerate(chunk):
                group = [s for s in samples if s.group == g]
                if uids[g] in paired or any(s.info.get("correct") for s in group):
                    continue  # sampled pairs come first; an all-correct group has no rejected episode
                demo = demonstration_episode(tokenizer, task, problem, rollout_cfg.env_config, group[0].prompt_ids)
                if demo is not None:
                    found.append(Pair(uids[g], demo, group[0]))
                    n_demo += 1
            found.sort(key=lambda p: uids.index(p.uid))  # prompt order, as without demonstrations
        pairs += found
    stats = {"pair_prompts": len(problems), "pairs": len(pairs), "samples": n_samples,
             "sample_accuracy": n_correct / max(n_samples, 1), "generated_tokens": generated,
             "build_s": round(time.time() - t0, 1)}
    if demonstration_chosen:
        stats["demonstration_pairs"] = n_demo
    return pairs, stats


def _sample_json(s: Sample) -> dict:
    return {"completion_ids": s.completion_ids, "loss_mask": s.loss_mask, "reward": s.reward,
            "correct": bool(s.info.get("correct")), "segments": s.segments}


def save_pairs(path: Path, pairs: list[Pair], stats: dict | None = None) -> None:
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        if stats is not None:
            f.write(json.dumps({"stats": stats}) + "\n")
        for p in pairs:
            f.write(json.dumps({"uid": p.uid, "prompt_ids": p.chosen.prompt_ids, "chosen": _sample_json(p.chosen),
                                "rejected": _sample_json(p.rejected)}) + "\n")
    tmp.replace(path)


def load_pair_stats(path: Path) -> dict:
    """The stats line ``save_pairs`` wrote (how many episodes were sampled, their tokens, ``build_s``), or {}.
    Offline algorithms pay for their samples before the first step, so a run's cost must add these."""
    path = Path(path)
    if not path.is_file():
        return {}
    with open(path) as f:
        first = f.readline()
    row = json.loads(first) if first.strip() else {}
    return row.get("stats", {})


def load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        if "stats" in row:
            continue
        side = {}
        for name in ("chosen", "rejected"):
            d = row[name]
            side[name] = Sample(prompt_ids=row["prompt_ids"], completion_ids=d["completion_ids"],
                                loss_mask=d["loss_mask"], old_logprobs=[0.0] * len(d["completion_ids"]),
                                reward=d["reward"], done=True, segments=d["segments"], info={"correct": d["correct"]})
        pairs.append(Pair(row["uid"], side["chosen"], side["rejected"]))
    return pairs


# ----------------------------------------------------------------------------------------------------
# the algorithm

class DPO(OfflineAlgorithm):
    name = "dpo"
    Config = Config
    data_file_option = "pairs_file"
    min_group_size = 2  # pairs need a correct and an incorrect sample of one prompt
    no_pairs_reason = ("every prompt's samples were all right or all wrong (--demonstration-chosen pairs the env's "
                       "verified demonstration with a wrong sample)")

    def __init__(self, ctx: Context):
        """Build (or load) the pairs and the reference log-likelihoods."""
        super().__init__(ctx)
        path = self.run_dir(ctx).pairs_path
        self.pair_stats = None

        def build(path: Path) -> None:
            problems = self.offline_prompts(ctx, self.cfg.pair_prompts)
            with torch.random.fork_rng(devices=[]):
                pairs, stats = self.build_pairs(ctx, problems, ctx.rollout_config, seed=self.offline_seed(ctx))
            save_pairs(path, pairs, stats)
            self.pair_stats = stats

        self.build_once(ctx, path, self.cfg.pairs_file, build)
        self.pairs = load_pairs(path)
        if not self.pairs:
            raise RuntimeError(f"no preference pairs in {path}: {self.no_pairs_reason} "
                               "(raise --pair-prompts or --group-size, or start from another model)")
        if self.uses_reference(self.cfg):
            self.reference_logps(ctx)

    def build_pairs(self, ctx: Context, problems: list, rollout_cfg: RolloutConfig, seed: int):
        """(pairs, stats) sampled from the starting model; Step-DPO (step_dpo.py) builds step-level pairs."""
        return build_pairs(ctx.policy, ctx.tokenizer, ctx.task, problems, rollout_cfg, seed=seed,
                           demonstration_chosen=self.cfg.demonstration_chosen)

    def reference_logps(self, ctx: Context) -> None:
        """Each pair's reference log-likelihoods, once (reference-free variants skip this)."""
        ref = ctx.ref if ctx.ref is not None else ctx.policy
        pad, tcfg = ctx.tokenizer.pad_token_id, ctx.train
        chunk_size = max(1, tcfg.micro_batch_size // 2)
        with torch.no_grad():
            was = ref.training
            ref.eval()
            for i in range(0, len(self.pairs), chunk_size):
                chunk = self.pairs[i:i + chunk_size]
                lp = sequence_logps(ref, [p.chosen for p in chunk] + [p.rejected for p in chunk], pad, ctx.device,
                                    tcfg.temperature).cpu()
                for j, p in enumerate(chunk):
                    p.ref_chosen, p.ref_rejected = float(lp[j]), float(lp[len(chunk) + j])
            ref.train(was)

    def pair_indices(self, seed: int, step: int) -> list[int]:
        """The step's pairs in epoch order (``offline.epoch_indices``)."""
        return epoch_indices(len(self.pairs), self.cfg.pairs_per_step, seed, step)

    # hooks the DPO-family variants (dpo_variants.py) override: which pairs a step trains on, and the loss

    def step_pairs(self, ctx: Context) -> list[Pair]:
        """This step's pairs (``pairs_per_step`` of them, a function of (seed, step))."""
        self.step_stats = {}  # extra metrics of this step's selection, logged with the update's
        return [self.pairs[i] for i in self.pair_indices(ctx.train.seed, ctx.step)]

    def pair_loss(self, chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, chosen_lengths,
                  rejected_lengths):
        """(mean loss over these pairs, metrics) from sequence log-likelihoods and model-token counts (N,)."""
        return dpo_loss(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps, self.cfg.beta,
                        self.cfg.loss, chosen_lengths, rejected_lengths)

    def update(self, ctx: Context, batch=None) -> dict:
        """One optimizer step on ``pairs_per_step`` pairs. The metrics' ``reward_mean`` and ``accuracy`` (the
        progress bar's columns) are the implicit reward margin and the reward accuracy."""
        tcfg = ctx.train
        step_pairs = self.step_pairs(ctx)  # the same on every rank
        chosen = step_pairs[ctx.rank::ctx.world]  # this rank's share (all of them in one process)
        micro = max(1, tcfg.micro_batch_size // 2)
        pad = ctx.tokenizer.pad_token_id
        # every rank runs as many micro-batches as the rank with the largest share
        n_micro = math.ceil(len(step_pairs[0::ctx.world]) / micro) if step_pairs else 0
        ctx.policy.train()
        ctx.optimizer.zero_grad(set_to_none=True)
        rows, total = [], 0.0
        for k in range(n_micro):
            part, weight = chosen[k * micro:(k + 1) * micro], 1.0
            if not part:  # a zero-weight pass keeps DDP's all-reduce in step
                part, weight = step_pairs[:1], 0.0
            logps = sequence_logps(ctx.model, [p.chosen for p in part] + [p.rejected for p in part], pad,
                                   ctx.device, tcfg.temperature)
            c, r = logps[:len(part)], logps[len(part):]
            dev = c.device
            loss, metrics = self.pair_loss(
                c, r, torch.tensor([p.ref_chosen for p in part], device=dev),
                torch.tensor([p.ref_rejected for p in part], device=dev),
                torch.tensor([float(sum(p.chosen.loss_mask)) for p in part], device=dev),
                torch.tensor([float(sum(p.rejected.loss_mask)) for p in part], device=dev))
            # share of the step's mean; x world because DDP averages the ranks' gradients
            (loss * weight * len(part) * ctx.world / len(step_pairs)).backward()
            total += weight * float(loss.detach()) * len(part) / max(len(chosen), 1)
            rows.append((metrics, weight * len(part)))  # a zero-weight pass still names the metrics
        grad_norm = float(torch.nn.utils.clip_grad_norm_(ctx.policy.parameters(), tcfg.max_grad_norm))
        ctx.optimizer.step()
        self.last_samples = [s for p in chosen[:1] for s in (p.chosen, p.rejected)]
        n_local = float(len(chosen))
        m = {key: sum(mt[key] * w for mt, w in rows) / max(n_local, 1.0) for key in (rows[0][0] if rows else {})}
        # means over the step's pairs: each rank weighted by its share when Metrics reduces over ranks
        out = Metrics().update({"loss": total, **m, "reward_mean": m.get("rewards/margins", 0.0),
                                "accuracy": m.get("rewards/accuracies", 0.0)}, n_local)
        return out.update({"grad_norm": grad_norm, "pairs": len(self.pairs), **self.step_stats})


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ...implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("calculator-dpo", "DPO on tool-use preference pairs", "dpo", "calculator", "Offline preference optimisation on correct vs incorrect rollouts of the same prompt.",
                   nodes=("alg-dpo-family", "alg-dpo")),
    Implementation("calculator-ipo", "IPO on tool-use preference pairs", "dpo", "calculator", "DPO with IPO's squared loss on the preference margin.", {"loss": "ipo"}, nodes=("alg-ipo",)),
)
