"""The grid file: what a grid names and what each of its cells and warm starts is given.

A grid file (``lab/recipes/grids/NAME.yaml``) names a recipe (the run options of every cell,
``lab/recipes/NAME.yaml`` with its per-environment and per-algorithm layers), the budget overrides
(``options``: steps, prompts, group size, lengths, and ``max_wall_s``, the wall-clock cap of each cell), the
implementations (``train --list`` ids), the seeds and the held-out evaluation.

Budget: every cell of an environment starts from the *same* warm-start checkpoint (SFT once per
environment, seed ``warm_seed``) and trains for the same number of optimiser steps on the same number of
rollouts per step (P x G), under the same wall-clock cap; held-out success is measured greedily on the
same problems for every cell (paired).

Owns ``Grid`` (loading and checking a grid file), ``GRIDS`` (the shipped grid files), the cell ids, and what
the recipe gives a cell (``cell_config``) and an environment's warm start (``warm_settings``,
``chosen_env_options``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from reference_impls.options import ConfigError

from lab import recipes

GRIDS = Path(__file__).resolve().parents[1] / "recipes" / "grids"


@dataclass(frozen=True)
class Grid:
    name: str
    recipe: str
    implementations: tuple[str, ...]
    seeds: tuple[int, ...]
    options: dict = field(default_factory=dict)  # budget overrides on top of the recipe
    eval_n: int = 100
    eval_seed: int = 4242
    warm_seed: int = 0
    label: str = ""
    baseline: str = "grpo"  # the algorithm every other one is compared with, per environment
    # also measure the untrained model (the recipe's model, no warm start) on the same held-out problems:
    # the "base" of base / SFT / SFT + RL
    base: bool = False
    # demonstrate the warm start on the cells' env_options (the levels they train and are evaluated on)
    # rather than the environment's defaults; off in the core grid, whose shipped warm starts predate it
    warm_on_env_options: bool = False

    @classmethod
    def load(cls, name_or_path: str) -> "Grid":
        path = Path(name_or_path)
        if not path.suffix:
            path = GRIDS / f"{name_or_path}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in GRIDS.glob("*.yaml")))
            raise ConfigError(f"grid {name_or_path!r}: no such file or grid name (known grids: {known})")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({err})") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict, where: str = "grid") -> "Grid":
        from lab.catalog import available

        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a grid is a mapping")
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)} - {"eval"}
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("name", "recipe", "implementations", "seeds"):
            if key not in data:
                raise ConfigError(f"{where}: missing field '{key}'")
        known = {i.id for i in available()}
        bad = [i for i in data["implementations"] if i not in known]
        if bad:
            raise ConfigError(f"{where}: field 'implementations': unknown {', '.join(map(str, bad))} "
                              f"(see python -m reference_impls.train --list)")
        if not data["seeds"] or not all(isinstance(s, int) and s >= 0 for s in data["seeds"]):
            raise ConfigError(f"{where}: field 'seeds' must be a non-empty list of integers >= 0")
        try:
            recipes.load(data["recipe"])
        except KeyError as err:
            raise ConfigError(f"{where}: field 'recipe': {err.args[0]}") from None
        ev = data.get("eval", {}) or {}
        return cls(name=str(data["name"]), recipe=data["recipe"], implementations=tuple(data["implementations"]),
                   seeds=tuple(data["seeds"]), options=dict(data.get("options", {}) or {}),
                   eval_n=int(ev.get("n", 100)), eval_seed=int(ev.get("seed", 4242)),
                   warm_seed=int(data.get("warm_seed", 0)), label=str(data.get("label", "")),
                   baseline=str(data.get("baseline", "grpo")), base=bool(data.get("base", False)),
                   warm_on_env_options=bool(data.get("warm_on_env_options", False)))

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["implementations"], d["seeds"] = list(self.implementations), list(self.seeds)
        d["eval"] = {"n": d.pop("eval_n"), "seed": d.pop("eval_seed")}
        return d

    def cells(self) -> list[tuple[str, int]]:
        """(implementation, seed), seed-major: every algorithm gets seed 0 before any gets seed 1, so a
        grid stopped early still compares all algorithms."""
        return [(impl, seed) for seed in self.seeds for impl in self.implementations]

    def envs(self) -> list[str]:
        from lab.catalog import get

        return list(dict.fromkeys(get(i).env for i in self.implementations))


def cell_id(impl: str, seed: int) -> str:
    return f"{impl}-s{seed}"


def cell_config(grid: Grid, impl_id: str, seed: int, warm_model: str) -> dict:
    """The cell's TrainConfig data: the implementation's switches, the recipe's layers, the grid's budget;
    the model is the environment's shared warm start (so no warm start of its own)."""
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
    return dataclasses.asdict(config_from_dict(config))


def warm_settings(grid: Grid, env: str) -> dict:
    """The warm start of an environment: the recipe's SFT settings (model, steps, examples, lr, sft_env)."""
    from lab.catalog import available, preset_config
    from reference_impls.sft import BATCH_SIZE as SFT_BATCH_SIZE

    impl = next(i for i in available() if i.env == env and i.id in grid.implementations)
    config = {**preset_config(impl, grid.recipe), **{k: v for k, v in grid.options.items() if k.startswith("sft")}}
    settings = {"model": grid.options.get("model", config["model"]), "sft_env": config.get("sft_env") or env,
                "sft_steps": config.get("sft_steps", 0), "sft_examples": config.get("sft_examples", 96),
                "sft_lr": config.get("sft_lr", 5e-5), "seed": grid.warm_seed}
    micro = grid.options.get("micro_batch_size", config.get("micro_batch_size"))
    if micro is not None and micro < SFT_BATCH_SIZE:  # memory only; named only where it splits the SFT batch
        settings["micro_batch_size"] = micro
    return settings


def env_of(impl_id: str) -> str:
    """The environment an implementation trains on."""
    from lab.catalog import get

    return get(impl_id).env


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


def chosen_env_options(env: str, env_options: dict) -> dict:
    """The env options a cell's layers (recipe, implementation, grid) set away from the environment's defaults.
    A cell's resolved config holds every option, defaults included; handing all of them to the warm start
    would override the env's ``demonstration_options`` with defaults (selfplay-arith's warm start then
    demonstrated proposals only, never solving, and loophole's every family instead of its SFT families)."""
    from reference_impls.envs import get_env

    defaults = dataclasses.asdict(get_env(env).options({}))
    return {k: v for k, v in env_options.items() if k not in defaults or _plain(v) != _plain(defaults[k])}
