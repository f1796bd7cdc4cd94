"""Does each environment's learning preset learn? (issue 59) A resumable benchmark over lab/recipes/learn/<env>.yaml.

One stage is one (environment, seed, arm):

* ``rl``: the environment's learning preset (``lab.recipes``' ``learn`` recipe with that environment's settings)
  trained by the trainer's command line, ``python -m reference_impls.train --config ...``, in a subprocess;
* ``control``: the same config, the same seed (so the same warm start, problems and sampling seeds), with the
  learning rate at ``CONTROL_LR`` = 0: AdamW then leaves every weight as it is (its step and its weight decay
  are both scaled by the rate), so the control's final model is the warm start. It also runs with ``update: false``
  (``--no-update``): every step's episodes are the same as with the update at lr 0, and no loss is computed.

After training, the stage scores the run's final model greedily on held-out problems that no run trains on
(``lab.compare.heldout.evaluate_heldout``: the environment's ``heldout`` split, ``EVAL_N`` problems of seed
``EVAL_SEED``, the same for every stage): the record's ``heldout`` is greedy success, one 0/1 per problem. Held-out
success *before* training is the control arm's (the warm start, see above); *after* is the RL arm's. On the memory
environment the stage also scores the Memory-R1 comparison (``memory_r1``): the manager's answer exact match on
held-out sessions with the frozen Answer Agent; with the ``add_only`` stage (the add-only baseline, once per
environment) the report puts the RL manager, its warm start (the control's manager) and the add-only baseline
side by side with intervals.

Records: ``DIR/<env>/<arm>-s<seed>.json`` (default DIR: benchmarks/results/learn_presets), written whole or not at
all (``lab.compare.folder.atomic_json``) once the stage has finished. A stage works in ``DIR/<env>/.work/<stage>/``;
a stage without its record is redone from scratch (a stopped run loses at most that stage), a recorded one is
never redone. Each stage runs in its own process (``python -m benchmarks.learn_presets _stage WORK``).

The report (``report --json``, or ``--report --json``) prints one JSON line per environment of the learning
presets. "Learns" (issue 59): over at least ``MIN_SEEDS`` seeds, the mean training reward over the last quarter of
steps of the RL arm exceeds the control's, with the seed-paired 95% t interval of the difference above 0.

    python -m benchmarks.learn_presets run --env memory --seeds 0 1 2
    python -m benchmarks.learn_presets report --json
    python -m benchmarks.learn_presets report --markdown    # the table of docs/learn_presets.md
    python -m benchmarks.learn_presets ship --env memory     # the measured block into lab/recipes/learn/memory.yaml
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
import yaml

from lab import catalog, recipes
from lab.compare.folder import atomic_json
from lab.compare.provenance import Host, provenance
from reference_impls.common import resolve_precision
from reference_impls.run_config import ALGORITHMS, TrainConfig, supports_no_update
from reference_impls.stats import LEVEL, compare, config_interval

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "learn_presets"
RECIPE = "learn"
ARMS = ("rl", "control")
#: the no-update control's learning rate (reference_impls/run_config.py allows 0 for it)
CONTROL_LR = 0.0
EVAL_N = 50
EVAL_SEED = 4242  # the comparison grids' held-out seed: problems no run trains on
#: ``--split validation`` (choosing a preset's settings): problems of this seed apart from the test problems
#: (``measure.evaluate.validation_problems``), and memory sessions of this seed; the test split is scored once
VALIDATION_SEED = 777
SPLITS = ("heldout", "validation")
MEMORY_SESSIONS = 24
MIN_SEEDS = 3
HELDOUT_METRIC = "greedy success: one 0/1 per held-out problem (the environment's 'correct'), greedy decoding"
MEMORY_METRIC = "answer exact match of the frozen Answer Agent on held-out sessions, one 0/1 per question"
#: the step-time columns of the trainer's metrics.jsonl a record keeps (env_s where the trainer writes it)
STEP_TIME_KEYS = ("rollout_s", "env_s", "update_s", "step_s")


# -- stages --

def env_names() -> list[str]:
    """Every environment with a learning preset (one file each in lab/recipes/learn/)."""
    return sorted(recipes.env_presets(RECIPE))


def stage_name(arm: str, seed: int) -> str:
    return f"{arm}-s{seed}"


def record_path(out: Path, env: str, arm: str, seed: int) -> Path:
    return Path(out) / env / f"{stage_name(arm, seed)}.json"


def add_only_path(out: Path) -> Path:
    return Path(out) / "memory" / "add_only.json"


def parse_overrides(items: list[str] | None) -> dict:
    """``KEY=VALUE`` settings applied to every stage (YAML values; ``env_options.KEY`` sets an env option)."""
    found: dict = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        found[key.strip()] = yaml.safe_load(value)
    return found


def stage_config(env: str, seed: int, arm: str, model: str | None = None, overrides: dict | None = None) -> dict:
    """The run config of one stage: the Lab's config of the environment's learning preset (``preset_config``),
    seed ``seed``, a final checkpoint, the control's learning rate for ``control``; ``model`` and ``overrides``
    (a test's tiny budget) apply to both arms alike."""
    if arm not in ARMS:
        raise ValueError(f"arm {arm!r}: expected one of {ARMS}")
    presets = recipes.env_presets(RECIPE)
    if env not in presets:
        raise SystemExit(f"--env {env}: no learning preset (lab/recipes/{RECIPE}/{env}.yaml); known: "
                         f"{', '.join(sorted(presets))}")
    impl = catalog.get(presets[env]["impl"])
    config = catalog.preset_config(impl, RECIPE)
    if model:
        config["model"] = model
    for key, value in (overrides or {}).items():
        if key.startswith("env_options."):
            config["env_options"] = {**config["env_options"], key.split(".", 1)[1]: value}
        else:
            config[key] = value
    config["seed"] = seed
    # the record says what ran: auto is resolved on this machine (the stages run here)
    config["precision"] = resolve_precision(config["precision"], torch.device("cpu"))
    config["checkpoint_every"] = config["steps"]  # the final model is what held-out scores
    if arm == "control":
        config["lr"] = CONTROL_LR
        # the same episodes without computing a loss that lr 0 would discard (reference_impls/run_config.py)
        if supports_no_update(ALGORITHMS[config["algo"]]):
            config["update"] = False
    errors = catalog.validate(impl, config)
    if errors:
        raise SystemExit(f"{env} {arm} seed {seed}: invalid config: {errors}")
    return {"impl": impl.id, **config}


def _last_quarter(values: list[float]) -> float:
    """Mean over the last quarter of the steps (at least one step)."""
    k = max(1, math.ceil(len(values) / 4))
    return sum(values[-k:]) / k


def _score_memory_r1(model: str, config: dict, n_sessions: int, seed: int) -> dict:
    """Memory-R1's comparison for one manager (a model folder, or ``"add_only"``): the frozen Answer Agent's
    exact match on every end-of-session question of ``n_sessions`` held-out sessions."""
    from reference_impls.memory.answer import AnswerAgent
    from reference_impls.memory.dialogue import dialogues
    from reference_impls.memory.managers import AddOnlyManager, LMManager, evaluate, run_manager
    from reference_impls.models import load_policy

    options = config["env_options"]
    sessions = dialogues("heldout", n_sessions, seed, tuple(options.get("levels") or (1, 2, 3)))
    if model == "add_only":
        manager = AddOnlyManager()
    else:
        manager = LMManager(*load_policy(model, device="cpu"), max_new_tokens=config["max_new_tokens_per_turn"])
    banks, ops = run_manager(manager, sessions, k=options.get("k", 3))
    agent = AnswerAgent(*load_policy(options.get("answer_model", "smollm2-135m-instruct"), device="cpu"),
                        mode=options.get("answer_mode", "extract"))
    result = evaluate(agent, sessions, banks)
    return {"metric": MEMORY_METRIC, "sessions": n_sessions, "seed": seed, "levels": options.get("levels"),
            "answer_model": options.get("answer_model"), "operations": ops,
            "em_by_question": [int(row["em"]) for row in result["rows"]], "em": result["summary"]["all"]["em"]}


def validation_set(env: str, env_options: dict, n: int, test_seed: int = None) -> list:
    """The ``n`` validation problems a tuning run scores: drawn with ``VALIDATION_SEED`` apart from the shipped
    test problems (``EVAL_N`` of ``test_seed``, whatever ``n`` a tuning run asks for: a smaller validation set must
    still avoid all of them)."""
    from lab.compare.heldout import heldout_config
    from reference_impls.envs import get_env
    from reference_impls.measure.evaluate import validation_problems

    env_config = heldout_config({"env": env, "env_options": env_options})
    return validation_problems(get_env(env), n, VALIDATION_SEED, max(n, EVAL_N),
                               EVAL_SEED if test_seed is None else test_seed, config=env_config)


def _score_validation(model: str, env: str, config: dict, n: int, test_seed: int) -> list[int]:
    """Greedy success on ``validation_set``'s problems."""
    from lab.compare.heldout import heldout_config, score_problems
    from reference_impls.envs import get_env

    env_config = heldout_config({"env": env, "env_options": config["env_options"]})
    problems = validation_set(env, config["env_options"], n, test_seed)
    return score_problems(model, get_env(env), problems, env_config, config["max_new_tokens_per_turn"],
                          config["max_completion_tokens"])


def run_stage(work: Path) -> None:
    """One stage, from ``WORK/spec.json``: train (a subprocess), score held-out, write the record atomically."""
    from lab.compare.heldout import evaluate_heldout
    from reference_impls.rundir import RunDir

    spec = json.loads((work / "spec.json").read_text())
    host, t0 = Host.sample(), time.time()
    config = spec["config"]
    split = spec.get("split", "heldout")
    memory_seed = spec["eval_seed"] if split == "heldout" else VALIDATION_SEED
    if spec["kind"] == "add_only":
        memory = _score_memory_r1("add_only", config, spec["memory_sessions"], memory_seed)
        atomic_json(Path(spec["record"]), {"env": "memory", "kind": "add_only", "memory_r1": memory,
                                           "wall_s": round(time.time() - t0, 1), "provenance": provenance(host)})
        return
    run = RunDir(work / "run")
    train_config = {k: v for k, v in config.items() if k != "impl"}
    train_config["out"] = str(run.path)
    (work / "config.json").write_text(json.dumps(train_config, indent=1))
    with open(work / "train.log", "w") as log:
        proc = subprocess.run([sys.executable, "-m", "reference_impls.train", "--config", str(work / "config.json")],
                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    train_wall_s = time.time() - t0
    if proc.returncode != 0:
        tail = (work / "train.log").read_text()[-2000:]
        raise SystemExit(f"{spec['env']} {spec['arm']} seed {spec['seed']}: the trainer failed "
                         f"(exit {proc.returncode}):\n{tail}")
    metrics = run.metrics()
    model = run.latest_model()
    if model is None or len(metrics) != config["steps"]:
        raise SystemExit(f"{spec['env']} {spec['arm']} seed {spec['seed']}: the run in {run.path} has "
                         f"{len(metrics)} of {config['steps']} steps and final model {model}")
    t_eval = time.time()
    if split == "heldout":
        heldout = evaluate_heldout(str(model), spec["env"], config["env_options"], spec["eval_n"], spec["eval_seed"],
                                   config["max_new_tokens_per_turn"], config["max_completion_tokens"])
    else:
        heldout = _score_validation(str(model), spec["env"], config, spec["eval_n"], spec["eval_seed"])
    warm = run.warm_start()
    record = {
        "env": spec["env"], "arm": spec["arm"], "seed": spec["seed"], "impl": config["impl"], "preset": RECIPE,
        "model": config["model"], "control_lr": CONTROL_LR, "config": train_config | {"out": None},
        "overrides": spec["overrides"], "steps": len(metrics),
        "rewards": [m.get("reward_mean") for m in metrics],
        "accuracy": [m.get("accuracy") for m in metrics],
        "step_time": [{k: m[k] for k in ("step", *STEP_TIME_KEYS) if k in m} for m in metrics],
        "warm_start_losses": [w.get("loss") for w in warm],
        # the warm start's own wall time (its last step's, from warm_start.jsonl): part of train_wall_s, which the
        # per-step step_time leaves out
        "warm_start_s": round(warm[-1]["wall_s"], 1) if warm and warm[-1].get("wall_s") is not None else 0.0,
        "train_wall_s": round(train_wall_s, 1),
        "heldout": {"metric": HELDOUT_METRIC, "split": split, "n": spec["eval_n"],
                    "seed": spec["eval_seed"] if split == "heldout" else VALIDATION_SEED,
                    "mean": sum(heldout) / len(heldout), "by_problem": heldout},
    }
    if spec["env"] == "memory" and spec["memory_sessions"] > 0:
        record["memory_r1"] = _score_memory_r1(str(model), config, spec["memory_sessions"], memory_seed)
    record["eval_s"] = round(time.time() - t_eval, 1)
    record["wall_s"] = round(time.time() - t0, 1)
    record["recorded"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    record["provenance"] = provenance(host)
    atomic_json(Path(spec["record"]), record)


def _launch(work: Path, spec: dict, log) -> None:
    """A fresh work folder for the stage (whatever a stopped attempt left there), then the stage's process."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "spec.json").write_text(json.dumps(spec, indent=1))
    t0 = time.time()
    print(f"stage {spec['env']} {spec.get('arm', spec['kind'])} seed {spec.get('seed')}: running", file=log, flush=True)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.learn_presets", "_stage", "--work", str(work)], cwd=ROOT)
    if proc.returncode != 0 or not Path(spec["record"]).is_file():
        raise SystemExit(f"stage {work.name} of {spec['env']} failed (exit {proc.returncode}); its folder {work} "
                         f"is kept for reading and will be redone on the next run")
    print(f"stage {spec['env']} {spec.get('arm', spec['kind'])} seed {spec.get('seed')}: recorded in "
          f"{time.time() - t0:.0f} s", file=log, flush=True)


def _remove_work(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()  # the environment's .work, once empty
    except OSError:
        pass


def run(out: Path, envs: list[str], seeds: list[int], model: str | None = None, overrides: dict | None = None,
        eval_n: int = EVAL_N, memory_sessions: int = MEMORY_SESSIONS, keep_runs: bool = False, log=sys.stdout,
        split: str = "heldout", arms: tuple[str, ...] = ARMS) -> int:
    """Every missing stage of ``envs`` x ``seeds`` x ``arms`` in order (seed by seed, RL then control), then the
    add-only memory baseline; recorded stages are skipped. Returns the number of stages run. ``split``:
    ``heldout`` scores the test problems (the shipped figures), ``validation`` the problems a preset's settings
    are chosen on (``VALIDATION_SEED``), so that the test problems are scored once."""
    if split not in SPLITS:
        raise SystemExit(f"--split {split!r}: expected one of {', '.join(SPLITS)}")
    done = 0
    for env in envs:
        for seed in seeds:
            for arm in arms:
                record = record_path(out, env, arm, seed)
                if record.is_file():
                    continue
                spec = {"kind": "train", "env": env, "arm": arm, "seed": seed, "record": str(record),
                        "config": stage_config(env, seed, arm, model, overrides), "overrides": overrides or {},
                        "eval_n": eval_n, "eval_seed": EVAL_SEED, "memory_sessions": memory_sessions,
                        "split": split}
                work = Path(out) / env / ".work" / stage_name(arm, seed)
                _launch(work, spec, log)
                if not keep_runs:  # a SmolLM2 checkpoint is 1.6 GB: the record holds what the benchmark needs
                    _remove_work(work)
                done += 1
        if env == "memory" and memory_sessions > 0 and not add_only_path(out).is_file():
            spec = {"kind": "add_only", "env": "memory", "record": str(add_only_path(out)),
                    "config": stage_config("memory", seeds[0], "rl", model, overrides),
                    "eval_seed": EVAL_SEED, "memory_sessions": memory_sessions, "split": split}
            work = Path(out) / "memory" / ".work" / "add_only"
            _launch(work, spec, log)
            _remove_work(work)
            done += 1
    return done


# -- report --

def seed_interval(values: list[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The ``level`` t interval of the mean of per-seed values (S - 1 degrees of freedom); None under 2 seeds.
    (reference_impls.stats has the crossed seeds x problems intervals; a per-seed scalar such as a training
    reward has no problems axis, so this is the plain one-sample t interval.)"""
    from scipy.stats import t

    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    half = float(t.ppf(1 - (1 - level) / 2, n - 1)) * sd / n ** 0.5
    return mean - half, mean + half


def read_records(out: Path, env: str) -> dict[str, dict[int, dict]]:
    """``{arm: {seed: record}}`` of the finished stages of ``env`` (unreadable files are an error naming them)."""
    found: dict[str, dict[int, dict]] = {arm: {} for arm in ARMS}
    for arm in ARMS:
        for path in sorted((Path(out) / env).glob(f"{arm}-s*.json")):
            try:
                record = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise SystemExit(f"{path}: unreadable record ({err})") from err
            found[arm][int(record["seed"])] = record
    return found


def _interval_dict(rows) -> dict | None:
    if not rows:
        return None
    return config_interval(rows).as_dict() if len(rows[0]) > 1 else None


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def _step_time(records: list[dict]) -> dict:
    """Median seconds per step of each step-time column over every step of ``records``."""
    out = {}
    for key in STEP_TIME_KEYS:
        values = [row[key] for r in records for row in r["step_time"] if row.get(key) is not None]
        if values:
            out[key] = round(_median(values), 2)
    return out


def memory_table(records: dict[str, dict[int, dict]], add_only: dict | None, seeds: list[int]) -> dict | None:
    """The Memory-R1 comparison: RL manager, its warm start (the control arm's manager) and the add-only
    baseline on the same held-out questions, each mean with its interval, and the RL manager against each."""
    rl = [records["rl"][s]["memory_r1"]["em_by_question"] for s in seeds if "memory_r1" in records["rl"][s]]
    warm = [records["control"][s]["memory_r1"]["em_by_question"] for s in seeds
            if "memory_r1" in records["control"][s]]
    if not rl or len(rl) != len(warm):
        return None
    table = {"metric": MEMORY_METRIC, "seeds": len(rl), "questions": len(rl[0]),
             "rl": _interval_dict(rl), "warm_start": _interval_dict(warm)}
    if len(rl[0]) > 1:
        table["rl_vs_warm_start"] = compare(rl, warm).as_dict()
    if add_only is not None:
        base = [add_only["memory_r1"]["em_by_question"]]
        table["add_only"] = _interval_dict(base)
        if len(base[0]) == len(rl[0]) and len(rl[0]) > 1:
            table["rl_vs_add_only"] = compare(rl, base).as_dict()
    return table


_CONFIG_DEFAULTS = {k: v for k, v in vars(TrainConfig()).items() if isinstance(v, (str, int, float, bool))}


def _precision(record: dict) -> str:
    return (record.get("config") or {}).get("precision", _CONFIG_DEFAULTS["precision"])


def _settings_key(record: dict) -> str:
    """A record's settings apart from what differs by design between stages (seed, learning rate and the
    control's skipped update, folder)."""
    # a record from before an option existed ran as its default (an option is added with the old behaviour as
    # its default: e.g. precision fp32), so a missing key reads as the default
    config = {**_CONFIG_DEFAULTS, **(record.get("config") or {})}
    config = {k: v for k, v in config.items() if k not in ("seed", "lr", "out", "update")}
    split = (record.get("heldout") or {}).get("split", "heldout")
    return json.dumps({**config, "model": record.get("model"), "split": split}, sort_keys=True)


def env_report(out: Path, env: str) -> dict:
    """The report line of one environment (every key present; None where nothing was measured)."""
    records = read_records(out, env)
    settings = {_settings_key(r) for arm in ARMS for r in records[arm].values()}
    if len(settings) > 1:
        raise SystemExit(f"{Path(out) / env}: the records were run with different settings (model, preset or "
                         f"--set); a report pairs like with like: move the odd ones to another --dir")
    seeds = sorted(set(records["rl"]) & set(records["control"]))
    rl = [records["rl"][s] for s in seeds]
    control = [records["control"][s] for s in seeds]
    line = {"env": env, "preset": f"{RECIPE}/{env}", "impl": recipes.env_presets(RECIPE)[env]["impl"],
            "seeds": len(seeds), "seed_list": seeds, "steps": rl[0]["steps"] if rl else None,
            "model": rl[0]["model"] if rl else None, "precision": _precision(rl[0]) if rl else None,
            "wall_s_median": _median([r["train_wall_s"] for r in rl]),
            # None for records from before warm_start_s was recorded (2026-12-06)
            "warm_start_s_median": _median([r["warm_start_s"] for r in rl if r.get("warm_start_s") is not None]),
            "reward_first": None, "reward_last": None, "control_last": None, "diff": None, "ci_low": None,
            "ci_high": None, "heldout_metric": HELDOUT_METRIC, "heldout_before": None, "heldout_after": None,
            "heldout_diff": None, "learns": False, "control_lr": CONTROL_LR, "step_time": _step_time(rl),
            "unpaired_stages": sorted(f"{a}-s{s}" for a in ARMS for s in records[a] if s not in seeds),
            "heldout_split": rl[0]["heldout"].get("split", "heldout") if rl else None}
    if seeds:
        rl_last = [_last_quarter(r["rewards"]) for r in rl]
        control_last = [_last_quarter(r["rewards"]) for r in control]
        diffs = [a - b for a, b in zip(rl_last, control_last)]
        interval = seed_interval(diffs)
        line.update(reward_first=sum(r["rewards"][0] for r in rl) / len(rl),
                    reward_last=sum(rl_last) / len(rl_last), control_last=sum(control_last) / len(control_last),
                    diff=sum(diffs) / len(diffs), ci_low=interval[0] if interval else None,
                    ci_high=interval[1] if interval else None,
                    learns=bool(len(seeds) >= MIN_SEEDS and interval is not None and interval[0] > 0),
                    rewards={"rl": [r["rewards"] for r in rl], "control": [r["rewards"] for r in control]})
        before = [r["heldout"]["by_problem"] for r in control]
        after = [r["heldout"]["by_problem"] for r in rl]
        line.update(heldout_before=_interval_dict(before), heldout_after=_interval_dict(after))
        if len(after[0]) > 1:
            line["heldout_diff"] = compare(after, before).as_dict()
        loads = [r["provenance"]["load_1min"] for r in rl + control]
        line["load_1min_max"] = max((v for x in loads for v in x.values() if v is not None), default=None)
        line["cpu"] = (rl[0]["provenance"].get("cpu") or {}).get("model")
        line["commits"] = sorted({r["provenance"].get("commit") or "?" for r in rl + control})
    if env == "memory":
        add_only = json.loads(add_only_path(out).read_text()) if add_only_path(out).is_file() else None
        line["memory_r1"] = memory_table(records, add_only, seeds) if seeds else None
    return line


def report(out: Path, envs: list[str] | None = None) -> list[dict]:
    return [env_report(out, env) for env in (envs or env_names())]


def markdown_table(lines: list[dict]) -> str:
    """The report as the table docs/learn_presets.md shows: one row per environment, "not measured" where fewer
    than ``MIN_SEEDS`` seed pairs are recorded."""
    def num(x, fmt="{:.3f}"):
        return "-" if x is None else fmt.format(x)

    def held(d):
        return "-" if not d else f"{d['mean']:.2f}"

    rows = ["| env | seeds | last quarter RL / control | diff [95% CI] | learns | held-out greedy before -> after "
            "| median run | step: sampling + update | max load |", "|---|---|---|---|---|---|---|---|---|"]
    for line in lines:
        if line["seeds"] < MIN_SEEDS:
            rows.append(f"| {line['env']} | {line['seeds']} | not measured | | | | | | |")
            continue
        st = line.get("step_time") or {}
        step = (f"{st['step_s']:.1f} s: {st['rollout_s']:.1f} + {st['update_s']:.1f}"
                if st.get("step_s") is not None else "-")
        if line.get("precision") not in (None, "fp32"):
            step += f" ({line['precision']})"
        rows.append(f"| {line['env']} | {line['seeds']} | {num(line['reward_last'])} / {num(line['control_last'])} "
                    f"| {num(line['diff'], '{:+.3f}')} [{num(line['ci_low'], '{:+.3f}')}, "
                    f"{num(line['ci_high'], '{:+.3f}')}] | {'yes' if line['learns'] else 'no'} "
                    f"| {held(line.get('heldout_before'))} -> {held(line.get('heldout_after'))} "
                    f"| {num(line.get('wall_s_median'), '{:.0f} s')} | {step} "
                    f"| {num(line.get('load_1min_max'), '{:.1f}')} |")
    return "\n".join(rows)


# -- ship: the measured block into the environment's learning preset --

def measured_block(line: dict) -> dict:
    """What a learning preset's ``measured`` block holds, from its report line."""
    keys = ("seeds", "seed_list", "steps", "model", "precision", "wall_s_median", "reward_first", "reward_last", "control_last",
            "diff", "ci_low", "ci_high", "heldout_metric", "heldout_before", "heldout_after", "control_lr",
            "step_time", "rewards", "load_1min_max", "cpu", "commits")
    block = {"status": recipes.LEARNS if line["learns"] else recipes.DOES_NOT_LEARN, "learns": line["learns"],
             **{k: line.get(k) for k in keys},
             "criterion": f">= {MIN_SEEDS} seeds; seed-paired 95% t interval of (RL - control) mean training reward "
                          f"over the last quarter of steps above 0",
             "source": f"benchmarks/results/learn_presets/{line['env']}/"}
    if line.get("memory_r1"):
        block["memory_r1"] = line["memory_r1"]
    return json.loads(json.dumps(block))  # plain types for YAML


def ship(line: dict, folder: Path | None = None) -> Path:
    """Replace the ``measured`` block (the file's last key) of the environment's learning preset with the report
    line's figures; the settings and comments above it are kept as written."""
    if line["seeds"] < MIN_SEEDS:
        raise SystemExit(f"{line['env']}: {line['seeds']} paired seeds recorded; the criterion needs {MIN_SEEDS} "
                         f"before a measured block is shipped")
    path = Path(folder or recipes.FOLDER / RECIPE) / f"{line['env']}.yaml"
    text = path.read_text()
    head, sep, _ = text.partition("\nmeasured:")
    if not sep:
        raise SystemExit(f"{path}: no 'measured:' block at the end to replace")
    dumped = yaml.safe_dump({"measured": measured_block(line)}, sort_keys=False, width=120)
    path.write_text(head + "\n" + dumped)
    return path


# -- command line --

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learn_presets", description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "report", "ship", "_stage"))
    parser.add_argument("--report", action="store_true", help="same as the report command")
    parser.add_argument("--json", action="store_true", help="report: one JSON line per environment")
    parser.add_argument("--markdown", action="store_true", help="report: the table of docs/learn_presets.md")
    parser.add_argument("--env", nargs="+", help="environments (default: every learning preset)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--model", choices=("tiny", "smollm2-135m-instruct"),
                        help="replace the presets' model (tiny: a check of the harness, not a measurement)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="a setting for every stage of this run (a test's budget); recorded in each record")
    parser.add_argument("--eval-n", type=int, default=EVAL_N, help="held-out problems per stage")
    parser.add_argument("--memory-sessions", type=int, default=MEMORY_SESSIONS,
                        help="held-out memory sessions (0: no Memory-R1 comparison)")
    parser.add_argument("--split", choices=SPLITS, default="heldout",
                        help="what each stage scores: the test problems (shipped figures) or validation problems "
                             "(choosing a preset's settings; the test problems are then not scored)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS),
                        help="which arms to run (a control is shared by settings that differ only in the rate)")
    parser.add_argument("--keep-runs", action="store_true", help="keep each stage's run folder (checkpoints)")
    parser.add_argument("--dir", type=Path, default=RESULTS, help="records folder")
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    command = "report" if args.report else args.command
    if command == "_stage":
        run_stage(args.work)
        return 0
    envs = args.env or env_names()
    unknown = sorted(set(envs) - set(env_names()))
    if unknown:
        raise SystemExit(f"--env {' '.join(unknown)}: no learning preset; known: {', '.join(env_names())}")
    if command == "run":
        n = run(args.dir, envs, args.seeds, args.model, parse_overrides(args.set), args.eval_n, args.memory_sessions,
                args.keep_runs, split=args.split, arms=tuple(args.arms))
        print(f"{n} stages run; records in {args.dir}")
    elif command == "report" and args.markdown:
        print(markdown_table(report(args.dir, envs)))
    elif command == "report":
        for line in report(args.dir, envs):
            if args.json:
                print(json.dumps({k: v for k, v in line.items() if k != "rewards"}))
            else:
                ci = f"[{line['ci_low']:.2f}, {line['ci_high']:.2f}]" if line["ci_low"] is not None else "-"
                print(f"{line['env']:16} seeds {line['seeds']}  diff {line['diff']}  ci {ci}  learns {line['learns']}")
    elif command == "ship":
        for line in report(args.dir, envs):
            if line["seeds"] < MIN_SEEDS and not args.env:
                print(f"{line['env']}: {line['seeds']} paired seeds recorded; not shipped")
                continue
            print(f"wrote {ship(line)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
