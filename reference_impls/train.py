"""RL training loop and CLI for the reference implementations.

Usage::

    python -m reference_impls.train --algo grpo --env calculator --model tiny --steps 2 --out runs/x
    python -m reference_impls.train --algo grpo --model DIR_FROM_SFT --steps 60 --out runs/y \\
        --loss-type dapo --epsilon-high 0.28 --dynamic-sampling --lr 1e-5
    python -m reference_impls.train --resume runs/y --steps 80        # continue (and extend) a run
    python -m reference_impls.train --algo grpo --model smollm2-135m-instruct --sft-steps 12 ...
                                      # SFT warm start in-process first (same as sft.py), then RL
    torchrun --nproc_per_node=2 -m reference_impls.train ...          # data parallel (DDP, gloo on CPU)

Every algorithm-specific switch (``--loss-type``, ``--beta``, ``--importance-sampling-level`` ...) is
generated from the algorithm's ``Config`` dataclass, so registering a new algorithm in ``ALGORITHMS``
(a module with ``Config``, ``prepare_batch`` and ``compute_loss``) or a new env with
``reference_impls.envs.register_env`` extends the CLI with no change here.

One step, top to bottom (``Trainer.train_step``)::

    problems  <- P prompts drawn from the train split (seeded by (seed, step, rank): resume is exact)
    samples   <- rollout(P x G episodes)                       reference_impls/rollout.py
    rewards   -> algo.prepare_batch -> advantages, keep mask  (reward shaping, dynamic sampling)
    for each of num_iterations passes, for each micro-batch:
        logps <- policy forward;  loss <- algo.compute_loss(...);  backward
    clip grad norm, AdamW step;  callbacks (metrics.jsonl, TensorBoard, progress bar);  checkpoint

Run directory::

    config.json  metrics.jsonl  samples.jsonl  status.json  tb/  checkpoints/step_000010/
    warm_start.jsonl (one line per SFT step when --sft-steps > 0)
    (model via save_pretrained + tokenizer, optimizer.pt, trainer_state.json, rng_rank*.pt)

Checkpoints are written to a temp folder and renamed, so a crash never leaves a half checkpoint.
SIGTERM/SIGINT: the current step finishes, a checkpoint is written, status.json says "stopped", exit 0
(during the warm start: it stops after the current SFT step, with no checkpoint; a resume starts over).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import random
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist

from . import dpo, grpo, ppo, rloo
from .callbacks import JsonlLogger, ProgressBar, TensorBoardLogger, truncate_jsonl
from .common import adamw, collate, completion_logprobs, seed_everything
from .envs import ENVS, get_env
from .models import MODEL_NAMES, load_policy
from .rollout import RolloutConfig, rollout

# optional hooks an algorithm module may define (see ppo.py, dpo.py):
#   setup(trainer) -> {name: module}   extra modules (PPO's critic), optimised and checkpointed with the policy
#   update(trainer, samples, rewards, full, ref_logps) -> metrics   its own optimisation phase (PPO)
#   train_step(trainer) -> (metrics, samples)   an offline step without rollouts (DPO)
ALGORITHMS = {"grpo": grpo, "rloo": rloo, "ppo": ppo, "dpo": dpo}


@dataclasses.dataclass
class TrainConfig:
    """Everything a run needs; saved as config.json. ``algo_config`` holds the algorithm's Config fields."""

    algo: str = "grpo"
    env: str = "calculator"
    model: str = "tiny"
    steps: int = 10
    out: str = "runs/run"
    seed: int = 0
    lr: float = 1e-5
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    prompts_per_step: int = 4  # P; the rollout batch is P * group_size episodes (per rank)
    group_size: int = 4  # G
    micro_batch_size: int = 8  # sequences per forward/backward (gradient accumulation inside a step)
    max_new_tokens_per_turn: int = 48
    max_completion_tokens: int = 160
    temperature: float = 1.0
    levels: str = "1,2,3"  # calculator levels of the train split
    families: str = ""  # comma-separated calculator families ("" = all of the chosen levels)
    env_options: dict = dataclasses.field(default_factory=dict)  # e.g. {"max_turns": 4, "format_reward": 0.1}
    train_pool: int = 4096  # size of the (balanced) train problem pool steps draw from
    checkpoint_every: int = 10
    max_wall_s: float = 0.0  # time budget: stop (checkpointed, state "completed") once exceeded; 0 = none
    keep_checkpoints: int = 2
    samples_per_step: int = 2
    # one prompt forward per group in the update (exact, faster; common.completion_logits); PPO's own
    # update does not use it, so benchmarks/ppo_vs_grpo_cost.py turns it off for a like-for-like comparison
    share_prompts: bool = True
    # supervised warm start before RL (sft.py), in the same process; 0 = none. SmolLM2 never writes a valid
    # tool call out of the box, so RL from the base model would see reward 0 on every sample.
    sft_steps: int = 0
    sft_examples: int = 96  # demonstration transcripts
    sft_lr: float = 5e-5
    sft_env: str = ""  # whose demonstrations ("" = env); the memory env uses "memory-format" (label-free)
    algo_config: dict = dataclasses.field(default_factory=dict)


# ----------------------------------------------------------------------------------------------------
# distributed helpers (single process when not launched by torchrun)

def dist_setup() -> tuple[int, int]:
    if "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def all_reduce(values: list[float], op=None) -> list[float]:
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=op if op is not None else dist.ReduceOp.SUM)
    return t.tolist()


def _MAX():
    return dist.ReduceOp.MAX if dist.is_initialized() else None


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


# ----------------------------------------------------------------------------------------------------

class WarmStartStopped(Exception):
    """A stop request arrived during the warm start (before any checkpoint exists)."""


class Trainer:
    def __init__(self, cfg: TrainConfig, task=None, model=None, tokenizer=None, resume: bool = False,
                 stop_event=None):
        self.cfg = cfg
        self.step = 0  # completed optimisation steps (restored from a checkpoint on resume)
        self.stop_event = stop_event  # a threading.Event set by a signal handler before the trainer exists
        self.rank, self.world = dist_setup()
        self.algo = ALGORITHMS[cfg.algo]
        self.algo_cfg = self.algo.Config(**cfg.algo_config)
        self.task = task or get_env(cfg.env)
        self.out = Path(cfg.out)
        self.device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu")
        if model is None:
            model, tokenizer = load_policy(cfg.model, device=self.device, seed=cfg.seed)
        self.policy, self.tokenizer = model, tokenizer
        # before the reference copy and the algorithm's setup: KL, DPO's pairs and PPO's critic all start
        # from the warm-started model. A resumed run's weights come from its checkpoint instead.
        self.warm_start_losses: list[float] = []
        if cfg.sft_steps > 0 and not (resume and latest_checkpoint(self.out) is not None):
            self.warm_start()
        # the reference exists only when a KL term is used (beta = 0 skips it: no memory, no forward)
        self.ref = None
        if getattr(self.algo_cfg, "beta", 0.0):
            self.ref = copy.deepcopy(self.policy).eval().requires_grad_(False)
        self.policy.train()
        self.model = self.policy
        if self.world > 1:
            self.model = torch.nn.parallel.DistributedDataParallel(self.policy)
        self.optimizer = adamw(self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.rollout_cfg = RolloutConfig(group_size=cfg.group_size, max_new_tokens_per_turn=cfg.max_new_tokens_per_turn,
                                         max_completion_tokens=cfg.max_completion_tokens, temperature=cfg.temperature,
                                         env_options=dict(cfg.env_options))
        self.pool = self._train_pool()
        self.extra_modules = self.algo.setup(self) if hasattr(self.algo, "setup") else {}
        self.wall_offset = 0.0
        self.stop_requested = False
        self.callbacks: dict[str, list] = {}
        self.last_metrics: dict = {}
        self.last_samples: list = []
        if resume:
            self._load_latest_checkpoint()

    def warm_start(self) -> None:
        """SFT on the env's demonstrations (``sft.demonstrations``), its own visible phase: one line per step
        in OUT/warm_start.jsonl and ``phase: warm-start`` in status.json."""
        from .sft import demonstrations, sft

        cfg = self.cfg
        t0 = time.time()
        samples = demonstrations(self.tokenizer, cfg.sft_env or cfg.env, cfg.sft_examples, cfg.seed)
        path = self.out / "warm_start.jsonl"
        if self.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            path.write_text("")
            self.write_status("running", phase="warm-start", sft_step=0, sft_steps=cfg.sft_steps)

        def log(step: int, loss: float) -> None:
            if self.rank == 0:
                with open(path, "a") as f:
                    f.write(json.dumps({"step": step, "steps": cfg.sft_steps, "loss": loss,
                                        "wall_s": time.time() - t0}) + "\n")
                self.write_status("running", phase="warm-start", sft_step=step, sft_steps=cfg.sft_steps)
            if self.stop_event is not None and self.stop_event.is_set():
                raise WarmStartStopped(f"stopped during the warm start (SFT step {step}/{cfg.sft_steps})")

        # every rank runs the same seeded SFT, so DDP replicas start identical
        self.warm_start_losses = sft(self.policy, self.tokenizer, samples, cfg.sft_steps, lr=cfg.sft_lr,
                                     seed=cfg.seed, log=log)

    def _train_pool(self):
        kwargs = {}
        if self.cfg.env == "calculator":
            kwargs["levels"] = tuple(int(x) for x in self.cfg.levels.split(",") if x)
            if self.cfg.families:
                kwargs["families"] = tuple(self.cfg.families.split(","))
        elif self.cfg.env == "memory":  # dialogue levels (reference_impls/memory/dialogue.py)
            kwargs["levels"] = tuple(int(x) for x in self.cfg.levels.split(",") if x)
            kwargs["balance_kinds"] = bool(self.cfg.env_options.get("balance_kinds", True))
        return self.task.problems("train", n=self.cfg.train_pool, seed=self.cfg.seed, **kwargs)

    # minGPT-style callbacks
    def add_callback(self, event: str, fn) -> None:
        self.callbacks.setdefault(event, []).append(fn)

    def trigger(self, event: str) -> None:
        for fn in self.callbacks.get(event, []):
            fn(self)

    # ------------------------------------------------------------------------------------------------
    def train_step(self) -> tuple[dict, list]:
        if hasattr(self.algo, "train_step"):  # offline algorithms (DPO) own the whole step
            return self.algo.train_step(self)
        cfg, algo_cfg = self.cfg, self.algo_cfg
        t0 = time.time()
        step_seed = cfg.seed * 1_000_003 + self.step * 1009 + self.rank
        seed_everything(step_seed)  # every step's randomness is a function of (seed, step, rank)
        rng = random.Random(step_seed)
        problems = [self.pool[rng.randrange(len(self.pool))] for _ in range(cfg.prompts_per_step)]
        samples, rstats = rollout(self.policy, self.tokenizer, self.task, problems, self.rollout_cfg)

        rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
        lengths = torch.tensor([len(s.completion_ids) for s in samples], dtype=torch.float32)
        correct = [float(bool(s.info.get("correct", False))) for s in samples]
        full = collate(samples, self.tokenizer.pad_token_id, self.device)
        ref_logps = None
        if self.ref is not None:
            with torch.no_grad():
                ref_logps, _ = completion_logprobs(self.ref, full, cfg.temperature, share_prompts=cfg.share_prompts)
        if hasattr(self.algo, "update"):  # PPO: its own epochs, minibatches and critic (single process)
            return self._custom_update(samples, rewards, correct, lengths, full, ref_logps, rstats, t0), samples
        seq_kl = None if ref_logps is None else ((full["old_logprobs"] - ref_logps) * full["loss_mask"]).sum(-1).cpu()
        advantages, keep, shaped = self.algo.prepare_batch(rewards, lengths, cfg.group_size, algo_cfg,
                                                           cfg.max_completion_tokens, seq_kl)
        kept = [i for i in range(len(samples)) if keep[i]]

        # global normalisers: DDP averages gradients over ranks, so each rank divides by (global count / world)
        n_tokens_local = float(sum(sum(samples[i].loss_mask) for i in kept))
        n_seq, n_tok = all_reduce([float(len(kept)), n_tokens_local])
        # every rank must run the same number of backward passes (DDP all-reduces inside each one)
        n_micro = int(all_reduce([math.ceil(len(kept) / cfg.micro_batch_size)], op=_MAX())[0])
        seq_norm, tok_norm = max(n_seq, 1.0) / self.world, max(n_tok, 1.0) / self.world

        t_update = time.time()
        losses, metric_rows, entropies, grad_norm = [], [], [], 0.0
        if n_seq > 0:
            for _ in range(getattr(algo_cfg, "num_iterations", 1)):
                self.optimizer.zero_grad(set_to_none=True)
                for m in range(n_micro):
                    idx = kept[m * cfg.micro_batch_size:(m + 1) * cfg.micro_batch_size]
                    weight = 1.0
                    if not idx:  # this rank ran out of samples: a zero-weight pass keeps DDP's all-reduce in step
                        idx, weight = [0], 0.0
                    batch = collate([samples[i] for i in idx], self.tokenizer.pad_token_id, self.device)
                    # a group's G samples share one prompt forward (exact; not under DDP: see completion_logits)
                    logps, entropy = completion_logprobs(self.model, batch, cfg.temperature, with_entropy=True,
                                                         share_prompts=cfg.share_prompts and self.world == 1)
                    # completions are right-padded from a common start, so the full-batch reference
                    # log-probs slice straight into this micro-batch's width
                    ref = None if ref_logps is None else ref_logps[idx, :batch["logits_to_keep"]]
                    loss, metrics = self.algo.compute_loss(
                        logps, batch["old_logprobs"], advantages[idx].to(self.device), batch["loss_mask"], algo_cfg,
                        ref_logps=ref, max_completion_length=cfg.max_completion_tokens,
                        seq_normalizer=seq_norm, token_normalizer=tok_norm)
                    (loss * weight).backward()
                    if weight:
                        losses.append(float(loss.detach()))
                        metric_rows.append((metrics, float(batch["loss_mask"].sum())))
                        mask = batch["loss_mask"]
                        entropies.append((float((entropy * mask).sum()), float(mask.sum())))
                grad_norm = float(torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm))
                self.optimizer.step()
        update_s = time.time() - t_update

        def token_weighted(key):
            tot = sum(w for _, w in metric_rows)
            return sum(m[key] * w for m, w in metric_rows) / tot if tot else 0.0

        ent_sum, ent_n = sum(e for e, _ in entropies), sum(n for _, n in entropies)
        n_iter = max(1, getattr(algo_cfg, "num_iterations", 1))
        local = [float(rewards.sum()), float(sum(correct)), float(len(samples)), sum(losses) / n_iter,
                 token_weighted("kl") * ent_n, token_weighted("clip_frac") * ent_n, ent_sum, ent_n,
                 float(rstats["generated_tokens"]), float(sum(s.turns for s in samples)), float(lengths.sum())]
        g = all_reduce(local)
        n = max(g[2], 1.0)
        self.step += 1
        wall = time.time() - t0
        return {
            "step": self.step,
            "reward_mean": g[0] / n,
            "accuracy": g[1] / n,
            "loss": g[3] / self.world,  # each rank's loss is already a share of the global mean
            "kl": g[4] / max(g[7], 1.0),
            "clip_frac": g[5] / max(g[7], 1.0),
            "entropy": g[6] / max(g[7], 1.0),
            "grad_norm": grad_norm,
            "groups_kept_frac": n_seq / n,
            "turns_mean": g[9] / n,
            "completion_len_mean": g[10] / n,
            "tokens_per_s": g[8] / wall,
            "rollout_s": rstats["rollout_s"],
            "update_s": update_s,
            "step_s": wall,
            "wall_s": self.wall_offset + (time.time() - self.t_start),
        }, samples

    def _custom_update(self, samples, rewards, correct, lengths, full, ref_logps, rstats, t0) -> dict:
        t_update = time.time()
        metrics = self.algo.update(self, samples, rewards, full, ref_logps)
        self.step += 1
        wall = time.time() - t0
        return {"step": self.step, "reward_mean": float(rewards.mean()), "accuracy": sum(correct) / len(samples),
                **metrics, "groups_kept_frac": 1.0, "turns_mean": sum(s.turns for s in samples) / len(samples),
                "completion_len_mean": float(lengths.mean()), "tokens_per_s": rstats["generated_tokens"] / wall,
                "rollout_s": rstats["rollout_s"], "update_s": time.time() - t_update, "step_s": wall,
                "wall_s": self.wall_offset + (time.time() - self.t_start)}

    # ------------------------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        ckpt_root = self.out / "checkpoints"
        name = f"step_{self.step:06d}"
        tmp = ckpt_root / f".tmp-{name}"
        if self.rank == 0:
            ckpt_root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            self.policy.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            torch.save(self.optimizer.state_dict(), tmp / "optimizer.pt")
            for key, module in self.extra_modules.items():
                torch.save(module.state_dict(), tmp / f"{key}.pt")
            (tmp / "trainer_state.json").write_text(json.dumps({"step": self.step, "wall_s": self.last_metrics.get("wall_s", 0.0)}))
        barrier()
        torch.save({"python": random.getstate(), "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                   tmp / f"rng_rank{self.rank}.pt")
        barrier()
        if self.rank == 0:
            final = ckpt_root / name
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)  # atomic: a checkpoint folder either is complete or does not exist
            for old in sorted(p for p in ckpt_root.glob("step_*"))[:-self.cfg.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        barrier()
        self.trigger("on_checkpoint")

    def _load_latest_checkpoint(self) -> None:
        ckpt = latest_checkpoint(self.out)
        if ckpt is None:
            return
        from safetensors.torch import load_file

        state = load_file(str(ckpt / "model.safetensors"))
        missing, unexpected = self.policy.load_state_dict(state, strict=False)
        # tied embeddings are saved once; anything else missing is an error
        if unexpected or any("lm_head" not in k for k in missing):
            raise RuntimeError(f"checkpoint mismatch: missing {missing} unexpected {unexpected}")
        for key, module in self.extra_modules.items():
            module.load_state_dict(torch.load(ckpt / f"{key}.pt", map_location=self.device))
        self.optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", map_location=self.device))
        meta = json.loads((ckpt / "trainer_state.json").read_text())
        self.step, self.wall_offset = int(meta["step"]), float(meta.get("wall_s", 0.0))
        rng_file = ckpt / f"rng_rank{self.rank}.pt"
        if rng_file.exists():
            rng = torch.load(rng_file, weights_only=False)
            random.setstate(rng["python"])
            torch.set_rng_state(rng["torch"])

    def request_stop(self, *_):
        self.stop_requested = True

    def write_status(self, state: str, **extra) -> None:
        if self.rank == 0:
            (self.out / "status.json").write_text(json.dumps(
                {"state": state, "step": self.step, "steps": self.cfg.steps, "updated": time.time(),
                 **extra}))

    def run(self) -> str:
        self.t_start = time.time()
        self.write_status("running")
        self.trigger("on_train_start")
        state = "completed"
        while self.step < self.cfg.steps:
            self.last_metrics, self.last_samples = self.train_step()
            self.trigger("on_step_end")
            # ranks must agree, or one would wait forever in the next all-reduce
            flags = all_reduce([float(self.stop_requested), float(0 < self.cfg.max_wall_s <= self.last_metrics["wall_s"])],
                               op=_MAX())
            stop, out_of_time = flags[0] > 0, flags[1] > 0
            if stop or out_of_time or self.step % self.cfg.checkpoint_every == 0 or self.step >= self.cfg.steps:
                self.checkpoint()
            if stop:
                state = "stopped"
                break
            if out_of_time:
                break
            self.write_status("running")
        self.write_status(state)
        self.trigger("on_train_end")
        return state


def latest_checkpoint(run_dir: Path) -> Path | None:
    ckpts = sorted((Path(run_dir) / "checkpoints").glob("step_*"))
    return ckpts[-1] if ckpts else None


# ----------------------------------------------------------------------------------------------------
# CLI

def _algo_fields() -> dict[str, dataclasses.Field]:
    fields = {}
    for module in ALGORITHMS.values():
        for f in dataclasses.fields(module.Config):
            fields.setdefault(f.name, f)
    return fields


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reference_impls.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--algo", choices=sorted(ALGORITHMS))
    p.add_argument("--env", choices=sorted(ENVS))
    p.add_argument("--model", help=f"{' | '.join(MODEL_NAMES)} | a folder saved by sft.py or a checkpoint")
    p.add_argument("--out", help="run directory")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its last checkpoint")
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                   help="env option, e.g. max_turns=4 or format_reward=0.1 (repeatable)")
    skip = {"algo", "env", "model", "out", "env_options", "algo_config"}
    for f in dataclasses.fields(TrainConfig):
        if f.name in skip:
            continue
        if isinstance(f.default, bool):  # --x / --no-x (type=bool would read "False" as True)
            p.add_argument("--" + f.name.replace("_", "-"), action=argparse.BooleanOptionalAction, default=None,
                           help=f"(default {f.default})")
        else:
            p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=None,
                           help=f"(default {f.default})")
    group = p.add_argument_group("algorithm switches (see each algorithm's Config docstring)")
    for name, f in _algo_fields().items():
        flag = "--" + name.replace("_", "-")
        if isinstance(f.default, bool):
            group.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            group.add_argument(flag, type=type(f.default), default=None)
    return p


def _parse_value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def config_from_args(args) -> tuple[TrainConfig, bool]:
    resume = args.resume is not None
    if resume:
        saved = json.loads((Path(args.resume) / "config.json").read_text())
        cfg = TrainConfig(**saved)
        cfg.out = args.resume
    else:
        cfg = TrainConfig()
    given = {k: v for k, v in vars(args).items() if v is not None}
    for f in dataclasses.fields(TrainConfig):
        if f.name in given and f.name not in ("env_options", "algo_config"):
            setattr(cfg, f.name, given[f.name])
    if not resume and not args.out:
        raise SystemExit("--out is required (or --resume DIR)")
    for item in args.env_option:
        key, _, value = item.partition("=")
        cfg.env_options[key] = _parse_value(value)
    valid = {f.name for f in dataclasses.fields(ALGORITHMS[cfg.algo].Config)}
    for name in _algo_fields():
        if name in given:
            if name not in valid:
                raise SystemExit(f"--{name.replace('_', '-')} does not apply to --algo {cfg.algo}")
            cfg.algo_config[name] = given[name]
    return cfg, resume


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    cfg, resume = config_from_args(args)
    # a stop may arrive during the model load or the warm start, before the trainer's own handler exists
    early_stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: early_stop.set())
    out = Path(cfg.out)
    try:
        trainer = Trainer(cfg, resume=resume, stop_event=early_stop)
    except WarmStartStopped as stopped:
        (out / "status.json").write_text(json.dumps({"state": "stopped", "step": 0, "steps": cfg.steps,
                                                     "updated": time.time(), "note": str(stopped)}))
        print(json.dumps({"state": "stopped", "step": 0, "out": str(out)}), flush=True)
        return 0
    if trainer.rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=2))
        # a resumed run drops whatever was logged after its checkpoint, so no line is lost or doubled
        truncate_jsonl(out / "metrics.jsonl", trainer.step)
        truncate_jsonl(out / "samples.jsonl", trainer.step)
        loggers = [JsonlLogger(out, cfg.samples_per_step), TensorBoardLogger(out, purge_step=trainer.step + 1),
                   ProgressBar(cfg.steps, trainer.step)]
        for logger in loggers:
            trainer.add_callback("on_step_end", logger)
            trainer.add_callback("on_train_end", logger.close)
    barrier()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, trainer.request_stop)
    if early_stop.is_set():
        trainer.request_stop()
    try:
        state = trainer.run()
    except BaseException:
        trainer.write_status("failed")
        raise
    if trainer.rank == 0:
        print(json.dumps({"state": state, "step": trainer.step, "out": str(out)}), flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
