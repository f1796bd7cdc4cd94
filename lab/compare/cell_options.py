"""What a grid (``grid.Grid``) gives each of its cells and each environment's warm start and references: a cell's
TrainConfig data (``cell_config``) with the grid's budget spent alike by every algorithm (``budget_options``,
``updates_per_batch``, ``policy_steps``), an environment's warm start (``warm_settings``, ``chosen_env_options``),
its options typed once (``env_config``) and the config its references are scored under (``reference_config``).
"""
from __future__ import annotations

import dataclasses

from reference_impls.options import ConfigError

from .grid import Grid, variant


def cell_config(grid: Grid, impl_id: str, seed: int, warm_model: str, lr: float | None = None) -> dict:
    """The cell's TrainConfig data: the implementation's switches, the recipe's layers, the grid's budget
    (``budget_options``); the model is the environment's shared warm start (so no warm start of its own).
    ``lr``: the learning rate chosen on validation (``driver.sweep``) instead of the recipe's."""
    from lab.catalog import get, preset_config
    from reference_impls.train import config_from_dict

    impl = get(impl_id)
    config = preset_config(impl, grid.recipe)
    overrides = dict(grid.options)
    env_options = overrides.pop("env_options", None)
    config.update(overrides)
    if env_options:
        config["env_options"] = {**config["env_options"], **env_options}
    config.update(seed=seed, model=warm_model, sft_steps=0, out="cell")
    if lr is not None:
        config["lr"] = lr
    cfg = config_from_dict(config)
    budget_options(grid, impl_id, cfg)
    return dataclasses.asdict(cfg)


def budget_options(grid: Grid, impl_id: str, cfg) -> None:
    """Make ``cfg`` (a TrainConfig) spend the grid's budget the same way for every algorithm: ``mu`` updates per
    rollout batch (the shared update's ``mini_batches``; PPO: one epoch of ``mu`` minibatches); PPO's critic
    warm-up part of its ``steps`` (``budget: sampled-episodes``: the same episodes sampled as every other cell)
    or added on top of the policy's steps (``policy-batches``, the grids before issue 60); an offline
    algorithm's pairs built from steps x P prompts (x G samples each: the episodes an online cell samples)."""
    from reference_impls.options import build, spec_map
    from reference_impls.train import ALGORITHMS

    algo_cls = ALGORITHMS[cfg.algo]
    fields = spec_map(algo_cls.Config)
    mu = grid.mu.get(variant(impl_id))
    if mu is not None:
        if "num_mini_batches" in fields:
            cfg.algo_config.update(num_iterations=1, num_mini_batches=mu)
        else:
            cfg.mini_batches = mu
    if "critic_warmup_steps" in fields:
        warmup = int(build(algo_cls.Config, dict(cfg.algo_config), f"option of --algo {cfg.algo}").critic_warmup_steps)
        if grid.budget == "policy-batches":
            cfg.steps += warmup
        elif warmup >= cfg.steps:  # sampled-episodes: the warm-up's batches come out of the same steps
            raise ConfigError(f"{impl_id}: its critic warm-up ({warmup} steps) leaves its policy none of the "
                              f"budget's {cfg.steps} steps (budget: sampled-episodes); give more steps")
    if not algo_cls.online and "pair_prompts" in fields:
        cfg.algo_config["pair_prompts"] = cfg.steps * cfg.prompts_per_step


def updates_per_batch(config: dict) -> int:
    """mu as configured: the policy updates one rollout batch gives (epochs x minibatches; 1 for an offline
    algorithm, one step per stored batch)."""
    from reference_impls.options import build, spec_map
    from reference_impls.train import ALGORITHMS

    algo_cls = ALGORITHMS[config["algo"]]
    algo = build(algo_cls.Config, dict(config.get("algo_config", {})), f"option of --algo {config['algo']}")
    passes = int(getattr(algo, "num_iterations", 1))
    if "num_mini_batches" in spec_map(algo_cls.Config):
        return passes * int(algo.num_mini_batches)
    return passes * int(config.get("mini_batches", 1)) if algo_cls.online else 1


def policy_steps(config: dict) -> int:
    """The rollout batches a cell's policy is budgeted (its ``steps`` less PPO's critic warm-up)."""
    return config["steps"] - int(config.get("algo_config", {}).get("critic_warmup_steps", 0) or 0)


def warm_settings(grid: Grid, env: str, warm_seed: int | None = None) -> dict:
    """The warm start of an environment: the recipe's SFT settings (model, steps, examples, lr, sft_env), with
    seed ``warm_seed`` (one of the grid's ``warm_seeds``; default: the first)."""
    from lab.catalog import available, preset_config
    from reference_impls.sft import BATCH_SIZE as SFT_BATCH_SIZE
    from reference_impls.train import TrainConfig

    impl = next(i for i in available() if i.env == env and i.id in grid.implementations)
    config = {**preset_config(impl, grid.recipe), **{k: v for k, v in grid.options.items() if k.startswith("sft")}}
    trainer = TrainConfig()  # what the recipe leaves unset is what the trainer's own warm start would use
    settings = {"model": grid.options.get("model", config["model"]), "sft_env": config.get("sft_env") or env,
                "sft_steps": config.get("sft_steps", trainer.sft_steps),
                "sft_examples": config.get("sft_examples", trainer.sft_examples),
                "sft_lr": config.get("sft_lr", trainer.sft_lr),
                "seed": grid.warm_seed if warm_seed is None else warm_seed}
    micro = grid.options.get("micro_batch_size", config.get("micro_batch_size"))
    if micro is not None and micro < SFT_BATCH_SIZE:  # memory only; named only where it splits the SFT batch
        settings["micro_batch_size"] = micro
    # memory only too, and always named: what the grid or recipe sets, else the trainer's default, so the grid's
    # warm start splits its batches as a run's own --sft-steps would (the same weights, bit for bit)
    settings["micro_batch_tokens"] = grid.options.get("micro_batch_tokens",
                                                      config.get("micro_batch_tokens", trainer.micro_batch_tokens))
    return settings


def env_of(impl_id: str) -> str:
    """The environment an implementation trains on."""
    from lab.catalog import get

    return get(impl_id).env


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def chosen_env_options(env: str, env_options) -> dict:
    """The env options a cell's layers (recipe, implementation, grid) set away from the environment's defaults
    (``env_options``: the cell's typed env config, or a mapping of option values), as plain values.
    A cell's resolved config holds every option, defaults included; handing all of them to the warm start
    would override the env's ``demonstration_options`` with defaults (selfplay-arith's warm start then
    demonstrated proposals only, never solving, and loophole's every family instead of its SFT families)."""
    from reference_impls.envs import get_env

    defaults = dataclasses.asdict(get_env(env).options({}))
    values = dataclasses.asdict(env_options) if dataclasses.is_dataclass(env_options) else env_options
    return {k: _plain(v) for k, v in values.items() if k not in defaults or _plain(v) != _plain(defaults[k])}


def env_config(config: dict):
    """A cell's environment options, typed once (``EnvSpec.config_of`` of its config's ``env`` and ``env_options``):
    the one form in which a grid's options reach the warm start's episodes and every held-out evaluation (the
    cell's own training reads the same options from its ``config.json``)."""
    from reference_impls.envs import get_env

    return get_env(config["env"]).config_of(config["env_options"])


def reference_config(grid: Grid, env: str, model: str) -> dict:
    """The config of ``env``'s first cell (its first implementation, the warm seed) with ``model``: the env options
    and lengths the references of ``env`` (the untrained model, the warm starts) are trained and scored under."""
    impl = next(i for i in grid.implementations if env_of(i) == env)
    return cell_config(grid, impl, grid.warm_seed, model)
