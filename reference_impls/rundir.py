"""The layout of a run folder, written once: every reader and writer of a run goes through :class:`RunDir`.

::

    RUN/
      config.json          the resolved run config (TrainConfig with algo_config and env_options)
      status.json          {"state": running|completed|stopped|failed, "step", "steps", "updated", ...}
      metrics.jsonl        one line per optimisation step
      samples.jsonl        a few transcripts per step
      health.jsonl         training-health warnings, one line each as the run raises it (reference_impls.health)
      warm_start.jsonl     one line per SFT warm-start step (when --sft-steps > 0)
      reference.safetensors  the warm-started model, when a reference (KL, DPO) is kept and --sft-steps > 0
      pairs.jsonl          DPO's preference pairs (and its variants')
      episodes.jsonl       KTO's labelled episodes
      log.txt              the trainer's output (runs started by the run manager)
      tb/                  TensorBoard events
      checkpoints/step_000010/   model + tokenizer (save_pretrained), optimizer.pt, trainer_state.json,
                                 rng_rank*.pt, one .pt per extra module (PPO's critic)

A checkpoint is written to ``checkpoints/.tmp-step_N`` and renamed, so a complete one either exists or
does not; a damaged one (a truncated file, a folder emptied by hand) is skipped with a note and the
newest good one is used instead.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

#: what a checkpoint folder holds besides the tokenizer and PPO-style extra modules (``KEY.pt``)
MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE = "model.safetensors", "optimizer.pt", "trainer_state.json"
CHECKPOINT_FILES = (MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE)

#: the top-level entries of the layout above: all a new run with ``--overwrite`` may remove from a run folder
OWNED = ("config.json", "status.json", "metrics.jsonl", "samples.jsonl", "health.jsonl", "warm_start.jsonl",
         "reference.safetensors",
         "pairs.jsonl", "episodes.jsonl", "log.txt", "tb", "checkpoints")


class RunDirError(ValueError):
    """A run folder that cannot be used as asked (names the folder and what is wrong)."""


def read_jsonl(path: Path, last: int | None = None) -> list[dict]:
    """The JSON lines of ``path`` (tolerant: a line being written or torn by a crash is skipped)."""
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return rows
    for line in lines[-last:] if last else lines:
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # -- paths ---------------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def status_path(self) -> Path:
        return self.path / "status.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def samples_path(self) -> Path:
        return self.path / "samples.jsonl"

    @property
    def health_path(self) -> Path:
        """Training-health warnings (``reference_impls.health``), one JSON line each."""
        return self.path / "health.jsonl"

    @property
    def warm_start_path(self) -> Path:
        return self.path / "warm_start.jsonl"

    @property
    def reference_path(self) -> Path:
        """The frozen reference's weights when it is the warm-started model (a resume cannot redo the warm
        start, so it reads the reference from here)."""
        return self.path / "reference.safetensors"

    @property
    def episodes_path(self) -> Path:
        """KTO's labelled (unpaired) episodes."""
        return self.path / "episodes.jsonl"

    @property
    def pairs_path(self) -> Path:
        return self.path / "pairs.jsonl"

    @property
    def log_path(self) -> Path:
        return self.path / "log.txt"

    @property
    def tb_dir(self) -> Path:
        return self.path / "tb"

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    def checkpoint_path(self, step: int) -> Path:
        return self.checkpoints_dir / f"step_{step:06d}"

    # -- checkpoints ---------------------------------------------------------------------------------
    @staticmethod
    def optimizer_path(ckpt: Path) -> Path:
        return ckpt / OPTIMIZER_FILE

    @staticmethod
    def trainer_state_path(ckpt: Path) -> Path:
        """``{"step", "wall_s", "algorithm_state"}`` of the checkpoint."""
        return ckpt / TRAINER_STATE_FILE

    @staticmethod
    def rng_path(ckpt: Path, rank: int) -> Path:
        """One rank's random-number state (Python's and torch's), loaded with ``weights_only=True``."""
        return ckpt / f"rng_rank{rank}.pt"

    @staticmethod
    def module_path(ckpt: Path, key: str) -> Path:
        """An algorithm's extra module (``Algorithm.modules()``: PPO's critic)."""
        return ckpt / f"{key}.pt"

    def checkpoints(self) -> list[Path]:
        """Every ``step_*`` folder, oldest first (complete or not)."""
        return sorted(self.checkpoints_dir.glob("step_*"))

    @staticmethod
    def checkpoint_problem(ckpt: Path) -> str | None:
        """Why ``ckpt`` cannot be resumed from, or None when its files are all there and non-empty."""
        missing = [name for name in CHECKPOINT_FILES if not (ckpt / name).is_file()]
        if missing:
            return f"missing {', '.join(missing)}"
        empty = [name for name in CHECKPOINT_FILES if (ckpt / name).stat().st_size == 0]
        if empty:
            return f"empty {', '.join(empty)}"
        try:
            state = json.loads((ckpt / TRAINER_STATE_FILE).read_text())
            int(state["step"]), float(state.get("wall_s", 0.0))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as err:
            return f"unreadable trainer_state.json ({type(err).__name__}: {str(err)[:120]})"
        return None

    def latest_checkpoint(self) -> Path | None:
        """The newest checkpoint whose files are complete (see :meth:`checkpoint_problem`)."""
        for ckpt in reversed(self.checkpoints()):
            if self.checkpoint_problem(ckpt) is None:
                return ckpt
        return None

    def latest_model(self) -> Path | None:
        """The newest checkpoint whose weights are complete: what an evaluation loads. Unlike
        :meth:`latest_checkpoint` it does not need the resume state, which a finished run may have dropped
        (:meth:`drop_resume_state`)."""
        for ckpt in reversed(self.checkpoints()):
            weights = ckpt / MODEL_FILE
            if weights.is_file() and weights.stat().st_size > 0 and (ckpt / TRAINER_STATE_FILE).is_file():
                return ckpt
        return None

    def drop_resume_state(self) -> Path | None:
        """For a finished run that will not be resumed (a comparison-grid cell): keep only the newest
        checkpoint's weights, tokenizer and trainer state; delete older checkpoints and the resume state
        (optimizer, extra modules such as a critic, RNG: the ``*.pt`` files). A SmolLM2 checkpoint is 1.6 GB,
        two thirds of it Adam's moments, so a 63-cell grid would otherwise keep ~200 GB. Returns the kept
        checkpoint (None when there are no weights to keep, and then nothing is deleted)."""
        import shutil

        keep = self.latest_model()
        if keep is None:
            return None
        for ckpt in self.checkpoints():
            if ckpt != keep:
                shutil.rmtree(ckpt, ignore_errors=True)
        for state in keep.glob("*.pt"):
            state.unlink()
        return keep

    # -- config and status ---------------------------------------------------------------------------
    def read_config(self) -> dict:
        if not self.config_path.is_file():
            raise RunDirError(f"{self.path}: no config.json, so this is not a run folder that can be resumed "
                              "(start a new run with --out instead)")
        try:
            return json.loads(self.config_path.read_text())
        except ValueError as err:
            raise RunDirError(f"{self.config_path}: not valid JSON ({err})") from None

    def write_config(self, config: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.config_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(config, indent=2))
        tmp.replace(self.config_path)

    def read_status(self) -> dict:
        try:
            status = json.loads(self.status_path.read_text())
        except (OSError, ValueError):
            return {}
        return status if isinstance(status, dict) else {}  # a status.json that is not an object says nothing

    def write_status(self, state: str, step: int, steps: int, **extra) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        tmp = self.status_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({"state": state, "step": step, "steps": steps, "updated": time.time(), **extra}))
        tmp.replace(self.status_path)

    # -- readers -------------------------------------------------------------------------------------
    def metrics(self, last: int | None = None) -> list[dict]:
        return read_jsonl(self.metrics_path, last)

    def samples(self, last: int | None = None) -> list[dict]:
        return read_jsonl(self.samples_path, last)

    def warm_start(self) -> list[dict]:
        return read_jsonl(self.warm_start_path)

    # -- ownership -----------------------------------------------------------------------------------
    def is_run(self) -> bool:
        """Whether this folder is a run: it holds a run's ``config.json`` (a JSON object naming ``algo`` and
        ``env``, as the trainer and the run manager write it) or a run's ``status.json`` (a JSON object with
        a ``state``, written first by a warm start). Anything else is not a run, whatever its entries are
        called."""
        for path, keys in ((self.config_path, ("algo", "env")), (self.status_path, ("state",))):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            if isinstance(data, dict) and all(k in data for k in keys):
                return True
        return False

    @staticmethod
    def owns(name: str) -> bool:
        """Whether a top-level entry called ``name`` belongs to the run layout (the module docstring's list,
        their ``.tmp`` files and the debug ``param_digest_rank*.json``): the only entries ``--overwrite`` may
        remove."""
        if name in OWNED or name.startswith("param_digest_rank") and name.endswith(".json"):
            return True
        if name.endswith(".tmp"):
            stem = name[:-len(".tmp")]
            return stem in OWNED or any(owned.rsplit(".", 1)[0] == stem for owned in OWNED)
        return False

    def foreign_content(self, config: dict) -> list[str]:
        """What in this folder does not belong to a new run with ``config``: every entry except a
        ``config.json`` equal to ``config`` (what the run manager writes before it starts the trainer)
        and a ``log.txt``. Empty when the folder is missing or can be used."""
        if not self.path.exists():
            return []
        if not self.path.is_dir():
            return [str(self.path)]
        out = []
        for entry in sorted(self.path.iterdir()):
            if entry.name == "log.txt":
                continue
            if entry.name == "config.json":
                try:
                    if json.loads(entry.read_text()) == json.loads(json.dumps(config)):
                        continue
                except ValueError:
                    pass
            out.append(entry.name)
        return out


def policy_to_evaluate(run: str | None, model: str | None, default: str = "smollm2-135m-instruct") -> str:
    """The model a measurement CLI loads (evaluate, self_correction, mas_pipeline, report): ``run``'s newest
    checkpoint with complete weights when it has one (``RunDir.latest_model``), else ``model``, else ``default``. A ``run`` with no complete checkpoint
    and no ``model`` to fall back on is a RunDirError."""
    if run:
        ckpt = RunDir(run).latest_model()
        if ckpt is not None:
            return str(ckpt)
        if model is None:
            raise RunDirError(f"{run}: no complete checkpoint to evaluate")
    return model or default
