"""What the Lab offers: implementations, their presets, their form fields, and validation.

Plain data + functions, unit-tested without Streamlit; the Lab page renders them. Nothing here is
written twice: the implementations are ``reference_impls.registry``'s (what ``train --list``
prints), every form field is an option of the trainer's, the algorithm's or the environment's config
dataclass (help, choices and range included), presets are the YAML files in ``lab/recipes/``, and a
config is validated once, here (``check``, with the trainer's own ``run_config.resolve``), before any
process starts; the resolved config goes on to the run manager as it is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from reference_impls.implementations import Implementation
from reference_impls.options import ConfigError, OptionSpec, coerce, specs

from . import recipes

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference_impls"

#: the run options the Lab's form shows (the others keep their defaults, or the preset's values)
FORM_OPTIONS = ("steps", "seed", "lr", "prompts_per_step", "group_size", "micro_batch_size", "micro_batch_tokens",
                "max_new_tokens_per_turn", "max_completion_tokens", "temperature", "checkpoint_every", "sft_steps",
                "precision")
#: preset settings the page does not show as fields; they travel with the submitted config unchanged
HIDDEN_KEYS = ("sft_env",)


def available() -> list[Implementation]:
    """Implementations whose algorithm and environment are registered in the trainer."""
    from reference_impls import registry

    return [i for i in registry.implementations() if _runnable(i)]


def _runnable(impl: Implementation) -> bool:
    from reference_impls import registry
    from reference_impls.envs import ENVS

    return impl.algo in registry.algorithms() and impl.env in ENVS


def get(impl_id: str) -> Implementation:
    from reference_impls import registry

    # checks only the row asked for: a node page resolves ~1700 grid variants, and testing every row's
    # environment each time was most of its first render
    for impl in registry.implementations():
        if impl.id == impl_id and _runnable(impl):
            return impl
    raise KeyError(f"unknown or unavailable implementation '{impl_id}'")


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node. The first call collects the rows from the algorithm and
    environment modules (``reference_impls.registry``), which imports torch once per process."""
    from reference_impls import registry

    return registry.for_node(node_id)


def not_implemented(node_id: str) -> str:
    """Why a node that should have a reference implementation has none yet ("" when it has one or needs none)."""
    from reference_impls.implementations import NOT_IMPLEMENTED

    return NOT_IMPLEMENTED.get(node_id, "")


def equation(impl: Implementation) -> str:
    """The objective ``impl`` runs, as LaTeX: what the row itself defines (an environment's reward), then the
    loss its algorithm class computes under the row's options (``objective(cfg)``, written beside the loss
    code in the algorithm's module, so every row shows its own terms and values)."""
    from reference_impls import registry
    from reference_impls.implementations import join_equations
    from reference_impls.options import build

    if not impl.trains:  # no algorithm, no loss: only what the row measures
        return impl.equation
    cls = registry.algorithms()[impl.algo]
    cfg = build(cls.Config, impl.algo_options, f"option of --algo {impl.algo}")
    return join_equations(impl.equation, cls.objective(cfg))


def source_path(impl: Implementation) -> Path:
    return REFERENCE_DIR / impl.source


# ----------------------------------------------------------------------------------------------------
# form fields: options of the typed configs

def train_fields() -> list[OptionSpec]:
    from reference_impls.run_config import TrainConfig

    by_name = {s.name: s for s in specs(TrainConfig)}
    return [by_name[n] for n in FORM_OPTIONS]


def algo_fields(impl: Implementation) -> list[OptionSpec]:
    from reference_impls import registry

    return specs(registry.algorithms()[impl.algo].Config)


def env_fields(impl: Implementation) -> list[OptionSpec]:
    from reference_impls.envs import get_env

    return get_env(impl.env).option_specs()


def default_config(impl: Implementation) -> dict:
    """The form's starting values: the trainer's defaults, the algorithm's and environment's, the
    implementation's switches. Algorithm options are flat; environment options sit under ``env_options``."""
    from reference_impls.run_config import TrainConfig

    base = dataclasses.asdict(TrainConfig())
    config = {s.name: base[s.name] for s in train_fields()}
    config.update({s.name: s.default for s in algo_fields(impl)})
    config.update(impl.algo_options)
    config["env_options"] = {**{s.name: _plain(s.default) for s in env_fields(impl)}, **impl.env_options}
    config.update(algo=impl.algo, env=impl.env, model="tiny")
    return config


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


PRESETS = recipes.PRESETS


def default_preset(impl: Implementation) -> str:
    """The preset "Run this" opens for ``impl`` (recipes.default_for: a learning preset where one is measured)."""
    return recipes.default_for(impl.env)


def preset_config(impl: Implementation, preset: str) -> dict:
    """``default_config`` with the preset's options and its environment and algorithm adjustments."""
    config = default_config(impl)
    for layer in recipes.layers(preset, impl.env, impl.algo, impl.id):
        layer = dict(layer)
        env_options = layer.pop("env_options", None)
        config.update(layer)
        if env_options:
            config["env_options"] = {**config["env_options"], **env_options}
    return config


@dataclass(frozen=True)
class FormCheck:
    """The Lab form's values checked: ``errors`` maps a field (``lr``, ``loss_type``, ``env_options.levels``;
    ``config`` for an error about no single field) to its message; ``resolved`` is the validated config
    (``run_config.Resolved``, handed to ``RunManager.submit`` as it is), None when there are errors."""

    errors: dict[str, str]
    resolved: object | None = None


def check(impl: Implementation, config: dict) -> FormCheck:
    """The one validation of the Lab's form, before any process starts: every field with its typed option
    (all bad fields at once), then the cross-option rules of the same ``run_config.resolve`` as the command
    line on the valid ones. Each error is placed by its ``ConfigError.field``."""
    from reference_impls.envs import get_env
    from reference_impls.run_config import TrainConfig, config_from_dict, resolve

    errors: dict[str, str] = {}
    groups = [(specs(TrainConfig), config, ""), (algo_fields(impl), config, ""),
              (get_env(impl.env).option_specs(), config.get("env_options", {}), "env_options.")]
    for option_specs, values, prefix in groups:
        for spec in option_specs:
            if spec.name in values:
                try:
                    coerce(spec, values[spec.name], spec.name)
                except ConfigError as err:
                    errors[prefix + spec.name] = err.message
    # cross-option checks on the values that are valid (an invalid field falls back to its default)
    checked = {k: v for k, v in config.items() if k not in errors}
    checked["env_options"] = {k: v for k, v in config.get("env_options", {}).items()
                              if f"env_options.{k}" not in errors}
    resolved = None
    try:
        resolved = resolve(config_from_dict({**checked, "out": config.get("out") or "lab-validation"}))
    except ConfigError as err:
        errors.setdefault(err.field or "config", err.message)
    except TypeError as err:  # an unknown key in the mapping
        errors["config"] = str(err)
    return FormCheck(errors, None if errors else resolved)


def validate(impl: Implementation, config: dict) -> dict[str, str]:
    """{field: message} for every invalid value of the Lab's form (empty = valid): ``check``'s errors."""
    return check(impl, config).errors


def implementation_for(config: dict) -> str | None:
    """The id of the registered implementation a run config runs: among those with the config's algorithm and
    environment whose switches (algorithm and environment options) all hold in it, the one with the most
    switches (``calculator-dapo`` over ``calculator-grpo`` for GRPO with DAPO's loss); None when none matches."""
    from reference_impls import registry
    from reference_impls.envs import get_env
    from reference_impls.options import specs

    algorithm, env = registry.algorithms().get(config.get("algo")), config.get("env")
    if algorithm is None:
        return None
    # an option the config leaves out has its default (a CLI run may give only --loss-type)
    algo_defaults = {s.name: s.default for s in specs(algorithm.Config)}
    algo_config = {**algo_defaults, **{k: v for k, v in config.items() if k in algo_defaults}}
    algo_config.update(config.get("algo_config") or {})
    try:
        env_defaults = {s.name: s.default for s in get_env(env).option_specs()}
    except (KeyError, ValueError):
        env_defaults = {}
    env_options = {**env_defaults, **(config.get("env_options") or {})}

    def same(a, b) -> bool:
        return list(a) == list(b) if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) else a == b

    best, best_size = None, -1
    for impl in registry.implementations():
        if (impl.algo, impl.env) != (config.get("algo"), env):
            continue
        switches = [(algo_config, impl.algo_options), (env_options, impl.env_options)]
        if all(k in have and same(have[k], v) for have, wanted in switches for k, v in wanted.items()):
            # a switch that names the default distinguishes nothing (calculator-multi-turn-grpo's mode "tool"
            # is every calculator run's): only the others count, and a tie keeps the row listed first
            size = sum(not same(v, defaults.get(k)) for defaults, wanted in
                       ((algo_defaults, impl.algo_options), (env_defaults, impl.env_options)) for k, v in wanted.items())
            if size > best_size:
                best, best_size = impl.id, size
    return best


# -- nodes without an implementation of their own: the closest runnable proxy --

def node_proxy(node_id: str) -> tuple[Implementation | None, str] | None:
    """For a capability/task node without its own implementation: (the closest runnable proxy or None, why),
    from ``reference_impls.implementations.NODE_PROXIES``; None when the node is not listed there."""
    from reference_impls import registry
    from reference_impls.implementations import NODE_PROXIES

    if node_id not in NODE_PROXIES:
        return None
    impl_id, reason = NODE_PROXIES[node_id]
    return (registry.by_id()[impl_id] if impl_id else None), reason
