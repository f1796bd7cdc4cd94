"""The training loop: :class:`Trainer` runs one validated config (``run_config.Resolved``) on a policy.

One step, top to bottom (``Trainer.train_step``)::

    seed (seed, step, rank);  problems <- algo.draw(ctx, rng)          (default: P prompts from the pool)
    batch   <- algo.collect(ctx, problems)   (default: P x G episodes + the reference's log-probs; online only)
    metrics <- algo.update(ctx, batch)                                  one optimisation phase
    reduce metrics by name over ranks;  callbacks (metrics.jsonl, TensorBoard, progress bar);  checkpoint

The run folder's layout is ``rundir.RunDir``'s. Checkpoints are written to a temp folder and renamed, so
a crash never leaves a half checkpoint. The CLI (``reference_impls.train``) handles SIGTERM/SIGINT: the
current step finishes, a checkpoint is written, status.json says "stopped" (during the warm start: it stops
after the current SFT step, with no checkpoint; a resume starts over).
"""
from __future__ import annotations

import copy
import json
import os
import pickle
import random
import shutil
import sys
import time
from pathlib import Path

import torch

from . import distributed
from .algorithm import Context, Metrics, RolloutBatch, step_seed
from .common import adamw, precision_context, resolve_precision, seed_everything
from .diagnostics import episode_diagnostics
from .envs import EnvSpec
from .models import load_policy
from .options import ConfigError
from .rollout import RolloutConfig
from .run_config import Resolved, TrainConfig, resolve
from .rundir import MODEL_FILE, RunDir, RunDirError


class WarmStartStopped(Exception):
    """A stop request arrived during the warm start (before any checkpoint exists)."""


class Trainer:
    """Trains the policy on one run's config. ``cfg`` is either a config validated already (``Resolved``:
    what the CLI's parse and the Lab hand on; it is used as it is) or a plain ``TrainConfig`` from code
    (tests, scripts), which is validated here, once (``resolve``)."""

    def __init__(self, cfg: TrainConfig | Resolved, task: EnvSpec | None = None, model=None, tokenizer=None,
                 resume: bool = False, stop_event=None):
        resolved = cfg if isinstance(cfg, Resolved) else resolve(cfg, check_model=model is None, task=task)
        cfg = resolved.cfg
        self.cfg = cfg
        self.step = 0  # completed optimisation steps (restored from a checkpoint on resume)
        self.stop_event = stop_event  # a threading.Event set by a signal handler before the trainer exists
        self.rank, self.world = distributed.setup()
        self.algo_cls, self.algo_cfg = resolved.algo_cls, resolved.algo_cfg
        self.task = task or resolved.task
        self.env_config = resolved.env_cfg  # typed once here; every episode of the run is built from it
        self.run_dir = RunDir(cfg.out)
        self.out = self.run_dir.path
        self.device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu")
        if model is None:
            model, tokenizer = load_policy(cfg.model, device=self.device, seed=cfg.seed)
        self.policy, self.tokenizer = model, tokenizer
        self.resume_note = ""
        self.resume_from = self.run_dir.latest_checkpoint() if resume else None
        # before the reference copy and the algorithm's setup: KL, DPO's pairs and PPO's critic all start
        # from the warm-started model. A resumed run's weights come from its checkpoint instead.
        self.warm_start_losses: list[float] = []
        # what the run computes in (auto: bf16 where the hardware has it); status.json says which
        self.precision = resolve_precision(cfg.precision, self.device)
        if cfg.sft_steps > 0 and self.resume_from is None:
            with precision_context(self.precision, self.device):
                self.warm_start()
        # the reference exists only when the algorithm asks for it (beta = 0: no memory, no forward)
        ref = None
        if self.algo_cls.uses_reference(self.algo_cfg):
            ref = copy.deepcopy(self.policy).eval().requires_grad_(False)
            if cfg.sft_steps > 0:
                self._warm_started_reference(ref)
        self.policy.train()
        model_for_forward = self.policy
        if self.world > 1:
            model_for_forward = torch.nn.parallel.DistributedDataParallel(self.policy)
        optimizer = adamw(self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        rollout_cfg = RolloutConfig(group_size=cfg.group_size, max_new_tokens_per_turn=cfg.max_new_tokens_per_turn,
                                    max_completion_tokens=cfg.max_completion_tokens, temperature=cfg.temperature,
                                    env_config=self.env_config, engine=cfg.rollout_engine)
        pool = self.task.problems("train", n=cfg.train_pool, seed=cfg.seed, config=self.env_config)
        self.ctx = Context(policy=self.policy, model=model_for_forward, ref=ref, optimizer=optimizer,
                           tokenizer=self.tokenizer, device=self.device, train=cfg, config=self.algo_cfg,
                           task=self.task, env_config=self.env_config, pool=list(pool),
                           rollout_config=rollout_cfg, out=self.out, rank=self.rank, world=self.world)
        self.algo = self.algo_cls(self.ctx)
        self.wall_offset = 0.0
        self.stop_requested = False
        self.callbacks: dict[str, list] = {}
        self.last_metrics: dict = {}
        self.last_samples: list = []
        if self.resume_from is not None:
            self._load_checkpoint()

    # read-only views for callbacks and tests
    @property
    def optimizer(self):
        return self.ctx.optimizer

    @property
    def ref(self):
        return self.ctx.ref

    @property
    def pool(self):
        return self.ctx.pool

    def warm_start(self) -> None:
        """SFT on the env's demonstrations (``sft.demonstrations``), its own visible phase: one line per step
        in warm_start.jsonl and ``phase: warm-start`` in status.json."""
        from .sft import WarmStartSettings, warm_start

        cfg = self.cfg
        t0 = time.time()
        path = self.run_dir.warm_start_path
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
        self.warm_start_losses = warm_start(self.policy, self.tokenizer,
                                            WarmStartSettings.of_run(cfg, self.env_config), log=log)

    def _warm_started_reference(self, ref) -> None:
        """The reference is the warm-started model: a fresh run saves it, a resumed one (whose warm start is
        skipped: the policy comes from the checkpoint) loads it, so KL and DPO keep the same anchor."""
        from safetensors.torch import load_file, save_file

        path = self.run_dir.reference_path
        if self.resume_from is None:
            if self.rank == 0:
                self.out.mkdir(parents=True, exist_ok=True)
                state = {k: v.detach().contiguous().cpu() for k, v in ref.state_dict().items()}
                tmp = path.with_name(f".{path.name}.tmp")
                save_file({k: v.clone() for k, v in state.items()}, str(tmp))  # clone: tied weights saved apart
                os.replace(tmp, path)
        elif path.exists():
            ref.load_state_dict(load_file(str(path), device=str(self.device)))
        else:
            raise RunDirError(f"{self.out}: resuming a run with --sft-steps and a reference model needs "
                              f"{path.name} (written by the run's first start); it is missing")

    # minGPT-style callbacks
    def add_callback(self, event: str, fn) -> None:
        self.callbacks.setdefault(event, []).append(fn)

    def trigger(self, event: str) -> None:
        for fn in self.callbacks.get(event, []):
            fn(self)

    # ------------------------------------------------------------------------------------------------
    def collect(self) -> tuple[RolloutBatch, dict]:
        """This step's episodes: the algorithm's ``draw`` (default P uniform draws from the pool) rolled out
        by its ``collect`` (default G samples each, with the reference's log-probs when there is one)."""
        rng = random.Random(self.step_seed)
        problems = self.algo.draw(self.ctx, rng)
        return self.algo.collect(self.ctx, problems)

    @property
    def step_seed(self) -> int:
        return step_seed(self.cfg.seed, self.step, self.rank)

    def train_step(self) -> tuple[dict, list]:
        t0 = time.time()
        seed_everything(self.step_seed)  # every step's randomness is a function of (seed, step, rank)
        self.ctx.step = self.step
        metrics = Metrics()
        generated, rollout_s, env_s, samples = 0.0, 0.0, 0.0, []
        batch = None
        if self.algo_cls.online:
            with precision_context(self.precision, self.device):
                batch, rstats = self.collect()
            samples = batch.samples
            n = float(len(samples))
            metrics.add("reward_mean", float(batch.rewards.sum()) / max(n, 1.0), n)
            metrics.add("accuracy", sum(float(bool(s.info.get("correct", False))) for s in samples) / max(n, 1.0), n)
            metrics.add("turns_mean", sum(s.turns for s in samples) / max(n, 1.0), n)
            metrics.add("completion_len_mean", float(batch.lengths.sum()) / max(n, 1.0), n)
            metrics.update(episode_diagnostics(samples, batch.lengths).reduce())
            generated, rollout_s = float(rstats["generated_tokens"]), rstats["rollout_s"]
            env_s = float(rstats.get("env_s", 0.0))  # inside rollout_s: the environments' own step time
        t_update = time.time()
        if self.cfg.update:
            with precision_context(self.precision, self.device):
                result = self.algo.update(self.ctx, batch)
        else:  # the no-update control (--no-update, --lr 0): these episodes are the lr-0 run's; nothing to learn
            result = {"policy_updates": 0.0}
        update_s = time.time() - t_update
        if not isinstance(result, Metrics):
            result = Metrics().update(result)
        reduced = {**metrics.reduce(), **result.reduce()}
        if "policy_updates" not in reduced:  # an update of its own: one optimiser step, unless it splits the batch
            if self.cfg.mini_batches > 1:
                raise ConfigError(f"--mini-batches: --algo {self.cfg.algo} has an update of its own that does not "
                                  "split the batch; run it with --mini-batches 1")
            reduced["policy_updates"] = 1.0
        generated = distributed.all_reduce([generated])[0]
        self.step += 1
        wall = time.time() - t0
        out = {"step": self.step, **reduced}
        if self.algo_cls.online:
            out.update(tokens_per_s=generated / wall, rollout_s=rollout_s, env_s=env_s)
        else:
            samples = getattr(self.algo, "last_samples", [])
        out.update(update_s=update_s, step_s=wall, wall_s=self.wall_offset + (time.time() - self.t_start))
        return out, samples

    # ------------------------------------------------------------------------------------------------
    def checkpoint(self) -> None:
        ckpt_root = self.run_dir.checkpoints_dir
        final = self.run_dir.checkpoint_path(self.step)
        tmp = ckpt_root / f".tmp-{final.name}"
        if self.rank == 0:
            ckpt_root.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            self.policy.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            torch.save(self.optimizer.state_dict(), RunDir.optimizer_path(tmp))
            for key, module in self.algo.modules().items():
                torch.save(module.state_dict(), RunDir.module_path(tmp, key))
            RunDir.trainer_state_path(tmp).write_text(json.dumps({"step": self.step, "wall_s": self.last_metrics.get("wall_s", 0.0),
                                                                "algorithm_state": self.algo.state_dict()}))
        distributed.barrier()
        torch.save({"python": random.getstate(), "torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                   RunDir.rng_path(tmp, self.rank))
        distributed.barrier()
        if self.rank == 0:
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)  # atomic: a checkpoint folder either is complete or does not exist
            for old in self.run_dir.checkpoints()[:-self.cfg.keep_checkpoints]:
                shutil.rmtree(old, ignore_errors=True)
        distributed.barrier()
        self.trigger("on_checkpoint")

    def _load_checkpoint(self) -> None:
        """Restore the newest checkpoint that loads; a damaged one is named and skipped (an older good
        one is used, and ``resume_note`` says so)."""
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        skipped = []
        for ckpt in reversed(self.run_dir.checkpoints()):
            problem = RunDir.checkpoint_problem(ckpt)
            if problem is None:  # a header that asks for more than the model holds is refused before loading
                problem = RunDir.weights_problem(ckpt / MODEL_FILE,
                                                 {k: tuple(v.shape) for k, v in self.policy.state_dict().items()})
            if problem is None:
                try:
                    state = load_file(str(ckpt / MODEL_FILE))
                    # weights_only: a run folder is data, and a pickle in it must never run code
                    optimizer_state = torch.load(RunDir.optimizer_path(ckpt), map_location=self.device, weights_only=True)
                    modules = {k: torch.load(RunDir.module_path(ckpt, k), map_location=self.device, weights_only=True)
                               for k in self.algo.modules()}
                    rng_file = RunDir.rng_path(ckpt, self.rank)
                    rng = _read_rng_state(rng_file) if rng_file.exists() else None
                except pickle.UnpicklingError:
                    problem = ("cannot be read (a .pt file holds objects other than tensors and plain values; "
                               "those are never unpickled, as they could run code)")
                # random bytes read as a legacy pickle fail anywhere in torch's restricted unpickler
                except (SafetensorError, OSError, RuntimeError, EOFError, ValueError, IndexError, KeyError,
                        TypeError, AttributeError, MemoryError) as err:
                    problem = f"cannot be read ({type(err).__name__}: {str(err)[:200]})"
            if problem is not None:
                skipped.append(f"{ckpt.name}: {problem}")
                continue
            missing, unexpected = self.policy.load_state_dict(state, strict=False)
            # tied embeddings are saved once; anything else missing is an error
            if unexpected or any("lm_head" not in k for k in missing):
                raise RunDirError(f"{ckpt}: checkpoint does not fit the model (missing {missing}, unexpected {unexpected})")
            for key, module in self.algo.modules().items():
                module.load_state_dict(modules[key])
            self.optimizer.load_state_dict(optimizer_state)
            meta = json.loads(RunDir.trainer_state_path(ckpt).read_text())
            self.step, self.wall_offset = int(meta["step"]), float(meta.get("wall_s", 0.0))
            self.algo.load_state_dict(meta.get("algorithm_state", {}))
            if rng is not None:
                random.setstate(rng["python"])
                torch.set_rng_state(rng["torch"])
            if skipped:
                self.resume_note = f"resumed from {ckpt.name}; skipped damaged " + "; ".join(skipped)
                print(f"warning: {self.resume_note}", file=sys.stderr, flush=True)
            return
        raise RunDirError(f"{self.out}: no usable checkpoint to resume from ({'; '.join(skipped) or 'none written'})")

    def request_stop(self, *_):
        self.stop_requested = True

    def write_status(self, state: str, **extra) -> None:
        if self.rank == 0:
            if self.resume_note and "note" not in extra:
                extra["note"] = self.resume_note
            if getattr(self, "sandbox_layer", None):
                extra.setdefault("sandbox_layer", self.sandbox_layer)
            if getattr(self, "precision", "fp32") != "fp32":
                extra.setdefault("precision", self.precision)
            self.run_dir.write_status(state, self.step, self.cfg.steps, **extra)

    def run(self) -> str:
        self.t_start = time.time()
        self.write_status("running")
        self.trigger("on_train_start")
        state = "completed"
        while self.step < self.cfg.steps:
            self.last_metrics, self.last_samples = self.train_step()
            self.trigger("on_step_end")
            # ranks must agree, or one would wait forever in the next all-reduce
            flags = distributed.all_reduce(
                [float(self.stop_requested), float(0 < self.cfg.max_wall_s <= self.last_metrics["wall_s"])], op="max")
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
        if os.environ.get("ATLAS_DEBUG_PARAM_DIGEST"):
            self.write_param_digest()
        return state

    def write_param_digest(self) -> None:
        """Debug aid for data-parallel runs (``ATLAS_DEBUG_PARAM_DIGEST=1``): each rank writes
        ``param_digest_rank{R}.json``, the SHA-256 of its policy's and extra modules' weights, so replicas can
        be compared with each other and with rank 0's checkpoint (tests/reference_impls/test_torchrun.py)."""
        modules = {"policy": self.policy, **self.algo.modules()}
        digests = {name: distributed.state_digest(m.state_dict()) for name, m in modules.items()}
        (self.out / f"param_digest_rank{self.rank}.json").write_text(json.dumps({"step": self.step, **digests}))


def _read_rng_state(path: Path) -> dict:
    """A checkpoint's ``rng_rank*.pt``, loaded with ``weights_only=True`` (tensors, ints, tuples: no code
    runs) and checked, so a damaged or crafted file is a ValueError (the checkpoint is skipped), never a
    call into ``random.setstate`` with something else."""
    rng = torch.load(path, map_location="cpu", weights_only=True)
    try:
        version, internal, gauss = rng["python"]
        python = (int(version), tuple(int(x) for x in internal), None if gauss is None else float(gauss))
        if len(python[1]) != 625 or not isinstance(rng["torch"], torch.Tensor) or rng["torch"].dtype != torch.uint8:
            raise ValueError("unexpected sizes or types")
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path.name}: not an RNG state ({err})") from None
    return {"python": python, "torch": rng["torch"]}


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run folder (see ``RunDir.latest_checkpoint``)."""
    return RunDir(run_dir).latest_checkpoint()
