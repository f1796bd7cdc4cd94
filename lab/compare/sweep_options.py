"""What a grid file's ``sweep`` field may name (issue 65, the scaling nodes): the option a sweep varies (a
TrainConfig field, or ``env_options.NAME`` of every environment the grid trains on, or ``implementation``: each
point one of the grid's implementations, the preliminaries' two forms of one task), its values, and each value's
point name (its folder under the sweep's ``points/``). ``grid.Grid`` checks its field with ``sweep_field``;
running a sweep is ``lab.compare.sweep``.
"""
from __future__ import annotations

import dataclasses
import re

from reference_impls.options import ConfigError


#: how a sweep names an environment option (``env_options.train_families``)
ENV_OPTION_PREFIX = "env_options."
#: the sweep "option" whose points are the grid's implementations, one per point (issue 65, the preliminaries:
#: the one-step and the multi-turn form of one task); each point's warm starts demonstrate its own form
IMPLEMENTATION = "implementation"
#: TrainConfig fields a sweep may not vary: what makes the run another run (its algorithm, environment, seed, folder)
#: or a mapping with its own form (the env's and the algorithm's options: an env option is ``env_options.NAME``)
UNSWEPT = ("algo", "env", "seed", "out", "env_options", "algo_config", "sft_env")
#: a point's name is a folder name: letters, digits and . _ + - only
_POINT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,79}$")


def point_name(value) -> str:
    """A sweep value as its point's name (and folder): a number or a word as written, a list joined by ``+``
    (``[add, mul]`` -> ``add+mul``), the empty list ``all`` (an option whose empty value means every choice)."""
    if isinstance(value, (list, tuple)):
        return "+".join(point_name(v) for v in value) or "all"
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def sweep_field(value, what: str, options: dict, implementations: list[str]) -> dict:
    """A grid's ``sweep`` checked: a mapping of ``option`` (a TrainConfig field, or ``env_options.NAME`` of every
    environment the grid trains on, or ``implementation``) and ``values`` (at least two, distinct, each a number, a
    word, a boolean or a list of them, each naming a different point); the grid's ``options`` must not set the
    option as well, so that the points differ in it alone. A sweep over ``implementation`` has the grid's
    implementations as its values, each once: a point is the grid with that implementation alone. {} when the grid
    names none."""
    if value is None:
        return {}
    if not isinstance(value, dict) or set(value) != {"option", "values"}:
        raise ConfigError(f"{what}: a mapping with option (a run option such as steps, or env_options.NAME) and "
                          f"values (at least two)")
    option, values = value["option"], value["values"]
    from lab.catalog import get
    from reference_impls.envs import get_env
    from reference_impls.run_config import TrainConfig

    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    if not isinstance(option, str):
        raise ConfigError(f"{what}, option: {option!r} is not a name")
    if option == IMPLEMENTATION:
        if not isinstance(values, list) or len(values) < 2 or sorted(map(str, values)) != sorted(implementations) \
                or len(set(map(str, values))) != len(values):
            raise ConfigError(f"{what}, values: a sweep over implementation has the grid's implementations "
                              f"({', '.join(implementations)}) as its values, each once (at least two); got {values!r}")
        return {"option": option, "values": [str(v) for v in values]}
    if option.startswith(ENV_OPTION_PREFIX):
        name = option.removeprefix(ENV_OPTION_PREFIX)
        for env in dict.fromkeys(get(i).env for i in implementations):
            known = {f.name for f in dataclasses.fields(get_env(env).config)}
            if name not in known:
                raise ConfigError(f"{what}, option: {name!r} is not an option of the environment {env} (its options: "
                                  f"{', '.join(sorted(known))})")
        if name in (options.get("env_options") or {}):
            raise ConfigError(f"{what}, option: {option} is also set in the grid's options; the points would not "
                              f"differ in it alone")
    elif option not in train_fields or option in UNSWEPT:
        raise ConfigError(f"{what}, option: {option!r} is not a run option a sweep may vary (a TrainConfig field "
                          f"other than {', '.join(UNSWEPT)}, env_options.NAME, or {IMPLEMENTATION})")
    elif option in options:
        raise ConfigError(f"{what}, option: {option} is also set in the grid's options ({options[option]!r}); the "
                          f"points would not differ in it alone")

    def scalar(v) -> bool:
        return isinstance(v, (int, float, str, bool))

    if not isinstance(values, list) or len(values) < 2 or not all(
            scalar(v) or (isinstance(v, list) and all(scalar(x) for x in v)) for v in values):
        raise ConfigError(f"{what}, values: {values!r} is not a list of at least two values (numbers, words, "
                          f"booleans, or lists of them)")
    names = [point_name(v) for v in values]
    bad = [n for n in names if not _POINT_NAME.match(n)]
    if bad:
        raise ConfigError(f"{what}, values: {', '.join(map(repr, bad))} cannot name a point's folder (letters, "
                          f"digits and . _ + - only, at most 80)")
    if len(set(names)) != len(names):
        raise ConfigError(f"{what}, values: {values} repeats a point ({', '.join(names)})")
    return {"option": option, "values": [list(v) if isinstance(v, list) else v for v in values]}
