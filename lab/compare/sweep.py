"""A sweep (issue 65, the scaling nodes): one run option varied over the values a grid file's ``sweep`` names, every
other setting held, each value's point an ordinary grid (``Grid.at_point``) run, resumed and exported by the
grid machinery in its own folder; the sweep's curve is each point's held-out success over its seeds.

Layout of a sweep folder (default: the data dir's ``compare/<grid name>``; shipped: ``results/<grid name>``)::

    sweep.yaml                   the sweep grid as run (a different sweep refuses to reuse the folder)
    points/<point>/              each point's grid folder (grid.yaml, warm/, cells/, ...: ``folder``'s layout)

There is no ``grid.yaml`` at the top, so no reader of grids (``results.available_results``, the Compare page)
takes a sweep for a grid; a point's own folder is one. Each point has its own warm starts (a point of the
model-size sweep warm-starts its own model), so the points differ in the swept option alone.

Owns running a sweep (``run_sweep``: point after point, each resumable), its status, its export and reading its
curve back (``load_sweep``, ``sweep_for_node``: what a node page draws).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from atlas_data import data_dir
from lab.shipped import RESULTS
from reference_impls.options import ConfigError

from .folder import GridDir, budget_status, cell_results
from .grid import GRIDS, Grid, read_grid_file

#: the sweep as run, at the top of its folder
SWEEP_FILE = "sweep.yaml"
#: the folder of the points
POINTS = "points"


def default_root(grid: Grid) -> Path:
    """Where ``lab.compare run`` writes a sweep without ``--dir``: the data dir's ``compare/<name>``."""
    return data_dir() / "compare" / grid.name


def point_dir(root: Path, name: str) -> GridDir:
    """The grid folder of the point named ``name`` (``Grid.sweep_points``)."""
    return GridDir(Path(root) / POINTS / name)


def bind(grid: Grid, root: Path) -> None:
    """Record the sweep at the top of its folder (first run), or refuse a folder holding another sweep, or
    anything that is not a sweep folder (files of the user's): the points would not be one sweep's."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--dir {root}: is a file, not a sweep folder")
    spec = root / SWEEP_FILE
    if root.is_dir() and any(root.iterdir()) and not spec.is_file():
        raise ConfigError(f"--dir {root}: is not a sweep folder (it has files but no {SWEEP_FILE}); nothing was "
                          f"written there. Give an empty or new folder, or the folder of an earlier run of this sweep")
    new = grid.as_dict()
    if spec.is_file():
        old = read_grid_file(spec)
        changed = sorted(k for k in set(old) | set(new) if k != "label" and old.get(k) != new.get(k))
        if changed:
            raise ConfigError(f"{root}: holds a sweep with different {', '.join(changed)}; its points would not be "
                              f"one sweep's. Use another --dir, or delete the folder")
    root.mkdir(parents=True, exist_ok=True)
    spec.write_text(yaml.safe_dump(new, sort_keys=False))


def run_sweep(grid: Grid, root: Path, max_cells: int | None = None, out=sys.stdout, env: str | None = None,
              restore_by_heldout: bool = False) -> int:
    """Every point's missing stages, point after point in the file's order (a finished stage is kept: the sweep
    resumes where it stopped); ``max_cells`` counts cells over the whole sweep. Returns the failed stages."""
    from .driver import run, validate

    validate(grid, GridDir(root))  # every point's configs pass the trainer's checks before anything runs
    GridDir(root).refuse_links()
    bind(grid, root)
    failures, left = 0, max_cells
    for name, value in grid.sweep_points():
        if left is not None and left <= 0:
            break
        point, gdir = grid.at_point(value), point_dir(root, name)
        print(f"== point {grid.sweep['option']} = {name} ({gdir.path})", file=out, flush=True)
        before = sum(gdir.result(*c) is not None for c in point.cells())
        failures += run(point, gdir, max_cells=left, out=out, env=env, restore_by_heldout=restore_by_heldout)
        if left is not None:
            left -= sum(gdir.result(*c) is not None for c in point.cells()) - before
    return failures


def sweep_status(grid: Grid, root: Path) -> list[dict]:
    """Each cell of each point (``driver.status``'s rows) with its point's name."""
    from .driver import status

    return [{"point": name, **row} for name, value in grid.sweep_points()
            for row in status(grid.at_point(value), point_dir(root, name))]


def export_sweep(grid: Grid, root: Path, dest: Path) -> int:
    """The small files of every point that has any (``report.export`` into ``dest/points/<point>``) and the sweep's
    file, into ``dest`` (new or empty); the number of cells exported."""
    from .report import export

    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(f"--to {dest}: not a new or empty folder; move it away first")
    if not (Path(root) / SWEEP_FILE).is_file():
        raise ConfigError(f"{root}: no {SWEEP_FILE} (the sweep has not run there)")
    n = 0
    for name, value in grid.sweep_points():
        gdir = point_dir(root, name)
        if (gdir.path / "grid.yaml").is_file():
            n += export(grid.at_point(value), gdir, dest / POINTS / name)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / SWEEP_FILE).write_text((Path(root) / SWEEP_FILE).read_text())
    return n


# -- the curve -----------------------------------------------------------------------------------------------
@dataclass
class SweepResults:
    """A sweep's curve as run: per point (the file's order), its complete cells' held-out success over seeds x
    problems with its 95% interval (``stats.config_interval``) and their mean training time."""

    name: str
    label: str
    option: str
    folder: Path
    shipped: bool
    points: list[dict] = field(default_factory=list)

    @property
    def measured(self) -> list[dict]:
        """The points with at least one complete cell."""
        return [p for p in self.points if p["seeds"]]


def load_sweep(folder: Path, shipped: bool) -> SweepResults | None:
    """A sweep folder's curve (None without a readable ``sweep.yaml`` naming a sweep)."""
    from reference_impls.stats import config_interval

    folder = Path(folder)
    try:
        grid = Grid.from_dict(read_grid_file(folder / SWEEP_FILE), str(folder / SWEEP_FILE))
    except (ConfigError, FileNotFoundError):
        return None
    if not grid.sweep:
        return None
    points = []
    for name, value in grid.sweep_points():
        records = [r for r in cell_results(None, point_dir(folder, name)) if budget_status(r)["in_verdicts"]]
        rows = [r["heldout_by_problem"] for r in records if r.get("heldout_by_problem")]
        point = {"point": name, "value": value, "seeds": len(rows), "heldout": None, "low": None, "high": None,
                 "train_s": None}
        if rows and len({len(row) for row in rows}) == 1:
            interval = config_interval(rows)
            times = [r["train_s"] for r in records if isinstance(r.get("train_s"), (int, float))]
            point.update(heldout=interval.mean, low=interval.low, high=interval.high,
                         train_s=sum(times) / len(times) if times else None)
        else:
            point["seeds"] = 0
        points.append(point)
    return SweepResults(grid.name, grid.label or grid.name, grid.sweep["option"], folder, shipped, points)


@lru_cache(maxsize=64)
def _sweep_file(path: str, mtime_ns: int) -> tuple[frozenset, Grid | None]:
    """A grid file's implementations and, when it declares a sweep, the sweep grid (read once per version of the
    file: a node page asks on every view). A file that does not load is no sweep."""
    try:
        data = read_grid_file(Path(path))
    except ConfigError:
        return frozenset(), None
    impls = data.get("implementations")
    if not data.get("sweep") or not isinstance(impls, list):
        return frozenset(), None
    try:
        return frozenset(map(str, impls)), Grid.from_dict(data, path)
    except ConfigError:
        return frozenset(), None


def sweep_grids(implementations: set[str] | None = None) -> list[Grid]:
    """The shipped grid files that declare a sweep, by name; with ``implementations``, only those naming one of
    them."""
    found = []
    for path in sorted(GRIDS.glob("*.yaml")):
        impls, grid = _sweep_file(str(path), path.stat().st_mtime_ns)
        if grid is not None and (implementations is None or impls & implementations):
            found.append(grid)
    return found


def shipped_or_own(grid: Grid, load):
    """``load(folder, shipped)``'s results where they are: shipped (``results/<name>``) first, then the user's own
    run (the data dir's ``compare/<name>``); None when neither has a measured (complete) cell."""
    for folder, shipped in ((RESULTS / grid.name, True), (default_root(grid), False)):
        found = load(folder, shipped)
        if found is not None and found.measured:
            return found
    return None


def results_of(grid: Grid) -> SweepResults | None:
    """The sweep's results (``shipped_or_own``); None when no point has a complete cell."""
    return shipped_or_own(grid, load_sweep)


def sweep_for_node(node_id: str) -> list[tuple[Grid, SweepResults | None]]:
    """The sweeps that measure ``node_id`` (a sweep grid whose implementation serves it) with their results, or
    None for a sweep not run yet. A sweep over ``implementation`` (the forms of one task) is left out: its points
    are not values of one quantity, and ``lab.compare.forms`` draws it on its own."""
    from lab.catalog import for_node

    from .sweep_options import IMPLEMENTATION

    served = {impl.id for impl in for_node(node_id)}
    return [(grid, results_of(grid)) for grid in sweep_grids(served)
            if grid.sweep["option"] != IMPLEMENTATION] if served else []
