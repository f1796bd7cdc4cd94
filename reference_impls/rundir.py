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
newest good one is used instead; a crafted ``model.safetensors`` (a header promising more than the file or
the model holds) is refused before it is loaded (:meth:`RunDir.weights_problem`).

One trainer at a time trains into a run folder: :meth:`RunDir.acquire_lock` holds an exclusive ``flock`` on
the folder itself (no file is added to the layout) until the trainer exits; a second ``train --resume`` of
the same run is refused, naming the process that holds it.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import struct
import time
from pathlib import Path

#: what a checkpoint folder holds besides the tokenizer and PPO-style extra modules (``KEY.pt``)
MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE = "model.safetensors", "optimizer.pt", "trainer_state.json"
CHECKPOINT_FILES = (MODEL_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE)

#: the top-level entries of the layout above: all a new run with ``--overwrite`` may remove from a run folder
OWNED = ("config.json", "status.json", "metrics.jsonl", "samples.jsonl", "health.jsonl", "warm_start.jsonl",
         "reference.safetensors",
         "pairs.jsonl", "episodes.jsonl", "log.txt", "tb", "checkpoints")


#: bytes per element of each safetensors dtype
SAFETENSORS_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
                      "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
#: the safetensors library's own bound on a header
SAFETENSORS_MAX_HEADER = 100 * 2**20


class RunDirError(ValueError):
    """A run folder that cannot be used as asked (names the folder and what is wrong)."""


class RunLock:
    """An exclusive hold on a run folder (:meth:`RunDir.acquire_lock`), released by :meth:`release`, at the
    end of a ``with`` block, or when the process ends (the kernel drops a dead process's ``flock``)."""

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *_) -> None:
        self.release()


def _flock_holders(path: Path) -> list[int]:
    """The processes holding a ``flock`` on ``path`` (from /proc/locks; [] where it cannot be read)."""
    try:
        st = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == inode and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


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

    @staticmethod
    def weights_problem(path: Path, shapes: dict[str, tuple[int, ...]] | None = None) -> str | None:
        """Why the safetensors file ``path`` must not be loaded, or None. Reads only its header (at most
        ``SAFETENSORS_MAX_HEADER`` bytes, and never more than the file holds) and checks it against the file's
        size: every tensor a known dtype with a shape of non-negative integers, its byte range exactly its
        elements' size, the ranges back to back and ending where the file ends. With ``shapes`` (the model's
        ``{name: shape}``) every tensor must be one of the model's, with its shape, so the file cannot ask for
        more memory than the model has, whatever its size (a crafted file of valid header and gigabytes of
        sparse data made the loader raise MemoryError)."""
        path = Path(path)
        try:
            size = path.stat().st_size
            with open(path, "rb") as f:
                head = f.read(8)
                if len(head) < 8:
                    return f"{path.name}: {size} bytes, shorter than the 8-byte header length"
                (length,) = struct.unpack("<Q", head)
                if length > min(size - 8, SAFETENSORS_MAX_HEADER):
                    return (f"{path.name}: its header length says {length:,} bytes; the file holds {size - 8:,} after "
                            f"it (and a header may have at most {SAFETENSORS_MAX_HEADER:,})")
                header = json.loads(f.read(length))
        except OSError as err:
            return f"{path.name}: cannot be read ({err.strerror or err})"
        except (ValueError, UnicodeDecodeError) as err:
            return f"{path.name}: its header is not JSON ({str(err)[:120]})"
        if not isinstance(header, dict):
            return f"{path.name}: its header is not a JSON object"
        data_size = size - 8 - length
        ranges = []
        for name, info in header.items():
            if name == "__metadata__":
                continue
            if not (isinstance(info, dict) and info.get("dtype") in SAFETENSORS_DTYPES
                    and isinstance(info.get("shape"), list) and isinstance(info.get("data_offsets"), list)
                    and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in info["shape"])
                    and len(info["data_offsets"]) == 2
                    and all(isinstance(o, int) and not isinstance(o, bool) for o in info["data_offsets"])):
                return f"{path.name}: tensor '{str(name)[:80]}' has no valid dtype, shape and data_offsets"
            begin, end = info["data_offsets"]
            nbytes = math.prod(info["shape"]) * SAFETENSORS_DTYPES[info["dtype"]]
            if not 0 <= begin <= end or end - begin != nbytes:
                return (f"{path.name}: tensor '{str(name)[:80]}' spans bytes {begin:,}..{end:,}; its shape "
                        f"{info['shape']} of {info['dtype']} needs {nbytes:,}")
            if shapes is not None:
                if name not in shapes:
                    return f"{path.name}: tensor '{str(name)[:80]}' is not one of the model's"
                if tuple(info["shape"]) != tuple(shapes[name]):
                    return (f"{path.name}: tensor '{str(name)[:80]}' has shape {info['shape']}; the model's is "
                            f"{list(shapes[name])}")
            ranges.append((begin, end))
        position = 0
        for begin, end in sorted(ranges):
            if begin != position:
                return f"{path.name}: its tensors' bytes are not back to back (a gap or overlap at byte {begin:,})"
            position = end
        if position != data_size:
            return f"{path.name}: its header describes {position:,} bytes of tensors; the file holds {data_size:,}"
        return None

    def acquire_lock(self) -> RunLock:
        """Hold this run folder for this process (an exclusive ``flock`` on the folder), so that no second
        trainer (a second ``train --resume`` of the run) trains into it at the same time. RunDirError, naming
        the holder, when another process holds it. Take it on one process of a distributed run (rank 0)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as err:
            raise RunDirError(f"{self.path}: cannot open the run folder to lock it ({err.strerror or err})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holders = [pid for pid in _flock_holders(self.path) if pid != os.getpid()]
            who = f" (process {', '.join(map(str, holders))})" if holders else ""
            raise RunDirError(f"{self.path}: another trainer is training into this run folder now{who}; wait for it "
                              "to finish, or stop it, before resuming the run") from None
        return RunLock(self.path, fd)

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
