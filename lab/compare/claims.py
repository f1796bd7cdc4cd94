"""Does each algorithm do what its paper says (issue 61)? The claims file: what a claim is (``Claim``,
``ClaimsSpec``) and its checks. Reading a claims folder's records back, the per-seed summaries and the verdicts
are ``claim_results``; the stages and the runner that produce the records are ``claims_run``.

A claims file (``lab/recipes/claims/NAME.yaml``, default ``core``, read with the grid files' bounded YAML reader) has ``name``,
``settings`` (what every claim's paired experiment runs: a recipe, grid options, seeds, the fewest seed pairs a
verdict needs), ``pilot`` (the pilot's seeds) and ``claims``: per claim an ``id``, the ``implementation`` (a
``train --list`` id), the ``claim`` in one sentence, ``paper_ref`` (the paper and its section or figure), the
``metric`` (a per-step key of the trainer's ``metrics.jsonl``: ``CLAIM_METRICS``), its ``summary`` over a run's
steps (``SUMMARIES``), the ``direction`` the paper predicts for "with the mechanism minus without", the
``smallest_effect`` that counts (in the metric's units), the ``ablation`` (the implementation's algorithm
options that remove only that mechanism; everything else identical) and a ``pilot_check`` (the quantity that
must move in the named arm for the experiment to test anything: clip fraction at least 1%, entropy halving).
A claim whose implementation exposes no switch for its mechanism has ``no_switch: <why>`` instead of a metric
and an ablation, and is listed as such.

The verdict of a claim (``verdict``): the two arms' summaries are paired by seed and tested with
``stats.compare_seed_summaries`` (a paired t over seeds), Holm over every claim tested; then

    reproduced       the Holm-adjusted p is below 0.05 and the difference has the predicted sign
    reversed         the Holm-adjusted p is below 0.05 and the difference has the other sign
    not reproduced   no difference detected, and the interval rules out the smallest effect in the predicted
                     direction (its bound on that side is nearer than ``smallest_effect``)
    could not tell   no difference detected and the interval still holds the smallest effect, or fewer seed
                     pairs than ``settings.min_seeds``

with the interval, the smallest effect the test could detect (``stats.detectable_effect`` at alpha / tests) and
the settings beside it. ``not run`` (no pair yet) and ``no ablation switch yet`` are the two other lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reference_impls.options import ConfigError

from .folder import DIAGNOSTIC_KEYS, is_number

#: where claims files live (not in lab/recipes/ itself, whose every file is a Lab preset), and the default one
CLAIMS_DIR = Path(__file__).resolve().parents[1] / "recipes" / "claims"
CLAIMS_FILE = CLAIMS_DIR / "core.yaml"

#: the per-step metrics.jsonl keys a claim may be about: the grid's diagnostics, PPO's critic figures (VinePPO's
#: explained_variance is its MC values') and the gradient's variance (``grad_var``, policy_gradient)
CLAIM_METRICS = tuple(DIAGNOSTIC_KEYS) + ("explained_variance", "value_loss", "vf_clip_frac", "approx_kl",
                                          "advantages_abs_mean", "mc_value_mean", "grad_var")

#: how a run's per-step values become one number per seed
SUMMARIES = ("last_quarter_mean", "mean", "final", "max")
DIRECTIONS = ("higher", "lower")
ARMS = ("with", "without")  # the implementation as it is; the same with only the mechanism removed

REPRODUCED, NOT_REPRODUCED, REVERSED, COULD_NOT_TELL = "reproduced", "not reproduced", "reversed", "could not tell"
NOT_RUN, NO_SWITCH = "not run", "no ablation switch yet"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, REVERSED, COULD_NOT_TELL, NOT_RUN, NO_SWITCH)

#: the fields of a claim, and of the file's settings
_CLAIM_FIELDS = {"id", "implementation", "claim", "paper_ref", "metric", "summary", "direction", "smallest_effect",
                 "ablation", "pilot_check", "no_switch", "options", "mu", "note"}
_SETTINGS_FIELDS = {"recipe", "seeds", "min_seeds", "options", "budget"}
_CHECK_FIELDS = {"arm", "metric", "summary", "at_least", "at_most", "falls_to", "rises_to"}
#: the run options a claim's ``options`` may not set: they would make the two arms' warm starts or budgets differ
#: from the file's settings in ways the record would not show as the claim's own
_RESERVED_OPTIONS = {"seed", "model", "out", "sft_steps", "sft_examples", "sft_lr", "sft_env"}


def _check_fields(data: dict, allowed, required, where: str) -> None:
    """A ConfigError naming ``where`` and the field when ``data`` has a field not in ``allowed`` or lacks one of
    ``required``."""
    unknown = set(data) - set(allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for key in required:
        if key not in data:
            raise ConfigError(f"{where}: missing field '{key}'")


@dataclass(frozen=True)
class PilotCheck:
    """What must move in ``arm`` for the experiment to test the mechanism: the ``summary`` of ``metric`` at least
    ``at_least`` / at most ``at_most``, or its last-quarter mean at most ``falls_to`` (at least ``rises_to``) times
    its first step's."""

    arm: str
    metric: str
    summary: str = "mean"
    at_least: float | None = None
    at_most: float | None = None
    falls_to: float | None = None
    rises_to: float | None = None

    def text(self) -> str:
        if self.falls_to is not None:
            return f"{self.metric} in the '{self.arm}' arm falls to at most {self.falls_to:g} x its first step's"
        if self.rises_to is not None:
            return f"{self.metric} in the '{self.arm}' arm rises to at least {self.rises_to:g} x its first step's"
        bound = f"at least {self.at_least:g}" if self.at_least is not None else f"at most {self.at_most:g}"
        return f"{self.metric} ({self.summary.replace('_', ' ')}) in the '{self.arm}' arm {bound}"


@dataclass(frozen=True)
class Claim:
    id: str
    implementation: str
    claim: str
    paper_ref: str
    metric: str | None = None
    summary: str = "last_quarter_mean"
    direction: str = "higher"
    smallest_effect: float = 0.0
    ablation: dict = field(default_factory=dict)
    pilot_check: PilotCheck | None = None
    no_switch: str = ""  # why the implementation has no switch that removes only this mechanism
    options: dict = field(default_factory=dict)  # run options of both arms on top of the file's settings
    mu: int | None = None  # policy updates per rollout batch (the grid's mu for this implementation)
    note: str = ""

    @property
    def runnable(self) -> bool:
        return not self.no_switch


@dataclass(frozen=True)
class ClaimsSpec:
    name: str
    recipe: str
    seeds: tuple[int, ...]
    min_seeds: int
    options: dict
    budget: str
    pilot_seeds: tuple[int, ...]
    claims: tuple[Claim, ...]
    label: str = ""
    path: str = ""

    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> "ClaimsSpec":
        from .grid import read_grid_file

        path = Path(name_or_path) if name_or_path else CLAIMS_FILE
        if not path.suffix:
            path = CLAIMS_DIR / f"{path}.yaml"
        try:
            data = read_grid_file(path)
        except FileNotFoundError:
            raise ConfigError(f"claims file {str(name_or_path)!r}: no such file") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict, where: str = "claims") -> "ClaimsSpec":
        _check_fields(data, {"name", "label", "settings", "pilot", "claims"}, ("name", "settings", "claims"), where)
        settings = data["settings"]
        if not isinstance(settings, dict):
            raise ConfigError(f"{where}: field 'settings' is a mapping ({', '.join(sorted(_SETTINGS_FIELDS))})")
        bad = set(settings) - _SETTINGS_FIELDS
        if bad:
            raise ConfigError(f"{where}: field 'settings': unknown {', '.join(sorted(bad))}")
        seeds = _seeds(settings.get("seeds"), f"{where}: field 'settings', seeds")
        pilot = data.get("pilot") or {}
        if not isinstance(pilot, dict) or set(pilot) - {"seeds"}:
            raise ConfigError(f"{where}: field 'pilot' is a mapping with seeds")
        pilot_seeds = _seeds(pilot.get("seeds", list(seeds[:2])), f"{where}: field 'pilot', seeds")
        min_seeds = settings.get("min_seeds", 5)
        if not isinstance(min_seeds, int) or isinstance(min_seeds, bool) or min_seeds < 2:
            raise ConfigError(f"{where}: field 'settings', min_seeds: {min_seeds!r} is not an integer >= 2 (a paired "
                              f"t-test needs two seed pairs)")
        options = settings.get("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: field 'settings', options is a mapping of run options")
        claims_data = data["claims"]
        if not isinstance(claims_data, list) or not claims_data:
            raise ConfigError(f"{where}: field 'claims' is a non-empty list")
        claims = tuple(_claim(c, i, where) for i, c in enumerate(claims_data))
        ids = [c.id for c in claims]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ConfigError(f"{where}: claim id(s) {', '.join(repeated)} named more than once")
        spec = cls(name=_text(data["name"], f"{where}: field 'name'"), recipe=str(settings.get("recipe", "compare")),
                   seeds=seeds, min_seeds=min_seeds, options=dict(options),
                   budget=str(settings.get("budget", "sampled-episodes")), pilot_seeds=pilot_seeds, claims=claims,
                   label=str(data.get("label", "")), path=where)
        for claim in spec.claims:  # each claim's arms are grids: checked as the grid files are
            if claim.runnable:
                arm_grid(spec, claim, "with")
                arm_grid(spec, claim, "without")
        return spec

    def claim(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise ConfigError(f"{self.path}: no claim {claim_id!r} (claims: {', '.join(c.id for c in self.claims)})")

    def seeds_of(self, pilot: bool) -> tuple[int, ...]:
        return self.pilot_seeds if pilot else self.seeds


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what}: a non-empty string")
    return value.strip()


def _seeds(value, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not value or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
        raise ConfigError(f"{what}: a non-empty list of integers >= 0")
    if len(set(value)) != len(value):
        raise ConfigError(f"{what}: {value} repeats a seed")
    return tuple(value)


def _claim(data, index: int, where: str) -> Claim:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: claims[{index}] is not a mapping")
    cid = data.get("id")
    if not isinstance(cid, str) or not cid or not all(ch.isalnum() or ch in "-_." for ch in cid) or cid in (
            "pilot",) or cid.startswith("."):
        raise ConfigError(f"{where}: claims[{index}]: field 'id' {cid!r} is not a name of letters, digits, '-', '_' "
                          f"and '.' (it names the claim's folder; 'pilot' is taken)")
    what = f"{where}: claim {cid}"
    _check_fields(data, _CLAIM_FIELDS, ("implementation", "claim", "paper_ref"), what)
    from lab.catalog import available

    impl = data["implementation"]
    if impl not in {i.id for i in available()}:
        raise ConfigError(f"{what}: field 'implementation': unknown {impl!r} (see python -m reference_impls.train "
                          f"--list)")
    common = {"id": cid, "implementation": impl, "claim": _text(data["claim"], f"{what}: field 'claim'"),
              "paper_ref": _text(data["paper_ref"], f"{what}: field 'paper_ref'"),
              "note": str(data.get("note", "") or "")}
    if "no_switch" in data:
        extra = sorted(set(data) & {"ablation", "pilot_check", "options", "mu"})
        if extra:
            raise ConfigError(f"{what}: field 'no_switch' and {', '.join(extra)}: a claim without a switch has no "
                              f"experiment to run")
        metric = data.get("metric")
        if metric is not None and metric not in CLAIM_METRICS:
            raise ConfigError(f"{what}: field 'metric': {metric!r} is not a per-step metric ({', '.join(CLAIM_METRICS)})")
        return Claim(**common, metric=metric, no_switch=_text(data["no_switch"], f"{what}: field 'no_switch'"),
                     direction=data.get("direction", "higher"))
    for key in ("metric", "direction", "smallest_effect", "ablation", "pilot_check"):
        if key not in data:
            raise ConfigError(f"{what}: missing field '{key}' (or 'no_switch' with why the implementation has no "
                              f"switch for this mechanism)")
    metric = data["metric"]
    if metric not in CLAIM_METRICS:
        raise ConfigError(f"{what}: field 'metric': {metric!r} is not a per-step metric ({', '.join(CLAIM_METRICS)})")
    summary = data.get("summary", "last_quarter_mean")
    if summary not in SUMMARIES:
        raise ConfigError(f"{what}: field 'summary': {summary!r} is not one of {', '.join(SUMMARIES)}")
    direction = data["direction"]
    if direction not in DIRECTIONS:
        raise ConfigError(f"{what}: field 'direction': {direction!r} is not one of {', '.join(DIRECTIONS)} (with the "
                          f"mechanism minus without)")
    effect = data["smallest_effect"]
    if not is_number(effect) or effect <= 0:
        raise ConfigError(f"{what}: field 'smallest_effect': {effect!r} is not a number > 0 (in {metric}'s units)")
    ablation = _ablation(data["ablation"], impl, what)
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise ConfigError(f"{what}: field 'options' is a mapping of run options")
    reserved = sorted(set(options) & _RESERVED_OPTIONS)
    if reserved:
        raise ConfigError(f"{what}: field 'options': {', '.join(reserved)} belong to the file's settings (both arms "
                          f"and their warm starts)")
    mu = data.get("mu")
    if mu is not None and (not isinstance(mu, int) or isinstance(mu, bool) or not 1 <= mu <= 64):
        raise ConfigError(f"{what}: field 'mu': {mu!r} is not an integer in [1, 64]")
    return Claim(**common, metric=metric, summary=summary, direction=direction, smallest_effect=float(effect),
                 ablation=ablation, pilot_check=_pilot_check(data["pilot_check"], f"{what}: field 'pilot_check'"),
                 options=dict(options), mu=mu)


def _ablation(value, impl_id: str, what: str) -> dict:
    """The ablation checked: a non-empty mapping of the implementation's algorithm options, each set to a value
    other than the implementation's own (an ablation that changes nothing removes nothing)."""
    from lab.catalog import get
    from reference_impls import registry
    from reference_impls.options import ConfigError as OptionError, coerce, spec_map

    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{what}: field 'ablation' is a non-empty mapping of the implementation's algorithm "
                          f"options (the switch that removes the mechanism)")
    impl = get(impl_id)
    fields = spec_map(registry.algorithms()[impl.algo].Config)
    unknown = sorted(k for k in value if k not in fields)
    if unknown:
        raise ConfigError(f"{what}: field 'ablation': {', '.join(unknown)} not an option of algorithm {impl.algo} "
                          f"({', '.join(sorted(fields))})")
    for key, new in value.items():
        try:
            coerced = coerce(fields[key], new, key)
        except OptionError as err:
            raise ConfigError(f"{what}: field 'ablation', {key}: {err.message}") from None
        current = impl.algo_options.get(key, fields[key].default)
        if coerced == current:
            raise ConfigError(f"{what}: field 'ablation', {key}: {new!r} is already {impl_id}'s value; the ablation "
                              f"must remove the mechanism")
    return dict(value)


def _pilot_check(value, what: str) -> PilotCheck:
    if not isinstance(value, dict) or set(value) - _CHECK_FIELDS or not {"arm", "metric"} <= set(value):
        raise ConfigError(f"{what}: a mapping with arm, metric and one of at_least, at_most, falls_to, rises_to "
                          f"(summary optional)")
    if value["arm"] not in ARMS:
        raise ConfigError(f"{what}, arm: {value['arm']!r} is not one of {', '.join(ARMS)}")
    if value["metric"] not in CLAIM_METRICS:
        raise ConfigError(f"{what}, metric: {value['metric']!r} is not a per-step metric")
    summary = value.get("summary", "mean")
    if summary not in SUMMARIES:
        raise ConfigError(f"{what}, summary: {summary!r} is not one of {', '.join(SUMMARIES)}")
    bounds = [k for k in ("at_least", "at_most", "falls_to", "rises_to") if k in value]
    if len(bounds) != 1 or not is_number(value[bounds[0]]):
        raise ConfigError(f"{what}: exactly one of at_least, at_most, falls_to, rises_to, a number")
    return PilotCheck(arm=value["arm"], metric=value["metric"], summary=summary,
                      **{bounds[0]: float(value[bounds[0]])})


# -- a claim's arms are grids of one implementation ----------------------------------------------------------
def arm_grid(spec: ClaimsSpec, claim: Claim, arm: str, pilot: bool = False):
    """The grid one arm of ``claim`` runs (``lab.compare.grid.Grid``): the claim's implementation, the file's
    recipe and budget, its options with the claim's on top and, in the ``without`` arm, the ablation (algorithm
    options, flat, as a grid's options take them); a warm start per seed (the same in both arms: the warm start
    reads only the recipe's and options' SFT settings and the model, which an ablation never touches)."""
    from .grid import Grid, variant

    if arm not in ARMS:
        raise ConfigError(f"arm {arm!r} is not one of {', '.join(ARMS)}")
    options = {**spec.options, **claim.options, **(claim.ablation if arm == "without" else {})}
    data = {"name": f"claim-{claim.id}{'-pilot' if pilot else ''}", "recipe": spec.recipe,
            "implementations": [claim.implementation], "seeds": list(spec.seeds_of(pilot)), "options": options,
            "budget": spec.budget}
    if claim.mu is not None:
        data["mu"] = {variant(claim.implementation): claim.mu}
    return Grid.from_dict(data, f"{spec.path}: claim {claim.id}, arm {arm}")
