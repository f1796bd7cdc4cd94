"""minGPT-style training callbacks: ``trainer.add_callback("on_step_end", fn)``, each ``fn(trainer)``.

Events fired by :class:`reference_impls.trainer.Trainer`: ``on_train_start``, ``on_step_end`` (after the
update; ``trainer.last_metrics`` and ``trainer.last_samples`` hold the step's results),
``on_checkpoint``, ``on_train_end``. Only rank 0 gets the file-writing callbacks.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def truncate_jsonl(path: Path, max_step: int) -> int:
    """Keep only lines whose ``step`` <= max_step (a resumed run rewrites what followed its checkpoint).
    Returns the number of lines kept. A torn last line (crash mid-write) is dropped too."""
    if not path.exists():
        return 0
    kept = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("step", 0) <= max_step:
            kept.append(line)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(line + "\n" for line in kept))
    tmp.replace(path)
    return len(kept)


class JsonlLogger:
    """metrics.jsonl (one line per step, flushed) and samples.jsonl (a few transcripts per step)."""

    def __init__(self, out: Path, samples_per_step: int = 2):
        from .rundir import RunDir

        run = RunDir(out)
        self.metrics = open(run.metrics_path, "a", buffering=1)
        self.samples = open(run.samples_path, "a", buffering=1)
        self.samples_per_step = samples_per_step

    def __call__(self, trainer) -> None:
        self.metrics.write(json.dumps(trainer.last_metrics) + "\n")
        self.metrics.flush()
        for s in trainer.last_samples[: self.samples_per_step]:
            self.samples.write(json.dumps({"step": trainer.step, **s.to_json()}) + "\n")
        self.samples.flush()

    def close(self, trainer=None) -> None:
        self.metrics.close()
        self.samples.close()


class HealthLogger:
    """Training health while the run trains (``reference_impls.health``): each warning the step raises is printed to
    the log (stderr) and appended to ``health.jsonl``. A resumed run starts a fresh monitor from its checkpoint's
    step, so a warning can show again after a resume; the file keeps both."""

    def __init__(self, out: Path, max_completion_tokens: int | None = None, sequence_level_clip: bool = False):
        from .health import HealthMonitor
        from .rundir import RunDir

        self.monitor = HealthMonitor(max_completion_tokens, sequence_level_clip)
        self.path = RunDir(out).health_path

    def __call__(self, trainer) -> None:
        samples = [s.to_json() for s in trainer.last_samples]
        for warning in self.monitor.update(trainer.last_metrics, samples):
            print(warning.line(), file=sys.stderr, flush=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(warning.as_dict()) + "\n")

    def close(self, trainer=None) -> None:
        pass


class TensorBoardLogger:
    """Scalars of every step in ``log_dir`` (the run folder's ``RunDir.tb_dir``; ``purge_step`` drops events a
    resumed run will redo)."""

    def __init__(self, log_dir: Path, purge_step: int | None = None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=purge_step)

    def __call__(self, trainer) -> None:
        for key, value in trainer.last_metrics.items():
            if key != "step" and isinstance(value, (int, float)):
                self.writer.add_scalar(f"train/{key}", value, trainer.step)
        self.writer.flush()

    def close(self, trainer=None) -> None:
        self.writer.close()


class ProgressBar:
    """One line on stderr: step, reward, accuracy and ETA (tqdm when on a terminal, a line per step otherwise)."""

    def __init__(self, total: int, initial: int = 0):
        self.total, self.initial, self.t0 = total, initial, time.time()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, file=sys.stderr, desc="train", dynamic_ncols=True)

    def __call__(self, trainer) -> None:
        m = trainer.last_metrics
        loss = f"{m['loss']:.4f}" if "loss" in m else "none (no update)"  # --no-update computes no loss
        if self.bar is not None:
            self.bar.set_postfix(reward=f"{m['reward_mean']:.3f}", acc=f"{m['accuracy']:.2f}", loss=loss)
            self.bar.update(1)
            return
        done = trainer.step - self.initial
        eta = (time.time() - self.t0) / max(done, 1) * (self.total - trainer.step)
        print(f"step {trainer.step}/{self.total} reward {m['reward_mean']:.3f} acc {m['accuracy']:.2f} "
              f"loss {loss} {m['wall_s']:.0f}s ETA {eta:.0f}s", file=sys.stderr, flush=True)

    def close(self, trainer=None) -> None:
        if self.bar is not None:
            self.bar.close()
