"""A run's configuration: the options (``TrainConfig``), their validation (``resolve``) and loading them
from data (``config_from_dict``: config.json, a --config file, the Lab's form).

A config is validated once, where the user's input enters (the CLI's ``train.parse``, the Lab's form in
``lab.catalog.check``, a script's ``RunManager.submit``): :func:`resolve` checks every option and the
cross-option rules and gives the typed objects (:class:`Resolved`), which are handed on from there. A run
folder's ``config.json`` is written from a resolved config, so reading it back (``--resume``, the run
manager's ``--prepared``) only checks its integrity (:func:`typed`): names known, values of their types,
the algorithm's and environment's configs built. ``ConfigError.field`` names the option an error is about.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from .algorithm import Algorithm
from .envs import ENVS, EnvSpec, get_env
from .models import MODEL_NAMES
from .options import ConfigError, alias_map, as_dict, build, close_matches, coerce, option, spec_map
from .registry import algorithms

#: every algorithm the trainer can run, by the name ``--algo`` takes (collected from reference_impls/algorithms/;
#: ``registry.load_algo_module`` adds a user's)
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
    # 0 is allowed: the no-update control of a learning claim (same seeds, problems and samples, weights unchanged)
    lr: float = option(1e-5, "AdamW learning rate (0: a no-update control run). 1e-6..2e-5 for SmolLM2; the tiny "
                       "model tolerates far more.", low=0.0, high=1.0, aliases=("learning_rate",))
    # the control arm of benchmarks/learn_presets.py: its rewards are the lr-0 run's (every step reseeds from
    # (seed, step, rank) and the policy does not change), without the update's time (about 2/3 of a step)
    update: bool = option(True, "Update the policy each step. --no-update (with --lr 0) is the no-update control: "
                          "each step samples and scores its episodes as the trained run does, and no loss is "
                          "computed.")
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
    # long transcripts (TextWorld's run to ~1,150 tokens) need a bound on the tokens of a pass, not a count of sequences
    micro_batch_tokens: int = option(4096, "Padded tokens per forward/backward (rows x padded width; a longer "
                                     "sequence runs alone); lower it if memory runs short on long episodes. Memory "
                                     "only: the step is the same. 0 = no bound.", low=0, high=100_000_000)
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
    # measured on an AMD EPYC with AVX512-BF16, 2 threads, SmolLM2: a 32 x 160-token forward + backward 31 s in
    # float32, 19 s under bf16 autocast; sampling 8.6 s against 5.2 s (docs/learn_presets.md, "Precision")
    precision: str = option("fp32", "Arithmetic of the forwards and backwards: fp32, bf16 (torch.autocast to "
                            "bfloat16 for rollouts, the warm start and the update; weights, optimiser state and "
                            "log-probabilities stay float32) or auto (bf16 where the hardware computes in it, else "
                            "fp32). bf16 is faster only there (CPUs with AVX512-BF16 or AMX, recent GPUs); on an AVX2 "
                            "CPU it is slower.", choices=("fp32", "bf16", "auto"))
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



def supports_no_update(algo_cls: type[Algorithm]) -> bool:
    """Whether ``--no-update`` gives the ``--lr 0`` run's episodes: the algorithm samples online and draws its
    problems the default way (GRESO's or SRPO's draws depend on what their updates recorded)."""
    return algo_cls.online and algo_cls.draw is Algorithm.draw


def validate_model(name: str) -> None:
    if name in MODEL_NAMES or (Path(name).is_dir() and (Path(name) / "config.json").is_file()):
        return
    raise ConfigError(f"--model: {name!r} is neither one of {', '.join(MODEL_NAMES)} nor a folder saved by "
                      f"save_pretrained (with config.json){close_matches(name, MODEL_NAMES)}", field="model")


def _check_names(cfg: TrainConfig, task: EnvSpec | None) -> None:
    if cfg.algo not in ALGORITHMS:
        raise ConfigError(f"--algo: {cfg.algo!r} is not an algorithm here; choose one of "
                          f"{', '.join(ALGORITHMS)}{close_matches(cfg.algo, ALGORITHMS)} (or add yours with "
                          "--algo-module)", field="algo")
    if task is None and cfg.env not in ENVS:
        raise ConfigError(f"--env: {cfg.env!r} is not a registered environment; choose one of "
                          f"{', '.join(sorted(ENVS))}{close_matches(cfg.env, ENVS)} (or add yours with --env-module)",
                          field="env")
    if cfg.sft_env and cfg.sft_env not in ENVS:
        raise ConfigError(f"--sft-env: {cfg.sft_env!r} is not a registered environment; choose one of "
                          f"{', '.join(sorted(ENVS))}", field="sft_env")


def _build_typed(cfg: TrainConfig, task: EnvSpec | None) -> Resolved:
    """The algorithm's and environment's config dataclasses of ``cfg`` (building them checks their values)."""
    algo_cls = ALGORITHMS[cfg.algo]
    algo_cfg = build(algo_cls.Config, cfg.algo_config, f"option of --algo {cfg.algo}")
    task = task or get_env(cfg.env)
    try:
        env_cfg = task.options(cfg.env_options)
    except ConfigError as err:  # the form names an environment's option under env_options
        if err.field and not err.field.startswith("env_options."):
            err.field = f"env_options.{err.field}"
        raise
    return Resolved(cfg, algo_cls, algo_cfg, task, env_cfg)


def resolve(cfg: TrainConfig, check_model: bool = True, task: EnvSpec | None = None) -> Resolved:
    """Check every option of ``cfg`` and build the algorithm's and environment's configs. Raises
    :class:`ConfigError` naming the option, the value and what is allowed (and the option in its ``field``).
    ``task`` replaces the registered environment named by ``cfg.env`` (an environment built in code, as
    tests do). The one validation of a config: what it returns is handed on, never checked again."""
    train_specs = spec_map(TrainConfig)
    for name, spec in train_specs.items():
        if name in ("algo", "env"):
            continue
        setattr(cfg, name, coerce(spec, getattr(cfg, name)))
    _check_names(cfg, task)
    resolved = _build_typed(cfg, task)
    algo_cls, algo_cfg, task = resolved.algo_cls, resolved.algo_cfg, resolved.task
    # store the canonical names and types (aliases and strings resolved), so config.json is exact
    cfg.algo_config = {k: v for k, v in as_dict(algo_cfg).items()
                       if k in {alias_map(algo_cls.Config).get(n, n) for n in cfg.algo_config}}
    cfg.env_options = {k: v for k, v in as_dict(resolved.env_cfg).items()
                       if k in {alias_map(task.config).get(n, n) for n in cfg.env_options}}
    if cfg.max_new_tokens_per_turn > cfg.max_completion_tokens:
        raise ConfigError(f"--max-new-tokens-per-turn: {cfg.max_new_tokens_per_turn} cannot exceed "
                          f"--max-completion-tokens ({cfg.max_completion_tokens})", field="max_new_tokens_per_turn")
    if cfg.mini_batches > 1 and not algo_cls.online:
        raise ConfigError(f"--mini-batches: {cfg.mini_batches} needs an online algorithm; --algo {cfg.algo} trains "
                          "on stored data, one optimiser step per step", field="mini_batches")
    if cfg.mini_batches > 1 and "num_mini_batches" in spec_map(algo_cls.Config):
        raise ConfigError(f"--mini-batches: --algo {cfg.algo} splits its batch itself; set its --num-mini-batches",
                          field="mini_batches")
    if cfg.mini_batches > cfg.prompts_per_step * cfg.group_size:
        raise ConfigError(f"--mini-batches: {cfg.mini_batches} is more than the {cfg.prompts_per_step * cfg.group_size} "
                          "episodes of a step (--prompts-per-step x --group-size)", field="mini_batches")
    if not cfg.update:
        if cfg.lr != 0:
            raise ConfigError(f"--no-update: the no-update control changes no weight; set --lr 0 with it (not "
                              f"{cfg.lr:g}) so that its config says so", field="update")
        if not supports_no_update(algo_cls):
            raise ConfigError(f"--no-update: --algo {cfg.algo} "
                              + ("trains on stored data and samples nothing" if not algo_cls.online else
                                 "draws its problems from what its updates recorded, so a run without updates "
                                 "would sample other problems than its --lr 0 run")
                              + "; use --lr 0 for its control", field="update")
    algo_cls.check(algo_cfg, cfg, task)
    if cfg.rollout_engine == "vllm":
        from .vllm_engine import check_available

        try:
            check_available()
        except ConfigError as err:
            err.field = err.field or "rollout_engine"
            raise
    if check_model:
        validate_model(cfg.model)
    return resolved


#: the Python types a config.json value of each option kind may have (an int is a valid float)
_STORED_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float), "choice": (str,), "text": (str,),
                 "ints": (list, tuple), "texts": (list, tuple)}


def typed(cfg: TrainConfig, where: str = "config.json", task: EnvSpec | None = None) -> Resolved:
    """The typed objects of a config that was validated when it was stored (a run folder's ``config.json``,
    written from a resolved config): an integrity check only, names known and each run option of its type,
    then the algorithm's and environment's configs built. The cross-option rules, the model, the sandbox and
    the rollout engine are not checked again; a file changed by hand since is named with ``where``."""
    for name, spec in spec_map(TrainConfig).items():
        value = getattr(cfg, name)
        if not isinstance(value, _STORED_TYPES[spec.kind]) or (isinstance(value, bool) and spec.kind != "bool"):
            raise ConfigError(f"{where}: {name} is {value!r}, not {spec.describe_allowed()} (the file was changed "
                              "after it was validated?)", field=name)
    _check_names(cfg, task)
    return _build_typed(cfg, task)


#: run options whose default follows another option the data does set: (option, the budget it cannot exceed).
#: TRL's ``--max-completion-length 32`` alone must not meet the per-turn default of 48.
_DEFAULT_FOLLOWS = (("max_new_tokens_per_turn", "max_completion_tokens"),)


def config_from_dict(data: dict) -> TrainConfig:
    """A TrainConfig from saved or hand-written data (config.json, a --config file, the Lab's form).
    Unknown keys are errors; TRL's names are accepted. A top-level key that is no run option is the
    algorithm's (a flat --config file) unless it names an option of the run's environment and none of its
    algorithm: then it moves into ``env_options`` (the layout saved before environments owned their options,
    where an empty value meant the environment's default). An option the data leaves out takes its default,
    except that the per-turn token limit takes at most the episode budget the data sets (``_DEFAULT_FOLLOWS``):
    only two values the data gives can contradict each other."""
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
    for follower, budget in _DEFAULT_FOLLOWS:
        if follower in kwargs or budget not in kwargs:
            continue
        try:
            limit = coerce(fields[budget], kwargs[budget])
        except ConfigError:
            continue  # resolve names the bad budget
        kwargs[follower] = min(fields[follower].default, limit)
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


def stored(cfg: TrainConfig) -> dict:
    """``cfg`` as a run folder's config.json holds it."""
    return dataclasses.asdict(cfg)
