"""The stages of a grid and the driver that runs them.

Stages: the untrained model's held-out (``base_eval_stage``), an environment's warm start (``warm_stage``, one per
warm seed of the grid: ``warm/<env>`` for the first, ``warm/<env>@w<seed>`` for the others) and its held-out
(``warm_eval_stage``), the weights of a warm start recorded without them (``warm_restore_stage``: trained again
and kept only if their digest is the recorded one, or, when asked, if they answer every held-out test problem as
the recorded ones did), a cell (``cell_stage``: train, then evaluate held-out) and pass@k
(``passk_stage``). Each runs in its own process (``python -m lab.compare _baseeval / _warm / _warmeval /
_warmrestore / _cell / _passk``), one at a time: a crash or OOM costs one cell, and the peak memory is the cell's own.

Grids with an ``lr_sweep`` first run each implementation's learning-rate trials (``trial_stage``: trained
like a cell of seed ``warm_seed``, from that seed's warm start, scored on the validation split only;
``python -m lab.compare _trial``), then ``choose_lr``; the cells train with the chosen rate and are scored on the test problems once.

A record's work part (``_train``): ``budget`` (``work_done``: the policy's rollout batches, episodes and
updates, PPO's critic warm-up apart, an offline run's episodes and usable pairs), ``complete`` and
``incomplete_reason`` (a run the safety cap stopped: out of every verdict), ``diagnostics`` (one row per step,
also ``diagnostics.jsonl``) and ``provenance`` (commit, versions, threads, load, steal).

The driver: ``validate`` (every cell's config passes the trainer's checks), ``run`` (every missing stage in
order, resumable: finished stages are kept, each warm start on its own) and ``status`` (each cell done, stale,
partial, failed or pending) with ``warm_status`` (each warm start trained, evaluated or pending).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from reference_impls.options import ConfigError
from reference_impls.rundir import RunDir, read_jsonl
from reference_impls.stats import config_interval

from .folder import DIAGNOSTIC_KEYS, GridDir, atomic_json, budget_status, read_record, warm_name
from .grid import (Grid, cell_config, cell_id, chosen_env_options, env_of, policy_steps, updates_per_batch,
                   warm_settings)
from .provenance import Host, provenance
from .report import duration


def _train_warm(grid: Grid, env: str, warm_seed: int | None, dest: Path) -> dict:
    """SFT of ``env``'s warm start of seed ``warm_seed`` (default: the grid's first), saved whole into ``dest``
    (a fresh folder): the model, its tokenizer and ``done.json`` (settings, losses, time, ``weights_sha256``)."""
    from reference_impls.models import load_policy
    from reference_impls.sft import demonstrations, sft

    settings = warm_settings(grid, env, warm_seed)
    episode_options = None
    if settings["sft_env"] == env:
        impl = next(i for i in grid.implementations if env_of(i) == env)
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
    shutil.rmtree(dest, ignore_errors=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    done = {**settings, "losses": losses, "wall_s": time.time() - t0, "weights_sha256": weights_digest(dest)}
    atomic_json(dest / "done.json", done)
    return done


def warm_stage(grid: Grid, gdir: GridDir, env: str, warm_seed: int | None = None) -> None:
    """SFT of ``env``'s warm start of seed ``warm_seed`` (default: the grid's first) into ``warm/<name>``
    (``folder.warm_name``), written whole or not at all (a temporary folder, then one rename)."""
    out = gdir.warm(warm_name(grid, env, warm_seed))
    tmp = out.with_name(f".{out.name}.tmp")
    _train_warm(grid, env, warm_seed, tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def weights_digest(folder: Path) -> str:
    """sha256 over a saved model's tensors (each one's name, dtype, shape and bytes, in name order, across its
    ``*.safetensors`` files): equal weights give equal digests whatever the files' layout and metadata."""
    import hashlib

    import torch
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ConfigError(f"{folder}: no *.safetensors weights to digest")
    tensors = {}
    for f in files:
        tensors.update(load_file(f))
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def has_weights(folder: Path) -> bool:
    """Whether a saved model folder holds its weights (a grid folder carried without them, e.g. its small
    records committed between sessions, keeps ``done.json`` only)."""
    return any(folder.glob("*.safetensors"))


def warm_restore_stage(grid: Grid, gdir: GridDir, env: str, warm_seed: int | None = None,
                       by_heldout: bool = False) -> None:
    """Bring back the weights of a warm start whose record is here but whose weights are not: train it again
    from its settings and keep the result only if its ``weights_sha256`` is the recorded one, so every cell,
    whenever it ran, starts from the same weights. The record (with its held-out) is kept as it was.
    ConfigError, nothing changed, when the record has no digest or the new weights differ.

    ``by_heldout``: weights that differ are kept when they answer every held-out test problem as the record
    says the recorded ones did (greedy, so a test of behaviour on exactly the problems every cell is read on).
    Another CPU's arithmetic (e.g. without AVX-512) gives the same SFT losses to about 1e-6 but other bits;
    the grid cannot go on on such a machine otherwise. What was kept is appended to ``done.json``'s
    ``restored`` (digest, losses, CPU, provenance), and each later cell records the digest it started from."""
    out = gdir.warm(warm_name(grid, env, warm_seed))
    done = json.loads((out / "done.json").read_text())
    recorded = done.get("weights_sha256")
    if recorded is None:
        raise ConfigError(f"{out}: the weights are missing and done.json records no weights_sha256 (written before "
                          f"it existed), so weights trained again could not be checked against the ones its cells "
                          f"started from; move {out} away to train this warm start (and re-run its cells) anew")
    scratch = out.with_name(f".{out.name}.restore")
    try:
        host = Host.sample()
        again = _train_warm(grid, env, warm_seed, scratch)
        if again["weights_sha256"] != recorded:
            if not by_heldout:
                raise ConfigError(
                    f"{out}: the warm start trained again has weights {again['weights_sha256'][:12]}..., not the "
                    f"recorded {recorded[:12]}... (another machine, library version or thread count?); its cells "
                    f"started from the recorded ones, so nothing was changed. Train the grid anew in another "
                    f"folder, finish it where the warm start was trained, or run with --restore-by-heldout to "
                    f"keep weights that answer every held-out test problem as the recorded ones did")
            _accept_by_heldout(grid, env, out, done, again, scratch, host)
        for f in scratch.iterdir():
            if f.name != "done.json":
                os.replace(f, out / f.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _accept_by_heldout(grid: Grid, env: str, out: Path, done: dict, again: dict, scratch: Path, host: Host) -> None:
    """``warm_restore_stage``'s check for weights with another digest: score them on the held-out test problems;
    ConfigError unless every problem's 0/1 equals the record's; else append the restore to ``done.json``."""
    if "heldout_by_problem" not in done:
        raise ConfigError(f"{out}: its weights differ from the recorded ones and done.json has no held-out record "
                          f"(heldout_by_problem) to compare their answers with; nothing was changed")
    scored = _reference_heldout(grid, env, str(scratch))
    differ = [i for i, (a, b) in enumerate(zip(scored["heldout_by_problem"], done["heldout_by_problem"])) if a != b]
    if differ or len(scored["heldout_by_problem"]) != len(done["heldout_by_problem"]):
        raise ConfigError(f"{out}: the warm start trained again has other weights ({again['weights_sha256'][:12]}..."
                          f") and answers {len(differ)} of {len(done['heldout_by_problem'])} held-out test problems "
                          f"otherwise than the recorded one (first: problem {differ[:1]}); nothing was changed")
    restored = {"weights_sha256": again["weights_sha256"], "losses": again["losses"], "wall_s": again["wall_s"],
                "heldout_by_problem_equal": True, "eval_s": scored["eval_s"],
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "provenance": provenance(host)}
    atomic_json(out / "done.json", {**done, "restored": [*done.get("restored", []), restored]})


def _reference_heldout(grid: Grid, env: str, model: str) -> dict:
    """A reference model's held-out record on ``env``'s cell problems and lengths, with its time."""
    impl = next(i for i in grid.implementations if env_of(i) == env)
    config = cell_config(grid, impl, grid.warm_seed, model)
    t0 = time.time()
    heldout = evaluate_heldout(model, env, config["env_options"], grid.eval_n, grid.eval_seed,
                               config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    return {**_heldout_record(heldout), "eval_s": round(time.time() - t0, 1)}


def warm_eval_stage(grid: Grid, gdir: GridDir, env: str, warm_seed: int | None = None) -> None:
    """Held-out success of a warm start alone (no RL): the reference every cell of ``env`` that starts from it is
    read against. Written into the warm start's ``done.json``."""
    folder = gdir.warm(warm_name(grid, env, warm_seed))
    done = folder / "done.json"
    atomic_json(done, {**json.loads(done.read_text()), **_reference_heldout(grid, env, str(folder))})


def base_eval_stage(grid: Grid, gdir: GridDir, env: str) -> None:
    """Held-out success of the untrained model (no warm start, no RL)."""
    model = warm_settings(grid, env)["model"]
    record = _reference_heldout(grid, env, model)
    gdir.base(env).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.base(env), {"model": model, "env": env, **record})


#: the interval a record stores for its own held-out success, named in the record (``heldout_interval_method``):
#: the one the board and the page show for one run (``stats.config_interval`` of one row of 0/1s). Records
#: written before it (no such field) keep the two-level bootstrap interval they were written with.
HELDOUT_INTERVAL_METHOD = "stats.config_interval of one run: exact Clopper-Pearson 95% over the problems"
#: what the interval of a record without ``heldout_interval_method`` is (every shipped record of 2026-12-03 and before)
LEGACY_HELDOUT_INTERVAL = "percentile bootstrap 95% over the problems (a record written before the field existed)"


def _heldout_record(heldout: list[int]) -> dict:
    """Held-out success as every record stores it: the mean, its 95% interval (``HELDOUT_INTERVAL_METHOD``, the
    interval the page shows for one run), the interval's name, the 0/1s."""
    interval = config_interval([heldout]) if len(heldout) > 1 else None
    mean = sum(heldout) / len(heldout)
    return {"heldout": mean, "heldout_interval": [interval.low, interval.high] if interval else [mean, mean],
            "heldout_interval_method": HELDOUT_INTERVAL_METHOD, "heldout_by_problem": heldout}


def evaluate_heldout(model_name: str, env: str, env_options: dict, n: int, seed: int,
                     max_new_tokens_per_turn: int, max_completion_tokens: int) -> list[int]:
    """Greedy held-out success, one 0/1 per problem (the same problems for every cell of the grid)."""
    from reference_impls.envs import get_env

    task = get_env(env)
    env_options = task.heldout_env_options(env_options)
    problems = task.problems("heldout", n=n, seed=seed, config=env_options)
    return score_problems(model_name, task, problems, env_options, max_new_tokens_per_turn, max_completion_tokens)


def score_problems(model_name: str, task, problems: list, env_options: dict, max_new_tokens_per_turn: int,
                   max_completion_tokens: int) -> list[int]:
    """Greedy success of a model on ``problems``, one 0/1 per problem."""
    from reference_impls.measure.evaluate import evaluate
    from reference_impls.models import load_policy

    model, tokenizer = load_policy(model_name)
    _, samples = evaluate(model, tokenizer, task, problems, max_new_tokens_per_turn=max_new_tokens_per_turn,
                          max_completion_tokens=max_completion_tokens, env_options=env_options, return_samples=True)
    correct = [0] * len(problems)
    for s in samples:
        correct[s.group] = int(bool(s.info.get("correct")))
    return correct


def _train(grid: Grid, gdir: GridDir, impl: str, seed: int, folder: Path, lr: float | None) -> dict:
    """Train one run of ``impl`` in ``folder/run`` (resuming a killed one) and return its record's work part:
    config, budget, completeness, curve, diagnostics, cost and provenance (no held-out: the caller scores
    validation or test). Also writes ``folder/diagnostics.jsonl``."""
    from lab.catalog import get
    from reference_impls.algorithms.dpo.dpo import load_pair_stats
    from reference_impls.train import main as train_main

    host = Host.sample()
    folder.mkdir(parents=True, exist_ok=True)
    run = RunDir(folder / "run")
    env = get(impl).env
    warm_seed = grid.warm_seed_of(seed)
    config = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env, seed)), lr=lr)
    config["out"] = str(run.path)
    t0 = time.time()
    resumed_from = None
    if run.latest_checkpoint() is not None:  # a killed cell continues from its checkpoint
        resumed_from = json.loads(RunDir.trainer_state_path(run.latest_checkpoint()).read_text())["step"]
        rc = train_main(["--resume", str(run.path)])
    else:
        cfg_file = folder / "config.json"
        cfg_file.write_text(json.dumps(config, indent=1))
        rc = train_main(["--config", str(cfg_file), "--out", str(run.path), "--overwrite"])
    if rc != 0:
        raise RuntimeError(f"the trainer exited with {rc}")
    train_s = time.time() - t0
    if run.latest_checkpoint() is None:
        raise RuntimeError(f"{run.path}: no checkpoint after training")
    metrics = read_jsonl(run.metrics_path)
    # an offline algorithm (the DPO family) samples its episodes before the first step: their time and
    # tokens are part of the cell's cost, though no step's metrics carry them
    pair_stats = load_pair_stats(run.pairs_path)
    steps_done = metrics[-1]["step"] if metrics else 0
    diagnostics = diagnostic_rows(metrics, uses_reference(config))
    write_diagnostics(folder, diagnostics)
    complete, why = completion(config, steps_done)
    return {
        "cell": cell_id(impl, seed), "implementation": impl, "algo": config["algo"], "env": env, "seed": seed,
        # the warm start it started from (its name under warm/: the board pairs the cell with that one's held-out)
        "warm_start": warm_name(grid, env, warm_seed), "warm_seed": warm_seed,
        # the digest of those weights: the recorded one, or a restore's kept by held-out (done.json "restored")
        "warm_weights_sha256": weights_digest(Path(config["model"])) if has_weights(Path(config["model"])) else None,
        "config": config, "steps_done": steps_done, "resumed_from_step": resumed_from,
        "stopped_by_wall_cap": not complete,
        "budget": work_done(config, metrics, pair_stats), "complete": complete,
        "incomplete_reason": why,
        "curve": [{"step": m["step"], "reward_mean": m.get("reward_mean"), "accuracy": m.get("accuracy")}
                  for m in metrics],
        "diagnostics": diagnostics,
        "tokens": round(sum(m.get("tokens_per_s", 0.0) * m.get("step_s", 0.0) for m in metrics))
                  + int(pair_stats.get("generated_tokens", 0)),
        "train_s": round((metrics[-1]["wall_s"] if metrics else train_s) + pair_stats.get("build_s", 0.0), 1),
        "sampling_before_training_s": pair_stats.get("build_s"),
        "provenance": provenance(host),
        "peak_rss_mb": round(_peak_rss_mb(), 1),  # of the training (the held-out's is added by the caller)
    }


def completion(config: dict, steps_done: int) -> tuple[bool, str | None]:
    """(complete, why not): a run is complete when it did every budgeted step; one the safety cap stopped is
    not, and is kept out of every verdict."""
    if steps_done >= config["steps"]:
        return True, None
    return False, (f"stopped by the safety cap (max_wall_s {config.get('max_wall_s', 0):g}) after {steps_done} of "
                   f"{config['steps']} steps: kept out of every verdict")


def uses_reference(config: dict) -> bool:
    """Whether the run keeps a frozen reference (so its ``kl`` is a KL to the reference, not a placeholder 0)."""
    from reference_impls.options import build
    from reference_impls.train import ALGORITHMS

    algo_cls = ALGORITHMS[config["algo"]]
    return bool(algo_cls.uses_reference(build(algo_cls.Config, dict(config.get("algo_config", {})), "algo_config")))


def write_diagnostics(folder: Path, rows: list[dict]) -> None:
    """A cell's (or trial's) ``diagnostics.jsonl``: one JSON line per step (``diagnostic_rows``)."""
    with open(folder / "diagnostics.jsonl", "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)


def diagnostic_rows(metrics: list[dict], with_reference: bool) -> list[dict]:
    """One row per step: ``step``, ``phase`` (``critic-warmup`` for PPO's critic-only steps, else ``policy``)
    and the ``DIAGNOSTIC_KEYS`` the step's metrics have (``kl`` None when the run has no reference)."""
    rows = []
    for m in metrics:
        row = {"step": m["step"], "phase": "critic-warmup" if m.get("critic_warmup") else "policy"}
        row.update({k: m[k] for k in DIAGNOSTIC_KEYS if k in m})
        if "kl" in row and not with_reference:
            row["kl"] = None
        rows.append(row)
    return rows


def work_done(config: dict, metrics: list[dict], pair_stats: dict) -> dict:
    """The budget a run was given and the work it did (docs/compare.md, "Budget"): rollout batches and sampled
    episodes of the policy, its optimiser updates, PPO's critic warm-up apart, an offline run's episodes and
    usable pairs."""
    warm = [m for m in metrics if m.get("critic_warmup")]
    policy = [m for m in metrics if not m.get("critic_warmup")]
    online = not pair_stats
    budget = {"policy_steps": policy_steps(config), "policy_steps_done": len(policy),
              "prompts_per_step": config["prompts_per_step"], "group_size": config["group_size"],
              "mu": updates_per_batch(config),
              "policy_updates": int(sum(m.get("policy_updates", 1.0) for m in policy)),
              "episodes": int(sum(m.get("episodes", 0.0) for m in policy)) if online else int(pair_stats.get("samples", 0)),
              "critic_warmup_steps": config["steps"] - policy_steps(config),
              "critic_warmup_steps_done": len(warm),
              "critic_warmup_episodes": int(sum(m.get("episodes", 0.0) for m in warm)),
              "critic_updates": int(sum(m.get("critic_updates", 0.0) for m in metrics)),
              "max_wall_s": config.get("max_wall_s", 0.0)}
    if not online:
        budget["usable_pairs"] = int(pair_stats.get("pairs", 0))
        budget["pair_prompts"] = int(pair_stats.get("pair_prompts", 0))
    return budget


def cell_stage(grid: Grid, gdir: GridDir, impl: str, seed: int) -> None:
    """Train a cell (with the learning rate chosen on validation, when the grid sweeps it), then score it once
    on the held-out test problems."""
    choice = gdir.choice(impl) if grid.lr_sweep else None
    if grid.lr_sweep and choice is None:
        raise ConfigError(f"{cell_id(impl, seed)}: the learning-rate sweep of {impl} has not chosen yet "
                          f"({gdir.choice_path(impl)} is missing); run the grid, which runs the sweep first")
    folder = gdir.cell(impl, seed)
    run = RunDir(folder / "run")
    record = _chosen_trial(gdir, impl, seed, choice, folder)
    if record is None:
        record = _train(grid, gdir, impl, seed, folder, lr=None if choice is None else choice["lr"])
    config = record["config"]
    t1 = time.time()
    heldout = evaluate_heldout(str(run.latest_model()), record["env"], config["env_options"], grid.eval_n,
                               grid.eval_seed, config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    atomic_json(folder / "result.json", {
        **record, "validation": choice,
        "eval_s": round(time.time() - t1, 1), "peak_rss_mb": max(record["peak_rss_mb"], round(_peak_rss_mb(), 1)),
        **_heldout_record(heldout),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    (folder / "error.txt").unlink(missing_ok=True)
    run.drop_resume_state()  # a finished cell is never resumed: keep its final weights only (pass@k samples them)


#: what a trial's record adds to the work part ``_train`` returns
TRIAL_KEYS = ("lr", "validation", "validation_by_problem", "eval_s", "finished")


def _chosen_trial(gdir: GridDir, impl: str, seed: int, choice: dict | None, folder: Path) -> dict | None:
    """The chosen trial's run as the cell of the trials' seed (the same config, so the same training): moved
    into ``folder`` instead of trained again, with its record's work part; None when there is none to take
    (another seed, no sweep, or already taken: the cell then trains or resumes as usual)."""
    if choice is None or seed != choice["seed"]:
        return None
    trial = gdir.trial(impl, choice["lr"])
    record = read_record(trial / "result.json", ("config",))
    if record is None or not (trial / "run").is_dir() or (folder / "run").exists():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    os.replace(trial / "run", folder / "run")
    work = {k: v for k, v in record.items() if k not in TRIAL_KEYS}
    work["config"] = {**work["config"], "out": str(folder / "run")}
    work["trained_as"] = f"the chosen learning-rate trial ({trial.relative_to(gdir.path)}), moved here"
    write_diagnostics(folder, work["diagnostics"])
    return work


def trial_stage(grid: Grid, gdir: GridDir, impl: str, lr: float) -> None:
    """One learning-rate trial of ``impl``: trained as a cell of seed ``warm_seed`` with ``lr``, scored on the
    validation problems only (never on the test problems). The chosen trial's run becomes that seed's cell."""
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import validation_problems

    folder = gdir.trial(impl, lr)
    record = _train(grid, gdir, impl, grid.warm_seed, folder, lr=lr)
    config = record["config"]
    run = RunDir(folder / "run")
    task = get_env(record["env"])
    options = task.heldout_env_options(config["env_options"])
    problems = validation_problems(task, grid.validation_n, grid.validation_seed, grid.eval_n, grid.eval_seed,
                                   **options)
    t1 = time.time()
    scores = score_problems(str(run.latest_model()), task, problems, options,
                            config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    atomic_json(folder / "result.json", {
        **record, "lr": lr, "validation": sum(scores) / len(scores), "validation_by_problem": scores,
        "eval_s": round(time.time() - t1, 1),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    # kept until the choice: the chosen trial is the cell of seed warm_seed (the same config), not trained twice
    run.drop_resume_state()


def choose_lr(grid: Grid, gdir: GridDir, impl: str) -> dict:
    """The learning rate of ``impl``'s cells: the trial with the highest mean validation success among the
    complete ones (ties: the first listed). Written to ``sweep/<impl>.json`` and copied into every cell record."""
    trials = []
    for lr in grid.sweep_lrs(impl):
        r = read_record(gdir.trial(impl, lr) / "result.json", ("validation",))
        if r is None:
            raise ConfigError(f"{impl}: the trial with lr {lr:g} has not run")
        trials.append({"lr": lr, "validation": r["validation"], "complete": bool(r.get("complete")),
                       "validation_by_problem": r["validation_by_problem"]})
    usable = [t for t in trials if t["complete"]]
    if not usable:
        raise ConfigError(f"{impl}: no learning-rate trial finished its budget (all stopped by the safety cap)")
    best = max(usable, key=lambda t: t["validation"])  # max keeps the first of equal scores
    choice = {"implementation": impl, "lr": best["lr"], "trials": trials, "seed": grid.warm_seed,
              "split": {"n": grid.validation_n, "seed": grid.validation_seed},
              "rule": "highest mean validation success among complete trials; ties: the first listed"}
    gdir.choice_path(impl).parent.mkdir(parents=True, exist_ok=True)
    atomic_json(gdir.choice_path(impl), choice)
    for t in trials:  # the other trials' weights are never used again
        if t["lr"] != best["lr"]:
            shutil.rmtree(gdir.trial(impl, t["lr"]) / "run", ignore_errors=True)
    return choice


#: a pass@k record's ``method``: what it sampled was named in the grid file before any result
PASSK_DECLARED = "declared in the grid file before any result; every seed's cell sampled"


def passk_models(grid: Grid, gdir: GridDir, env: str, seeds=None,
                 need_weights: bool = True) -> tuple[dict[str, str | None], dict[str, dict], dict]:
    """What pass@k samples on ``env``: (label -> model, RL label -> its cell, the cells' config) for the
    untrained model, the warm start (every warm start of a grid with several ``warm_seeds``: "warm start (warm seed
    W)", each RL cell's ``warm_curve`` naming its own) and every seed's cell of the implementation the grid names in
    advance (``Grid.passk_implementation``; only ``seeds`` of them when given); nothing is chosen by a result.
    ConfigError when the grid names none or a cell or warm start has not finished, or (``need_weights``) a cell has
    lost its checkpoint; without ``need_weights`` such a cell's model is None (its counts may be kept already)."""
    impl = grid.passk_implementation(env)
    if impl is None:
        raise ConfigError(f"passk --env {env}: grid {grid.name} names no pass@k implementation on {env}; name it in "
                          f"the grid file before any result (passk: {{implementation: VARIANT, problems: N >= 50, "
                          f"samples: G}}): pass@k is never run on a cell picked by its test score")
    models = {"base": warm_settings(grid, env)["model"]}
    warm_labels = {}
    for warm_seed, name in gdir.warm_starts(grid, env):
        if not (gdir.warm(name) / "done.json").exists():
            raise ConfigError(f"passk --env {env}: the warm start of {env} has not been trained ({gdir.warm(name)})")
        warm_labels[name] = "warm start" if len(grid.warm_seeds) == 1 else f"warm start (warm seed {warm_seed})"
        models[warm_labels[name]] = str(gdir.warm(name))
    cells, config = {}, None
    for seed in (grid.seeds if seeds is None else seeds):
        record, run = gdir.result(impl, seed), RunDir(gdir.cell(impl, seed) / "run")
        if record is None or (need_weights and run.latest_model() is None):
            raise ConfigError(f"passk --env {env}: {cell_id(impl, seed)} has not finished or has no checkpoint in "
                              f"{run.path}; pass@k samples every seed's cell of {impl} (train it: run the grid)")
        label = f"RL ({impl}, seed {seed})"
        models[label] = None if run.latest_model() is None else str(run.latest_model())
        cells[label] = {"cell": cell_id(impl, seed), "seed": seed, "in_verdicts": budget_status(record)["in_verdicts"]}
        if len(warm_labels) > 1:  # the warm start this seed's cell started from: the curve it is paired with
            cells[label]["warm_curve"] = warm_labels[gdir.warm_of(grid, env, seed).name]
        config = config or record["config"]
    return models, cells, config


def passk_stage(grid: Grid, gdir: GridDir, env: str, out=sys.stdout, seeds=None) -> None:
    """pass@k for k = 1..samples on the grid's test problems (the first ``problems`` of the held-out draw, the
    eval seed), at temperature 1, of the models ``passk_models`` names: the untrained model, the warm start and
    every seed's cell of the implementation named in the grid's ``passk`` (samples, problems and the tested k
    are the grid's too). The record's ``method`` says so; ``board.passk_comparison`` tests the seeds against
    the warm start.

    Resumable: each problem's count is saved as it is measured (``passk/.<env>.partial.json``), and each
    problem's samples draw from their own seed (the eval seed + the problem's index), so a killed stage
    resumes at the next problem and ends with the same counts as one that was never stopped. A model's counts
    are kept while its source is the same (the base model's name, the digest of the warm start's weights as they
    are on disk, the cell's finishing time); other settings start over.

    ``seeds``: count only those seeds' cells, into the partial file (``run`` does it right after each such cell
    trains, so that a grid carried across sessions without weights still has every seed's counts); the record
    is written when every model's counts are complete. A model whose counts are incomplete and whose weights
    are gone is a ConfigError that says so.
    """
    import dataclasses as dc

    import torch

    from reference_impls.envs import get_env
    from reference_impls.models import load_policy
    from reference_impls.rollout import RolloutConfig, rollout
    from reference_impls.stats import pass_at_k_curve

    models, cells, config = passk_models(grid, gdir, env, seeds=seeds, need_weights=False)
    samples, n_problems = grid.passk["samples"], grid.passk["problems"]
    task = get_env(env)
    env_options = task.heldout_env_options(config["env_options"])
    problems = task.problems("heldout", n=n_problems, seed=grid.eval_seed, config=env_options)
    rcfg = RolloutConfig(group_size=samples, max_new_tokens_per_turn=config["max_new_tokens_per_turn"],
                         max_completion_tokens=config["max_completion_tokens"], temperature=1.0,
                         env_config=task.config_of(env_options))
    settings = {"env": env, "samples": samples, "problems": n_problems, "temperature": 1.0,
                "max_new_tokens_per_turn": rcfg.max_new_tokens_per_turn,
                "max_completion_tokens": rcfg.max_completion_tokens, "env_options": env_options}
    impl, sources = grid.passk_implementation(env), {}
    for label, name in models.items():  # what a model's counts belong to: the same source keeps them
        if label in cells:
            finished = gdir.result(impl, cells[label]["seed"]).get("finished")
            sources[label] = f"{cells[label]['cell']} finished {finished}"
        elif label == "base":
            sources[label] = str(name)
        else:  # the weights it samples: the recorded ones, or a restore's kept by held-out (warm_restore_stage)
            done = json.loads((Path(name) / "done.json").read_text())
            sources[label] = (weights_digest(Path(name)) if has_weights(Path(name)) else None
                              ) or done.get("weights_sha256") or str(name)
    (gdir.path / "passk").mkdir(exist_ok=True)
    partial_path = gdir.path / "passk" / f".{env}.partial.json"
    partial = json.loads(partial_path.read_text()) if partial_path.exists() else None
    if partial is None or partial.get("settings") != settings:  # other settings: start over
        partial = {"settings": settings, "counts": {}, "seconds": {}, "sources": {}, "models": {}}
    for key in ("sources", "models"):
        partial.setdefault(key, {})
    for label in list(partial["counts"]):  # another cell of the same label (re-run), another warm start: again
        if label in sources and partial["sources"].get(label) != sources[label]:
            for key in ("counts", "seconds", "sources", "models"):
                partial[key].pop(label, None)
    result = {"env": env, "samples": samples, "problems": len(problems), "temperature": 1.0,
              "method": PASSK_DECLARED, "implementation": impl, "k": grid.passk["k"],
              "seeds": list(grid.seeds), "cells": cells, "curves": {}}
    wanted = [label for label in models if seeds is None or label in cells]
    for label in wanted:
        name = models[label]
        counts = partial["counts"].setdefault(label, [])
        seconds = partial["seconds"].setdefault(label, [])
        if len(counts) < len(problems):
            if name is None:
                raise ConfigError(f"passk --env {env}: {label} has {len(counts)} of {len(problems)} problems counted "
                                  f"and its checkpoint is gone ({cells[label]['cell']}); pass@k counts each seed's "
                                  f"cell right after it trains (`run`), so move the cell folder away to train it again")
            partial["sources"][label], partial["models"][label] = sources[label], name
            model, tokenizer = load_policy(name, seed=grid.eval_seed)
            for i in range(len(counts), len(problems)):  # one problem at a time: its G = samples rows share a prefill
                t0 = time.time()
                torch.manual_seed(grid.eval_seed + i)
                rows, _ = rollout(model, tokenizer, task, [problems[i]], dc.replace(rcfg))
                counts.append(sum(int(bool(s.info.get("correct"))) for s in rows))
                seconds.append(round(time.time() - t0, 2))
                atomic_json(partial_path, partial)
                left = (len(problems) - i - 1) * sum(seconds) / len(seconds)
                print(f"{label}: problem {i + 1}/{len(problems)}, {counts[-1]}/{samples} correct "
                      f"({seconds[-1]:.0f}s; this model's ETA {duration(left)})", file=out, flush=True)
        result["curves"][label] = {"model": partial["models"].get(label, name), "correct_counts": counts,
                                   "wall_s": round(sum(seconds), 1),
                                   "pass_at_k": {str(k): v for k, v in pass_at_k_curve(counts, samples).items()}}
    if seeds is not None:  # the record waits for every model's counts
        atomic_json(partial_path, partial)
        return
    atomic_json(gdir.path / "passk" / f"{env}.json", result)
    partial_path.unlink()


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # KiB on Linux, bytes on macOS


def validate(grid: Grid, gdir: GridDir) -> None:
    """Every cell's config passes the trainer's own checks before anything runs (ConfigError names the cell)."""
    from reference_impls.train import config_from_dict, resolve

    for impl, seed in grid.cells():
        for lr in [None, *(grid.sweep_lrs(impl) if seed == grid.seeds[0] else [])]:  # the sweep's trials too
            try:
                config = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env_of(impl), seed)), lr=lr)
                resolve(config_from_dict(config), check_model=False)
            except (ConfigError, TypeError, ValueError) as err:
                where = f"cell {cell_id(impl, seed)}" if lr is None else f"the trial of {impl} with lr {lr:g}"
                raise ConfigError(f"grid {grid.name}, {where}: {err}") from None


def stage_process(args: list[str], log: Path) -> int:
    """``python -m lab.compare ARGS`` (a stage) in its own process, its output appended to ``log``; the exit code."""
    with open(log, "a") as f:
        proc = subprocess.run([sys.executable, "-m", "lab.compare", *args], stdout=f, stderr=subprocess.STDOUT,
                              env=dict(os.environ, HF_HUB_OFFLINE="1"))
    return proc.returncode


def sweep(grid: Grid, gdir: GridDir, impls: list[str], grid_arg: str, out=sys.stdout) -> int:
    """Each of ``impls``' missing learning-rate trials (each in its own process: ``python -m lab.compare
    _trial``), then its choice; returns the number of implementations left without a choice."""
    failed = 0
    for impl in impls:
        lrs = grid.sweep_lrs(impl)
        if not lrs or gdir.choice(impl) is not None:
            continue
        for lr in lrs:
            folder = gdir.trial(impl, lr)
            if read_record(folder / "result.json") is not None:
                continue
            print(f"lr trial {impl} lr {lr:g} (scored on validation) ...", file=out, flush=True)
            folder.mkdir(parents=True, exist_ok=True)
            if stage_process(["_trial", grid_arg, "--dir", str(gdir.path), "--impl", impl, "--lr", repr(lr)],
                             folder / "log.txt"):
                print(f"  failed: see {folder / 'log.txt'}", file=out, flush=True)
        try:
            choice = choose_lr(grid, gdir, impl)
        except ConfigError as err:
            print(f"  {err}", file=out, flush=True)
            failed += 1
            continue
        print(f"  {impl}: lr {choice['lr']:g} chosen on validation ("
              + ", ".join(f"{t['lr']:g}: {t['validation']:.3f}" for t in choice["trials"]) + ")", file=out, flush=True)
    return failed


def run(grid: Grid, gdir: GridDir, max_cells: int | None = None, out=sys.stdout, grid_arg: str | None = None,
        env: str | None = None, restore_by_heldout: bool = False) -> int:
    """Run every missing stage in order (only ``env``'s warm start and cells when given: a grid can be
    finished one environment at a time); returns the number of failed stages. ``restore_by_heldout``: see
    ``warm_restore_stage``'s ``by_heldout``."""
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
            if stage_process(["_baseeval", grid_arg, "--dir", str(gdir.path), "--env", name],
                      gdir.path / f"base-eval-{name}.log"):
                print(f"  failed: see {gdir.path / f'base-eval-{name}.log'}", file=out, flush=True)
                return failures + 1
        for warm_seed, warm in gdir.warm_starts(grid, name):  # each on its own: a finished one is kept
            which = ["--env", name, "--warm-seed", str(warm_seed)]
            if not (gdir.warm(warm) / "done.json").exists():
                print(f"warm start of {name}{_seed_words(grid, warm_seed)} ...", file=out, flush=True)
                gdir.warm(warm).parent.mkdir(parents=True, exist_ok=True)
                if stage_process(["_warm", grid_arg, "--dir", str(gdir.path), *which], gdir.path / f"warm-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-{warm}.log'}", file=out, flush=True)
                    return failures + 1
            elif not has_weights(gdir.warm(warm)):  # its record came without its weights (another session)
                print(f"weights of the {name} warm start{_seed_words(grid, warm_seed)}: trained again and checked "
                      f"against the recorded digest ...", file=out, flush=True)
                by_heldout = ["--restore-by-heldout"] if restore_by_heldout else []
                if stage_process(["_warmrestore", grid_arg, "--dir", str(gdir.path), *which, *by_heldout],
                                 gdir.path / f"warm-restore-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-restore-{warm}.log'}", file=out, flush=True)
                    return failures + 1
            if "heldout" not in json.loads((gdir.warm(warm) / "done.json").read_text()):
                print(f"held-out of the {name} warm start{_seed_words(grid, warm_seed)} (no RL) ...", file=out,
                      flush=True)
                if stage_process(["_warmeval", grid_arg, "--dir", str(gdir.path), *which],
                                 gdir.path / f"warm-eval-{warm}.log"):
                    print(f"  failed: see {gdir.path / f'warm-eval-{warm}.log'}", file=out, flush=True)
                    return failures + 1
    cells = [c for c in grid.cells() if env_of(c[0]) in envs]
    if grid.lr_sweep:  # learning rates chosen on validation before any cell trains (and is tested)
        impls = list(dict.fromkeys(impl for impl, _ in cells))
        if sweep(grid, gdir, impls, grid_arg, out):
            return failures + 1
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
        eta = f", ETA {duration(sum(durations) / len(durations) * (len(todo) - i))}" if durations else ""
        print(f"[{done + 1}/{total}] {cell_id(impl, seed)}{eta}", file=out, flush=True)
        folder = gdir.cell(impl, seed)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        rc = stage_process(["_cell", grid_arg, "--dir", str(gdir.path), "--impl", impl, "--seed", str(seed)],
                    folder / "log.txt")
        durations.append(time.time() - t0)
        if rc != 0 or gdir.result(impl, seed) is None:
            failures += 1
            tail = (folder / "log.txt").read_text(errors="replace")[-2000:]
            (folder / "error.txt").write_text(f"exit code {rc}\n{tail}")
            print(f"  failed (exit {rc}): {folder / 'error.txt'}", file=out, flush=True)
        else:
            r = gdir.result(impl, seed)
            print(f"  held-out {r['heldout']:.3f} in {duration(durations[-1])}", file=out, flush=True)
            cell_env = env_of(impl)
            if impl == grid.passk_implementation(cell_env):  # its pass@k counts while its weights are here
                log = gdir.path / f"passk-{cell_env}-s{seed}.log"
                print(f"  pass@k of {cell_id(impl, seed)} (named in the grid file) ...", file=out, flush=True)
                if stage_process(["_passk", grid_arg, "--dir", str(gdir.path), "--env", cell_env, "--seed",
                                  str(seed)], log):
                    failures += 1
                    print(f"  failed: see {log}", file=out, flush=True)
    for name in envs:  # pass@k of the implementation the grid names, once every seed's cell of it is done
        impl = grid.passk_implementation(name)
        if impl is None or (gdir.path / "passk" / f"{name}.json").exists() or any(
                gdir.result(impl, seed) is None for seed in grid.seeds):
            continue
        print(f"pass@k on {name}: the untrained model, the warm start and every seed of {impl} (named in the grid "
              f"file) ...", file=out, flush=True)
        log = gdir.path / f"passk-{name}.log"
        if stage_process(["_passk", grid_arg, "--dir", str(gdir.path), "--env", name], log):
            failures += 1
            print(f"  failed: see {log}", file=out, flush=True)
    return failures


def _seed_words(grid: Grid, warm_seed: int) -> str:
    """`` (warm seed 1)`` where the grid has several warm starts, else nothing (the log reads as before)."""
    return f" (warm seed {warm_seed})" if len(grid.warm_seeds) > 1 else ""


def stale_fields(grid: Grid, gdir: GridDir, impl: str, seed: int, result: dict) -> list[str]:
    """The run options in which a finished cell's recorded config differs from what the grid's recipe
    gives that cell now (a recipe edited after the cell ran): such a cell is not comparable with new ones."""
    choice = gdir.choice(impl) if grid.lr_sweep else None
    now = cell_config(grid, impl, seed, str(gdir.warm_of(grid, env_of(impl), seed)),
                      lr=None if choice is None else choice["lr"])
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
        elif gdir.result_problem(impl, seed):
            state = "bad"
            changed = [gdir.result_problem(impl, seed)]
        elif (folder / "error.txt").exists():
            state = "failed"
        elif RunDir(folder / "run").latest_checkpoint() is not None:
            state = "partial"
        else:
            state = "pending"
        rows.append({"cell": cell_id(impl, seed), "state": state, "changed": changed,
                     "heldout": None if result is None else result["heldout"],
                     "warm_start": gdir.warm_of(grid, env_of(impl), seed).name})
    return rows


def warm_status(grid: Grid, gdir: GridDir) -> list[dict]:
    """Each warm start of the grid (``warm/<env>``, ``warm/<env>@w<seed>``): ``done`` (trained and its held-out
    measured), ``trained`` (held-out not yet measured), ``bad`` (a ``done.json`` that is not a record) or
    ``pending``, with its held-out."""
    from .folder import BadRecord

    rows = []
    for env in grid.envs():
        for warm_seed, name in gdir.warm_starts(grid, env):
            try:
                record = read_record(gdir.warm(name) / "done.json")
            except BadRecord:
                rows.append({"warm": name, "env": env, "warm_seed": warm_seed, "state": "bad", "heldout": None})
                continue
            state = "pending" if record is None else "done" if "heldout" in record else "trained"
            rows.append({"warm": name, "env": env, "warm_seed": warm_seed, "state": state,
                         "heldout": None if record is None else record.get("heldout")})
    return rows

