"""The grid file: what a grid names and what each of its cells and warm starts is given.

A grid file (``lab/recipes/grids/NAME.yaml``) names a recipe (the run options of every cell,
``lab/recipes/NAME.yaml`` with its per-environment and per-algorithm layers), the budget overrides
(``options``: steps, prompts, group size, lengths, and ``max_wall_s``, a safety cap on each cell's wall
time), the implementations (``train --list`` ids), the seeds, the held-out (test) evaluation, and optionally
``mu`` (policy updates per rollout batch, by variant), a ``validation`` split, an ``lr_sweep`` and ``passk`` (the
implementation whose every seed pass@k samples, named before any result, on at least 50 test problems).

Budget = work, never wall time: every cell of an environment starts from a warm-start checkpoint (SFT once per
environment and warm seed: ``warm_seeds``; the cell of seed index i starts from the warm start of
``warm_seeds[i % n]``, so the cells of one seed share theirs). A grid file that names neither ``warm_seeds`` nor
``warm_seed`` gives each seed its own warm start (issue 60), so that the warm starts' variation is in the seed
variance; one naming ``warm_seed`` alone (every grid.yaml written before) has one. ``budget: sampled-episodes``
(issue 60): every cell samples ``steps`` rollout batches of P x G episodes in all, PPO's critic warm-up steps
among them (its policy gets the rest), DAPO's discarded groups among them (its record counts what it trained
on); ``policy-batches`` (a grid.yaml without the field): every policy gets ``steps`` batches and PPO's critic
warm-up comes on top. Each batch gives ``mu`` minibatch updates, set per family as its paper runs it (``mu``);
an offline algorithm (the DPO family) builds its pairs from as many episodes as an online cell samples
(``pair_prompts`` = steps x P). A cell stopped by ``max_wall_s`` has done less work: its record says
``complete: false`` and it is kept out of every verdict. Held-out success is measured greedily on the same
problems for every cell (paired), once; learning rates are chosen on the validation split (``driver.sweep``),
never on the test problems: with ``lr_trials`` over at least two trial seeds that are no cell's (every cell
trains after the choice), the range extended where the best rate sits at its end; without, on one seed whose
chosen run is that seed's cell.

A variant is an implementation id without its environment (``calculator-gspo`` -> ``gspo``): the key of
``mu`` and ``lr_sweep`` (``lr_sweep`` also takes an algorithm name, e.g. ``dpo``, and ``default``).

A *sweep* grid (``sweep: {option, values}``, issue 65: the scaling nodes) varies one run option and nothing
else: each value is a point, an ordinary grid (``Grid.at_point``: the grid's options with that value set) run in
its own folder with its own warm starts, seeds and held-out test (``lab.compare.sweep``). The option is a
TrainConfig field (``steps``, ``group_size``, ``model``, ``train_pool``, ``rollout_engine``, ...) or an environment
option (``env_options.NAME``), and the grid's ``options`` must not set it too; or it is ``implementation`` (the
preliminaries, issue 65): each point is the grid with one of its implementations alone, so that each runs from its
own warm starts (the one-step and the multi-turn form of one task demonstrate different transcripts).

Owns ``Grid`` (loading and checking a grid file), ``GRIDS`` (the shipped grid files), the variants, a sweep's
points and the cell ids. What the recipe and the grid give a cell (``cell_config``) and an environment's warm start
(``warm_settings``, ``chosen_env_options``) is ``cell_options``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from reference_impls.options import ConfigError

from lab import recipes

from .sweep_options import ENV_OPTION_PREFIX, IMPLEMENTATION, point_name, sweep_field

GRIDS = Path(__file__).resolve().parents[1] / "recipes" / "grids"


@dataclass(frozen=True)
class Grid:
    name: str
    recipe: str
    implementations: tuple[str, ...]
    seeds: tuple[int, ...]
    options: dict = field(default_factory=dict)  # budget overrides on top of the recipe
    eval_n: int = 100
    eval_seed: int = 4242
    warm_seed: int = 0  # the first warm start's seed (``warm_seeds[0]``); the old learning-rate trials' seed
    # the warm starts' seeds: cell seed index i starts from the warm start of warm_seeds[i % n] (issue 42); a grid
    # file naming neither these nor warm_seed gets one per cell seed (issue 60), one naming warm_seed alone one
    warm_seeds: tuple[int, ...] = ()
    label: str = ""
    baseline: str = "grpo"  # the algorithm every other one is compared with, per environment
    # also measure the untrained model (the recipe's model, no warm start) on the same held-out problems:
    # the "base" of base / SFT / SFT + RL
    base: bool = False
    # demonstrate the warm start on the cells' env_options (the levels they train and are evaluated on)
    # rather than the environment's defaults; off in the core grid, whose shipped warm starts predate it
    warm_on_env_options: bool = False
    # variant -> mu, the policy updates per rollout batch (minibatches of one pass); absent = 1
    mu: dict = field(default_factory=dict)
    # the validation split: n problems of the held-out distribution, none of them a test problem; 0 = none
    validation_n: int = 0
    validation_seed: int = 0
    # variant | algorithm | "default" -> the learning rates tried (the same number for every cell's algorithm)
    lr_sweep: dict = field(default_factory=dict)
    # pass@k, named before any result: {implementation: a variant (every environment's cell of it) or
    # {env: implementation id}, problems, samples, k}; the stage samples every seed's cell of it (``passk_spec``)
    passk: dict = field(default_factory=dict)
    # the learning-rate trials' own seeds (issue 60): none of them a cell seed, so every cell trains after the
    # choice and none is a run the choice was made on; trial j starts from the warm start of warm_seeds[j % n].
    # Empty (every grid.yaml written before them): one trial per rate, of seed warm_seed, and the chosen trial
    # is that seed's cell
    lr_trial_seeds: tuple[int, ...] = ()
    # how many rates a sweep may add beyond an end of its range when the best rate is at that end (the range's
    # step: the ratio of its two outermost neighbours), so that the choice is bracketed; 0: none added
    lr_extend: int = 0
    # what the same budget means (``BUDGETS``): "sampled-episodes", every cell samples steps x P x G episodes in
    # all, PPO's critic warm-up among them; "policy-batches" (every grid.yaml written before issue 60), every
    # policy gets steps rollout batches and PPO's critic warm-up comes on top
    budget: str = "policy-batches"
    # a sweep (issue 65): {option, values}, the one run option whose values are the points (``sweep_points``,
    # ``at_point``); empty: an ordinary grid
    sweep: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.warm_seeds:  # a grid of one warm start (every grid file before issue 42)
            object.__setattr__(self, "warm_seeds", (self.warm_seed,))
        elif self.warm_seed != self.warm_seeds[0]:
            object.__setattr__(self, "warm_seed", self.warm_seeds[0])

    @classmethod
    def load(cls, name_or_path: str) -> "Grid":
        path = Path(name_or_path)
        if not path.suffix:
            path = GRIDS / f"{name_or_path}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in GRIDS.glob("*.yaml")))
            raise ConfigError(f"grid {name_or_path!r}: no such file or grid name (known grids: {known})")
        return cls.from_dict(read_grid_file(path), str(path))

    @classmethod
    def from_dict(cls, data: dict, where: str = "grid") -> "Grid":
        from lab.catalog import available

        if not isinstance(data, dict):
            raise ConfigError(f"{where}: a grid is a mapping")
        unknown = (set(data) - {f.name for f in dataclasses.fields(cls)} - {"eval", "validation", "lr_trials"}) | (
            {"validation_n", "validation_seed", "eval_n", "eval_seed", "lr_trial_seeds", "lr_extend"} & set(data))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("name", "recipe", "implementations", "seeds"):
            if key not in data:
                raise ConfigError(f"{where}: missing field '{key}'")
        known = {i.id for i in available()}
        bad = [i for i in data["implementations"] if i not in known]
        if bad:
            raise ConfigError(f"{where}: field 'implementations': unknown {', '.join(map(str, bad))} "
                              f"(see python -m reference_impls.train --list)")
        if not data["seeds"] or not all(isinstance(s, int) and s >= 0 for s in data["seeds"]):
            raise ConfigError(f"{where}: field 'seeds' must be a non-empty list of integers >= 0")
        if len(set(data["seeds"])) != len(data["seeds"]):
            raise ConfigError(f"{where}: field 'seeds': {data['seeds']} repeats a seed")
        try:
            recipes.load(data["recipe"])
        except KeyError as err:
            raise ConfigError(f"{where}: field 'recipe': {err.args[0]}") from None
        ev = data.get("eval", {}) or {}
        val = data.get("validation", {}) or {}
        if not isinstance(val, dict) or not set(val) <= {"n", "seed"}:
            raise ConfigError(f"{where}: field 'validation' is a mapping with n and seed")
        validation_n = _int_field(val.get("n", 0), f"{where}: field 'validation', n", low=0, high=MAX_PROBLEMS)
        if not isinstance(ev, dict) or not set(ev) <= {"n", "seed"}:
            raise ConfigError(f"{where}: field 'eval' is a mapping with n and seed")
        _int_field(ev.get("n", 100), f"{where}: field 'eval', n", low=1, high=MAX_PROBLEMS)
        _int_field(ev.get("seed", 4242), f"{where}: field 'eval', seed", low=0)
        if not isinstance(data["seeds"], list) or len(data["seeds"]) > 1000:
            raise ConfigError(f"{where}: field 'seeds' must be a list of at most 1000 seeds")
        mu = _variant_map(data.get("mu"), f"{where}: field 'mu'", known, algos=False)
        for key, value in mu.items():
            _int_field(value, f"{where}: field 'mu', {key}", low=1)
        lr_sweep = _variant_map(data.get("lr_sweep"), f"{where}: field 'lr_sweep'", known, algos=True)
        for key, values in lr_sweep.items():
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1 for v in values):
                raise ConfigError(f"{where}: field 'lr_sweep', {key}: a non-empty list of learning rates in (0, 1)")
        if len({len(v) for v in lr_sweep.values()}) > 1:
            raise ConfigError(f"{where}: field 'lr_sweep': every algorithm gets the same number of trials "
                              f"({', '.join(f'{k}: {len(v)}' for k, v in lr_sweep.items())})")
        if lr_sweep and not validation_n:
            raise ConfigError(f"{where}: field 'lr_sweep' needs a validation split (validation: {{n, seed}}): "
                              "learning rates are chosen on validation problems, never on the test problems")
        passk = _passk_field(data.get("passk"), f"{where}: field 'passk'", list(data["implementations"]))
        warm_seeds = _warm_seeds_field(data, where)
        trial_seeds, extend = _lr_trials_field(data, where, lr_sweep)
        budget = data.get("budget", "policy-batches")
        if budget not in BUDGETS:
            raise ConfigError(f"{where}: field 'budget': {budget!r} is not one of {', '.join(BUDGETS)}")
        sweep = sweep_field(data.get("sweep"), f"{where}: field 'sweep'", dict(data.get("options", {}) or {}),
                             list(data["implementations"]))
        if sweep.get("option") == IMPLEMENTATION and passk:
            raise ConfigError(f"{where}: field 'passk' with a sweep over implementation: each point is one "
                              f"implementation's grid; name pass@k in a grid of its own")
        return cls(name=str(data["name"]), recipe=data["recipe"], implementations=tuple(data["implementations"]),
                   seeds=tuple(data["seeds"]), options=dict(data.get("options", {}) or {}),
                   eval_n=int(ev.get("n", 100)), eval_seed=int(ev.get("seed", 4242)),
                   warm_seed=warm_seeds[0], warm_seeds=warm_seeds, label=str(data.get("label", "")),
                   baseline=str(data.get("baseline", "grpo")), base=bool(data.get("base", False)),
                   warm_on_env_options=bool(data.get("warm_on_env_options", False)), mu=mu,
                   validation_n=validation_n,
                   validation_seed=_int_field(val.get("seed", 0), f"{where}: field 'validation', seed", low=0),
                   lr_sweep={k: [float(v) for v in vals] for k, vals in lr_sweep.items()}, passk=passk,
                   lr_trial_seeds=trial_seeds, lr_extend=extend, budget=budget, sweep=sweep)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["implementations"], d["seeds"] = list(self.implementations), list(self.seeds)
        if len(self.warm_seeds) > 1:
            d["warm_seeds"] = list(self.warm_seeds)
        else:  # one warm start: warm_seed alone, as every grid.yaml written before warm_seeds (so it still binds)
            d.pop("warm_seeds")
        d["eval"] = {"n": d.pop("eval_n"), "seed": d.pop("eval_seed")}
        n, seed = d.pop("validation_n"), d.pop("validation_seed")
        trial_seeds, extend = d.pop("lr_trial_seeds"), d.pop("lr_extend")
        if trial_seeds:  # absent when unused: a grid.yaml written before them still binds (and means the old way)
            d["lr_trials"] = {"seeds": list(trial_seeds), "extend": extend}
        if self.budget == "policy-batches":
            d.pop("budget")
        if not self.sweep:  # a point of a sweep, and every ordinary grid, reads as a grid.yaml always did
            d.pop("sweep")
        for key, value in (("mu", d["mu"]), ("lr_sweep", d["lr_sweep"]), ("validation", n and {"n": n, "seed": seed}),
                           ("passk", d["passk"])):
            if not value:  # absent when unused, so a grid.yaml written before these fields still binds
                d.pop(key, None)
            else:
                d[key] = value
        return d

    def sweep_points(self) -> list[tuple[str, object]]:
        """(name, value) of each point of a sweep grid, in the file's order; the name is the point's folder under
        the sweep's ``points/`` (``point_name``). [] for an ordinary grid."""
        return [(point_name(v), v) for v in self.sweep.get("values", [])]

    def at_point(self, value) -> "Grid":
        """The ordinary grid of one point of this sweep: the same grid with ``value`` set for the swept option (in
        ``options``, or in ``options.env_options`` for ``env_options.NAME``; for ``implementation``, the grid with
        that implementation alone), named ``<name>-<point>``."""
        if not self.sweep:
            raise ConfigError(f"grid {self.name}: not a sweep (no field 'sweep')")
        if value not in self.sweep["values"]:
            raise ConfigError(f"grid {self.name}: {value!r} is not one of its sweep's values {self.sweep['values']}")
        options = {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.options.items()}
        option = self.sweep["option"]
        name = point_name(value)
        if option == IMPLEMENTATION:  # the point is the grid with that implementation alone, and its warm starts
            return dataclasses.replace(self, name=f"{self.name}-{name}", label=f"{self.label or self.name}: {name}",
                                       implementations=(value,), options=options, sweep={})
        if option.startswith(ENV_OPTION_PREFIX):
            options.setdefault("env_options", {})[option.removeprefix(ENV_OPTION_PREFIX)] = value
        else:
            options[option] = value
        label = f"{self.label or self.name}: {option} = {name}"
        return dataclasses.replace(self, name=f"{self.name}-{name}", label=label, options=options, sweep={})

    def sweep_lrs(self, impl_id: str) -> list[float]:
        """The learning rates tried for ``impl_id`` (its variant's list, else its algorithm's, else
        ``default``); [] when the grid has no sweep."""
        from lab.catalog import get

        impl = get(impl_id)
        for key in (variant(impl_id), impl.algo, "default"):
            if key in self.lr_sweep:
                return list(self.lr_sweep[key])
        return []

    def passk_implementation(self, env: str) -> str | None:
        """The implementation whose cells pass@k samples on ``env``, as the grid names it in advance (None: the
        grid names none there)."""
        named = self.passk.get("implementation")
        if isinstance(named, dict):
            return named.get(env)
        impl = f"{env}-{named}" if named else None
        return impl if impl in self.implementations else None

    def cells(self) -> list[tuple[str, int]]:
        """(implementation, seed), seed-major: every algorithm gets seed 0 before any gets seed 1, so a
        grid stopped early still compares all algorithms."""
        return [(impl, seed) for seed in self.seeds for impl in self.implementations]

    def warm_seed_of(self, seed: int) -> int:
        """The seed of the warm start a cell of seed ``seed`` starts from: ``warm_seeds[i % n]`` for the seed's index
        i in ``seeds`` (cells of the same seed share a warm start, so seed-paired comparisons stay paired); the
        learning-rate trial seed of index j in ``lr_trial_seeds`` gets ``warm_seeds[j % n]`` (trials over several
        warm starts); any other seed (the old trials' ``warm_seed``, when it is not a cell seed) gets the first."""
        if seed in self.seeds:
            i = self.seeds.index(seed)
        else:
            i = self.lr_trial_seeds.index(seed) if seed in self.lr_trial_seeds else 0
        return self.warm_seeds[i % len(self.warm_seeds)]

    def trial_seeds(self) -> tuple[int, ...]:
        """The seeds each learning rate is tried with: ``lr_trial_seeds``, or ``(warm_seed,)`` in a grid that names
        none (its chosen trial is that seed's cell: ``trial_is_cell``)."""
        return self.lr_trial_seeds or (self.warm_seed,)

    @property
    def trial_is_cell(self) -> bool:
        """Whether the chosen trial's run is taken as a cell (a grid without ``lr_trials``: seed warm_seed's cell is
        the run the choice was made on); with ``lr_trials`` every cell trains after the choice."""
        return not self.lr_trial_seeds

    def design(self) -> list[str]:
        """What this grid's method did where grids differ (issue 60), one sentence each: its warm starts, its
        learning-rate trials and what its budget counts. A grid.yaml written before issue 60 reads as it ran."""
        n, k = len(self.warm_seeds), len(self.seeds)
        if n == 1:
            warm = "one warm start per environment, shared by every seed: comparisons with it are conditional on it"
        elif n == k:
            warm = (f"a warm start per seed ({n} per environment): the warm starts' variation is in the seed "
                    f"variance")
        else:
            warm = (f"{n} warm starts per environment shared by {k} seeds (seed index i from warm seed "
                    f"warm_seeds[i % {n}]): comparisons with them are conditional on these {n}")
        lines = [f"Warm starts: {warm}."]
        if self.lr_sweep:
            if self.trial_is_cell:
                lines.append(f"Learning rates: one trial per rate, of seed {self.warm_seed}; the chosen trial is "
                             f"that seed's cell (chosen on its validation score).")
            else:
                lines.append(f"Learning rates: each rate tried with seeds {', '.join(map(str, self.lr_trial_seeds))} "
                             f"(none a cell seed; mean validation success), up to {self.lr_extend} rate(s) added "
                             f"beyond an end of the range that wins; every cell trained after the choice.")
        if self.budget == "sampled-episodes":
            lines.append("Budget: every cell samples steps x P x G episodes in all (PPO's critic warm-up among "
                         "them); each record counts what it sampled and what its policy trained on.")
        else:
            lines.append("Budget: every policy gets the same rollout batches; PPO's critic warm-up samples on top "
                         "and DAPO trains on the groups it keeps.")
        return lines

    def envs(self) -> list[str]:
        from lab.catalog import get

        return list(dict.fromkeys(get(i).env for i in self.implementations))


def _warm_seeds_field(data: dict, where: str) -> tuple[int, ...]:
    """``warm_seeds`` checked (distinct integers >= 0, no more than the cell seeds), or ``(warm_seed,)`` when the grid
    names none; a grid naming both must agree on the first."""
    if "warm_seeds" not in data:
        if "warm_seed" not in data:  # the default since issue 60: each seed its own warm start
            return tuple(data["seeds"])
        return (_int_field(data["warm_seed"], f"{where}: field 'warm_seed'", low=0),)
    values = data["warm_seeds"]
    what = f"{where}: field 'warm_seeds'"
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{what}: a non-empty list of seeds (integers >= 0)")
    for value in values:
        _int_field(value, what, low=0)
    if len(set(values)) != len(values):
        raise ConfigError(f"{what}: {values} repeats a seed (each warm start is a different SFT run)")
    if len(values) > len(data["seeds"]):
        raise ConfigError(f"{what}: {len(values)} warm starts for {len(data['seeds'])} seeds; a warm start no cell "
                          f"starts from is never trained")
    if "warm_seed" in data and data["warm_seed"] != values[0]:
        raise ConfigError(f"{what}: the first ({values[0]}) differs from field 'warm_seed' ({data['warm_seed']}); "
                          f"name warm_seeds only")
    return tuple(values)


#: what a grid's "same budget" counts (field ``budget``): the old meaning first (a grid.yaml without the field)
BUDGETS = ("policy-batches", "sampled-episodes")
#: the most rates a sweep may add beyond its range (``lr_trials.extend``)
MAX_LR_EXTEND = 4


def _lr_trials_field(data: dict, where: str, lr_sweep: dict) -> tuple[tuple[int, ...], int]:
    """``lr_trials`` ({seeds, extend}) checked: at least two distinct seeds >= 0, none of them a cell seed, and an
    ``lr_sweep`` to try them on; ((), 0) when the grid names none (the old trials: one seed, its run the cell)."""
    value = data.get("lr_trials")
    if value is None:
        return (), 0
    what = f"{where}: field 'lr_trials'"
    if not isinstance(value, dict) or not set(value) <= {"seeds", "extend"} or "seeds" not in value:
        raise ConfigError(f"{what}: a mapping with seeds (at least two, none a cell seed) and optionally extend")
    seeds = value["seeds"]
    if not isinstance(seeds, list) or len(seeds) < 2:
        raise ConfigError(f"{what}, seeds: {seeds!r} is not a list of at least two seeds (a choice on one seed "
                          f"picks that seed's noise)")
    for s in seeds:
        _int_field(s, f"{what}, seeds", low=0)
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{what}, seeds: {seeds} repeats a seed")
    shared = sorted(set(seeds) & set(data["seeds"]))
    if shared:
        raise ConfigError(f"{what}, seeds: {shared} also cell seeds; a cell would be a run the choice was made on")
    if not lr_sweep:
        raise ConfigError(f"{what}: needs an lr_sweep (the rates the trials try)")
    short = sorted(str(k) for k, rates in lr_sweep.items() if len(set(rates)) < 2)
    if short:
        raise ConfigError(f"{what}: lr_sweep {', '.join(short)} tries fewer than two rates; a choice on one rate "
                          f"is no choice, and a range needs two ends to be extended past")
    extend = _int_field(value.get("extend", 0), f"{what}, extend", low=0, high=MAX_LR_EXTEND)
    return tuple(seeds), extend


def _int_field(value, what: str, low: int, high: int = 10**9) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ConfigError(f"{what}: {value!r} is not an integer in [{low}, {high}]")
    return value


#: the largest grid file read (the shipped ones are a few KB)
MAX_GRID_FILE_BYTES = 2**20
#: the most held-out or validation problems a grid scores (the shipped grids use 100 and 200)
MAX_PROBLEMS = 100_000


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: a grid file has no use for them, and a few nested aliases expand to
    gigabytes."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases are not allowed in a grid file", event.start_mark)
        return super().compose_node(parent, index)


def read_grid_file(path: Path) -> dict:
    """A grid file's mapping, read with bounds: a regular file (not a link, a FIFO or a device) of at most
    ``MAX_GRID_FILE_BYTES``, YAML without aliases. FileNotFoundError when there is none; ConfigError naming the
    file otherwise."""
    path = Path(path)
    info = path.lstat()  # FileNotFoundError: no grid file
    import stat

    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path}: is not a regular file (a link, a folder or a device); a grid file is read "
                          f"from a regular file only")
    if info.st_size > MAX_GRID_FILE_BYTES:
        raise ConfigError(f"{path}: {info.st_size} bytes, more than a grid file may hold ({MAX_GRID_FILE_BYTES})")
    with open(path, "rb") as f:
        raw = f.read(MAX_GRID_FILE_BYTES + 1)
    try:
        data = yaml.load(raw.decode(), Loader=_NoAliasLoader)
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid YAML ({str(err).splitlines()[0] if str(err) else err})") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: holds a YAML {type(data).__name__}, not a grid (a mapping)")
    return data


#: pass@k runs on at least this many test problems (issue 41): fewer would leave pass@k at large k undecided
MIN_PASSK_PROBLEMS = 50


def _passk_field(value, what: str, implementations: list[str]) -> dict:
    """The grid's pass@k declaration, checked and completed (``k`` defaults to 1 and ``samples``): ``implementation``
    a variant with a cell in the grid, or a mapping environment -> one of the grid's implementations of it."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not set(value) <= {"implementation", "problems", "samples", "k"} or (
            "implementation" not in value):
        raise ConfigError(f"{what}: a mapping with implementation (a variant such as grpo, or environment -> "
                          f"implementation id), problems, samples and optionally k")
    named = value["implementation"]
    if isinstance(named, dict):
        from lab.catalog import get

        bad = [f"{env}: {impl}" for env, impl in named.items()
               if impl not in implementations or get(impl).env != env]
        if bad or not named:
            raise ConfigError(f"{what}, implementation: {', '.join(map(str, bad)) or 'empty'} (each environment names "
                              f"one of the grid's implementations on it)")
    elif not isinstance(named, str) or not any(variant(i) == named for i in implementations):
        raise ConfigError(f"{what}, implementation: {named!r} is not the variant of any of the grid's "
                          f"implementations (e.g. grpo for calculator-grpo)")
    problems = _int_field(value.get("problems"), f"{what}, problems", low=MIN_PASSK_PROBLEMS)
    samples = _int_field(value.get("samples"), f"{what}, samples", low=2)
    ks = value.get("k", [1, samples])
    if not isinstance(ks, list) or not ks or not all(isinstance(k, int) and not isinstance(k, bool)
                                                     and 1 <= k <= samples for k in ks):
        raise ConfigError(f"{what}, k: a non-empty list of integers from 1 to samples ({samples})")
    return {"implementation": named, "problems": problems, "samples": samples, "k": sorted(set(ks))}


def _variant_map(value, what: str, known: set[str], algos: bool) -> dict:
    """A grid's mapping keyed by variant (and, with ``algos``, by algorithm name or ``default``), checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: a mapping from variant (an implementation id without its environment) to a value")
    from lab.catalog import available

    names = {variant(i) for i in known}
    if algos:
        names |= {i.algo for i in available()} | {"default"}
    bad = sorted(str(k) for k in value if k not in names)
    if bad:
        raise ConfigError(f"{what}: unknown {', '.join(bad)} (a variant such as gspo{', an algorithm or default' if algos else ''})")
    return dict(value)


def variant(impl_id: str) -> str:
    """The implementation without its environment: ``calculator-gspo`` -> ``gspo`` (what ``mu`` is keyed by)."""
    from lab.catalog import get

    return impl_id.removeprefix(get(impl_id).env + "-")


def cell_id(impl: str, seed: int) -> str:
    return f"{impl}-s{seed}"
