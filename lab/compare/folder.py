"""The grid folder: where a grid's stages write, and reading back what they wrote.

Layout of a grid folder (default: the data dir's ``compare/<grid name>``)::

    grid.yaml                    the grid as run (a different grid refuses to reuse the folder)
    base/<env>.json              the untrained model's held-out (grids with ``base: true``)
    warm/<env>/                  the environment's warm-start model + done.json (with its held-out, no RL)
    cells/<impl>-s<seed>/run/    the trainer's run folder (checkpoints: a killed cell resumes)
    cells/<impl>-s<seed>/result.json   config, curve, held-out per problem, time, tokens, peak memory
    cells/<impl>-s<seed>/error.txt     why the cell failed (it is retried on the next run)
    passk/<env>.json             pass@k curves of the base, warm-start and best RL models

An exported (shipped) folder keeps the small files only: ``cells/<impl>-s<seed>.json``, ``warm/<env>.json``,
``base/<env>.json`` and ``passk/<env>.json`` beside ``grid.yaml``.

Owns ``GridDir`` (the paths, a cell's result, binding a folder to one grid), ``atomic_json`` (how every
record is written) and ``cell_results`` (the finished cells' records of either kind of folder).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from atlas_data import data_dir
from reference_impls.options import ConfigError

from .grid import Grid, cell_id


class GridDir:
    """A grid folder's paths (the layout above) and its cells' results."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def default(cls, grid: Grid) -> "GridDir":
        return cls(data_dir() / "compare" / grid.name)

    def warm(self, env: str) -> Path:
        return self.path / "warm" / env

    def base(self, env: str) -> Path:
        return self.path / "base" / f"{env}.json"

    def cell(self, impl: str, seed: int) -> Path:
        return self.path / "cells" / cell_id(impl, seed)

    def result(self, impl: str, seed: int) -> dict | None:
        path = self.cell(impl, seed) / "result.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def bind(self, grid: Grid) -> None:
        """Record the grid (first run) or refuse a folder that holds a different grid's cells."""
        self.path.mkdir(parents=True, exist_ok=True)
        spec = self.path / "grid.yaml"
        if spec.exists():
            old = yaml.safe_load(spec.read_text()) or {}
            new = grid.as_dict()
            changed = [k for k in ("recipe", "options", "eval", "warm_seed") if old.get(k) != new.get(k)]
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


def cell_results(grid: Grid | None, gdir: GridDir) -> list[dict]:
    """Every finished cell's result (of the grid's cells; all cells in the folder when grid is None)."""
    if grid is not None:
        return [r for c in grid.cells() if (r := gdir.result(*c)) is not None]
    found = []  # a grid folder has cells/<id>/result.json; an exported one cells/<id>.json
    for path in sorted([*(gdir.path / "cells").glob("*/result.json"), *(gdir.path / "cells").glob("*.json")]):
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return found
