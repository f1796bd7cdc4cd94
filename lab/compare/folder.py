"""The grid folder: where a grid's stages write, and reading back what they wrote.

Layout of a grid folder (default: the data dir's ``compare/<grid name>``)::

    grid.yaml                    the grid as run (a different grid refuses to reuse the folder)
    base/<env>.json              the untrained model's held-out (grids with ``base: true``)
    warm/<env>/                  the environment's (first) warm-start model + done.json (with its held-out, no RL)
    warm/<env>@w<seed>/          a further warm start of a grid with several ``warm_seeds`` (seed: its warm seed)
    cells/<impl>-s<seed>/run/    the trainer's run folder (checkpoints: a killed cell resumes)
    cells/<impl>-s<seed>/result.json   config, budget (work done, complete?), curve, diagnostics, held-out per
                                       problem, validation choice, provenance, time, tokens, peak memory
    cells/<impl>-s<seed>/diagnostics.jsonl   the mechanism diagnostics, one line per step (also in result.json)
    cells/<impl>-s<seed>/error.txt     why the cell failed (it is retried on the next run)
    sweep/<impl>/lr-<lr>/result.json   a learning-rate trial (grids with lr_sweep): scored on validation only
    sweep/<impl>/lr-<lr>-s<seed>/result.json   the same, one per trial seed (grids with lr_trials)
    sweep/<impl>.json            the learning rate chosen on validation, with every trial's score
    passk/<env>.json             pass@k curves of the untrained model, the warm start and every seed's cell of the
                                 implementation the grid names in advance (``passk`` in the grid file)

An exported (shipped) folder keeps the small files only: ``cells/<impl>-s<seed>.json``, ``warm/<env>.json`` (and
``warm/<env>@w<seed>.json``), ``base/<env>.json`` and ``passk/<env>.json`` beside ``grid.yaml``.

A warm start's *name* is its folder's under ``warm/`` (``warm_name``): ``<env>`` for the grid's first warm seed (so a
grid of one warm start, and every folder written before ``warm_seeds``, reads as before), ``<env>@w<seed>`` for the
others; ``split_warm_name`` reads one back. A cell record names its own in ``warm_start``.

Owns ``GridDir`` (the paths, a cell's result, binding a folder to one grid), the warm starts' names
(``warm_name``, ``split_warm_name``), ``atomic_json`` (how every
record is written), ``read_record`` (how every record is read back: a file that is there but is not a cell's
JSON object is a *bad record*, reported, never a crash), ``cell_results`` (the finished cells' records of
either kind of folder), and the readers of a record's method fields: ``budget_status`` (work or legacy wall
time, complete or not, in the verdicts or not) and ``cell_diagnostics`` (the per-step curves).
"""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import yaml

from atlas_data import data_dir
from reference_impls.options import ConfigError

from .grid import Grid, cell_id


#: what a cell record needs: for ``status`` (is the cell done?) and for the leaderboard, the report and the
#: Compare page (which cell is it?)
RESULT_KEYS = ("heldout",)
CELL_KEYS = ("implementation", "seed", "heldout")


#: the per-step mechanism diagnostics a cell record carries (reference_impls/diagnostics.py, the trainer, PPO,
#: DPO); a name an algorithm does not compute is absent from its rows
DIAGNOSTIC_KEYS = ("reward_mean", "accuracy", "entropy", "kl", "clip_frac", "clip_frac_low", "clip_frac_high",
                   "ratio_mean", "ratio_max", "len_correct", "len_incorrect", "zero_advantage_groups_frac",
                   "groups_kept_frac", "completion_len_mean", "episodes", "policy_updates", "critic_updates",
                   "critic_warmup", "pairs", "grad_norm", "loss")

LEGACY_BASIS = "legacy, budget by wall time"

#: what separates an environment from a further warm start's seed in its name (``calculator@w1``)
WARM_SEED_TAG = "@w"


def warm_name(grid: Grid, env: str, warm_seed: int | None = None) -> str:
    """The name (folder under ``warm/``, exported ``warm/<name>.json``, a cell record's ``warm_start``) of ``env``'s
    warm start of seed ``warm_seed`` (default: the grid's first): ``env`` for the first, ``env@w<seed>`` for another."""
    if warm_seed is None or warm_seed == grid.warm_seeds[0]:
        return env
    return f"{env}{WARM_SEED_TAG}{warm_seed}"


def split_warm_name(name: str) -> tuple[str, int | None]:
    """(environment, warm seed) of a warm start's name; the seed is None for ``<env>`` (the grid's first warm start,
    whose seed its ``done.json`` says). A name whose tail is not a seed is an environment's name as it stands."""
    env, tag, seed = name.rpartition(WARM_SEED_TAG)
    if tag and env and seed.isdigit():
        return env, int(seed)
    return name, None


def budget_status(record: dict) -> dict:
    """How a cell record's budget reads: ``basis`` ("work", or ``LEGACY_BASIS`` for a record written before the
    budget was work: equal steps under a wall-clock cap that decided how many ran), ``complete`` (the cell did
    all its budgeted steps), ``in_verdicts`` (whether a comparison may use it: only complete cells) and
    ``why`` (a sentence when it is not complete)."""
    if "budget" in record:
        complete = bool(record.get("complete"))
        return {"basis": "work", "complete": complete, "in_verdicts": complete,
                "why": "" if complete else str(record.get("incomplete_reason") or "did not finish its budget")}
    config = record.get("config") or {}
    capped = bool(record.get("stopped_by_wall_cap"))
    why = (f"stopped by the wall cap after {record.get('steps_done')} of {config.get('steps')} steps"
           if capped else "")
    return {"basis": LEGACY_BASIS, "complete": not capped, "in_verdicts": not capped, "why": why}


def episode_counts(records: list[dict]) -> list[dict]:
    """Per implementation (in the records' order), what its complete cells sampled and trained on (issue 60): rows
    of ``implementation``, ``cells``, ``sampled`` and ``trained`` (means over its cells; ``trained`` of an offline
    run is its usable pairs, ``unit`` says which); empty for records written before these counts."""
    rows: dict[str, dict] = {}
    for r in records:
        b = r.get("budget")
        if not isinstance(b, dict) or "sampled_episodes" not in b or not budget_status(r)["in_verdicts"]:
            continue
        row = rows.setdefault(r["implementation"], {"implementation": r["implementation"], "cells": 0,
                                                    "sampled": 0.0, "trained": 0.0,
                                                    "unit": "pairs" if "usable_pairs" in b else "episodes"})
        row["cells"] += 1
        row["sampled"] += b["sampled_episodes"]
        row["trained"] += b.get("trained_episodes", b.get("usable_pairs", 0))
    for row in rows.values():
        row["sampled"] /= row["cells"]
        row["trained"] /= row["cells"]
    return list(rows.values())


def cell_diagnostics(record: dict) -> list[dict]:
    """A cell's per-step diagnostics (rows of ``step``, ``phase`` and the ``DIAGNOSTIC_KEYS`` it has), for
    curves; [] for a record written before they were kept."""
    rows = record.get("diagnostics")
    return [dict(r) for r in rows if isinstance(r, dict) and "step" in r] if isinstance(rows, list) else []


def read_diagnostics_file(path: Path) -> list[dict]:
    """The rows of a cell's ``diagnostics.jsonl`` (a torn last line is skipped); [] when there is none."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "step" in row:
            rows.append(row)
    return rows


class BadRecord(ValueError):
    """A record file that is there but cannot be used (names the file and what is wrong)."""


#: the largest record file read (the shipped ones are under 200 KB; a cell of thousands of steps stays far below)
MAX_RECORD_BYTES = 32 * 2**20


def is_number(v) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: a cell record's fields and what each must be where present (``RECORD_SCHEMA``): every reader (status,
#: report, export, the Compare page) relies on these types, so a record breaking one is a bad record, left out
RECORD_SCHEMA = {
    "cell": ("a string", lambda v: isinstance(v, str)),
    "implementation": ("a string", lambda v: isinstance(v, str)),
    "algo": ("a string", lambda v: isinstance(v, str)),
    "env": ("a string", lambda v: isinstance(v, str)),
    "warm_start": ("a string", lambda v: isinstance(v, str)),
    "seed": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "warm_seed": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "steps_done": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "heldout": ("a number in [0, 1]", lambda v: is_number(v) and 0 <= v <= 1),
    "heldout_interval": ("a list of two numbers", lambda v: isinstance(v, list) and len(v) == 2
                         and all(is_number(x) for x in v)),
    "heldout_by_problem": ("a non-empty list of 0/1 answers", lambda v: isinstance(v, list) and v != [] and all(
        x in (0, 1) and not isinstance(x, bool) for x in v)),
    "curve": ("a list of objects", lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v)),
    "diagnostics": ("a list of objects", lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v)),
    "config": ("an object", lambda v: isinstance(v, dict)),
    "budget": ("an object", lambda v: isinstance(v, dict)),
    "provenance": ("an object", lambda v: isinstance(v, dict)),
    "validation": ("an object or null", lambda v: v is None or isinstance(v, dict)),
    "train_s": ("a number or null", lambda v: v is None or is_number(v)),
    "eval_s": ("a number or null", lambda v: v is None or is_number(v)),
    "peak_rss_mb": ("a number or null", lambda v: v is None or is_number(v)),
    "tokens": ("a number or null", lambda v: v is None or is_number(v)),
}


def record_problem(data: dict) -> str | None:
    """Why a cell record breaks ``RECORD_SCHEMA`` (the first field that does, and what it should be), or None."""
    for key, (what, ok) in RECORD_SCHEMA.items():
        if key in data and not ok(data[key]):
            return f"{key} is {json.dumps(data[key])[:60]}, not {what}"
    return None


def read_record(path: Path, keys: tuple[str, ...] = (), cell: bool = False) -> dict | None:
    """The JSON object in ``path`` (None when there is no file). A link, a file that is not a regular one or is
    larger than ``MAX_RECORD_BYTES``, that is not valid JSON, not an object, lacks one of ``keys`` or (``cell``: a
    cell record) breaks ``RECORD_SCHEMA`` raises :class:`BadRecord`: a reader never follows a link out of the
    folder, never reads a device or a file without end, and never meets a field of another type than it expects."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise BadRecord(f"{path}: cannot be read ({err.strerror or err})") from None
    if stat.S_ISLNK(info.st_mode):
        raise BadRecord(f"{path}: is a symbolic link; records are read from regular files only")
    if not stat.S_ISREG(info.st_mode):
        raise BadRecord(f"{path}: is not a regular file")
    if info.st_size > MAX_RECORD_BYTES:
        raise BadRecord(f"{path}: {info.st_size} bytes, more than a record may hold ({MAX_RECORD_BYTES})")
    try:
        with open(path, "rb") as f:
            text = f.read(MAX_RECORD_BYTES + 1).decode()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise BadRecord(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    if len(text) > MAX_RECORD_BYTES:
        raise BadRecord(f"{path}: more than a record may hold ({MAX_RECORD_BYTES} bytes)")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise BadRecord(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise BadRecord(f"{path}: holds a JSON {type(data).__name__}, not a record (a JSON object)")
    missing = [k for k in keys if k not in data]
    if missing:
        raise BadRecord(f"{path}: lacks {', '.join(missing)}")
    problem = record_problem(data) if cell else None
    if problem:
        raise BadRecord(f"{path}: {problem}")
    return data


class GridDir:
    """A grid folder's paths (the layout above) and its cells' results."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def default(cls, grid: Grid) -> "GridDir":
        return cls(data_dir() / "compare" / grid.name)

    def warm(self, name: str) -> Path:
        """A warm start's folder by its name (``warm_name``: ``<env>`` for the first, ``<env>@w<seed>``)."""
        return self.path / "warm" / name

    def warm_of(self, grid: Grid, env: str, seed: int) -> Path:
        """The warm start the cell of seed ``seed`` on ``env`` starts from (``Grid.warm_seed_of``)."""
        return self.warm(warm_name(grid, env, grid.warm_seed_of(seed)))

    def warm_starts(self, grid: Grid, env: str) -> list[tuple[int, str]]:
        """(warm seed, name) of each of ``env``'s warm starts, the grid's first first."""
        return [(w, warm_name(grid, env, w)) for w in grid.warm_seeds]

    def base(self, env: str) -> Path:
        return self.path / "base" / f"{env}.json"

    def cell(self, impl: str, seed: int) -> Path:
        return self.path / "cells" / cell_id(impl, seed)

    def trial(self, impl: str, lr: float, seed: int | None = None) -> Path:
        """A learning-rate trial's folder (scored on validation only): ``lr-<lr>`` for the one trial per rate of a
        grid without ``lr_trials``, ``lr-<lr>-s<seed>`` for each trial seed's."""
        return self.path / "sweep" / impl / (f"lr-{lr:g}" if seed is None else f"lr-{lr:g}-s{seed}")

    def choice_path(self, impl: str) -> Path:
        return self.path / "sweep" / f"{impl}.json"

    def choice(self, impl: str) -> dict | None:
        """The validation choice of ``impl`` (``lr``, ``trials``), or None before the sweep has chosen."""
        try:
            return read_record(self.choice_path(impl), ("lr", "trials"))
        except BadRecord:
            return None

    def result(self, impl: str, seed: int) -> dict | None:
        """The cell's record, or None when it has none or a bad one (``result_problem`` says which)."""
        try:
            return read_record(self.cell(impl, seed) / "result.json", RESULT_KEYS, cell=True)
        except BadRecord:
            return None

    def result_problem(self, impl: str, seed: int) -> str | None:
        """Why the cell's record cannot be used, or None (no record, or a good one)."""
        try:
            read_record(self.cell(impl, seed) / "result.json", RESULT_KEYS, cell=True)
        except BadRecord as err:
            return str(err)
        return None

    def refuse_links(self) -> None:
        """ConfigError naming the first entry inside the grid folder that is a symbolic link or not a regular file
        or folder (a FIFO, a device). A grid folder is data that travels in git: a stage that wrote, moved or read
        through a planted link would change or copy files outside it. The folder itself may be reached through a
        link (a data dir on another disk)."""
        if not self.path.is_dir():
            return
        for root, dirs, files in os.walk(self.path):  # a link to a folder is listed in dirs, never entered
            for name in sorted(dirs + files):
                entry = Path(root) / name
                if entry.is_symlink():
                    raise ConfigError(f"{entry}: is a symbolic link (to {os.readlink(entry)}); a grid folder holds "
                                      f"files and folders only, so that no stage writes, moves or reads outside it; "
                                      f"nothing was changed. Remove the link")
                if not (entry.is_dir() or entry.is_file()):
                    raise ConfigError(f"{entry}: is not a regular file or folder; a grid folder holds files and "
                                      f"folders only; nothing was changed. Remove it")

    def is_grid_folder(self) -> bool:
        """Whether the folder is missing, empty, or already a grid folder (one holding ``grid.yaml``)."""
        return not self.path.exists() or (self.path / "grid.yaml").is_file() or (
            self.path.is_dir() and not any(self.path.iterdir()))

    def bind(self, grid: Grid) -> None:
        """Record the grid (first run), or refuse a folder that is not a grid folder (files of the user's: the
        runner would write, and retried cells delete, inside it) or that holds a different grid's cells."""
        if self.path.exists() and not self.path.is_dir():
            raise ConfigError(f"--dir {self.path}: is a file, not a grid folder")
        if not self.is_grid_folder():
            raise ConfigError(f"--dir {self.path}: is not a grid folder (it has files but no grid.yaml); nothing "
                              f"was written there. Give an empty or new folder, or a grid folder of an earlier run")
        self.path.mkdir(parents=True, exist_ok=True)
        spec = self.path / "grid.yaml"
        if spec.exists():
            try:
                old = yaml.safe_load(spec.read_text()) or {}
            except yaml.YAMLError as err:
                raise ConfigError(f"{spec}: is not valid YAML ({str(err).splitlines()[0]}); fix or delete it") from None
            if not isinstance(old, dict):
                raise ConfigError(f"{spec}: holds a YAML {type(old).__name__}, not a grid (a mapping); fix or delete it")
            new = grid.as_dict()
            # mu, lr_sweep, validation and passk are absent from a grid.yaml that does not use them (and from older
            # ones); passk is bound too: what pass@k samples is named before any result, not after
            changed = [k for k in ("recipe", "options", "eval", "warm_seed", "warm_seeds", "mu", "lr_sweep", "validation",
                                   "passk", "lr_trials", "budget")
                       if old.get(k) != new.get(k)]
            if bool(old.get("warm_on_env_options", False)) != grid.warm_on_env_options:  # older folders lack it
                changed.append("warm_on_env_options")
            if changed:
                raise ConfigError(f"{self.path}: holds a grid with different {', '.join(changed)}; its cells would "
                                  f"not be comparable. Use another --dir, or delete the folder")
        spec.write_text(yaml.safe_dump(grid.as_dict(), sort_keys=False))


def atomic_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON through a hidden temporary file: a reader never sees half a record."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def _cell_record_paths(gdir: GridDir) -> list[Path]:
    # a grid folder has cells/<id>/result.json; an exported one cells/<id>.json
    return sorted([*(gdir.path / "cells").glob("*/result.json"), *(gdir.path / "cells").glob("[!.]*.json")])


def cell_results(grid: Grid | None, gdir: GridDir) -> list[dict]:
    """Every finished cell's result (of the grid's cells; all cells in the folder when grid is None). Bad
    records are left out; :func:`bad_records` lists them."""
    if grid is not None:
        return [r for c in grid.cells() if (r := gdir.result(*c)) is not None and all(k in r for k in CELL_KEYS)]
    found = []
    for path in _cell_record_paths(gdir):
        try:
            record = read_record(path, CELL_KEYS, cell=True)
        except BadRecord:
            continue
        if record is not None:
            found.append(record)
    return found


def bad_records(gdir: GridDir) -> list[str]:
    """Why each cell record of the folder that cannot be used is bad (file and reason)."""
    problems = []
    for path in _cell_record_paths(gdir):
        try:
            read_record(path, CELL_KEYS, cell=True)
        except BadRecord as err:
            problems.append(str(err))
    return problems
