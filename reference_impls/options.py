"""Typed options: one place from which a run's CLI flags, ``--help``, the Lab's form and validation come.

Every option of a run (the trainer's ``TrainConfig``, each algorithm's ``Config``, each environment's
config) is a dataclass field declared with :func:`option`::

    lr: float = option(1e-5, "AdamW learning rate.", low=1e-8, high=1.0, aliases=("learning_rate",))

:func:`specs` reads the fields back as :class:`OptionSpec` (name, kind, default, help, choices, range,
aliases); :func:`coerce` turns a value from the command line, a JSON/YAML file or the Lab's form into the
field's type and checks it; :func:`build` makes the dataclass from a mapping and rejects unknown names
with the closest matches. Errors are :class:`ConfigError`, whose text names the option, the value and
what is allowed, so a bad value fails before any model is loaded.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import typing
from dataclasses import dataclass, field
from typing import Any

KINDS = ("bool", "int", "float", "choice", "text", "ints", "texts")


class ConfigError(ValueError):
    """A bad option: the message says where (e.g. ``--loss-type`` or ``env option 'levels'``), the value and
    what is allowed; ``field`` names the option it is about as a form names it (``lr``, ``loss_type``,
    ``env_options.levels``), or is None when the error is about no single option (an unknown key, a file).
    The Lab places an error beside its field by ``field``, never by reading the message."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def option(default: Any = dataclasses.MISSING, help: str = "", *, choices: tuple | None = None,
           low: float | None = None, high: float | None = None, aliases: tuple[str, ...] = (),
           default_factory: Any = dataclasses.MISSING):
    """A dataclass field carrying its help text, allowed choices, numeric range and alias names."""
    meta = {"help": help, "choices": tuple(choices) if choices else (), "low": low, "high": high,
            "aliases": tuple(aliases)}
    if default_factory is not dataclasses.MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class OptionSpec:
    name: str
    kind: str  # one of KINDS: "ints"/"texts" are tuples (written "1,2,3" on the command line)
    default: Any
    help: str = ""
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    aliases: tuple[str, ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def describe_allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.kind == "bool":
            return "true or false"
        parts = {"int": "an integer", "float": "a number", "ints": "comma-separated integers",
                 "texts": "comma-separated names", "text": "text"}[self.kind]
        if self.low is not None and self.high is not None:
            parts += f" in [{self.low:g}, {self.high:g}]"
        elif self.low is not None:
            parts += f" >= {self.low:g}"
        return parts


def _kind(annotation: Any, has_choices: bool) -> str | None:
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is str:
        return "choice" if has_choices else "text"
    if origin is tuple:
        args = typing.get_args(annotation)
        return "ints" if args and args[0] is int else "texts"
    return None  # dicts and other containers are not options


@functools.cache
def _specs(cls) -> tuple[OptionSpec, ...]:
    return tuple(_read_specs(cls))


def specs(cls) -> list[OptionSpec]:
    """The options of a config dataclass, in declaration order (fields that are not options are skipped)."""
    return list(_specs(cls))


def _read_specs(cls) -> list[OptionSpec]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata or {}
        kind = _kind(hints[f.name], bool(meta.get("choices")))
        if kind is None:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append(OptionSpec(f.name, kind, default, meta.get("help", ""), meta.get("choices", ()),
                              meta.get("low"), meta.get("high"), meta.get("aliases", ())))
    return out


class Options:
    """Base of the option dataclasses: every value is checked (and converted to its field's type) when the
    dataclass is built, however it is built."""

    def __post_init__(self):
        for spec in specs(type(self)):
            value = coerce(spec, getattr(self, spec.name), f"{type(self).__name__}.{spec.name}")
            object.__setattr__(self, spec.name, value)


def spec_map(cls) -> dict[str, OptionSpec]:
    return {s.name: s for s in specs(cls)}


def alias_map(cls) -> dict[str, str]:
    """alias -> option name, for one config class."""
    return {a: s.name for s in specs(cls) for a in s.aliases}


_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


def coerce(spec: OptionSpec, value: Any, where: str | None = None) -> Any:
    """``value`` (a string from the CLI, or a JSON/YAML/form value) as the option's type, checked against
    its choices and range; raises :class:`ConfigError` naming ``where`` (default: the option's flag), with
    the option's name as its ``field``."""
    where = where or spec.flag

    def bad(problem: str = "") -> ConfigError:
        return ConfigError(f"{where}: {value!r} is not valid{problem}; allowed: {spec.describe_allowed()}",
                           field=spec.name)

    kind = spec.kind
    try:
        if kind == "bool":
            if isinstance(value, bool):
                out = value
            elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                out = value.strip().lower() in _TRUE
            else:
                raise bad()
        elif kind == "int":
            if isinstance(value, bool):
                raise bad()
            if isinstance(value, str):
                value_s = value.strip()
                out = int(value_s)
            elif isinstance(value, float):
                if not value.is_integer():
                    raise bad()
                out = int(value)
            else:
                out = int(value)
        elif kind == "float":
            if isinstance(value, bool):
                raise bad()
            out = float(value)
            if out != out or out in (float("inf"), float("-inf")):
                raise bad(" (not a finite number)")
        elif kind in ("choice", "text"):
            if not isinstance(value, str):
                raise bad()
            out = value
        elif kind in ("ints", "texts"):
            items = [x.strip() for x in value.split(",") if x.strip()] if isinstance(value, str) else list(value)
            out = tuple(int(x) for x in items) if kind == "ints" else tuple(str(x) for x in items)
        else:  # pragma: no cover - KINDS is closed
            raise bad()
    except (TypeError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise bad() from None
    values = out if kind in ("ints", "texts") else (out,)
    for v in values:
        if spec.choices and v not in spec.choices:
            raise bad()
        if kind in ("int", "float", "ints"):
            if spec.low is not None and v < spec.low:
                raise bad(f" (below {spec.low:g})")
            if spec.high is not None and v > spec.high:
                raise bad(f" (above {spec.high:g})")
    return out


def close_matches(name: str, names) -> str:
    hits = difflib.get_close_matches(name, list(names), n=3)
    return f" (did you mean {', '.join(hits)}?)" if hits else ""


def build(cls, values: dict, what: str):
    """``cls(**values)`` with every value coerced and checked; ``what`` names the group in errors
    (e.g. ``"env option"``). Aliases are accepted; an unknown name is an error with close matches."""
    smap, aliases = spec_map(cls), alias_map(cls)
    kwargs = {}
    for key, value in (values or {}).items():
        name = aliases.get(key, key)
        if name not in smap:
            raise ConfigError(f"unknown {what} {key!r}{close_matches(key, list(smap) + list(aliases))}; "
                              f"known: {', '.join(smap) or 'none'}", field=key)
        kwargs[name] = coerce(smap[name], value, f"--{key.replace('_', '-')} ({what})")
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{what}s {values}: {err}") from None


def as_dict(obj) -> dict:
    """A config dataclass as JSON-ready data (tuples as lists)."""
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(obj).items()}


# ----------------------------------------------------------------------------------------------------
# command-line flags from options (argparse); values stay strings here and are coerced by build/coerce

def add_flags(parser, option_specs, prefix: str, taken: set[str]) -> None:
    """One flag per option (plus its aliases) not already ``taken``, stored under ``"{prefix}:{name}"``."""
    import argparse

    for spec in option_specs:
        names = [n for n in (spec.name, *spec.aliases) if n not in taken]
        if not names:
            continue
        taken |= set(names)
        flags = ["--" + n.replace("_", "-") for n in names]
        help_text = f"{spec.help} (default {spec.default!r}; {spec.describe_allowed()})".replace("%", "%%")
        if spec.kind == "bool":
            parser.add_argument(*flags, dest=f"{prefix}:{spec.name}", action=argparse.BooleanOptionalAction,
                                default=None, help=help_text)
        else:
            parser.add_argument(*flags, dest=f"{prefix}:{spec.name}", default=None, metavar=spec.name.upper(),
                                help=help_text)


def given_flags(args, prefix: str) -> dict:
    """The values of the flags added with ``prefix`` that were given on the command line."""
    out = {}
    for dest, value in vars(args).items():
        group, sep, name = dest.partition(":")
        if sep and group == prefix and value is not None:
            out[name] = value
    return out


def key_values(items: list[str], flag: str = "--env-option") -> dict:
    """``["k=v", ...]`` -> ``{"k": "v"}`` (values stay strings; the options' types apply later)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"{flag}: {item!r} is not KEY=VALUE")
        out[key] = value
    return out
