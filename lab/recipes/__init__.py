"""Presets and benchmark recipes, one YAML file each in this folder, read by the Lab and by benchmarks.

A file holds ``label`` and ``note`` (what the Lab shows), ``options`` (run options: any TrainConfig
field, algorithm options flat, ``env_options`` as a mapping), and optional adjustments by environment
(``env: {NAME: {...}}``) and by algorithm (``algo: {NAME: {...}}``), applied in that order. ``default_for``
lists the environments where a recipe is what "Run this" opens (``default_for``); ``notes: {ENV: text}`` replaces
the note on an environment where it would not hold (``note``).

A recipe may also have a folder of the same name with one file per environment (``learn/<env>.yaml``: the
learning preset of that environment, issue 59). Such a file holds ``impl`` (the implementation the benchmark
trains), ``settings`` (that environment's adjustments: they become the recipe's ``env: {ENV: ...}`` layer) and,
last, ``measured`` (what ``benchmarks/learn_presets.py`` measured, written by its ``ship`` command). The
recipe's ``default_for`` then lists the environments whose ``measured.status`` is one of ``OPENS``: a preset
measured to learn there, or measured not to (its note then states the figures); an environment whose preset is
``not measured`` keeps the quick demo, and ``learning_status`` says so.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

FOLDER = Path(__file__).resolve().parent

#: ``measured.status`` values of a per-environment learning preset
LEARNS = "learns"  # the benchmark's criterion holds (>= 3 seeds, seed-paired 95% interval of RL - control above 0)
DOES_NOT_LEARN = "does not learn"  # measured, and the criterion does not hold
EARLIER = "earlier evidence"  # measured before the benchmark existed, by another protocol (the calculator's)
NOT_MEASURED = "not measured"
STATUSES = (LEARNS, DOES_NOT_LEARN, EARLIER, NOT_MEASURED)
#: statuses for which "Run this" opens the environment's learning preset: it states what was measured
OPENS = (LEARNS, DOES_NOT_LEARN, EARLIER)


def _read(path: Path) -> dict:
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data


@lru_cache(maxsize=None)
def env_presets(name: str) -> dict[str, dict]:
    """``{env: its file's data}`` of recipe ``name``'s per-environment folder (empty without one), each checked:
    ``settings`` a mapping, ``measured.status`` one of ``STATUSES``."""
    folder = FOLDER / name
    found: dict[str, dict] = {}
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
        data = _read(path)
        for key in ("settings", "impl_settings"):
            if not isinstance(data.get(key, {}), dict):
                raise ValueError(f"{path}: '{key}' must be a mapping")
        measured = data.setdefault("measured", {"status": NOT_MEASURED}) or {"status": NOT_MEASURED}
        data["measured"] = measured
        if measured.get("status") not in STATUSES:
            raise ValueError(f"{path}: measured.status is {measured.get('status')!r}; expected one of {STATUSES}")
        found[path.stem] = data
    return found


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    path = FOLDER / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in FOLDER.glob("*.yaml")))
        raise KeyError(f"unknown recipe '{name}'; known: {known}")
    data = _read(path)
    if not isinstance(data.get("options", {}), dict):
        raise ValueError(f"{path}: 'options' must be a mapping")
    per_env = env_presets(name)
    if per_env:
        if data.get("env") or data.get("default_for"):
            raise ValueError(f"{path}: with a folder {name}/ of per-environment presets, 'env' and 'default_for' "
                             f"come from those files; remove them here")
        data["env"] = {env: dict(preset.get("settings") or {}) for env, preset in per_env.items()}
        # settings only the measured implementation takes (minibatch updates: PPO has its own, DPO none)
        data["impl"] = {preset["impl"]: dict(preset["impl_settings"])
                        for preset in per_env.values() if preset.get("impl_settings")}
        data["default_for"] = [env for env, preset in per_env.items() if preset["measured"]["status"] in OPENS]
    return data


def names() -> list[str]:
    """Preset names in the Lab's order: quick first, then alphabetical."""
    found = sorted(p.stem for p in FOLDER.glob("*.yaml"))
    return sorted(found, key=lambda n: (n != "quick", n))


def layers(name: str, env: str, algo: str, impl: str | None = None) -> list[dict]:
    """The option mappings of a recipe for one environment, algorithm and implementation, in the order they
    apply: the recipe's options, the environment's, the algorithm's, and those of the implementation a
    per-environment preset measured (its ``impl_settings``: options that not every algorithm on the environment
    takes)."""
    data = load(name)
    return [data.get("options", {}), data.get("env", {}).get(env, {}), data.get("algo", {}).get(algo, {}),
            data.get("impl", {}).get(impl, {})]


def default_for(env: str) -> str:
    """The preset a "Run this" link opens for an implementation on ``env``: the first recipe (in the Lab's
    order) whose ``default_for`` lists the environment: a learning preset whose record says it learns there, or
    one that states what was measured where it did not; else ``quick`` (the tiny model: the machinery, not
    learning; ``learning_status`` says that no learning preset is measured there yet)."""
    for name in names():
        if env in (load(name).get("default_for") or ()):
            return name
    return "quick"


def measured(env: str, name: str = "learn") -> dict:
    """The ``measured`` block of ``env``'s learning preset (``{"status": "not measured"}`` without one)."""
    preset = env_presets(name).get(env)
    return dict(preset["measured"]) if preset else {"status": NOT_MEASURED}


def _pts(x) -> str:
    return f"{x:.2f}" if isinstance(x, (int, float)) else "?"


def _interval(block) -> str:
    if not isinstance(block, dict):
        return "?"
    return f"{_pts(block.get('mean'))} [{_pts(block.get('low'))}, {_pts(block.get('high'))}]"


def measured_sentence(env: str, name: str = "learn") -> str:
    """One honest sentence on what was measured of ``env``'s learning preset (what the Lab and the node page
    show beside it)."""
    m = measured(env, name)
    status = m.get("status")
    if status == NOT_MEASURED:
        return (f"The learning preset for {env} has not been measured yet (docs/learn_presets.md gives the command): "
                f"its settings are a starting point, not a result.")
    if status == EARLIER:
        return m.get("summary") or f"{env}: measured before the benchmark, by another protocol."
    minutes = m["wall_s_median"] / 60 if isinstance(m.get("wall_s_median"), (int, float)) else None
    load = m.get("load_1min_max")
    machine = (f"{m.get('cpu') or 'the measuring machine'}"
               + (f", 1-minute load up to {load:.1f}" if isinstance(load, (int, float)) else ""))
    figures = (f"{m.get('seeds')} seeds, {m.get('steps')} steps, median {minutes:.1f} min on {machine}"
               if minutes is not None else f"{m.get('seeds')} seeds")
    verdict = ("learns" if status == LEARNS else
               "did not learn by the criterion (the interval of the difference is not above 0)")
    return (f"Measured on {env} ({figures}): {verdict}. Mean training reward over the last quarter of steps "
            f"{_pts(m.get('reward_last'))} against {_pts(m.get('control_last'))} with no update (learning rate "
            f"{m.get('control_lr', '?')}); seed-paired difference {_pts(m.get('diff'))}, 95% interval "
            f"[{_pts(m.get('ci_low'))}, {_pts(m.get('ci_high'))}]. Held-out greedy success before "
            f"{_interval(m.get('heldout_before'))}, after {_interval(m.get('heldout_after'))}.")


def learning_status(env: str) -> dict:
    """``{"status", "preset", "text"}`` for ``env``: the learning preset's measured status, the preset "Run
    this" opens, and the sentence to show."""
    preset = default_for(env)
    text = measured_sentence(env)
    if preset == "quick":
        text += " \"Run this\" opens the quick demo: the tiny random model, the machinery, not learning."
    return {"status": measured(env)["status"], "preset": preset, "text": text}


def note(name: str, env: str) -> str:
    """What the Lab says about recipe ``name`` on environment ``env``: its note for that environment if it has
    one (``notes``), else, for an environment with its own learning preset measured by the benchmark or not
    measured at all, the measured sentence; else its general note."""
    data = load(name)
    own = (data.get("notes") or {}).get(env)
    if own:
        return own
    if env in env_presets(name) and measured(env, name)["status"] != EARLIER:
        return measured_sentence(env, name)
    return data.get("note", "")


def label(name: str, env: str) -> str:
    """The Lab's label of recipe ``name`` on ``env``: the general label, except for a per-environment learning
    preset that is not the one its label was measured on (its status then)."""
    data = load(name)
    if env in env_presets(name) and measured(env, name)["status"] != EARLIER:
        status = measured(env, name)["status"]
        return f"Learning preset for {env} (SmolLM2; {status})"
    return data.get("label", name)


PRESETS: dict[str, dict] = {n: {"label": load(n).get("label", n), "note": load(n).get("note", "")} for n in names()}
