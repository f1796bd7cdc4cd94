"""Presets and benchmark recipes, one YAML file each in this folder, read by the Lab and by benchmarks.

A file holds ``label`` and ``note`` (what the Lab shows), ``options`` (run options: any TrainConfig
field, algorithm options flat, ``env_options`` as a mapping), and optional adjustments by environment
(``env: {NAME: {...}}``) and by algorithm (``algo: {NAME: {...}}``), applied in that order. ``default_for``
lists the environments where a recipe is what "Run this" opens (``default_for``); ``notes: {ENV: text}`` replaces
the note on an environment where it would not hold (``note``).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    path = FOLDER / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in FOLDER.glob("*.yaml")))
        raise KeyError(f"unknown recipe '{name}'; known: {known}")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data.get("options", {}), dict):
        raise ValueError(f"{path}: 'options' must be a mapping")
    return data


def names() -> list[str]:
    """Preset names in the Lab's order: quick first, then alphabetical."""
    found = sorted(p.stem for p in FOLDER.glob("*.yaml"))
    return sorted(found, key=lambda n: (n != "quick", n))


def layers(name: str, env: str, algo: str) -> list[dict]:
    """The option mappings of a recipe for one environment and algorithm, in the order they apply."""
    data = load(name)
    return [data.get("options", {}), data.get("env", {}).get(env, {}), data.get("algo", {}).get(algo, {})]


def default_for(env: str) -> str:
    """The preset a "Run this" link opens for an implementation on ``env``: the first recipe (in the Lab's
    order) whose ``default_for`` lists the environment, i.e. one measured to visibly learn there within a few
    minutes on a laptop CPU; else ``quick`` (the tiny model: the machinery, not learning)."""
    for name in names():
        if env in (load(name).get("default_for") or ()):
            return name
    return "quick"


def note(name: str, env: str) -> str:
    """What the Lab says about recipe ``name`` on environment ``env``: its note for that environment if it has
    one (``notes``), else its general note."""
    data = load(name)
    return (data.get("notes") or {}).get(env) or data.get("note", "")


PRESETS: dict[str, dict] = {n: {"label": load(n).get("label", n), "note": load(n).get("note", "")} for n in names()}
