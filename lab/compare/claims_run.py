"""The paired experiments of the claims (issue 61): per claim, both arms (the implementation as it is, and the same
with only the mechanism removed) on the same seeds, warm starts, training problems and sampling seeds, each run
in its own process and resumable like the comparison grid (``driver``): a finished arm is kept, a killed one
resumes from its checkpoint, a warm start is trained once per seed and shared by both arms.

Layout of a claims folder (default: the data dir's ``claims/<file name>``; a pilot's under ``pilot/``)::

    <claim>/grid.yaml             the 'with' arm's grid (``GridDir.bind``: a changed recipe or options refuse it)
    <claim>/claim.yaml            the claim as run (a changed ablation, implementation, options or mu refuse it)
    <claim>/warm/<env>[@w<seed>]/ the warm start of each seed (``warm.warm_stage``), shared by both arms
    <claim>/<arm>/s<seed>/        run/ (the trainer's, removed once recorded), config.json, log.txt,
                                  diagnostics.jsonl, result.json: the grid's record (``training.train_run``:
                                  budget, completeness, provenance) plus ``claim``, ``arm``, ``base_model`` and
                                  ``metric_rows`` (every metrics.jsonl key the claim and its pilot check read)

``export`` keeps the small files (``claim.yaml``, ``grid.yaml``, ``<arm>/s<seed>.json``), to ship under
``results/claims/``.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import yaml

from atlas_data import data_dir
from reference_impls.options import ConfigError

from .claim_results import arm_result_path, claim_folder, read_arm
from .claims import ARMS, Claim, ClaimsSpec, arm_grid
from .folder import GridDir, atomic_json
from .cell_options import env_of


def default_root(spec: ClaimsSpec) -> Path:
    return data_dir() / "claims" / spec.name


def _bound_claim(claim: Claim) -> dict:
    """What a claim folder binds: a record made under another ablation, implementation, options or mu is not the
    same experiment."""
    return {"implementation": claim.implementation, "ablation": claim.ablation, "options": claim.options,
            "mu": claim.mu}


def bind(spec: ClaimsSpec, claim: Claim, folder: Path, pilot: bool = False) -> None:
    """Bind ``folder`` to the claim's experiment (the 'with' arm's grid and the claim's switches), or refuse a
    folder holding another experiment (ConfigError naming what differs)."""
    gdir = GridDir(folder)
    gdir.refuse_links()
    gdir.bind(arm_grid(spec, claim, "with", pilot))
    path = folder / "claim.yaml"
    now = _bound_claim(claim)
    if path.exists():
        old = yaml.safe_load(path.read_text()) or {}
        changed = [k for k in now if old.get(k) != now[k]]
        if changed:
            raise ConfigError(f"{folder}: holds claim {claim.id} run with other {', '.join(changed)}; its records "
                              f"would not pair with new ones. Use another --dir, or delete the folder")
    path.write_text(yaml.safe_dump({"id": claim.id, **now, "metric": claim.metric, "claim": claim.claim},
                                   sort_keys=False))


def validate(spec: ClaimsSpec, claim: Claim, folder: Path, pilot: bool = False) -> None:
    """Both arms' configs of every seed pass the trainer's checks, and differ in the ablation's options only."""
    from reference_impls.train import config_from_dict, resolve

    from .cell_options import cell_config

    for seed in spec.seeds_of(pilot):
        configs = {}
        for arm in ARMS:
            grid = arm_grid(spec, claim, arm, pilot)
            try:
                configs[arm] = cell_config(grid, claim.implementation, seed,
                                           str(GridDir(folder).warm_of(grid, env_of(claim.implementation), seed)))
                resolve(config_from_dict(configs[arm]), check_model=False)
            except (ConfigError, TypeError, ValueError) as err:
                raise ConfigError(f"claim {claim.id}, arm {arm}, seed {seed}: {err}") from None
        differ = arm_difference(configs["with"], configs["without"])
        if set(differ) != set(claim.ablation):
            raise ConfigError(f"claim {claim.id}: the arms differ in {sorted(differ)}, not only in the ablation's "
                              f"{sorted(claim.ablation)}")


def arm_difference(with_config: dict, without_config: dict) -> dict:
    """The options in which two arms' resolved configs differ ({name: (with, without)}; algorithm options by
    their own name; ``out``, the run's own folder, is no setting)."""
    out = {}
    for key in (set(with_config) | set(without_config)) - {"out"}:
        a, b = with_config.get(key), without_config.get(key)
        if key == "algo_config":
            for name in set(a or {}) | set(b or {}):
                if (a or {}).get(name) != (b or {}).get(name):
                    out[name] = ((a or {}).get(name), (b or {}).get(name))
        elif a != b:
            out[key] = (a, b)
    return out


# -- the stages, each in its own process ---------------------------------------------------------------------
def warm_stage(spec: ClaimsSpec, claim: Claim, folder: Path, warm_seed: int, pilot: bool = False) -> None:
    """The warm start of one seed, shared by both arms (the grid's own warm stage on the 'with' arm's grid)."""
    from .warm import warm_stage as grid_warm_stage

    grid = arm_grid(spec, claim, "with", pilot)
    grid_warm_stage(grid, GridDir(folder), env_of(claim.implementation), warm_seed)


def arm_stage(spec: ClaimsSpec, claim: Claim, folder: Path, arm: str, seed: int, pilot: bool = False) -> None:
    """Train one arm of one seed (resuming a killed run) and record it: the grid's record of the run, the claim,
    the arm and the per-step values of every metric the claim and its pilot check read. The run folder (its
    weights) is removed once recorded: a claim is about the training, not the final model."""
    from reference_impls.rundir import RunDir, read_jsonl

    from .cell_options import warm_settings
    from .training import train_run

    grid = arm_grid(spec, claim, arm, pilot)
    cell = arm_result_path(folder, arm, seed).parent
    gdir = GridDir(folder)
    record = train_run(grid, gdir, claim.implementation, seed, cell, lr=None)
    metrics = read_jsonl(RunDir(cell / "run").metrics_path)
    keys = {claim.metric, claim.pilot_check.metric}
    rows = [{"step": m["step"], "phase": "critic-warmup" if m.get("critic_warmup") else "policy",
             **{k: m[k] for k in sorted(keys) if k in m}} for m in metrics]
    atomic_json(cell / "result.json", {
        **record, "claim": claim.id, "arm": arm, "ablation": claim.ablation if arm == "without" else {},
        "base_model": warm_settings(grid, env_of(claim.implementation))["model"], "metric_rows": rows,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    (cell / "error.txt").unlink(missing_ok=True)
    shutil.rmtree(cell / "run", ignore_errors=True)


def _stage_args(spec: ClaimsSpec, root: Path, claim: Claim, pilot: bool) -> list[str]:
    return ["--spec", spec.path, "--dir", str(root), "--claim", claim.id, *(["--pilot"] if pilot else [])]


def run(spec: ClaimsSpec, root: Path, claim_ids: list[str] | None = None, pilot: bool = False,
        max_cells: int | None = None, out=sys.stdout) -> int:
    """Run every missing stage of the named claims (default: every claim with a switch), seed by seed (both arms
    of seed s before seed s + 1, so a stopped run still has pairs); ``max_cells`` stops after that many arm runs.
    Returns the number of failed stages."""
    from .driver import stage_process

    claims = [spec.claim(c) for c in claim_ids] if claim_ids else [c for c in spec.claims if c.runnable]
    skipped = [c.id for c in claims if not c.runnable]
    if skipped:
        raise ConfigError(f"claim(s) {', '.join(skipped)}: no ablation switch yet; nothing to run")
    for claim in claims:  # every experiment checked before anything runs
        validate(spec, claim, claim_folder(root, claim, pilot), pilot)
    failures, done = 0, 0
    for claim in claims:
        folder = claim_folder(root, claim, pilot)
        bind(spec, claim, folder, pilot)
        grid = arm_grid(spec, claim, "with", pilot)
        env = env_of(claim.implementation)
        args = _stage_args(spec, root, claim, pilot)
        for seed in spec.seeds_of(pilot):
            warm_seed = grid.warm_seed_of(seed)
            warm = GridDir(folder).warm_of(grid, env, seed)
            if not (warm / "done.json").exists():
                print(f"{claim.id}: warm start of seed {warm_seed} ...", file=out, flush=True)
                warm.parent.mkdir(parents=True, exist_ok=True)
                log = folder / f"warm-{warm.name}.log"
                if stage_process(["_claimwarm", *args, "--warm-seed", str(warm_seed)], log):
                    print(f"  failed: see {log}", file=out, flush=True)
                    failures += 1
                    break
            for arm in ARMS:
                if read_arm(folder, arm, seed) is not None:
                    continue
                if max_cells is not None and done >= max_cells:
                    return failures
                cell = arm_result_path(folder, arm, seed).parent
                cell.mkdir(parents=True, exist_ok=True)
                print(f"{claim.id}: arm {arm}, seed {seed} ...", file=out, flush=True)
                t0 = time.time()
                rc = stage_process(["_claimarm", *args, "--arm", arm, "--seed", str(seed)], cell / "log.txt")
                done += 1
                if rc != 0 or read_arm(folder, arm, seed) is None:
                    failures += 1
                    tail = (cell / "log.txt").read_text(errors="replace")[-2000:]
                    (cell / "error.txt").write_text(f"exit code {rc}\n{tail}")
                    print(f"  failed (exit {rc}): {cell / 'error.txt'}", file=out, flush=True)
                else:
                    print(f"  recorded in {time.time() - t0:.0f}s", file=out, flush=True)
    return failures


def status(spec: ClaimsSpec, root: Path, pilot: bool = False) -> list[dict]:
    """Per claim and seed, each arm's state: done, partial (a checkpoint to resume), failed, pending or
    ``no switch``."""
    from reference_impls.rundir import RunDir

    rows = []
    for claim in spec.claims:
        if not claim.runnable:
            rows.append({"claim": claim.id, "seed": None, "arm": None, "state": "no switch"})
            continue
        folder = claim_folder(root, claim, pilot)
        for seed in spec.seeds_of(pilot):
            for arm in ARMS:
                cell = arm_result_path(folder, arm, seed).parent
                if read_arm(folder, arm, seed) is not None:
                    state = "done"
                elif (cell / "error.txt").exists():
                    state = "failed"
                elif (cell / "run").is_dir() and RunDir(cell / "run").latest_checkpoint() is not None:
                    state = "partial"
                else:
                    state = "pending"
                rows.append({"claim": claim.id, "seed": seed, "arm": arm, "state": state})
    return rows


def export(spec: ClaimsSpec, root: Path, dest: Path) -> int:
    """The small files of every claim folder under ``root`` into ``dest`` (new or empty): ``<claim>/claim.yaml``,
    ``grid.yaml`` and each recorded arm as ``<claim>/<arm>/s<seed>.json``; returns the number of arm records."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise ConfigError(f"--to {dest}: not empty; export writes into a new or empty folder")
    count = 0
    for claim in spec.claims:
        folder = claim_folder(root, claim)
        if not claim.runnable or not folder.is_dir():
            continue
        target = dest / claim.id
        target.mkdir(parents=True, exist_ok=True)
        for name in ("claim.yaml", "grid.yaml"):
            if (folder / name).is_file():
                shutil.copyfile(folder / name, target / name)
        for seed in spec.seeds:
            for arm in ARMS:
                record = read_arm(folder, arm, seed)
                if record is not None:
                    (target / arm).mkdir(exist_ok=True)
                    (target / arm / f"s{seed}.json").write_text(json.dumps(record, indent=1))
                    count += 1
    return count
