"""The comparison grid: algorithms under one model, one warm start, one budget and several seeds.

    python -m lab.compare run    GRID [--dir DIR] [--max-cells N] [--env ENV]   # resumable: finished stages are kept
    python -m lab.compare status GRID [--dir DIR]
    python -m lab.compare report GRID [--dir DIR] [--json]
    python -m lab.compare passk  GRID --env ENV [--dir DIR] [--samples 64] [--problems 50]
    python -m lab.compare export GRID [--dir DIR] --to FOLDER      # the small result files, to ship

GRID is a grid file's name in ``lab/recipes/grids/`` or a path to one. A grid names a recipe (the run
options of every cell, ``lab/recipes/NAME.yaml`` with its per-environment and per-algorithm layers), the
budget overrides (``options``: steps, prompts, group size, lengths, and ``max_wall_s``, the wall-clock
cap of each cell), the implementations (``train --list`` ids), the seeds and the held-out evaluation.

Budget: every cell of an environment starts from the *same* warm-start checkpoint (SFT once per
environment, seed ``warm_seed``) and trains for the same number of optimiser steps on the same number of
rollouts per step (P x G), under the same wall-clock cap; held-out success is measured greedily on the
same problems for every cell (paired).

Layout of DIR (default: the data dir's ``compare/<grid name>``)::

    grid.yaml                    the grid as run (a different grid refuses to reuse the folder)
    base/<env>.json              the untrained model's held-out (grids with ``base: true``)
    warm/<env>/                  the environment's warm-start model + done.json (with its held-out, no RL)
    cells/<impl>-s<seed>/run/    the trainer's run folder (checkpoints: a killed cell resumes)
    cells/<impl>-s<seed>/result.json   config, curve, held-out per problem, time, tokens, peak memory
    cells/<impl>-s<seed>/error.txt     why the cell failed (it is retried on the next run)
    passk/<env>.json             pass@k curves of the base, warm-start and best RL models

Stages run one at a time, each in its own process (a crash or OOM costs one cell, and the peak memory
is the cell's own). The module sits in ``lab`` rather than ``reference_impls`` because it reads the
Lab's recipes; imports run app -> lab -> reference_impls.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from atlas_data import data_dir
from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir, read_jsonl
from reference_impls.stats import bootstrap_interval, paired_difference

from . import recipes

GRIDS = Path(__file__).resolve().parent / "recipes" / "grids"
RESULTS = Path(__file__).resolve().parent / "results"  # shipped results, one folder per grid


# ----------------------------------------------------------------------------------------------------
# the grid file

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


# ----------------------------------------------------------------------------------------------------
# the grid folder

class GridDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def default(cls, grid: Grid) -> "GridDir":
        return cls(data_dir() / "compare" / grid.name)

    def warm(self, env: str) -> Path:
        return self.path / "warm" / env

    def base(self, env: str) -> Path:
        return self.path / "base" / f"{env}.json"

    def cell(self, impl: str, seed: int) -> Path:
        return self.path / "cells" / cell_id(impl, seed)

    def result(self, impl: str, seed: int) -> dict | None:
        path = self.cell(impl, seed) / "result.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def bind(self, grid: Grid) -> None:
        """Record the grid (first run) or refuse a folder that holds a different grid's cells."""
        self.path.mkdir(parents=True, exist_ok=True)
        spec = self.path / "grid.yaml"
        if spec.exists():
            old = yaml.safe_load(spec.read_text()) or {}
            new = grid.as_dict()
            changed = [k for k in ("recipe", "options", "eval", "warm_seed") if old.get(k) != new.get(k)]
            if bool(old.get("warm_on_env_options", False)) != grid.warm_on_env_options:  # older folders lack it
                changed.append("warm_on_env_options")
            if changed:
                raise ConfigError(f"{self.path}: holds a grid with different {', '.join(changed)}; its cells would "
                                  f"not be comparable. Use another --dir, or delete the folder")
        spec.write_text(yaml.safe_dump(grid.as_dict(), sort_keys=False))


def _atomic_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


# ----------------------------------------------------------------------------------------------------
# stages (each runs in its own process: python -m lab.compare _warm / _cell / _passk)

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


def warm_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    from reference_impls.models import load_policy
    from reference_impls.sft import demonstrations, sft

    out = gdir.warm(env)
    settings = warm_settings(grid, env)
    episode_options = None
    if settings["sft_env"] == env:
        impl = next(i for i in grid.implementations if _env_of(i) == env)
        chosen = chosen_env_options(env, cell_config(grid, impl, grid.warm_seed, settings["model"])["env_options"])
        episode_options = chosen  # the cells' episode format (moves per tag, hints), whichever problems are shown
        if grid.warm_on_env_options:
            settings["options"] = chosen
    t0 = time.time()
    model, tokenizer = load_policy(settings["model"], seed=settings["seed"])
    losses = []
    if settings["sft_steps"] > 0:
        samples = demonstrations(tokenizer, settings["sft_env"], settings["sft_examples"], settings["seed"],
                                 options=settings.get("options"), episode_options=episode_options)
        def progress(step, loss):  # into warm-<env>.log: a long warm start shows where it is
            print(f"sft step {step}/{settings['sft_steps']} loss {loss:.4f} {time.time() - t0:.0f}s", flush=True)

        losses = sft(model, tokenizer, samples, settings["sft_steps"], lr=settings["sft_lr"], seed=settings["seed"],
                     log=progress, micro_batch_size=settings.get("micro_batch_size"))
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    _atomic_json(tmp / "done.json", {**settings, "losses": losses, "wall_s": time.time() - t0})
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def _reference_heldout(grid: Grid, env: str, model: str) -> dict:
    """A reference model's held-out record on ``env``'s cell problems and lengths, with its time."""
    impl = next(i for i in grid.implementations if _env_of(i) == env)
    config = cell_config(grid, impl, grid.warm_seed, model)
    t0 = time.time()
    heldout = evaluate_heldout(model, env, config["env_options"], grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    return {**_heldout_record(heldout), "eval_s": round(time.time() - t0, 1)}


def warm_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the warm start alone (no RL): the reference every cell of ``env`` is read
    against. Written into the warm start's ``done.json``."""
    done = gdir.warm(env) / "done.json"
    _atomic_json(done, {**json.loads(done.read_text()), **_reference_heldout(grid, env, str(gdir.warm(env)))})


def base_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the untrained model (no warm start, no RL)."""
    model = warm_settings(grid, env)["model"]
    record = _reference_heldout(grid, env, model)
    gdir.base(env).parent.mkdir(parents=True, exist_ok=True)
    _atomic_json(gdir.base(env), {"model": model, "env": env, **record})


def _heldout_record(heldout: list[int]) -> dict:
    """Held-out success as every record stores it: the mean, its 95% bootstrap interval, the 0/1s."""
    interval = bootstrap_interval([heldout])
    return {"heldout": interval.mean, "heldout_interval": [interval.low, interval.high],
            "heldout_by_problem": heldout}


def _env_of(impl_id: str) -> str:
    from lab.catalog import get

    return get(impl_id).env


def evaluate_heldout(model_name: str, env: str, env_options: dict, n: int, seed: int,
                     max_new_tokens_per_turn: int, max_completion_tokens: int) -> list[int]:
    """Greedy held-out success, one 0/1 per problem (the same problems for every cell of the grid)."""
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import evaluate
    from reference_impls.models import load_policy

    task = get_env(env)
    env_options = task.heldout_env_options(env_options)
    problems = task.problems("heldout", n=n, seed=seed, **env_options)
    model, tokenizer = load_policy(model_name)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=env_options, return_samples=True)
    correct = [0] * len(problems)
    for s in samples:
        correct[s.group] = int(bool(s.info.get("correct")))
    return correct


def cell_stage(grid: Grid, gdir: GridDir, impl: str, seed: int) -> None:
    from lab.catalog import get
    from reference_impls.dpo import load_pair_stats
    from reference_impls.train import main as train_main

    folder = gdir.cell(impl, seed)
    folder.mkdir(parents=True, exist_ok=True)
    run = RunDir(folder / "run")
    env = get(impl).env
    config = cell_config(grid, impl, seed, str(gdir.warm(env)))
    config["out"] = str(run.path)
    t0 = time.time()
    resumed_from = None
    if run.latest_checkpoint() is not None:  # a killed cell continues from its checkpoint
        resumed_from = json.loads((run.latest_checkpoint() / "trainer_state.json").read_text())["step"]
        rc = train_main(["--resume", str(run.path)])
    else:
        cfg_file = folder / "config.json"
        cfg_file.write_text(json.dumps(config, indent=1))
        rc = train_main(["--config", str(cfg_file), "--out", str(run.path), "--overwrite"])
    if rc != 0:
        raise RuntimeError(f"the trainer exited with {rc}")
    train_s = time.time() - t0
    ckpt = run.latest_checkpoint()
    if ckpt is None:
        raise RuntimeError(f"{run.path}: no checkpoint after training")
    metrics = read_jsonl(run.metrics_path)
    # an offline algorithm (the DPO family) samples its episodes before the first step: their time and
    # tokens are part of the cell's cost, though no step's metrics carry them
    pair_stats = load_pair_stats(run.pairs_path)
    t1 = time.time()
    heldout = evaluate_heldout(str(ckpt), env, config["env_options"], grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    _atomic_json(folder / "result.json", {
        "cell": cell_id(impl, seed), "implementation": impl, "algo": config["algo"], "env": env, "seed": seed,
        "config": config, "steps_done": metrics[-1]["step"] if metrics else 0, "resumed_from_step": resumed_from,
        "stopped_by_wall_cap": bool(metrics) and metrics[-1]["step"] < config["steps"],
        "curve": [{"step": m["step"], "reward_mean": m.get("reward_mean"), "accuracy": m.get("accuracy")}
                  for m in metrics],
        "tokens": round(sum(m.get("tokens_per_s", 0.0) * m.get("step_s", 0.0) for m in metrics))
                  + int(pair_stats.get("generated_tokens", 0)),
        "train_s": round((metrics[-1]["wall_s"] if metrics else train_s) + pair_stats.get("build_s", 0.0), 1),
        "sampling_before_training_s": pair_stats.get("build_s"),
        "eval_s": round(time.time() - t1, 1), "peak_rss_mb": round(_peak_rss_mb(), 1),
        **_heldout_record(heldout),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    (folder / "error.txt").unlink(missing_ok=True)
    run.drop_resume_state()  # a finished cell is never resumed: keep its final weights only (pass@k samples them)


def passk_stage(grid: Grid, gdir: GridDir, env: str, samples: int, n_problems: int, out=sys.stdout) -> None:
    """pass@k for k = 1..samples of the base model, the warm start and the best RL cell of ``env``.

    Resumable: each problem's count is saved as it is measured (``passk/.<env>.partial.json``), and each
    problem's samples draw from their own seed (the eval seed + the problem's index), so a killed stage
    resumes at the next problem and ends with the same counts as one that was never stopped.
    """
    import dataclasses as dc

    import torch

    from reference_impls.envs import get_env
    from reference_impls.models import load_policy
    from reference_impls.rollout import RolloutConfig, rollout
    from reference_impls.stats import pass_at_k_curve

    done = [r for r in results(grid, gdir) if r["env"] == env]
    if not done:
        raise ConfigError(f"passk --env {env}: no finished cell of this environment yet")
    best = max(done, key=lambda r: r["heldout"])
    best_run = RunDir(gdir.cell(best["implementation"], best["seed"]) / "run")
    if best_run.latest_model() is None:
        raise ConfigError(f"passk --env {env}: the best cell {best['cell']} has no checkpoint in {best_run.path} "
                          f"(an exported result without its run); train it again by moving its folder away")
    config = best["config"]
    models = {"base": warm_settings(grid, env)["model"], "warm start": str(gdir.warm(env)),
              f"RL ({best['implementation']}, seed {best['seed']})": str(best_run.latest_model())}
    task = get_env(env)
    env_options = task.heldout_env_options(config["env_options"])
    problems = task.problems("heldout", n=n_problems, seed=grid.eval_seed, **env_options)
    rcfg = RolloutConfig(group_size=samples, max_new_tokens_per_turn=config["max_new_tokens_per_turn"],
                         max_completion_tokens=config["max_completion_tokens"], temperature=1.0,
                         env_options=env_options)
    settings = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0, "models": models,
                "max_new_tokens_per_turn": rcfg.max_new_tokens_per_turn,
                "max_completion_tokens": rcfg.max_completion_tokens, "env_options": env_options}
    (gdir.path / "passk").mkdir(exist_ok=True)
    partial_path = gdir.path / "passk" / f".{env}.partial.json"
    partial = json.loads(partial_path.read_text()) if partial_path.exists() else None
    if partial is None or partial.get("settings") != settings:  # other settings or another best cell: start over
        partial = {"settings": settings, "counts": {}, "seconds": {}}
    result = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0, "curves": {}}
    for label, name in models.items():
        counts = partial["counts"].setdefault(label, [])
        seconds = partial["seconds"].setdefault(label, [])
        if len(counts) < len(problems):
            model, tokenizer = load_policy(name, seed=grid.eval_seed)
            for i in range(len(counts), len(problems)):  # one problem at a time: its G = samples rows share a prefill
                t0 = time.time()
                torch.manual_seed(grid.eval_seed + i)
                rows, _ = rollout(model, tokenizer, task, [problems[i]], dc.replace(rcfg))
                counts.append(sum(int(bool(s.info.get("correct"))) for s in rows))
                seconds.append(round(time.time() - t0, 2))
                _atomic_json(partial_path, partial)
                left = (len(problems) - i - 1) * sum(seconds) / len(seconds)
                print(f"{label}: problem {i + 1}/{len(problems)}, {counts[-1]}/{samples} correct "
                      f"({seconds[-1]:.0f}s; this model's ETA {_duration(left)})", file=out, flush=True)
        result["curves"][label] = {"model": name, "correct_counts": counts, "wall_s": round(sum(seconds), 1),
                                   "pass_at_k": {str(k): v for k, v in pass_at_k_curve(counts, samples).items()}}
    _atomic_json(gdir.path / "passk" / f"{env}.json", result)
    partial_path.unlink()


# ----------------------------------------------------------------------------------------------------
# the driver

def validate(grid: Grid, gdir: GridDir) -> None:
    """Every cell's config passes the trainer's own checks before anything runs (ConfigError names the cell)."""
    from reference_impls.train import config_from_dict, resolve

    for impl, seed in grid.cells():
        try:
            from lab.catalog import get

            config = cell_config(grid, impl, seed, str(gdir.warm(get(impl).env)))
            resolve(config_from_dict(config), check_model=False)
        except (ConfigError, TypeError, ValueError) as err:
            raise ConfigError(f"grid {grid.name}, cell {cell_id(impl, seed)}: {err}") from None


def _child(args: list[str], log: Path) -> int:
    with open(log, "a") as f:
        proc = subprocess.run([sys.executable, "-m", "lab.compare", *args], stdout=f, stderr=subprocess.STDOUT,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
    return proc.returncode


def run(grid: Grid, gdir: GridDir, max_cells: int | None = None, out=sys.stdout, grid_arg: str | None = None,
        env: str | None = None) -> int:
    """Run every missing stage in order (only ``env``'s warm start and cells when given: a grid can be
    finished one environment at a time); returns the number of failed stages."""
    validate(grid, gdir)
    if env is not None and env not in grid.envs():
        raise ConfigError(f"--env {env}: the grid has no cells on it; its environments: {', '.join(grid.envs())}")
    gdir.bind(grid)
    grid_arg = grid_arg or str(gdir.path / "grid.yaml")
    failures = 0
    envs = [e for e in grid.envs() if env is None or e == env]
    for name in envs:
        if grid.base and not gdir.base(name).exists():
            print(f"held-out of the untrained {name} model ...", file=out, flush=True)
            gdir.base(name).parent.mkdir(parents=True, exist_ok=True)
            if _child(["_baseeval", grid_arg, "--dir", str(gdir.path), "--env", name],
                      gdir.path / f"base-eval-{name}.log"):
                print(f"  failed: see {gdir.path / f'base-eval-{name}.log'}", file=out, flush=True)
                return failures + 1
        if not (gdir.warm(name) / "done.json").exists():
            print(f"warm start of {name} ...", file=out, flush=True)
            gdir.warm(name).parent.mkdir(parents=True, exist_ok=True)
            if _child(["_warm", grid_arg, "--dir", str(gdir.path), "--env", name], gdir.path / f"warm-{name}.log"):
                print(f"  failed: see {gdir.path / f'warm-{name}.log'}", file=out, flush=True)
                return failures + 1
        if "heldout" not in json.loads((gdir.warm(name) / "done.json").read_text()):
            print(f"held-out of the {name} warm start (no RL) ...", file=out, flush=True)
            if _child(["_warmeval", grid_arg, "--dir", str(gdir.path), "--env", name],
                      gdir.path / f"warm-eval-{name}.log"):
                print(f"  failed: see {gdir.path / f'warm-eval-{name}.log'}", file=out, flush=True)
                return failures + 1
    cells = [c for c in grid.cells() if _env_of(c[0]) in envs]
    finished = {c: gdir.result(*c) for c in cells}
    todo = [c for c in cells if finished[c] is None]
    for (impl, seed), r in finished.items():  # kept, not re-run: the user decides whether the old result goes
        if r is not None and (changed := stale_fields(grid, gdir, impl, seed, r)):
            print(f"warning: {cell_id(impl, seed)} was trained with other {', '.join(changed)} than the recipe "
                  f"gives it now; move {gdir.cell(impl, seed)} away to re-run it", file=out, flush=True)
    total, finished_before = len(cells), len(cells) - len(todo)
    if max_cells is not None:
        todo = todo[:max_cells]
    durations = []
    for i, (impl, seed) in enumerate(todo):
        done = finished_before + i
        eta = f", ETA {_duration(sum(durations) / len(durations) * (len(todo) - i))}" if durations else ""
        print(f"[{done + 1}/{total}] {cell_id(impl, seed)}{eta}", file=out, flush=True)
        folder = gdir.cell(impl, seed)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        rc = _child(["_cell", grid_arg, "--dir", str(gdir.path), "--impl", impl, "--seed", str(seed)],
                    folder / "log.txt")
        durations.append(time.time() - t0)
        if rc != 0 or gdir.result(impl, seed) is None:
            failures += 1
            tail = (folder / "log.txt").read_text(errors="replace")[-2000:]
            (folder / "error.txt").write_text(f"exit code {rc}\n{tail}")
            print(f"  failed (exit {rc}): {folder / 'error.txt'}", file=out, flush=True)
        else:
            r = gdir.result(impl, seed)
            print(f"  held-out {r['heldout']:.3f} in {_duration(durations[-1])}", file=out, flush=True)
    return failures


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def stale_fields(grid: Grid, gdir: GridDir, impl: str, seed: int, result: dict) -> list[str]:
    """The run options in which a finished cell's recorded config differs from what the grid's recipe
    gives that cell now (a recipe edited after the cell ran): such a cell is not comparable with new ones."""
    now = cell_config(grid, impl, seed, str(gdir.warm(_env_of(impl))))
    then = result.get("config", {})
    return sorted(k for k in set(now) | set(then) if k not in ("out", "model") and now.get(k) != then.get(k))


def status(grid: Grid, gdir: GridDir) -> list[dict]:
    rows = []
    for impl, seed in grid.cells():
        folder = gdir.cell(impl, seed)
        result = gdir.result(impl, seed)
        changed = [] if result is None else stale_fields(grid, gdir, impl, seed, result)
        if changed:
            state = "stale"
        elif result is not None:
            state = "done"
        elif (folder / "error.txt").exists():
            state = "failed"
        elif RunDir(folder / "run").latest_checkpoint() is not None:
            state = "partial"
        else:
            state = "pending"
        rows.append({"cell": cell_id(impl, seed), "state": state, "changed": changed,
                     "heldout": None if result is None else result["heldout"]})
    return rows


def results(grid: Grid | None, gdir: GridDir) -> list[dict]:
    """Every finished cell's result (of the grid's cells; all cells in the folder when grid is None)."""
    if grid is not None:
        return [r for c in grid.cells() if (r := gdir.result(*c)) is not None]
    found = []  # a grid folder has cells/<id>/result.json; an exported one cells/<id>.json
    for path in sorted([*(gdir.path / "cells").glob("*/result.json"), *(gdir.path / "cells").glob("*.json")]):
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return found


def leaderboard(cells: list[dict], baseline: str = "grpo") -> dict[str, list[dict]]:
    """Per environment, one row per implementation: held-out success over seeds and problems with its
    95% interval, the paired difference to the baseline algorithm's implementation, a verdict, and cost."""
    by_env: dict[str, dict[str, list[dict]]] = {}
    for c in cells:
        by_env.setdefault(c["env"], {}).setdefault(c["implementation"], []).append(c)
    board = {}
    for env, impls in by_env.items():
        base = next((rs for impl, rs in impls.items() if _is_plain(impl, baseline)), None)
        rows = []
        for impl, rs in impls.items():
            matrix = [r["heldout_by_problem"] for r in sorted(rs, key=lambda r: r["seed"])]
            iv = bootstrap_interval(matrix)
            row = {"implementation": impl, "algo": rs[0]["algo"], "env": env, "seeds": len(rs),
                   "heldout": iv.mean, "low": iv.low, "high": iv.high,
                   "train_s": sum(r["train_s"] for r in rs) / len(rs), "tokens": sum(r["tokens"] for r in rs) / len(rs),
                   "peak_rss_mb": max(r["peak_rss_mb"] for r in rs), "vs_baseline": None, "verdict": ""}
            if base is not None and rs is not base:
                paired = paired_difference(matrix, [r["heldout_by_problem"] for r in base])
                row["vs_baseline"] = paired.difference.as_dict()
                row["verdict"] = _verdict_text(paired, base[0]["implementation"], one_seed=min(len(rs), len(base)) < 2)
            elif rs is base:
                row["verdict"] = "baseline"
            rows.append(row)
        board[env] = sorted(rows, key=lambda r: -r["heldout"])
    return board


ONE_SEED = "one seed: the interval leaves out seed-to-seed variation"


def _verdict_text(paired, against: str, one_seed: bool = False) -> str:
    """A paired comparison in words, e.g. "better than calculator-grpo (p < 0.01)" (rather than a rounded
    "p = 0.00"). ``one_seed``: a side was trained with a single seed, so the bootstrap could resample only the
    problems; the verdict says so, because one algorithm's seeds can differ by more than the interval's width
    (the core grid's search-grpo: 0.14 and 0.53)."""
    relation = {"better": "better than", "worse": "worse than"}.get(paired.verdict, "no significant difference from")
    p = "p < 0.01" if paired.p_value < 0.005 else f"p = {paired.p_value:.2f}"
    return f"{relation} {against} ({p}{'; ' + ONE_SEED if one_seed else ''})"


def _is_plain(impl_id: str, algo: str) -> bool:
    """Whether the implementation is ``algo`` itself (no variant switches), e.g. calculator-grpo for grpo."""
    from reference_impls.implementations import BY_ID

    impl = BY_ID.get(impl_id)
    return impl is not None and impl.algo == algo and not impl.algo_options


def progression(cells: list[dict], base: dict[str, dict], warm: dict[str, dict]) -> dict[str, list[dict]]:
    """Per environment, what each stage of training adds on the same held-out problems: the untrained
    model, the warm start (SFT only) and each implementation's RL cells. Each stage is compared, paired on
    the problems, with the stage it starts from (SFT with the untrained model, RL with the warm start), so
    "did RL help beyond SFT?" gets an interval and a verdict. ``base`` / ``warm``: env -> held-out record."""
    envs = list(dict.fromkeys([c["env"] for c in cells] + [e for e in (*base, *warm)]))
    out = {}
    for env in envs:
        # (label, implementation or None, held-out matrix: one row per seed, the stage it starts from)
        stages = []
        if "heldout" in base.get(env, {}):
            stages.append(("untrained", None, [base[env]["heldout_by_problem"]], None))
        if "heldout" in warm.get(env, {}):
            stages.append(("SFT (warm start)", None, [warm[env]["heldout_by_problem"]], "untrained"))
        by_impl: dict[str, list[dict]] = {}
        for c in cells:
            if c["env"] == env:
                by_impl.setdefault(c["implementation"], []).append(c)
        for impl, rs in by_impl.items():
            stages.append((f"SFT + RL ({impl})", impl,
                           [r["heldout_by_problem"] for r in sorted(rs, key=lambda r: r["seed"])], "SFT (warm start)"))
        rows = []
        for label, impl, matrix, start in stages:
            iv = bootstrap_interval(matrix)
            row = {"stage": label, "implementation": impl, "seeds": len(matrix), "heldout": iv.mean,
                   "low": iv.low, "high": iv.high, "vs": None, "vs_stage": None, "verdict": ""}
            before = next((m for lab, _, m, _ in stages if lab == start), None)
            if before is not None:
                paired = paired_difference(matrix, before)
                # an RL stage is one run per seed; the untrained model and the warm start are single references
                row.update(vs=paired.difference.as_dict(), vs_stage=start,
                           verdict=_verdict_text(paired, start, one_seed=impl is not None and len(matrix) < 2))
            rows.append(row)
        out[env] = rows
    return out


def passk_comparison(passk: dict) -> list[dict]:
    """Each model of a pass@k record against the one before it (warm start vs base, RL vs warm start) at k = 1
    and k = samples: per-problem pass@k, paired over the same problems (bootstrap), so "did RL sharpen or
    add?" gets intervals. Empty for records without per-problem counts."""
    from reference_impls.stats import pass_at_k

    n, curves = passk.get("samples"), passk.get("curves", {})
    if not n or not curves or any("correct_counts" not in c for c in curves.values()):
        return []
    labels = list(curves)
    rows = []
    for before, after in zip(labels, labels[1:]):
        for k in sorted({1, n}):
            a = [[pass_at_k(n, c, k) for c in curves[after]["correct_counts"]]]
            b = [[pass_at_k(n, c, k) for c in curves[before]["correct_counts"]]]
            paired = paired_difference(a, b)
            rows.append({"model": after, "against": before, "k": k, "value": float(sum(a[0]) / len(a[0])),
                         "before": float(sum(b[0]) / len(b[0])), "difference": paired.difference.as_dict(),
                         "p": paired.p_value, "verdict": paired.verdict})
    return rows


def passk_reading(rows: list[dict]) -> str | None:
    """A plain sentence on the last pair of ``passk_comparison`` (the RL model against the warm start): did RL
    raise pass@1, and did it narrow (pass@k at the largest k fell), keep or widen what the model can sample?"""
    if not rows:
        return None
    last = [r for r in rows if r["model"] == rows[-1]["model"]]
    one, top = last[0], last[-1]
    if one["k"] == top["k"]:
        return None

    def shown(r):
        d = r["difference"]
        return (f"pass@{r['k']} {100 * r['before']:.0f}% -> {100 * r['value']:.0f}% ({100 * d['mean']:+.0f} pts "
                f"[{100 * d['low']:+.0f}, {100 * d['high']:+.0f}])")

    head = f"{one['model']} against the {one['against']}: {shown(one)}; {shown(top)}. "
    n = top["k"]
    verdicts = (one["verdict"], top["verdict"])
    if verdicts == ("better", "worse"):
        return head + (f"Sharpened and narrowed: more of the probability on answers it could already sample, "
                       f"fewer problems solved in {n} tries.")
    if top["verdict"] == "better":
        return head + f"Added: it solves problems the {one['against']} did not solve in {n} tries."
    if verdicts[0] == "better":
        return head + f"Sharpened: pass@1 rose, and what it can solve in {n} tries did not change significantly."
    if top["verdict"] == "worse":
        return head + f"Narrowed: fewer problems solved in {n} tries" + (
            ", and pass@1 fell too." if verdicts[0] == "worse" else ", with no significant change at pass@1.")
    if verdicts[0] == "worse":
        return head + f"pass@1 fell; what it can solve in {n} tries did not change significantly."
    return head + f"No significant change at pass@1 or pass@{n}: neither sharpened nor widened, at this sample size."


def progression_text(prog: dict[str, list[dict]]) -> str:
    """The stages table of ``progression`` as text (only environments with a reference stage measured)."""
    lines = []
    for env, rows in prog.items():
        if not any(r["implementation"] is None for r in rows):
            continue
        lines.append(f"## {env}: untrained -> SFT -> SFT + RL")
        lines.append(f"{'stage':<40} {'held-out':>9} {'95% interval':>16} {'vs stage before':>24}  verdict")
        for r in rows:
            interval = "[{:.3f}, {:.3f}]".format(r["low"], r["high"])
            vs = "" if r["vs"] is None else "{:+.3f} [{:+.3f}, {:+.3f}]".format(r["vs"]["mean"], r["vs"]["low"],
                                                                            r["vs"]["high"])
            lines.append(f"{r['stage']:<40} {r['heldout']:>9.3f} {interval:>16} {vs:>24}  {r['verdict']}")
        lines.append("")
    return "\n".join(lines)


def progression_markdown(prog: dict[str, list[dict]], cells: list[dict], warm: dict[str, dict]) -> str:
    """One Markdown row per (environment, RL implementation) of a base / SFT / SFT + RL grid: the three
    held-out figures with intervals, RL's paired difference to SFT, and what each stage cost."""
    def pct(r):
        return f"{100 * r['heldout']:.0f}% [{100 * r['low']:.0f}, {100 * r['high']:.0f}]" if r else "-"

    lines = ["| environment | untrained | SFT (warm start) | SFT + RL | RL - SFT, paired (pts) | verdict | "
             "SFT time | RL time (steps) |", "|---|---|---|---|---|---|---|---|"]
    for env, rows in prog.items():
        untrained = next((r for r in rows if r["stage"] == "untrained"), None)
        sft_row = next((r for r in rows if r["stage"] == "SFT (warm start)"), None)
        sft_s = warm.get(env, {}).get("wall_s")
        for r in [r for r in rows if r["implementation"] is not None] or [None]:
            mine = [c for c in cells if r and c["implementation"] == r["implementation"]]
            diff = (f"{100 * r['vs']['mean']:+.0f} [{100 * r['vs']['low']:+.0f}, {100 * r['vs']['high']:+.0f}]"
                    if r and r["vs"] else "-")
            verdict = r["verdict"] if r and r["verdict"] else "-"
            rl_time = (f"{_duration(sum(c['train_s'] for c in mine) / len(mine))} "
                       f"({', '.join(str(c['steps_done']) for c in mine)}"
                       f"{', wall cap' if any(c.get('stopped_by_wall_cap') for c in mine) else ''})") if mine else "-"
            lines.append(f"| {env}{' (' + r['implementation'] + ')' if r else ''} | {pct(untrained)} | {pct(sft_row)} "
                         f"| {pct(r)} | {diff} | {verdict} | {_duration(sft_s) if sft_s else '-'} | {rl_time} |")
    return "\n".join(lines)


def report_text(board: dict[str, list[dict]]) -> str:
    lines = []
    for env, rows in board.items():
        lines.append(f"## {env}")
        lines.append(f"{'implementation':<24} {'seeds':>5} {'held-out':>9} {'95% interval':>16} {'time':>8} "
                     f"{'tokens':>9} {'peak MB':>8}  verdict")
        for r in rows:
            interval = "[{:.3f}, {:.3f}]".format(r["low"], r["high"])
            lines.append(f"{r['implementation']:<24} {r['seeds']:>5} {r['heldout']:>9.3f} "
                         f"{interval:>16} {_duration(r['train_s']):>8} "
                         f"{r['tokens']:>9.0f} {r['peak_rss_mb']:>8.0f}  {r['verdict']}")
        lines.append("")
    return "\n".join(lines)


def export(grid: Grid, gdir: GridDir, dest: Path) -> int:
    """Copy the small files (grid.yaml, results, pass@k) to ``dest``; returns the number of cells."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(gdir.path / "grid.yaml", dest / "grid.yaml")
    n = 0
    for r in results(grid, gdir):
        (dest / "cells").mkdir(exist_ok=True)
        # the warm start's and the run's folders are this machine's; shipped, the config names them relative to
        # a grid folder (GridResults.reproduce says how to rebuild it) and the warm start's settings travel beside it
        r = {**r, "config": {**r["config"], "model": f"warm/{r['env']}", "out": f"cells/{r['cell']}/run"}}
        _atomic_json(dest / "cells" / f"{r['cell']}.json", r)
        n += 1
    for env in grid.envs():
        if (gdir.warm(env) / "done.json").exists():
            (dest / "warm").mkdir(exist_ok=True)
            shutil.copy(gdir.warm(env) / "done.json", dest / "warm" / f"{env}.json")
        if gdir.base(env).exists():
            (dest / "base").mkdir(exist_ok=True)
            shutil.copy(gdir.base(env), dest / "base" / f"{env}.json")
    for p in sorted((gdir.path / "passk").glob("[!.]*.json")):  # not a stage's partial file
        (dest / "passk").mkdir(exist_ok=True)
        record = json.loads(p.read_text())
        for curve in record.get("curves", {}).values():  # this machine's folders, relative to the grid folder
            if str(curve.get("model", "")).startswith(str(gdir.path) + os.sep):
                curve["model"] = os.path.relpath(curve["model"], gdir.path)
        _atomic_json(dest / "passk" / p.name, record)
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.compare", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "status", "report", "passk", "export", "_warm", "_warmeval", "_baseeval", "_cell", "_passk"):
        s = sub.add_parser(name)
        s.add_argument("grid", help="grid name in lab/recipes/grids/ or a path to a grid file")
        s.add_argument("--dir", default=None, help="grid folder (default: the data dir's compare/<name>)")
        if name == "run":
            s.add_argument("--max-cells", type=int, default=None, help="stop after this many cells")
            s.add_argument("--env", default=None, help="only this environment's warm start and cells")
        if name == "report":
            s.add_argument("--json", action="store_true", help="one JSON record per finished cell")
            s.add_argument("--markdown", action="store_true",
                           help="the untrained / SFT / SFT + RL table as Markdown (grids with base: true)")
        if name in ("passk", "_passk", "_warm", "_warmeval", "_baseeval"):
            s.add_argument("--env", required=True)
        if name in ("passk", "_passk"):
            s.add_argument("--samples", type=int, default=64, help="samples per problem (k = 1..samples)")
            s.add_argument("--problems", type=int, default=50, help="held-out problems")
        if name == "export":
            s.add_argument("--to", required=True, help="destination folder (e.g. lab/results/<grid>)")
        if name == "_cell":
            s.add_argument("--impl", required=True)
            s.add_argument("--seed", type=int, required=True)
    args = p.parse_args(argv)
    try:
        grid = Grid.load(args.grid)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    gdir = GridDir(args.dir) if args.dir else GridDir.default(grid)
    if args.command == "_warm":
        warm_stage(grid, gdir, args.env)
    elif args.command == "_warmeval":
        warm_eval_stage(grid, gdir, args.env)
    elif args.command == "_baseeval":
        base_eval_stage(grid, gdir, args.env)
    elif args.command == "_cell":
        cell_stage(grid, gdir, args.impl, args.seed)
    elif args.command == "_passk":
        passk_stage(grid, gdir, args.env, args.samples, args.problems)
    elif args.command == "run":
        try:
            return 1 if run(grid, gdir, args.max_cells, grid_arg=args.grid, env=args.env) else 0
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    elif args.command == "status":
        rows = status(grid, gdir)
        for r in rows:
            shown = "" if r["heldout"] is None else "{:.3f}".format(r["heldout"])
            why = f"  (trained with other {', '.join(r['changed'])}: move the cell folder away to re-run it)" \
                if r["changed"] else ""
            print(f"{r['cell']:<30} {r['state']:<8} {shown}{why}")
        counts = {s: sum(r["state"] == s for r in rows) for s in ("done", "stale", "partial", "failed", "pending")}
        print(" ".join(f"{k} {v}" for k, v in counts.items()))
    elif args.command == "report":
        cells = results(grid, gdir)
        if args.json:
            for r in cells:
                print(json.dumps({k: r[k] for k in ("cell", "implementation", "algo", "env", "seed", "heldout",
                                                    "heldout_interval", "train_s", "eval_s", "tokens", "peak_rss_mb",
                                                    "steps_done")}))
        else:
            loaded = load_results(gdir.path, shipped=False)  # the references (base, warm) beside the cells
            base, warm = (loaded.base, loaded.warm) if loaded else ({}, {})
            if args.markdown:
                print(progression_markdown(progression(cells, base, warm), cells, warm))
            else:
                print(report_text(leaderboard(cells, grid.baseline)))
                stages = progression_text(progression(cells, base, warm))
                if stages:
                    print(stages)
                for env, record in (loaded.passk if loaded else {}).items():
                    reading = passk_reading(passk_comparison(record))
                    if reading:
                        print(f"pass@k, {env}: {reading}")
    elif args.command == "passk":
        return _child(["_passk", args.grid, "--dir", str(gdir.path), "--env", args.env, "--samples",
                       str(args.samples), "--problems", str(args.problems)], gdir.path / f"passk-{args.env}.log")
    elif args.command == "export":
        print(f"{export(grid, gdir, Path(args.to))} cells exported to {args.to}")
    return 0



# ----------------------------------------------------------------------------------------------------
# what the explorer's Compare page reads (plain data; the page renders it)

@dataclass
class GridResults:
    """A grid's finished cells with its budget, from a grid folder or a shipped results folder."""

    label: str
    folder: Path
    spec: dict  # grid.yaml as run
    cells: list[dict]
    passk: dict[str, dict]  # env -> the passk file
    shipped: bool
    warm: dict[str, dict] = field(default_factory=dict)  # env -> the warm start's record (held-out without RL)
    base: dict[str, dict] = field(default_factory=dict)  # env -> the untrained model's held-out record

    def board(self) -> dict[str, list[dict]]:
        return leaderboard(self.cells, self.spec.get("baseline", "grpo"))

    def budget(self) -> str:
        """The budget in words: the same for every cell of the grid."""
        o = self.spec.get("options", {})
        parts = [f"recipe {self.spec.get('recipe')}"] + [f"{k} {v}" for k, v in o.items()]
        ev = self.spec.get("eval", {})
        return (", ".join(parts) + f"; seeds {', '.join(map(str, self.spec.get('seeds', [])))}; held-out: "
                f"{ev.get('n')} problems (seed {ev.get('seed')}), greedy, the same for every cell")

    def reference_line(self, env: str) -> str:
        """The references' held-out success in words (the untrained model where measured, then the warm
        start alone, no RL), or "" when neither was measured."""
        parts = []
        for label, record in (("Untrained model", self.base.get(env, {})),
                              ("Warm start alone (no RL)", self.warm.get(env, {}))):
            if "heldout" in record:
                low, high = record["heldout_interval"]
                parts.append(f"{label}: {100 * record['heldout']:.1f}% (95% interval {100 * low:.1f}-{100 * high:.1f}%)")
        return ("Same held-out problems. " + "; ".join(parts)) if parts else ""

    def progression(self) -> dict[str, list[dict]]:
        """Untrained -> SFT -> SFT + RL per environment (see ``progression``)."""
        return progression(self.cells, self.base, self.warm)

    def curves(self) -> list[dict]:
        """Mean reward per step over seeds, one row per (implementation, step). DPO cells are left out:
        their per-step ``reward_mean`` is the preference margin (dpo.py), not the environment's reward."""
        acc: dict[tuple[str, str, int], list[float]] = {}
        for c in self.cells:
            if c.get("algo") == "dpo":
                continue
            for point in c.get("curve", []):
                if point.get("reward_mean") is not None:
                    acc.setdefault((c["env"], c["implementation"], point["step"]), []).append(point["reward_mean"])
        return [{"env": e, "implementation": i, "step": s, "reward_mean": sum(v) / len(v), "seeds": len(v)}
                for (e, i, s), v in sorted(acc.items())]

    def reproduce(self, cell: dict) -> str:
        """The commands that re-train this cell: the grid (its environment's warm start and cells), or the
        cell alone from its recorded config on top of that warm start."""
        name, env = self.spec.get("name"), cell["env"]
        return (f"python -m lab.compare run {name} --env {env}   # the warm start and every cell of {env}\n"
                f"# or this cell alone from its config, once the warm start exists:\n"
                f"python -m reference_impls.train --config {cell['cell']}.json "
                f"--model DATA_DIR/compare/{name}/warm/{env} --out runs/{cell['cell']}")


def _records(folder: Path) -> dict[str, dict]:
    """``<name>.json`` files of a folder by name (unreadable ones skipped; hidden ones, such as a pass@k stage's
    partial file, are work in progress)."""
    found = {}
    for p in sorted(folder.glob("[!.]*.json")):
        try:
            found[p.stem] = json.loads(p.read_text())
        except ValueError:
            continue
    return found


def load_results(folder: Path, shipped: bool) -> GridResults | None:
    """A grid folder's or an exported results folder's finished cells, references and pass@k (None without a
    readable grid.yaml)."""
    spec_path = folder / "grid.yaml"
    if not spec_path.is_file():
        return None
    try:
        spec = yaml.safe_load(spec_path.read_text()) or {}
    except yaml.YAMLError:
        return None
    passk, base = _records(folder / "passk"), _records(folder / "base")
    warm = {}  # a grid folder keeps warm/<env>/done.json, a shipped one warm/<env>.json
    for p in sorted((folder / "warm").glob("*")):
        record = p / "done.json" if p.is_dir() else p
        try:
            warm[p.stem if p.is_file() else p.name] = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
    label = spec.get("label") or spec.get("name", folder.name)
    return GridResults(f"{label} ({'shipped' if shipped else 'yours: ' + str(folder)})", folder, spec,
                       results(None, GridDir(folder)), passk, shipped, warm, base)


def available_results() -> list[GridResults]:
    """Shipped results (``lab/results/<grid>``) first, then the user's own grid folders (data dir)."""
    found = []
    for root, shipped in ((RESULTS, True), (data_dir() / "compare", False)):
        if root.is_dir():
            for folder in sorted(p for p in root.iterdir() if p.is_dir()):
                r = load_results(folder, shipped)
                if r is not None:
                    found.append(r)
    return found


if __name__ == "__main__":
    sys.exit(main())
