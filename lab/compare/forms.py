"""One task in two forms (issue 65, the survey's preliminaries): the calculator's word problems as a one-step MDP
(one prompt, one answer, one reward) and as a multi-turn POMDP (observations, tool calls, transitions, one reward
for the trajectory), each trained by the same GRPO for the same budget from its own warm starts; what the six
preliminaries nodes draw side by side.

The grid is a sweep over ``implementation`` (``lab/recipes/grids/prelim.yaml``, ``sweep_options.IMPLEMENTATION``):
each point is the grid with one form's implementation alone, run in ``points/<implementation>/`` with a warm start
per seed that demonstrates that form's transcripts (a direct answer, or calls then the answer); a warm start shared
by both forms would demonstrate one form's transcripts only, and the other form would start from a model that
writes the wrong kind of turn. ``lab.compare.sweep`` runs, resumes and exports it like every sweep.

Owns reading such a grid's results back (``load_forms``: per form its seeds' training-reward curves, the mean
curve, held-out success before (the warm starts) and after RL with their intervals and RL's paired difference,
as ``board.progression`` computes them for every grid, and the settings it ran), finding the grids
(``forms_grids``) and their results (``results_of``: shipped first, then the user's run) for a node
(``forms_for_node``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reference_impls.options import ConfigError

from .folder import budget_status, is_number
from .grid import Grid, read_grid_file
from .sweep import SWEEP_FILE, point_dir, shipped_or_own, sweep_grids
from .sweep_options import IMPLEMENTATION


@dataclass
class FormRun:
    """One form as run: its implementation and title, each complete cell's training-reward curve (``seeds``:
    ``{"seed", "curve": [(step, reward_mean)], "heldout"}``), the mean curve over those seeds at each step every
    one of them reached (``mean``: ``[(step, reward_mean)]``), held-out success before RL (``before``: the warm
    starts, pooled over seeds x problems) and after (``after``), each ``{"heldout", "low", "high", "seeds"}``
    (fractions, 95% interval), ``difference`` (RL minus each seed's own warm start, paired on the problems:
    ``{"mean", "low", "high"}``) with its ``verdict``, and the ``settings`` its cells ran with."""

    implementation: str
    title: str
    seeds: list[dict] = field(default_factory=list)
    mean: list[tuple[int, float]] = field(default_factory=list)
    before: dict | None = None
    after: dict | None = None
    difference: dict | None = None
    verdict: str = ""
    settings: dict = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        """Whether any of its cells is complete."""
        return bool(self.seeds)


@dataclass
class FormsResults:
    """A forms grid's results: its name and label, where they were read (``folder``, ``shipped``), and each form
    in the grid file's order."""

    name: str
    label: str
    folder: Path
    shipped: bool
    forms: list[FormRun] = field(default_factory=list)

    @property
    def measured(self) -> list[FormRun]:
        return [f for f in self.forms if f.measured]


def _curve(record: dict) -> list[tuple[int, float]]:
    """A cell record's training reward per step (``curve``: the mean reward of the step's P x G episodes)."""
    rows = record.get("curve") if isinstance(record.get("curve"), list) else []
    return [(int(r["step"]), float(r["reward_mean"])) for r in rows
            if isinstance(r, dict) and isinstance(r.get("step"), int) and is_number(r.get("reward_mean"))]


def mean_curve(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The mean over ``curves`` at each step that every one of them has (a shorter curve does not drag the later
    steps' mean towards the seeds that reached them)."""
    if not curves:
        return []
    steps = sorted(set.intersection(*({s for s, _ in c} for c in curves)))
    by_step = [dict(c) for c in curves]
    return [(s, sum(c[s] for c in by_step) / len(by_step)) for s in steps]


def _settings(records: list[dict], warm: dict[str, dict], spec: dict) -> dict:
    """What a form's cells ran with, from their first record's config and budget and its warm starts' records."""
    config = records[0].get("config") or {}
    budget = records[0].get("budget") or {}
    sft = sorted({r.get("sft_steps") for r in warm.values() if isinstance(r.get("sft_steps"), int)})
    times = [r["train_s"] for r in records if is_number(r.get("train_s"))]
    return {"model": (next(iter(warm.values()), {}) or {}).get("model") or spec.get("options", {}).get("model"),
            "algo": config.get("algo"), "mode": (config.get("env_options") or {}).get("mode"),
            "steps": config.get("steps"), "prompts_per_step": config.get("prompts_per_step"),
            "group_size": config.get("group_size"), "lr": config.get("lr"), "mu": budget.get("mu"),
            "max_new_tokens_per_turn": config.get("max_new_tokens_per_turn"),
            "max_completion_tokens": config.get("max_completion_tokens"),
            "episodes": budget.get("episodes"), "sft_steps": sft[0] if len(sft) == 1 else sft or None,
            "eval_n": (spec.get("eval") or {}).get("n"), "eval_seed": (spec.get("eval") or {}).get("seed"),
            "train_s": sum(times) / len(times) if times else None}


def _form(impl: str, folder: Path, shipped: bool) -> FormRun:
    """One form's results from its point's folder (a grid folder or an exported one)."""
    from lab.catalog import get

    from .results import load_results

    run = FormRun(impl, get(impl).title)
    loaded = load_results(folder, shipped)
    if loaded is None:
        return run
    complete = [c for c in loaded.cells if c.get("implementation") == impl and budget_status(c)["in_verdicts"]
                and c.get("heldout_by_problem")]
    if not complete:
        return run
    loaded.cells = complete  # progression's tests on the complete cells alone, as every verdict is
    complete.sort(key=lambda c: c["seed"])
    run.seeds = [{"seed": c["seed"], "curve": _curve(c), "heldout": c["heldout"]} for c in complete]
    run.mean = mean_curve([s["curve"] for s in run.seeds if s["curve"]])
    rows = loaded.progression().get(get(impl).env, [])
    warm_row = next((r for r in rows if r["implementation"] is None and r["stage"].startswith("SFT")), None)
    rl_row = next((r for r in rows if r["implementation"] == impl), None)

    def shown(row):
        return None if row is None else {k: row[k] for k in ("heldout", "low", "high", "seeds")}

    run.before, run.after = shown(warm_row), shown(rl_row)
    if rl_row is not None:
        run.difference, run.verdict = rl_row["vs"], rl_row["verdict"] or ""
    run.settings = _settings(complete, loaded.warm, loaded.spec)
    return run


def load_forms(folder: Path, shipped: bool) -> FormsResults | None:
    """A forms grid's results from its sweep folder (run or exported): None without a readable ``sweep.yaml`` of a
    sweep over implementation; a form whose point has no complete cell is listed unmeasured."""
    folder = Path(folder)
    try:
        grid = Grid.from_dict(read_grid_file(folder / SWEEP_FILE), str(folder / SWEEP_FILE))
    except (ConfigError, FileNotFoundError):
        return None
    if grid.sweep.get("option") != IMPLEMENTATION:
        return None
    forms = [_form(impl, point_dir(folder, name).path, shipped) for name, impl in grid.sweep_points()]
    return FormsResults(grid.name, grid.label or grid.name, folder, shipped, forms)


def forms_grids(implementations: set[str] | None = None) -> list[Grid]:
    """The shipped grid files that sweep over implementation (the forms of one task), by name; with
    ``implementations``, only those naming one of them (``sweep.sweep_grids``: each file read once per version;
    a file that does not load is left out)."""
    return [grid for grid in sweep_grids(implementations) if grid.sweep["option"] == IMPLEMENTATION]


def results_of(grid: Grid) -> FormsResults | None:
    """The grid's results (``sweep.shipped_or_own``: shipped first, then the user's own run); None when neither
    has a complete cell of any form."""
    return shipped_or_own(grid, load_forms)


def forms_for_node(node_id: str) -> list[tuple[Grid, FormsResults | None]]:
    """The forms grids whose implementations serve ``node_id``, each with its results or None (not run yet)."""
    from lab.catalog import for_node

    served = {impl.id for impl in for_node(node_id)}
    return [(grid, results_of(grid)) for grid in forms_grids(served)] if served else []


def run_command(name: str) -> str:
    """The command that runs (or resumes) a forms grid."""
    return f"python -m lab.compare run {name}"


def export_command(name: str) -> str:
    """The command that ships a forms grid's results where the node pages read them first."""
    return f"python -m lab.compare export {name} --to results/{name}"
