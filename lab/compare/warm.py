"""The warm start of an environment (``warm_stage``: ``warm/<env>`` for the grid's first warm seed,
``warm/<env>@w<seed>`` for the others) and the restore of one recorded without its weights
(``warm_restore_stage``: trained again and kept only if its digest is the recorded one, or, when asked, if it
answers every held-out test problem as the recorded one did). The training itself is the trainer's own warm start
(``reference_impls.sft.warm_start``), with the settings the grid's recipe gives (``cell_options.warm_settings``).
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from reference_impls.options import ConfigError

from .folder import BadRecord, GridDir, atomic_json, read_record, warm_name
from .cell_options import chosen_env_options, env_config, reference_config, warm_settings
from .grid import Grid
from .heldout import reference_heldout
from .provenance import Host, provenance


def _train_warm(grid: Grid, env: str, warm_seed: int | None, dest: Path) -> dict:
    """SFT of ``env``'s warm start of seed ``warm_seed`` (default: the grid's first), saved whole into ``dest``
    (a fresh, empty folder: ``scratch_folder``): the model, its tokenizer and ``done.json`` (settings, losses, time,
    ``weights_sha256``).
    The training is the trainer's own warm start (``sft.warm_start``) with the grid's settings."""
    from reference_impls.models import load_policy
    from reference_impls.sft import WarmStartSettings, warm_start

    settings = warm_settings(grid, env, warm_seed)
    episode_config = None
    if settings["sft_env"] == env:
        # the cells' episode format (moves per tag, hints), whichever problems are shown
        episode_config = env_config(reference_config(grid, env, settings["model"]))
        if grid.warm_on_env_options:
            settings["options"] = chosen_env_options(env, episode_config)
    t0 = time.time()
    model, tokenizer = load_policy(settings["model"], seed=settings["seed"])

    def progress(step, loss):  # into warm-<env>.log: a long warm start shows where it is
        print(f"sft step {step}/{settings['sft_steps']} loss {loss:.4f} {time.time() - t0:.0f}s", flush=True)

    losses = warm_start(model, tokenizer, WarmStartSettings(
        env=settings["sft_env"], examples=settings["sft_examples"], steps=settings["sft_steps"],
        lr=settings["sft_lr"], seed=settings["seed"], micro_batch_size=settings.get("micro_batch_size"),
        micro_batch_tokens=settings["micro_batch_tokens"],
        problem_options=settings.get("options"), episode_config=episode_config), log=progress)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    done = {**settings, "losses": losses, "wall_s": time.time() - t0, "weights_sha256": weights_digest(dest)}
    atomic_json(dest / "done.json", done)
    return done


def scratch_folder(out: Path, purpose: str) -> Path:
    """A new empty folder beside ``out`` (inside the grid folder's ``warm/``) for a stage to write into before
    ``out`` is replaced: made fresh under a name nobody chose (``tempfile.mkdtemp``), never a name reused from an
    earlier run, so nothing planted there beforehand is written through."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{purpose}-", dir=out.parent))


def warm_stage(grid: Grid, gdir: GridDir, env: str, warm_seed: int | None = None) -> None:
    """SFT of ``env``'s warm start of seed ``warm_seed`` (default: the grid's first) into ``warm/<name>``
    (``folder.warm_name``), written whole or not at all (a fresh scratch folder, then one rename). ConfigError,
    nothing written, when the grid folder holds a link (``GridDir.refuse_links``)."""
    gdir.refuse_links()
    out = gdir.warm(warm_name(grid, env, warm_seed))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = scratch_folder(out, "tmp")
    try:
        _train_warm(grid, env, warm_seed, tmp)
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


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
    gdir.refuse_links()
    out = gdir.warm(warm_name(grid, env, warm_seed))
    try:
        done = read_record(out / "done.json")
    except BadRecord as err:
        raise ConfigError(f"{err}; nothing was changed") from None
    if done is None:
        raise ConfigError(f"{out}: has no done.json, so there is no recorded warm start to restore; run the grid "
                          f"to train it")
    recorded = done.get("weights_sha256")
    if recorded is not None and not (isinstance(recorded, str) and len(recorded) == 64):
        raise ConfigError(f"{out / 'done.json'}: weights_sha256 is {recorded!r}, not a sha256 digest (64 hex "
                          f"characters); nothing was changed")
    if recorded is None:
        raise ConfigError(f"{out}: the weights are missing and done.json records no weights_sha256 (written before "
                          f"it existed), so weights trained again could not be checked against the ones its cells "
                          f"started from; move {out} away to train this warm start (and re-run its cells) anew")
    scratch = scratch_folder(out, "restore")
    written: list[str] = []
    try:
        host = Host.sample()
        again = _train_warm(grid, env, warm_seed, scratch)
        written = sorted(f.name for f in scratch.iterdir())  # the fresh folder holds only what the stage wrote
        if again["weights_sha256"] != recorded:
            if not by_heldout:
                raise ConfigError(
                    f"{out}: the warm start trained again has weights {again['weights_sha256'][:12]}..., not the "
                    f"recorded {recorded[:12]}... (another machine, library version or thread count?); its cells "
                    f"started from the recorded ones, so nothing was changed. Train the grid anew in another "
                    f"folder, finish it where the warm start was trained, or run with --restore-by-heldout to "
                    f"keep weights that answer every held-out test problem as the recorded ones did")
            _accept_by_heldout(grid, env, out, done, again, scratch, host)
        for name in written:
            f = scratch / name
            if name != "done.json" and f.is_file() and not f.is_symlink():
                os.replace(f, out / name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _accept_by_heldout(grid: Grid, env: str, out: Path, done: dict, again: dict, scratch: Path, host: Host) -> None:
    """``warm_restore_stage``'s check for weights with another digest: score them on the held-out test problems;
    ConfigError unless every problem's 0/1 equals the record's; else append the restore to ``done.json``."""
    recorded = done.get("heldout_by_problem")
    if recorded is not None and not (isinstance(recorded, list) and all(v in (0, 1) for v in recorded)):
        raise ConfigError(f"{out / 'done.json'}: heldout_by_problem is not a list of 0/1 answers; nothing was changed")
    if "heldout_by_problem" not in done:
        raise ConfigError(f"{out}: its weights differ from the recorded ones and done.json has no held-out record "
                          f"(heldout_by_problem) to compare their answers with; nothing was changed")
    scored = reference_heldout(grid, env, str(scratch))
    differ = [i for i, (a, b) in enumerate(zip(scored["heldout_by_problem"], done["heldout_by_problem"])) if a != b]
    if differ or len(scored["heldout_by_problem"]) != len(done["heldout_by_problem"]):
        raise ConfigError(f"{out}: the warm start trained again has other weights ({again['weights_sha256'][:12]}..."
                          f") and answers {len(differ)} of {len(done['heldout_by_problem'])} held-out test problems "
                          f"otherwise than the recorded one (first: problem {differ[:1]}); nothing was changed")
    restored = {"weights_sha256": again["weights_sha256"], "losses": again["losses"], "wall_s": again["wall_s"],
                "heldout_by_problem_equal": True, "eval_s": scored["eval_s"],
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "provenance": provenance(host)}
    atomic_json(out / "done.json", {**done, "restored": [*done.get("restored", []), restored]})
