"""Importing a user's module that plugs into the package without editing it: an environment
(``--env-module``, ``envs.load_env_module``) or an algorithm (``--algo-module``, ``registry.load_algo_module``).

A ``.py`` path is loaded from its file under the name ``PREFIX + stem``; anything else is imported as a
dotted module name. A module that cannot be imported is a :class:`ConfigError` naming the flag, the module
and why (the syntax error's place, or the exception and the line that raised it), never a traceback.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from .options import ConfigError


def import_user_module(path_or_module: str, flag: str, prefix: str) -> ModuleType:
    """The module ``path_or_module`` names (a ``.py`` file or a dotted name), imported; ``flag`` names the
    option in errors (``--env-module``), ``prefix`` starts the module name of a file (``atlas_user_env_``)."""
    path = Path(path_or_module)
    if path.suffix == ".py":
        if not path.is_file():
            raise ConfigError(f"{flag}: no such file {str(path)!r}")
        name = f"{prefix}{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path.resolve())
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as err:
            sys.modules.pop(name, None)
            _module_error(flag, path_or_module, err)
        return module
    try:
        return importlib.import_module(path_or_module)
    except ModuleNotFoundError as err:
        raise ConfigError(f"{flag}: cannot import {path_or_module!r} ({err})") from None
    except BaseException as err:
        _module_error(flag, path_or_module, err)


def _module_error(flag: str, what: str, err: BaseException) -> None:
    """Raise the ConfigError that says why importing a user's module failed, and where (an ``error:`` line,
    not a traceback); a ConfigError of its own and an interrupt pass through."""
    if isinstance(err, (ConfigError, KeyboardInterrupt, SystemExit)):
        raise err
    if isinstance(err, SyntaxError):
        raise ConfigError(f"{flag} {what!r}: syntax error at {err.filename}:{err.lineno}: {err.msg}") from None
    import traceback

    frames = traceback.extract_tb(err.__traceback__)
    where = next((f"{f.filename}:{f.lineno}" for f in reversed(frames) if "importlib" not in f.filename), "")
    raise ConfigError(f"{flag} {what!r}: importing it raised {type(err).__name__}: {str(err)[:300]}"
                      + (f" (at {where})" if where else "")) from None
