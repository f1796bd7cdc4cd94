"""Every algorithm and every runnable implementation, collected from the modules that declare them.

Nothing here lists them by hand:

- an algorithm module under ``algorithms/<family>/`` declares its class (a subclass of
  :class:`~reference_impls.algorithm.Algorithm` with a ``name``, the value ``--algo`` takes) and may end
  with ``IMPLEMENTATIONS``, the rows (presets) it ships;
- an environment module under ``envs/`` declares ``ENV_SPECS`` (collected by ``envs.ENVS``) and may end with
  its own ``IMPLEMENTATIONS`` (that environment under an existing algorithm);
- a framework adapter (``ADAPTER_MODULES``: the TRL/verl export, the verl tool) may end with ``IMPLEMENTATIONS``,
  the recipe whose run it carries to that framework (its ``source`` is then the adapter, which the Lab shows).

So adding an algorithm or an environment is one new file (and its test); a user's own plugs in from outside
the package with ``--algo-module`` (:func:`load_algo_module`) or ``--env-module``. A row's ``source`` is the file of
the module that declares it; the comparison grid's rows on the search and planning environments too (their
environment modules declare them).

Collecting imports every algorithm module (and so torch); the functions are cached, and modules that only
need the row type or the node facts import ``reference_impls.implementations``, which imports no model code.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import cache
from pathlib import Path
from types import ModuleType

from . import algorithms as algorithms_package
from . import envs as envs_package
from .algorithm import Algorithm
from .implementations import Implementation
from .options import ConfigError, close_matches

PACKAGE_ROOT = Path(__file__).resolve().parent

def _walk(package: ModuleType, order) -> list[ModuleType]:
    infos = [i for i in pkgutil.walk_packages(package.__path__, package.__name__ + ".") if not i.ispkg]
    return [importlib.import_module(i.name) for i in sorted(infos, key=lambda i: order(i.name))]


def _algorithm_order(module_name: str) -> tuple:
    """Families in the order of ``algorithms.FAMILIES``; a family's base module (grpo/grpo.py) first."""
    family, leaf = module_name.split(".")[-2:]
    rank = algorithms_package.FAMILIES.index(family) if family in algorithms_package.FAMILIES else 99
    return (rank, leaf != family, leaf)


@cache
def algorithm_modules() -> tuple[ModuleType, ...]:
    return tuple(_walk(algorithms_package, _algorithm_order))


@cache
def env_modules() -> tuple[ModuleType, ...]:
    return tuple(_walk(envs_package, lambda name: name))


#: modules outside algorithms/ and envs/ that declare rows: the adapters to other frameworks (they import no
#: registry, so collecting them makes no import loop)
ADAPTER_MODULES = ("reference_impls.export", "reference_impls.verl_tool")


@cache
def adapter_modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(name) for name in ADAPTER_MODULES)


@cache
def algorithms() -> dict[str, type[Algorithm]]:
    """name -> class, for every class that an algorithm module defines with a ``name`` of its own."""
    found: dict[str, type[Algorithm]] = {}
    for module in algorithm_modules():
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, Algorithm) and obj.__module__ == module.__name__
                    and "name" in vars(obj)):
                if obj.name in found:
                    raise RuntimeError(f"two algorithms are named {obj.name!r}: {found[obj.name].__module__}."
                                       f"{found[obj.name].__qualname__} and {module.__name__}.{obj.__qualname__}")
                found[obj.name] = obj
    return found


def _declared_rows(module: ModuleType) -> list[Implementation]:
    source = Path(module.__file__).resolve().relative_to(PACKAGE_ROOT).as_posix()
    return [dataclasses.replace(row, source=source) for row in getattr(module, "IMPLEMENTATIONS", ())]


@cache
def implementations() -> tuple[Implementation, ...]:
    """Every runnable implementation: the algorithm modules' rows, the environment modules' rows, then the
    framework adapters' rows."""
    rows = [row for module in algorithm_modules() + env_modules() + adapter_modules()
            for row in _declared_rows(module)]
    seen: dict[str, Implementation] = {}
    for row in rows:
        if row.id in seen:
            raise RuntimeError(f"two implementation rows have the id {row.id!r} ({seen[row.id].source}, {row.source})")
        seen[row.id] = row
    return tuple(rows)


@cache
def by_id() -> dict[str, Implementation]:
    return {row.id: row for row in implementations()}


def get_implementation(impl_id: str) -> Implementation:
    rows = by_id()
    if impl_id not in rows:
        raise ConfigError(f"--impl: unknown implementation {impl_id!r}{close_matches(impl_id, rows)}; "
                          f"known: {', '.join(rows)}")
    return rows[impl_id]


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node."""
    return [row for row in implementations() if node_id in row.nodes]


def load_algo_module(path_or_module: str) -> list[str]:
    """Import a user's algorithm module (a ``.py`` path or a dotted module name) and add the algorithms it
    defines (subclasses of :class:`Algorithm` with a ``name`` of their own, as in algorithms/<family>/) to
    :func:`algorithms`, so ``--algo NAME`` trains one without editing the package; returns their names."""
    from .user_modules import import_user_module

    module = import_user_module(path_or_module, "--algo-module", "atlas_user_algo_")
    found = algorithms()
    added = []
    for obj in vars(module).values():
        if not (isinstance(obj, type) and issubclass(obj, Algorithm) and obj.__module__ == module.__name__
                and "name" in vars(obj)):
            continue
        taken = found.get(obj.name)
        if taken is not None and taken.__module__ != module.__name__:  # the same module loaded again replaces its own
            raise ConfigError(f"--algo-module {path_or_module!r}: the algorithm name {obj.name!r} is taken by "
                              f"{found[obj.name].__module__}.{found[obj.name].__qualname__}; choose another")
        found[obj.name] = obj
        added.append(obj.name)
    if not added:
        raise ConfigError(f"--algo-module {path_or_module!r} defines no algorithm (a subclass of "
                          "reference_impls.algorithm.Algorithm with a name of its own)")
    return added
