"""RL training of the reference implementations: the command line (the loop itself is trainer.py).

Usage::

    python -m reference_impls.train --algo grpo --env calculator --model tiny --steps 2 --out runs/x
    python -m reference_impls.train --algo grpo --model DIR_FROM_SFT --steps 60 --out runs/y \\
        --loss-type dapo --epsilon-high 0.28 --dynamic-sampling --lr 1e-5 --levels 2,3
    python -m reference_impls.train --impl calculator-dapo --steps 5 --out runs/z   # a listed implementation
    python -m reference_impls.train --config recipe.yaml --out runs/w            # options from a file
    python -m reference_impls.train --resume runs/y --steps 80        # continue (and extend) a run
    python -m reference_impls.train --list --json                     # every runnable implementation
    python -m reference_impls.train --env-module my_env.py --env my-env ...   # a user's environment
    python -m reference_impls.train --algo-module my_algo.py --algo my-algo ... # a user's algorithm
    torchrun --nproc_per_node=2 -m reference_impls.train ...          # data parallel (DDP, gloo on CPU)

Every option is a typed field (``run_config.TrainConfig``, the algorithm's ``Config``, the environment's
config), declared with ``options.option``: the flags, ``--help``, the Lab's form and validation all come
from those fields, and a bad value fails before any model is loaded, naming the option, the value and
what is allowed. TRL's names are accepted as aliases where the meaning is the same
(``--num-generations``, ``--learning-rate``, ``--max-steps``, ``--output-dir`` ...; docs/ARCHITECTURE.md
lists them). Precedence: defaults < ``--impl`` < ``--config`` (or the resumed run's config) < flags.

Here the command line is parsed and validated once (``parse``: ``run_config.resolve``); the resolved config
goes to the :class:`~reference_impls.trainer.Trainer` (``reference_impls/trainer.py``, the loop) as it is. A
run folder's config.json is the run's one stored config, written from a resolved config; reading it back
(``--resume DIR`` without other flags, ``--prepared DIR``) checks its integrity only. SIGTERM/SIGINT: the
current step finishes, a checkpoint is written, status.json says "stopped", exit 0 (during the warm start:
it stops after the current SFT step, with no checkpoint; a resume starts over).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading

from . import distributed
from .callbacks import HealthLogger, JsonlLogger, ProgressBar, TensorBoardLogger, truncate_jsonl
from .envs import ENVS, get_env, load_env_module
from .options import ConfigError, add_flags, as_dict, given_flags, key_values, specs
from .registry import get_implementation, implementations, load_algo_module
from .run_config import (ALGORITHMS, Resolved, TrainConfig, config_from_dict, load_config_file, resolve, stored,
                         typed)
from .rundir import RunDir, RunDirError
from .sandbox import SandboxUnavailable
from .trainer import Trainer, WarmStartStopped

# ----------------------------------------------------------------------------------------------------
# CLI

def build_parser(algo: str = "grpo", env: str = "calculator") -> argparse.ArgumentParser:
    """The full parser for one algorithm and one environment (their options become flags)."""
    p = argparse.ArgumentParser(prog="python -m reference_impls.train", description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Environment options can also be given as --env-option KEY=VALUE.")
    p.add_argument("--resume", metavar="DIR", help="continue the run in DIR from its last good checkpoint")
    p.add_argument("--prepared", metavar="DIR", help="start the run prepared in DIR: its config.json, written "
                   "validated by the Lab's run manager, is the whole config (no other run option is taken)")
    p.add_argument("--overwrite", action="store_true", help="replace whatever is in --out (a previous run's files)")
    p.add_argument("--config", metavar="FILE", help="options from a YAML or JSON file (flags override it)")
    p.add_argument("--impl", metavar="ID", help="start from a listed implementation's options (see --list)")
    p.add_argument("--env-module", action="append", default=[], metavar="FILE.py|MODULE",
                   help="import a module that registers an environment (repeatable)")
    p.add_argument("--algo-module", action="append", default=[], metavar="FILE.py|MODULE",
                   help="import a module that defines an algorithm (an Algorithm subclass with a name; repeatable)")
    p.add_argument("--list", action="store_true", help="list every runnable implementation and exit")
    p.add_argument("--json", action="store_true", help="with --list: JSON output")
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the environment (repeatable; see its flags below)")
    taken = {"resume", "prepared", "overwrite", "config", "impl", "env_module", "algo_module", "list", "json",
             "env_option"}
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
    for flag in ("--algo", "--env", "--config", "--resume", "--prepared", "--impl"):
        p.add_argument(flag)
    p.add_argument("--env-module", action="append", default=[])
    p.add_argument("--algo-module", action="append", default=[])
    known, _ = p.parse_known_args(argv)
    return known


def config_from_args(args: argparse.Namespace, base: dict) -> TrainConfig:
    """``base`` (defaults, --impl, --config or the resumed config) overridden by the given flags."""
    data = {**base, **given_flags(args, "train")}
    data["algo_config"] = {**base.get("algo_config", {}), **given_flags(args, "algo")}
    data["env_options"] = {**base.get("env_options", {}), **given_flags(args, "env"), **key_values(args.env_option)}
    return config_from_dict(data)


def _changes_stored_config(args: argparse.Namespace) -> bool:
    """Whether flags beside --resume/--prepared change the stored config (then it is validated again, whole)."""
    return bool(args.config or args.impl or args.env_option
                or any(given_flags(args, group) for group in ("train", "algo", "env")))


def parse_resolved(argv: list[str]) -> tuple[Resolved | None, argparse.Namespace, bool]:
    """argv -> (the config validated once, parsed flags, resume?); None for ``--list``. Raises ConfigError;
    loads no model. A stored config read back unchanged (``--resume DIR`` alone, ``--prepared DIR``) was
    validated when it was written: only its integrity is checked (``run_config.typed``)."""
    peek = _peek(argv)
    for module in peek.env_module:
        load_env_module(module)
    for module in peek.algo_module:
        load_algo_module(module)
    base: dict = {}
    if peek.impl:
        impl = get_implementation(peek.impl)
        if not impl.trains:
            raise ConfigError(f"--impl {impl.id}: this row trains nothing (an RL-free reference point); run it "
                              f"with: {impl.command}")
        base = impl.config()
    stored_dir = peek.resume or peek.prepared
    if peek.resume and peek.prepared:
        raise ConfigError("--prepared: a prepared run starts fresh; give --resume DIR or --prepared DIR, not both")
    if stored_dir:
        base = RunDir(stored_dir).read_config()
        base["out"] = stored_dir
    elif peek.config:
        base = {**base, **load_config_file(peek.config)}
    algo = peek.algo or base.get("algo", TrainConfig.algo)
    env = peek.env or base.get("env", TrainConfig.env)
    args = build_parser(algo, env).parse_args(argv)
    if args.list:
        return None, args, False
    if args.prepared and _changes_stored_config(args):
        raise ConfigError("--prepared: the prepared run's config.json is its whole config; give no other option")
    cfg = config_from_args(args, base)
    if not cfg.out:
        raise ConfigError("--out is required (or --resume DIR)", field="out")
    if stored_dir and not _changes_stored_config(args):
        return typed(cfg, where=str(RunDir(stored_dir).config_path)), args, bool(peek.resume)
    return resolve(cfg), args, bool(peek.resume)


def parse(argv: list[str]) -> tuple[TrainConfig, argparse.Namespace, bool]:
    """argv -> (validated config, parsed flags, resume?), as :func:`parse_resolved` without the typed objects."""
    resolved, args, resume = parse_resolved(argv)
    return (resolved.cfg if resolved else TrainConfig()), args, resume


def list_implementations() -> list[dict]:
    """Every runnable implementation: what ``--list --json`` prints and what the Lab and node pages read. A row
    that trains nothing (``Implementation.evaluation``) is listed with ``"trains": false``, no algorithm and the
    command that runs it."""
    out = []
    for impl in implementations():
        if impl.env in ENVS and not impl.trains:  # a row that does not train: its measurement command
            out.append({"id": impl.id, "title": impl.title, "algorithm": None, "environment": impl.env,
                        "nodes": list(impl.nodes), "source": impl.source, "summary": impl.summary,
                        "paper": impl.paper, "trains": False, "command": impl.command,
                        "env_options": as_dict(ENVS[impl.env].options(impl.env_options))})
            continue
        if impl.algo not in ALGORITHMS or impl.env not in ENVS:
            continue
        cfg = config_from_dict(impl.config())
        resolved = resolve(cfg, check_model=False)
        options = {k: v for k, v in as_dict(cfg).items() if k not in ("algo_config", "env_options", "out")}
        out.append({"id": impl.id, "title": impl.title, "algorithm": impl.algo, "environment": impl.env,
                    "nodes": list(impl.nodes), "source": impl.source, "summary": impl.summary,
                    "paper": impl.paper, "trains": True,
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
    foreign = run_dir.foreign_content(stored(cfg))
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


def _store_config(run_dir: RunDir, cfg: TrainConfig) -> None:
    """Write config.json, the run's one stored config, unless it holds ``cfg`` already (a run the Lab
    prepared, a resume that changes nothing)."""
    try:
        if run_dir.read_config() == json.loads(json.dumps(stored(cfg))):
            return
    except RunDirError:
        pass  # none yet, or not readable: write it
    run_dir.write_config(stored(cfg))


def main(argv=None) -> int:
    """The command line (``python -m reference_impls.train``): returns the exit status. The run folder is held
    (``RunDir.acquire_lock``) from before the model loads until the run ends, and released here, so that an
    in-process caller (tests, notebooks) can resume the same folder afterwards."""
    held: list = []
    try:
        return _main(argv, held)
    finally:
        for lock in held:
            lock.release()


def _main(argv, held: list) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        resolved, args, resume = parse_resolved(argv)
        if args.list:
            rows = list_implementations()
            if args.json:
                print(json.dumps(rows, indent=1))
            else:
                for r in rows:
                    algorithm = r["algorithm"] or "(no training)"
                    print(f"{r['id']:<28} {algorithm:<14} {r['environment']:<12} {', '.join(r['nodes'])}")
            return 0
        cfg = resolved.cfg
        if not resume:
            _prepare_out(cfg, args.overwrite)
        if int(os.environ.get("RANK", "0")) == 0:  # one trainer per run folder (a second --resume is refused)
            held.append(RunDir(cfg.out).acquire_lock())
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
        trainer = Trainer(resolved, resume=resume, stop_event=early_stop)
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
        _store_config(run_dir, cfg)
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
