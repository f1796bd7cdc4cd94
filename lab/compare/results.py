"""What the explorer reads: a grid's results as plain data (the Compare page renders it).

``available_results`` finds the shipped results (``lab/results/<grid>``) and the user's own grid folders;
``load_results`` reads one folder into ``GridResults`` (cells, references, pass@k, with the board, the
progression and the curves computed by ``board``). The app imports this module only, so the statistics and
the pass@k sentence it shows are re-exported here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from atlas_data import data_dir
from reference_impls.stats import config_interval

from .board import grid_tests, leaderboard, passk_comparison, progression
from .folder import BadRecord, GridDir, bad_records, cell_results, read_record
from .report import passk_reading

__all__ = ["RESULTS", "GridResults", "available_results", "heldout_families", "load_results", "passk_comparison",
           "passk_reading"]

RESULTS = Path(__file__).resolve().parents[1] / "results"  # shipped results, one folder per grid


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

    def reference_line(self, env: str) -> str:
        """The references' held-out success in words (the untrained model where measured, then the warm
        start alone, no RL), or "" when neither was measured. The interval is the leaderboard's for one run
        (``stats.config_interval``: exact over the problems) where the record keeps its 0/1s, else the one it
        stores."""
        parts = []
        for label, record in (("Untrained model", self.base.get(env, {})),
                              ("Warm start alone (no RL)", self.warm.get(env, {}))):
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

    def reproduce(self, cell: dict) -> str:
        """The commands that re-train this cell: the grid (its environment's warm start and cells), or the
        cell alone from its recorded config on top of that warm start."""
        name, env = self.spec.get("name"), cell["env"]
        return (f"python -m lab.compare run {name} --env {env}   # the warm start and every cell of {env}\n"
                f"# or this cell alone from its config, once the warm start exists:\n"
                f"python -m reference_impls.train --config {cell['cell']}.json "
                f"--model DATA_DIR/compare/{name}/warm/{env} --out runs/{cell['cell']}")


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
            record = read_record(p)
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
    if not spec_path.is_file():
        return None
    try:
        spec = yaml.safe_load(spec_path.read_text()) or {}
    except yaml.YAMLError:
        return None
    if not isinstance(spec, dict):
        return None
    bad = bad_records(GridDir(folder))
    passk, base = _records(folder / "passk", bad), _records(folder / "base", bad)
    warm = {}  # a grid folder keeps warm/<env>/done.json, a shipped one warm/<env>.json
    for p in sorted((folder / "warm").glob("*")):
        record = p / "done.json" if p.is_dir() else p
        try:
            loaded = read_record(record)
        except BadRecord as err:
            bad.append(str(err))
            continue
        if loaded is not None:
            warm[p.stem if p.is_file() else p.name] = loaded
    label = spec.get("label") or spec.get("name", folder.name)
    return GridResults(f"{label} ({'shipped' if shipped else 'yours: ' + str(folder)})", folder, spec,
                       cell_results(None, GridDir(folder)), passk, shipped, warm, base, bad)


def available_results() -> list[GridResults]:
    """Shipped results (``lab/results/<grid>``) first, then the user's own grid folders (data dir)."""
    found = []
    for root, shipped in ((RESULTS, True), (data_dir() / "compare", False)):
        if root.is_dir():
            for folder in sorted(p for p in root.iterdir() if p.is_dir()):
                r = load_results(folder, shipped)
                if r is not None:
                    found.append(r)
    return found
