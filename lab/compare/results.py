"""What the explorer reads: a grid's results as plain data (the Compare page renders it).

``available_results`` finds the shipped results (``results/<grid>``) and the user's own grid folders;
``load_results`` reads one folder into ``GridResults`` (cells, references, pass@k, with the board, the
progression and the curves computed by ``board``, and each implementation's per-step mechanism diagnostics,
``GridResults.diagnostics``). The app imports this module only, so the statistics and
the pass@k sentence it shows are re-exported here.

``GridResults.summary()`` is what the explorer reads: every statistic of a grid computed once for what its
records hold (``summary_key``: a hash of the records and of the statistics' source), kept in this process
and as a JSON file under ``data_dir()/compare-summaries/`` (plain JSON, never a pickle), so a node page or
the Compare page never recomputes a bootstrap the records and the code have not changed since. A shipped
grid also carries its summary (``results/<grid>/summary.json``), so a fresh data folder starts with
them; it is used only while its key matches, and rewritten with

    python -m lab.compare.results          # after a change to the shipped results or to the statistics
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from atlas_data import data_dir
from lab.shipped import CLAIMS, RESULTS  # shipped results, one folder per grid (results/<grid>); the claims' records
from reference_impls.options import ConfigError
from reference_impls.stats import config_interval

from .board import PASSK_LEGACY, grid_tests, leaderboard, passk_comparison, progression, sampled_support
from .folder import (DIAGNOSTIC_KEYS, BadRecord, GridDir, bad_records, cell_diagnostics, cell_results,
                     read_record, split_warm_name)
from .grid import Grid, read_grid_file
from .report import lr_choices, passk_reading

__all__ = ["DIAGNOSTIC_KEYS", "PASSK_LEGACY", "RESULTS", "GridResults", "GridSummary", "available_results", "heldout_families",
           "load_results", "passk_comparison", "passk_reading", "summary_key"]

_log = logging.getLogger(__name__)



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
    bad: list[str] = field(default_factory=list)  # cell records that could not be used (file: why)
    # env -> what a policy scores that never reads the map (benchmarks/frozenlake_open_loop.py --out
    # <results>/map-blind/<env>.json): {"best": {turn: held-out success}, "maps": n, ...}
    map_blind: dict[str, dict] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """How a link names this grid (``compare?grid=...``), unique among ``available_results``: a shipped grid by
        its folder under ``results`` (its grid's name, unless two shipped runs of one grid sit side by side), a
        grid folder of the user's by ``yours:<folder>``, since a user who reproduces a shipped grid (``lab.compare
        run core``) has a folder of the same name."""
        return self.folder.name if self.shipped else f"yours:{self.folder.name}"

    def summary(self) -> "GridSummary":
        """Every statistic the explorer shows, computed once per content (``grid_summary``)."""
        return grid_summary(self)

    def families(self) -> dict[str, list[str]]:
        """env -> the family of each held-out problem (``heldout_families``), for the environments whose
        generator names them; the records store the 0/1s in the generator's order."""
        ev = self.spec.get("eval", {})
        out = {}
        for c in self.cells:
            if c["env"] not in out and isinstance(c.get("config", {}).get("env_options"), dict):
                labels = heldout_families(c["env"], json.dumps(c["config"]["env_options"], sort_keys=True),
                                          int(ev.get("n", 100)), int(ev.get("seed", 4242)))
                if labels is not None and len(labels) == len(c.get("heldout_by_problem", ())):
                    out[c["env"]] = list(labels)
        return out

    def tests(self) -> dict[tuple[str, str, str], dict]:
        """Every comparison of the grid with its Holm-adjusted verdict (``board.grid_tests``)."""
        return grid_tests(self.cells, self.spec.get("baseline", "grpo"), self.warm, self.base)

    def board(self) -> dict[str, list[dict]]:
        """Per environment, each implementation's row: interval, verdicts against the baseline and the warm
        start (Holm over the grid's tests), results per problem family (``board.leaderboard``)."""
        return leaderboard(self.cells, self.spec.get("baseline", "grpo"), self.warm, self.base, self.families(),
                           self.tests())

    def budget(self) -> str:
        """The budget in words: the same for every cell of the grid."""
        o = self.spec.get("options", {})
        parts = [f"recipe {self.spec.get('recipe')}"] + [f"{k} {v}" for k, v in o.items()]
        ev = self.spec.get("eval", {})
        return (", ".join(parts) + f"; seeds {', '.join(map(str, self.spec.get('seeds', [])))}; held-out: "
                f"{ev.get('n')} problems (seed {ev.get('seed')}), greedy, the same for every cell")

    def warm_starts(self, env: str) -> list[tuple[str, dict]]:
        """An environment's warm-start records, the grid's first first: (tag, record), the tag "" for the first
        (``warm/<env>``) and ``@w<seed>`` for the others (grids with several ``warm_seeds``)."""
        return [("" if name == env else name.removeprefix(env), r) for name, r in self.warm.items()
                if split_warm_name(name)[0] == env]

    def lr_choices(self, env: str | None = None) -> list[dict]:
        """Each implementation's learning-rate choice on validation (``report.lr_choices``), of ``env`` only when
        given."""
        return [r for r in lr_choices(self.cells) if env is None or r["env"] == env]

    def reference_line(self, env: str) -> str:
        """The references' held-out success in words (the untrained model where measured, then the warm
        start alone, no RL), or "" when neither was measured. The interval is the leaderboard's for one run
        (``stats.config_interval``: exact over the problems) where the record keeps its 0/1s, else the one it
        stores."""
        parts = []
        for label, record in (("Untrained model", self.base.get(env, {})),
                              *((f"Warm start{'' if not tag else ' ' + tag} alone (no RL)", r)
                                for tag, r in self.warm_starts(env))):
            if "heldout" in record:
                row = record.get("heldout_by_problem")
                if row and len(row) > 1:
                    interval = config_interval([row])
                    low, high = interval.low, interval.high
                else:
                    low, high = record["heldout_interval"]
                parts.append(f"{label}: {100 * record['heldout']:.1f}% (95% interval {100 * low:.1f}-{100 * high:.1f}%)")
        return ("Same held-out problems. " + "; ".join(parts)) if parts else ""

    def progression(self) -> dict[str, list[dict]]:
        """Untrained -> SFT -> SFT + RL per environment (see ``progression``; the same tests as ``board``)."""
        return progression(self.cells, self.base, self.warm, self.spec.get("baseline", "grpo"), self.families(),
                           self.tests())

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

    def diagnostics(self) -> dict[str, dict[str, dict]]:
        """Per environment, per implementation, the mechanism diagnostics of its cells (``folder.cell_diagnostics``)
        step by step: ``{env: {impl: {"seeds": cells with diagnostics, "series": {name: [{"step", "value",
        "seeds"}]}}}}``, each point the mean over the seeds whose row at that step has a finite number for the
        name, ``seeds`` how many. Left out: a name a row does not have or leaves null (``kl`` without a
        reference), ``len_correct`` of a step with no correct episode and ``len_incorrect`` of one with no
        incorrect episode (the record writes 0 there: ``accuracy`` 0 or 1), and a DPO cell's ``reward_mean`` and
        ``accuracy`` (the preference margin and pair accuracy, not the environment's). A grid whose records
        predate the diagnostics gives {}."""
        acc: dict[tuple[str, str], dict[str, dict[int, list[float]]]] = {}
        seeds: dict[tuple[str, str], int] = {}
        for c in self.cells:
            rows = cell_diagnostics(c)
            if not rows:
                continue
            at = (c["env"], c["implementation"])
            seeds[at] = seeds.get(at, 0) + 1
            skip = {"reward_mean", "accuracy"} if c.get("algo") == "dpo" else set()
            for row in rows:
                accuracy = row.get("accuracy")
                for name in DIAGNOSTIC_KEYS:
                    value = row.get(name)
                    if (name in skip or isinstance(value, bool) or not isinstance(value, (int, float))
                            or not math.isfinite(value) or (name == "len_correct" and accuracy == 0)
                            or (name == "len_incorrect" and accuracy == 1)):
                        continue
                    acc.setdefault(at, {}).setdefault(name, {}).setdefault(row["step"], []).append(float(value))
        out: dict[str, dict[str, dict]] = {}
        for (env, impl), n in sorted(seeds.items()):
            series = {name: [{"step": step, "value": sum(v) / len(v), "seeds": len(v)}
                             for step, v in sorted(points.items())]
                      for name, points in sorted(acc.get((env, impl), {}).items())}
            out.setdefault(env, {})[impl] = {"seeds": n, "series": series}
        return out

    def reproduce(self, cell: dict) -> str:
        """The commands that re-train this cell: the grid (its environment's warm start and cells), or the
        cell alone from its recorded config on top of that warm start."""
        name, env = self.spec.get("name"), cell["env"]
        return (f"python -m lab.compare run {name} --env {env}   # the warm start and every cell of {env}\n"
                f"# or this cell alone from its config, once the warm start exists:\n"
                f"python -m reference_impls.train --config {cell['cell']}.json "
                f"--model DATA_DIR/compare/{name}/warm/{cell.get('warm_start') or env} --out runs/{cell['cell']}")


@dataclass(frozen=True)
class GridSummary:
    """What a grid's records imply, as the explorer shows it: the leaderboard, the stages, the curves, per
    environment with a pass@k record its paired comparison and reading, and the mechanism diagnostics per step
    (``GridResults.diagnostics``). Plain data (JSON round-trips it)."""

    key: str
    board: dict[str, list[dict]]
    progression: dict[str, list[dict]]
    curves: list[dict]
    passk_rows: dict[str, list[dict]]
    passk_readings: dict[str, str | None]
    diagnostics: dict[str, dict[str, dict]]

    @classmethod
    def compute(cls, grid: GridResults, key: str) -> "GridSummary":
        rows = {env: passk_comparison(record) for env, record in sorted(grid.passk.items())}
        return cls(key, grid.board(), grid.progression(), grid.curves(), rows,
                   {env: passk_reading(r, sampled_support(grid.passk[env], grid.cells)) for env, r in rows.items()},
                   grid.diagnostics())


SUMMARY_VERSION = 2  # the shape of GridSummary: a new field or meaning makes every stored summary stale
SHIPPED_SUMMARY = "summary.json"  # beside a shipped grid's records


def _statistics_source() -> bytes:
    """The source of what computes a summary: a change to the statistics makes every stored summary stale."""
    from reference_impls import stats

    from . import board, report

    # this module too: it chooses what the board is given (problem families, the grid's tests)
    return (b"".join(Path(m.__file__).read_bytes() for m in (board, report, stats)) + Path(__file__).read_bytes()
            + f"v{SUMMARY_VERSION}".encode())


def summary_key(grid: GridResults) -> str:
    """A hash of everything a summary is computed from: the grid's records (spec, cells, references, pass@k) and
    the source of the statistics that read them."""
    records = json.dumps([grid.spec, grid.cells, grid.passk, grid.warm, grid.base], sort_keys=True, default=str)
    return hashlib.sha256(records.encode() + _statistics_source()).hexdigest()[:32]


def summary_dir() -> Path:
    return data_dir() / "compare-summaries"


_summaries: dict[str, GridSummary] = {}  # this process's summaries by key
_summary_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def _read_summary(path: Path, key: str) -> GridSummary | None:
    """A stored summary, or None when it is missing, unreadable or not this key's (then it is recomputed)."""
    try:
        stored = json.loads(path.read_text())
        summary = GridSummary(**stored)
    except (OSError, ValueError, TypeError) as err:
        if path.exists():
            _log.warning("recomputing the comparison summary %s: %s", path, err)
        return None
    return summary if summary.key == key else None


def _write_summary(path: Path, summary: GridSummary) -> None:
    """Store a summary (through a temporary file: a reader never sees half); a failure only costs a recompute."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(asdict(summary)))
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError) as err:
        _log.warning("could not store the comparison summary %s: %s", path, err)


def grid_summary(grid: GridResults) -> GridSummary:
    """The grid's summary: from this process, else from its JSON file, else computed and stored. Two threads
    asking for the same one (a page and the background warm-up) compute it once: the second waits."""
    key = summary_key(grid)
    found = _summaries.get(key)
    if found is not None:
        return found
    with _locks_lock:
        lock = _summary_locks.setdefault(key, threading.Lock())
    with lock:
        found = _summaries.get(key)
        if found is None:
            path = summary_dir() / f"{key}.json"
            found = _read_summary(path, key)
            if found is None and grid.shipped:
                found = _read_summary(grid.folder / SHIPPED_SUMMARY, key)
            if found is None:
                found = GridSummary.compute(grid, key)
                _write_summary(path, found)
            _summaries[key] = found
    return found




@lru_cache(maxsize=64)
def heldout_families(env: str, env_options_json: str, n: int, seed: int) -> tuple[str, ...] | None:
    """The family of each of the grid's held-out problems, in order (the calculator's computations, search's
    question templates, FrozenLake's levels), rebuilt from the environment's generator: the records keep one
    0/1 per problem in the order ``task.problems("heldout", n, seed, ...)`` returns them, and that order is
    deterministic in its arguments. None when the environment is unknown, its problems carry no ``family``,
    or the generator refuses the options or cannot run here (a record of an older environment version, a
    missing data file)."""
    from reference_impls.envs import get_env

    try:
        task = get_env(env)
        options = task.heldout_env_options(json.loads(env_options_json))
        problems = task.problems("heldout", n=n, seed=seed, **options)
    except (KeyError, ValueError, TypeError, OSError, ImportError):  # families are an extra; the board reads pooled
        return None
    labels = tuple(getattr(p, "family", None) for p in problems)
    return None if any(not isinstance(x, str) for x in labels) else labels


def _records(folder: Path, bad: list[str] | None = None) -> dict[str, dict]:
    """``<name>.json`` files of a folder by name (a bad one is left out and, with ``bad``, said there; hidden
    ones, such as a pass@k stage's partial file, are work in progress)."""
    found = {}
    for p in sorted(folder.glob("[!.]*.json")):
        try:
            record = read_record(p, cell=True)
        except BadRecord as err:
            if bad is not None:
                bad.append(str(err))
            continue
        if record is not None:
            found[p.stem] = record
    return found


def load_results(folder: Path, shipped: bool) -> GridResults | None:
    """A grid folder's or an exported results folder's finished cells, references and pass@k (None without a
    readable grid.yaml)."""
    spec_path = folder / "grid.yaml"
    try:  # read and checked as the runner reads a grid file: bounded, no aliases, every field valid
        spec = read_grid_file(spec_path)
        Grid.from_dict(spec, str(spec_path))
    except (ConfigError, FileNotFoundError):
        return None
    bad = bad_records(GridDir(folder))
    passk, base = _records(folder / "passk", bad), _records(folder / "base", bad)
    warm = {}  # a grid folder keeps warm/<env>/done.json, a shipped one warm/<env>.json (and <env>@w<seed>: a name each)
    for p in sorted((folder / "warm").glob("[!.]*")):  # not a warm stage's temporary folder
        record = p / "done.json" if p.is_dir() else p
        try:
            loaded = read_record(record, cell=True)
        except BadRecord as err:
            bad.append(str(err))
            continue
        if loaded is not None:
            warm[p.stem if p.is_file() else p.name] = loaded
    label = spec.get("label") or spec.get("name", folder.name)
    return GridResults(f"{label} ({'shipped' if shipped else 'yours: ' + str(folder)})", folder, spec,
                       cell_results(None, GridDir(folder)), passk, shipped, warm, base, bad,
                       {env: r for env, r in _records(folder / "map-blind", bad).items() if r.get("best")})


def available_results() -> list[GridResults]:
    """Shipped results (``results/<grid>``) first, then the user's own grid folders (data dir)."""
    found = []
    for root, shipped in ((RESULTS, True), (data_dir() / "compare", False)):
        if root.is_dir():
            for folder in sorted(p for p in root.iterdir() if p.is_dir()):
                r = load_results(folder, shipped)
                if r is not None:
                    found.append(r)
    return found


def write_shipped_summaries() -> list[Path]:
    """Compute every shipped grid's summary and write it beside its records (``SHIPPED_SUMMARY``)."""
    written = []
    for grid in available_results():
        if grid.shipped:
            path = grid.folder / SHIPPED_SUMMARY
            path.write_text(json.dumps(asdict(grid_summary(grid)), indent=1) + "\n")
            written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_shipped_summaries():
        print(f"wrote {written_path}")


#: where shipped claim records live (``python -m lab.compare claims export --to results/claims``)
SHIPPED_CLAIMS = CLAIMS


@lru_cache(maxsize=2)
def _claims_spec(path: str, mtime_ns: int):
    from .claims import ClaimsSpec

    return ClaimsSpec.load(path)


def claims_spec():
    """The default claims file, parsed once per version of the file (a node page asks for it on every render)."""
    return _claims_spec(*_claims_file_key())


def claims_root() -> Path:
    """The claims folder the explorer reads: the shipped records (``results/claims``) when there are any, else the
    data dir's own runs of the default claims file."""
    if SHIPPED_CLAIMS.is_dir() and any(SHIPPED_CLAIMS.iterdir()):
        return SHIPPED_CLAIMS
    return data_dir() / "claims" / claims_spec().name


def _claims_signature(root: Path) -> tuple:
    records = sorted(root.glob("*/*/s*.json")) + sorted(root.glob("*/*/s*/result.json")) if root.is_dir() else []
    return tuple((str(p), p.stat().st_mtime_ns) for p in records)


def _claims_file_key() -> tuple[str, int]:
    from .claims import CLAIMS_FILE

    return str(CLAIMS_FILE), CLAIMS_FILE.stat().st_mtime_ns


@lru_cache(maxsize=4)
def _claims_report(root: str, signature: tuple, spec_key: tuple[str, int]) -> tuple:
    from .claim_results import claim_reports

    spec = _claims_spec(*spec_key)
    return spec, claim_reports(spec, Path(root))


def claims_report(root: Path | None = None) -> tuple:
    """(the default claims file, ``claim_results.claim_reports`` of the records under ``root``, default ``claims_root()``),
    computed once per records content."""
    root = claims_root() if root is None else Path(root)
    return _claims_report(str(root), _claims_signature(root), _claims_file_key())
