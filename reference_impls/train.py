"""RL training loop and CLI for the reference implementations.

Usage::

    python -m reference_impls.train --algo grpo --env calculator --model tiny --steps 2 --out runs/x
    python -m reference_impls.train --algo grpo --model DIR_FROM_SFT --steps 60 --out runs/y \\
        --loss-type dapo --epsilon-high 0.28 --dynamic-sampling --lr 1e-5 --levels 2,3
    python -m reference_impls.train --impl calculator-dapo --steps 5 --out runs/z   # a listed implementation
    python -m reference_impls.train --config recipe.yaml --out runs/w            # options from a file
    python -m reference_impls.train --resume runs/y --steps 80        # continue (and extend) a run
    python -m reference_impls.train --list --json                     # every runnable implementation
    python -m reference_impls.train --env-module my_env.py --env my-env ...   # a user's environment
    torchrun --nproc_per_node=2 -m reference_impls.train ...          # data parallel (DDP, gloo on CPU)

Every option is a typed field (``TrainConfig`` here, the algorithm's ``Config``, the environment's
config), declared with ``options.option``: the flags, ``--help``, the Lab's form and validation all come
from those fields, and a bad value fails before any model is loaded, naming the option, the value and
what is allowed. TRL's names are accepted as aliases where the meaning is the same
(``--num-generations``, ``--learning-rate``, ``--max-steps``, ``--output-dir`` ...; docs/ARCHITECTURE.md
lists them). Precedence: defaults < ``--impl`` < ``--config`` (or the resumed run's config) < flags.

One step, top to bottom (``Trainer.train_step``)::

    seed (seed, step, rank);  problems <- algo.draw(ctx, rng)          (default: P prompts from the pool)
    batch   <- algo.collect(ctx, problems)   (default: P x G episodes + the reference's log-probs; online only)
    metrics <- algo.update(ctx, batch)                                  one optimisation phase
    reduce metrics by name over ranks;  callbacks (metrics.jsonl, TensorBoard, progress bar);  checkpoint

The run folder's layout is ``rundir.RunDir``'s. Checkpoints are written to a temp folder and renamed, so
a crash never leaves a half checkpoint. SIGTERM/SIGINT: the current step finishes, a checkpoint is
written, status.json says "stopped", exit 0 (during the warm start: it stops after the current SFT
step, with no checkpoint; a resume starts over).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import pickle
import random
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from . import distributed
from .algorithm import Algorithm, Context, Metrics, RolloutBatch, step_seed
from .callbacks import HealthLogger, JsonlLogger, ProgressBar, TensorBoardLogger, truncate_jsonl
from .common import adamw, seed_everything
from .diagnostics import episode_diagnostics
from .envs import ENVS, EnvSpec, get_env, load_env_module
from .models import MODEL_NAMES, load_policy
from .options import (ConfigError, add_flags, alias_map, as_dict, build, close_matches, coerce, given_flags,
                      key_values, option, spec_map, specs)
from .registry import algorithms, get_implementation, implementations
from .rollout import RolloutConfig
from .rundir import MODEL_FILE, RunDir, RunDirError
from .sandbox import SandboxUnavailable

#: every algorithm the trainer can run, by the name ``--algo`` takes (collected from reference_impls/algorithms/)
ALGORITHMS: dict[str, type[Algorithm]] = algorithms()


@dataclass
class TrainConfig:
    """Everything a run needs; saved as config.json. ``algo_config`` holds the algorithm's Config fields,
    ``env_options`` the environment's (both validated against those dataclasses)."""

    algo: str = option("grpo", "Algorithm: " + ", ".join(ALGORITHMS) + ".", choices=tuple(ALGORITHMS))
    env: str = option("calculator", "Environment (registered, or added with --env-module).")
    model: str = option("tiny", f"{' | '.join(MODEL_NAMES)} | a folder saved by sft.py or a checkpoint.")
    steps: int = option(10, "Optimisation steps; each samples a fresh batch of problems.", low=1, high=1_000_000,
                        aliases=("max_steps",))
    out: str = option("", "Run directory (required unless --resume).", aliases=("output_dir",))
    seed: int = option(0, "Seeds problem sampling, generation and initialisation: same seed, same run.", low=0,
                       high=2**31 - 1)
    lr: float = option(1e-5, "AdamW learning rate. 1e-6..2e-5 for SmolLM2; the tiny model tolerates far more.",
                       low=1e-10, high=1.0, aliases=("learning_rate",))
    weight_decay: float = option(0.0, "AdamW weight decay.", low=0.0, high=1.0)
    max_grad_norm: float = option(1.0, "Gradient norm clip.", low=1e-6, high=1e6)
    prompts_per_step: int = option(4, "P: distinct problems per step (per rank); a step rolls out P x G episodes.",
                                   low=1, high=4096)
    group_size: int = option(4, "G: samples per problem; group-relative methods compare within a group.", low=1,
                             high=1024, aliases=("num_generations",))
    mini_batches: int = option(1, "mu: policy updates per rollout batch. The batch's episodes are split into "
                               "this many minibatches (in group order), one optimiser step each; an algorithm's "
                               "num_iterations repeats them (num_iterations x mu steps). With 1 the importance "
                               "ratio stays 1 and clipping never acts. For the shared policy-gradient update "
                               "(GRPO family, RLOO); PPO has its own --num-mini-batches.", low=1, high=1024,
                               aliases=("mu",))
    micro_batch_size: int = option(8, "Sequences per forward/backward; lower it if memory runs short.", low=1,
                                   high=4096)
    max_new_tokens_per_turn: int = option(48, "Model tokens per turn before the turn is cut.", low=1, high=32768)
    max_completion_tokens: int = option(160, "Model + tool tokens per episode; longer episodes are truncated.",
                                        low=1, high=131072, aliases=("max_completion_length",))
    temperature: float = option(1.0, "Sampling temperature of rollouts (1.0 = the policy itself).", low=0.01,
                                high=3.0)
    train_pool: int = option(4096, "Size of the (balanced) train problem pool steps draw from.", low=1,
                             high=10_000_000)
    checkpoint_every: int = option(10, "Steps between checkpoints (a stop also writes one).", low=1,
                                   high=1_000_000, aliases=("save_steps",))
    # a safety cap, not a budget: the budget is steps x P x G episodes and the updates they give (docs/compare.md)
    max_wall_s: float = option(0.0, "Safety cap in seconds: stop (checkpointed, 'completed') once exceeded, with "
                               "fewer steps than --steps (the comparison grid marks such a cell incomplete); "
                               "0 = none.", low=0.0, high=1e9)
    keep_checkpoints: int = option(2, "Checkpoints kept (older ones are deleted).", low=1, high=1000,
                                   aliases=("save_total_limit",))
    samples_per_step: int = option(2, "Transcripts written to samples.jsonl per step.", low=0, high=4096)
    # one prompt forward per group in the update (exact, faster; common.completion_logits); PPO's own
    # update does not use it, so benchmarks/ppo_vs_grpo_cost.py turns it off for a like-for-like comparison
    share_prompts: bool = option(True, "Run a group's shared prompt through the model once in the update (exact).")
    # supervised warm start before RL (sft.py), in the same process. SmolLM2 never writes a valid tool call
    # out of the box, so RL from the base model would see reward 0 on every sample.
    sft_steps: int = option(0, "Supervised warm start on the task's demonstrations before RL (0 = none). SmolLM2 "
                            "never writes a valid tool call without it, so RL from the base model sees no reward.",
                            low=0, high=100_000)
    sft_examples: int = option(96, "Demonstration transcripts of the warm start.", low=1, high=1_000_000)
    sft_lr: float = option(5e-5, "Learning rate of the warm start.", low=1e-10, high=1.0)
    sft_env: str = option("", "Whose demonstrations the warm start uses ('' = the run's env); the memory env "
                          "uses memory-format (label-free).")
    rollout_engine: str = option("cached", "What generates the rollouts' turns: cached (our key/value-cache engine), "
                                 "generate (model.generate, the reference) or vllm (vLLM with prefix caching; CUDA "
                                 "and the optional gpu extra).", choices=("cached", "generate", "vllm"))
    env_options: dict = dataclasses.field(default_factory=dict)
    algo_config: dict = dataclasses.field(default_factory=dict)


# ----------------------------------------------------------------------------------------------------
# resolving and validating a config (no model is loaded here)

@dataclass(frozen=True)
class Resolved:
    """A validated run: the config plus the typed objects it names."""

    cfg: TrainConfig
    algo_cls: type[Algorithm]
    algo_cfg: object
    task: EnvSpec
    env_cfg: object


def validate_model(name: str) -> None:
    if name in MODEL_NAMES or (Path(name).is_dir() and (Path(name) / "config.json").is_file()):
        return
    raise ConfigError(f"--model: {name!r} is neither one of {', '.join(MODEL_NAMES)} nor a folder saved by "
                      f"save_pretrained (with config.json){close_matches(name, MODEL_NAMES)}")


def resolve(cfg: TrainConfig, check_model: bool = True, task: EnvSpec | None = None) -> Resolved:
    """Check every option of ``cfg`` and build the algorithm's and environment's configs. Raises
    :class:`ConfigError` naming the option, the value and what is allowed. ``task`` replaces the
    registered environment named by ``cfg.env`` (an environment built in code, as tests do)."""
    train_specs = spec_map(TrainConfig)
    for name, spec in train_specs.items():
        if name in ("algo", "env"):
            continue
        setattr(cfg, name, coerce(spec, getattr(cfg, name)))
    if cfg.algo not in ALGORITHMS:
        raise ConfigError(f"--algo: {cfg.algo!r} is not an algorithm here; choose one of "
                          f"{', '.join(ALGORITHMS)}{close_matches(cfg.algo, ALGORITHMS)}")
    if task is None and cfg.env not in ENVS:
        raise ConfigError(f"--env: {cfg.env!r} is not a registered environment; choose one of "
                          f"{', '.join(sorted(ENVS))}{close_matches(cfg.env, ENVS)} (or add yours with --env-module)")
    if cfg.sft_env and cfg.sft_env not in ENVS:
        raise ConfigError(f"--sft-env: {cfg.sft_env!r} is not a registered environment; choose one of "
                          f"{', '.join(sorted(ENVS))}")
    algo_cls = ALGORITHMS[cfg.algo]
    algo_cfg = build(algo_cls.Config, cfg.algo_config, f"option of --algo {cfg.algo}")
    task = task or get_env(cfg.env)
    env_cfg = task.options(cfg.env_options)
    # store the canonical names and types (aliases and strings resolved), so config.json is exact
    cfg.algo_config = {k: v for k, v in as_dict(algo_cfg).items()
                       if k in {alias_map(algo_cls.Config).get(n, n) for n in cfg.algo_config}}
    cfg.env_options = {k: v for k, v in as_dict(env_cfg).items()
                       if k in {alias_map(task.config).get(n, n) for n in cfg.env_options}}
    if cfg.max_new_tokens_per_turn > cfg.max_completion_tokens:
        raise ConfigError(f"--max-new-tokens-per-turn: {cfg.max_new_tokens_per_turn} cannot exceed "
                          f"--max-completion-tokens ({cfg.max_completion_tokens})")
    if cfg.mini_batches > 1 and not algo_cls.online:
        raise ConfigError(f"--mini-batches: {cfg.mini_batches} needs an online algorithm; --algo {cfg.algo} trains "
                          "on stored data, one optimiser step per step")
    if cfg.mini_batches > 1 and "num_mini_batches" in spec_map(algo_cls.Config):
        raise ConfigError(f"--mini-batches: --algo {cfg.algo} splits its batch itself; set its --num-mini-batches")
    if cfg.mini_batches > cfg.prompts_per_step * cfg.group_size:
        raise ConfigError(f"--mini-batches: {cfg.mini_batches} is more than the {cfg.prompts_per_step * cfg.group_size} "
                          "episodes of a step (--prompts-per-step x --group-size)")
    algo_cls.check(algo_cfg, cfg, task)
    if cfg.rollout_engine == "vllm":
        from .vllm_engine import check_available

        check_available()
    if check_model:
        validate_model(cfg.model)
    return Resolved(cfg, algo_cls, algo_cfg, task, env_cfg)


def config_from_dict(data: dict) -> TrainConfig:
    """A TrainConfig from saved or hand-written data (config.json, a --config file, the Lab's form).
    Unknown keys are errors; TRL's names are accepted. A top-level key that is no run option is the
    algorithm's (a flat --config file) unless it names an option of the run's environment and none of its
    algorithm: then it moves into ``env_options`` (the layout saved before environments owned their options,
    where an empty value meant the environment's default)."""
    data = dict(data)
    env_options = dict(data.pop("env_options", {}) or {})
    algo_config = dict(data.pop("algo_config", {}) or {})
    aliases = alias_map(TrainConfig)
    fields = spec_map(TrainConfig)
    env_name, algo_name = data.get("env", TrainConfig.env), data.get("algo", TrainConfig.algo)
    env_fields = spec_map(ENVS[env_name].config) if env_name in ENVS else {}
    algo_fields = spec_map(ALGORITHMS[algo_name].Config) if algo_name in ALGORITHMS else {}
    kwargs = {}
    for key, value in data.items():
        name = aliases.get(key, key)
        if name in fields:
            kwargs[name] = value
        elif key in env_fields and key not in algo_fields:
            if value not in ("", [], (), None):
                env_options.setdefault(key, value)
        else:
            algo_config[key] = value  # an algorithm option at the top level (a flat --config file)
    return TrainConfig(**kwargs, env_options=env_options, algo_config=algo_config)


def load_config_file(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--config: no such file {path!r}")
    text = p.read_text()
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as err:  # noqa: BLE001 - any parse error is reported as a bad file
        raise ConfigError(f"--config {path}: cannot parse ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a mapping of option names to values")
    return data


# ----------------------------------------------------------------------------------------------------

class WarmStartStopped(Exception):
    """A stop request arrived during the warm start (before any checkpoint exists)."""


class Trainer:
    def __init__(self, cfg: TrainConfig, task: EnvSpec | None = None, model=None, tokenizer=None,
                 resume: bool = False, stop_event=None):
        resolved = resolve(cfg, check_model=model is None, task=task)
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
        if cfg.sft_steps > 0 and self.resume_from is None:
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
        generated, rollout_s, samples = 0.0, 0.0, []
        batch = None
        if self.algo_cls.online:
            batch, rstats = self.collect()
            samples = batch.samples
            n = float(len(samples))
            metrics.add("reward_mean", float(batch.rewards.sum()) / max(n, 1.0), n)
            metrics.add("accuracy", sum(float(bool(s.info.get("correct", False))) for s in samples) / max(n, 1.0), n)
            metrics.add("turns_mean", sum(s.turns for s in samples) / max(n, 1.0), n)
            metrics.add("completion_len_mean", float(batch.lengths.sum()) / max(n, 1.0), n)
            metrics.update(episode_diagnostics(samples, batch.lengths).reduce())
            generated, rollout_s = float(rstats["generated_tokens"]), rstats["rollout_s"]
        t_update = time.time()
        result = self.algo.update(self.ctx, batch)
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
            out.update(tokens_per_s=generated / wall, rollout_s=rollout_s)
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
                        TypeError, AttributeError) as err:
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


# ----------------------------------------------------------------------------------------------------
# CLI

def build_parser(algo: str = "grpo", env: str = "calculator") -> argparse.ArgumentParser:
    """The full parser for one algorithm and one environment (their options become flags)."""
    p = argparse.ArgumentParser(prog="python -m reference_impls.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Environment options can also be given as --env-option KEY=VALUE.")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its last good checkpoint")
    p.add_argument("--overwrite", action="store_true", help="replace whatever is in --out (a previous run's files)")
    p.add_argument("--config", metavar="FILE", help="options from a YAML or JSON file (flags override it)")
    p.add_argument("--impl", metavar="ID", help="start from a listed implementation's options (see --list)")
    p.add_argument("--env-module", action="append", default=[], metavar="FILE.py|MODULE",
                   help="import a module that registers an environment (repeatable)")
    p.add_argument("--list", action="store_true", help="list every runnable implementation and exit")
    p.add_argument("--json", action="store_true", help="with --list: JSON output")
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the environment (repeatable; see its flags below)")
    taken = {"resume", "overwrite", "config", "impl", "env_module", "list", "json", "env_option"}
    add_flags(p.add_argument_group("run options"), specs(TrainConfig), "train", taken)
    if algo in ALGORITHMS:
        add_flags(p.add_argument_group(f"options of --algo {algo}"), specs(ALGORITHMS[algo].Config), "algo", taken)
    if env in ENVS:
        add_flags(p.add_argument_group(f"options of --env {env} (also --env-option KEY=VALUE)"),
                  ENVS[env].option_specs(), "env", taken)
    return p


def _peek(argv: list[str]) -> argparse.Namespace:
    """The flags that decide which parser to build (algorithm, environment, modules, files)."""
    p = argparse.ArgumentParser(add_help=False)
    for flag in ("--algo", "--env", "--config", "--resume", "--impl"):
        p.add_argument(flag)
    p.add_argument("--env-module", action="append", default=[])
    known, _ = p.parse_known_args(argv)
    return known


def config_from_args(args: argparse.Namespace, base: dict) -> TrainConfig:
    """``base`` (defaults, --impl, --config or the resumed config) overridden by the given flags."""
    data = {**base, **given_flags(args, "train")}
    data["algo_config"] = {**base.get("algo_config", {}), **given_flags(args, "algo")}
    data["env_options"] = {**base.get("env_options", {}), **given_flags(args, "env"), **key_values(args.env_option)}
    return config_from_dict(data)


def parse(argv: list[str]) -> tuple[TrainConfig, argparse.Namespace, bool]:
    """argv -> (validated config, parsed flags, resume?). Raises ConfigError; loads no model."""
    peek = _peek(argv)
    for module in peek.env_module:
        load_env_module(module)
    base: dict = {}
    if peek.impl:
        base = get_implementation(peek.impl).config()
    if peek.resume:
        base = RunDir(peek.resume).read_config()
        base["out"] = peek.resume
    elif peek.config:
        base = {**base, **load_config_file(peek.config)}
    algo = peek.algo or base.get("algo", TrainConfig.algo)
    env = peek.env or base.get("env", TrainConfig.env)
    args = build_parser(algo, env).parse_args(argv)
    if args.list:
        return TrainConfig(), args, False
    cfg = config_from_args(args, base)
    if not cfg.out:
        raise ConfigError("--out is required (or --resume DIR)")
    resolve(cfg)
    return cfg, args, bool(peek.resume)


def list_implementations() -> list[dict]:
    """Every runnable implementation: what ``--list --json`` prints and what the Lab and node pages read."""
    out = []
    for impl in implementations():
        if impl.algo not in ALGORITHMS or impl.env not in ENVS:
            continue
        cfg = config_from_dict(impl.config())
        resolved = resolve(cfg, check_model=False)
        options = {k: v for k, v in as_dict(cfg).items() if k not in ("algo_config", "env_options", "out")}
        out.append({"id": impl.id, "title": impl.title, "algorithm": impl.algo, "environment": impl.env,
                    "nodes": list(impl.nodes), "source": impl.source, "summary": impl.summary,
                    "paper": impl.paper,
                    "options": options, "algo_options": as_dict(resolved.algo_cfg),
                    "env_options": as_dict(resolved.env_cfg)})
    return out


def _prepare_out(cfg: TrainConfig, overwrite: bool) -> None:
    """A new run's ``--out``: missing, empty, or holding only what a new run with ``cfg`` may find there
    (``RunDir.foreign_content``). A folder holding a run is refused unless ``--overwrite``, which removes
    only the run layout's entries (``RunDir.owns``) and keeps anything else; a folder that is not a run
    (``RunDir.is_run``) is refused whatever the flag, and nothing in it is touched."""
    run_dir = RunDir(cfg.out)
    if run_dir.path.exists() and not run_dir.path.is_dir():
        raise RunDirError(f"--out {cfg.out}: this is a file, not a folder; give a new or empty folder")
    try:
        run_dir.path.mkdir(parents=True, exist_ok=True)  # now, not after the model has loaded
    except OSError as err:
        raise RunDirError(f"--out {cfg.out}: cannot create the folder ({err.strerror or err})") from None
    foreign = run_dir.foreign_content(dataclasses.asdict(cfg))
    if not foreign:
        return
    shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
    if not run_dir.is_run():
        raise RunDirError(f"--out {cfg.out}: the folder is not empty and is not a run folder (it holds {shown}); "
                          "a new run needs a new or empty folder, and nothing in this one was changed")
    if not overwrite:
        raise RunDirError(f"--out {cfg.out}: the folder already holds files of another run ({shown}); use "
                          f"--resume {cfg.out} to continue it, a new folder, or --overwrite to replace it (only "
                          "the run's own files are removed)")
    kept = [name for name in foreign if not RunDir.owns(name)]
    try:
        for name in foreign:
            if RunDir.owns(name):
                target = run_dir.path / name
                shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
    except OSError as err:
        raise RunDirError(f"--out {cfg.out}: cannot remove the previous run's files ({err})") from None
    if kept:
        print(f"note: --overwrite kept {', '.join(kept)} in {cfg.out} (not part of a run)", file=sys.stderr)


def _check_sandbox(cfg: TrainConfig) -> str | None:
    """For an environment that runs model code: the sandbox layer that will run it, checked with one
    program now (SandboxUnavailable if it cannot run code here); None for the others."""
    if not get_env(cfg.env).uses_sandbox:
        return None
    from . import sandbox

    return sandbox.check(sandbox.run_python("print('ok')")).layer


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        cfg, args, resume = parse(argv)
        if args.list:
            rows = list_implementations()
            if args.json:
                print(json.dumps(rows, indent=1))
            else:
                for r in rows:
                    print(f"{r['id']:<28} {r['algorithm']:<14} {r['environment']:<12} {', '.join(r['nodes'])}")
            return 0
        if not resume:
            _prepare_out(cfg, args.overwrite)
        sandbox_layer = _check_sandbox(cfg)
    except (ConfigError, RunDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SandboxUnavailable as err:  # before the model loads: every reward would be 0
        print(f"error: {err}", file=sys.stderr)
        out = RunDir(cfg.out)
        step = out.read_status().get("step")
        out.write_status("failed", step if isinstance(step, int) else 0, cfg.steps, note=str(err))
        return 2
    # a stop may arrive during the model load or the warm start, before the trainer's own handler exists
    early_stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: early_stop.set())
    run_dir = RunDir(cfg.out)
    print(f"run {run_dir.path}: {cfg.algo} on {cfg.env}, model {cfg.model}", file=sys.stderr, flush=True)
    try:
        trainer = Trainer(cfg, resume=resume, stop_event=early_stop)
    except WarmStartStopped as stopped:
        run_dir.write_status("stopped", 0, cfg.steps, note=str(stopped))
        print(json.dumps({"state": "stopped", "step": 0, "out": str(run_dir.path)}), flush=True)
        return 0
    except (RunDirError, SandboxUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        if resume or isinstance(err, SandboxUnavailable):
            run_dir.write_status("failed", 0, cfg.steps, note=str(err))
        return 2
    trainer.sandbox_layer = sandbox_layer
    if trainer.rank == 0:
        run_dir.write_config(dataclasses.asdict(cfg))
        # a resumed run drops whatever was logged after its checkpoint, so no line is lost or doubled
        truncate_jsonl(run_dir.metrics_path, trainer.step)
        truncate_jsonl(run_dir.samples_path, trainer.step)
        sequence_clip = getattr(trainer.algo_cfg, "importance_sampling_level", None) == "sequence"  # GSPO
        loggers = [JsonlLogger(run_dir.path, cfg.samples_per_step),
                   HealthLogger(run_dir.path, cfg.max_completion_tokens, sequence_clip),
                   TensorBoardLogger(run_dir.tb_dir, purge_step=trainer.step + 1), ProgressBar(cfg.steps, trainer.step)]
        for logger in loggers:
            trainer.add_callback("on_step_end", logger)
            trainer.add_callback("on_train_end", logger.close)
    distributed.barrier()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, trainer.request_stop)
    if early_stop.is_set():
        trainer.request_stop()
    try:
        state = trainer.run()
    except SandboxUnavailable as err:  # every reward would be 0: stop, and say why
        trainer.write_status("failed", note=str(err))
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BaseException:
        trainer.write_status("failed")
        raise
    if trainer.rank == 0:
        print(json.dumps({"state": state, "step": trainer.step, "out": str(run_dir.path)}), flush=True)
    distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
