"""Issue 61's claims: the claims file (parsing, with errors naming the claim and the field), the seed-paired
verdicts (each of the four on hand-made numbers), the report and its JSON lines, and the paired runner end to end
on the random tiny model (the machinery only: nothing a tiny run records is a finding)."""
import copy
import json
import math
import os
import sys
import time

import pytest
import yaml

from lab.compare.claim_results import (check_passes, check_value, claim_lines, figure_rows, metric_values,
                                       pilot_lines, summarise, verdict)
from lab.compare.claims import (ARMS, CLAIMS_FILE, COULD_NOT_TELL, NO_SWITCH, NOT_REPRODUCED, NOT_RUN, REPRODUCED,
                                REVERSED, ClaimsSpec, arm_grid)
from lab.compare.cli import CLAIM_FIELDS, main
from reference_impls.options import ConfigError
from reference_impls.stats import compare_seed_summaries, seeds_for_seed_summaries

from inprocess import run_main


def _spec_data() -> dict:
    return yaml.safe_load(CLAIMS_FILE.read_text())


def _one(claim_id: str) -> dict:
    return copy.deepcopy(next(c for c in _spec_data()["claims"] if c["id"] == claim_id))


def _spec_with_a_claim_without_switch(claim_id: str = "rloo-leave-one-out") -> ClaimsSpec:
    """The shipped file with one claim turned into one without a switch (every shipped claim has one now): the
    path a claim without a switch takes, checked on it."""
    data = _spec_data()
    data["claims"] = [{k: c[k] for k in ("id", "implementation", "claim", "paper_ref", "metric", "direction")}
                      | {"no_switch": "no option removes only this mechanism (test)"} if c["id"] == claim_id else c
                      for c in data["claims"]]
    return ClaimsSpec.from_dict(data, "claims (test)")


# -- the shipped claims file -----------------------------------------------------------------------------------
def test_the_claims_file_covers_the_issue_list_with_one_switch_each():
    """Every algorithm issue 61 names is a claim: with its ablation (an option of its own algorithm, set away from
    the implementation's value) or listed as having no switch yet, with why; each has a paper reference and a
    metric the trainer writes."""
    spec = ClaimsSpec.load()
    by_impl = {}
    for c in spec.claims:
        by_impl.setdefault(c.implementation, []).append(c)
    for impl in ("calculator-dapo", "calculator-dr-grpo", "calculator-gspo", "calculator-gmpo", "calculator-rloo",
                 "calculator-ppo", "calculator-vineppo", "calculator-pass-at-k", "calculator-liteppo"):
        assert impl in by_impl, impl
    dapo = {c.id: c.ablation for c in by_impl["calculator-dapo"]}
    assert {"epsilon_high": 0.2} in dapo.values() and {"dynamic_sampling": False} in dapo.values()
    assert {"overlong_buffer": 0} in dapo.values()
    assert any("beta" in c.ablation for c in spec.claims)  # the KL penalty against (next to) none
    assert len(spec.claims) >= 12 and spec.min_seeds >= 5 and len(spec.seeds) >= 5
    for c in spec.claims:
        assert "arXiv" in c.paper_ref and c.claim and c.metric
        if c.runnable:
            assert c.ablation and c.pilot_check is not None and c.smallest_effect > 0
        else:
            assert c.no_switch and not c.ablation


def test_the_arms_differ_in_the_ablation_only(tmp_path):
    """Both arms of every seed: the same warm start, seed, problems and budget; their resolved configs differ in the
    ablation's options and nothing else (``claims_run.validate`` on every claim of the shipped file)."""
    from lab.compare.claim_results import claim_folder
    from lab.compare.claims_run import validate

    spec = ClaimsSpec.load()
    for claim in spec.claims:
        if claim.runnable:
            validate(spec, claim, claim_folder(tmp_path, claim), pilot=True)
    claim = spec.claim("dapo-clip-higher")
    assert arm_grid(spec, claim, "with").options.get("epsilon_high") is None
    assert arm_grid(spec, claim, "without").options["epsilon_high"] == 0.2


@pytest.mark.parametrize("claim_id,ablation,metric", [
    ("gmpo-geometric-mean", {"token_mean": ("geometric", "arithmetic")}, "ratio_max"),
    ("rloo-leave-one-out", {"baseline": ("group", "batch")}, "grad_var"),
    ("vineppo-mc-values", {"intermediate_states": (True, False)}, "explained_variance"),
    ("starpo-variance-filter", {"keep_fraction": (0.25, 1.0)}, "zero_advantage_groups_frac"),
])
def test_the_claims_given_a_switch_in_issue_61_validate(tmp_path, claim_id, ablation, metric):
    """The three claims that had no switch, and StarPO-S's added beside them: runnable, their two arms validate
    (pilot and full seeds), and each seed's resolved configs differ in that option alone, set as the ablation
    says."""
    from lab.compare.cell_options import cell_config
    from lab.compare.claim_results import claim_folder
    from lab.compare.claims_run import arm_difference, validate

    spec = ClaimsSpec.load()
    claim = spec.claim(claim_id)
    assert claim.runnable and not claim.no_switch and claim.metric == metric
    for pilot in (True, False):
        validate(spec, claim, claim_folder(tmp_path, claim, pilot), pilot=pilot)
    configs = [cell_config(arm_grid(spec, claim, arm), claim.implementation, 0, str(tmp_path / "warm")) for arm in ARMS]
    assert arm_difference(*configs) == ablation
    if claim_id == "rloo-leave-one-out":  # both arms record the gradient's variance
        assert all(c["algo_config"]["grad_variance"] is True for c in configs)


# -- parsing: every error names the claim and the field -----------------------------------------------------------
@pytest.mark.parametrize("change,message", [
    (lambda c: c.pop("metric"), r"claim dapo-clip-higher: missing field 'metric'"),
    (lambda c: c.update(metric="entropyy"), r"claim dapo-clip-higher: field 'metric': 'entropyy' is not a per-step"),
    (lambda c: c.update(direction="up"), r"claim dapo-clip-higher: field 'direction': 'up' is not one of higher, lower"),
    (lambda c: c.update(summary="median"), r"claim dapo-clip-higher: field 'summary': 'median'"),
    (lambda c: c.update(smallest_effect=0), r"claim dapo-clip-higher: field 'smallest_effect': 0 is not a number > 0"),
    (lambda c: c.update(ablation={"epsilon_hi": 0.2}), r"claim dapo-clip-higher: field 'ablation': epsilon_hi not an "
                                                       r"option of algorithm grpo"),
    (lambda c: c.update(ablation={"epsilon_high": 0.28}), r"field 'ablation', epsilon_high: 0.28 is already "
                                                          r"calculator-dapo's value"),
    (lambda c: c.update(ablation={"epsilon_high": "wide"}), r"claim dapo-clip-higher: field 'ablation', epsilon_high"),
    (lambda c: c.update(ablation={}), r"claim dapo-clip-higher: field 'ablation' is a non-empty mapping"),
    (lambda c: c.update(implementation="calculator-nosuch"), r"claim dapo-clip-higher: field 'implementation': unknown"),
    (lambda c: c.update(pilot_check={"arm": "both", "metric": "entropy", "at_least": 1}),
     r"claim dapo-clip-higher: field 'pilot_check', arm: 'both'"),
    (lambda c: c.update(pilot_check={"arm": "with", "metric": "entropy"}),
     r"claim dapo-clip-higher: field 'pilot_check': exactly one of"),
    (lambda c: c.update(options={"model": "tiny"}), r"claim dapo-clip-higher: field 'options': model belong"),
    (lambda c: c.update(mu=0), r"claim dapo-clip-higher: field 'mu': 0 is not an integer"),
    (lambda c: c.update(colour="red"), r"claim dapo-clip-higher: unknown field\(s\) colour"),
    (lambda c: c.update(no_switch="why"), r"claim dapo-clip-higher: field 'no_switch' and ablation, mu, pilot_check"),
    (lambda c: c.update(claim=""), r"claim dapo-clip-higher: field 'claim': a non-empty string"),
    (lambda c: c.update(id="../up"), r"claims\[0\]: field 'id' '../up' is not a name"),
])
def test_a_bad_claim_is_refused_naming_the_claim_and_the_field(change, message):
    data = _spec_data()
    claim = _one("dapo-clip-higher")
    change(claim)
    data["claims"] = [claim]
    with pytest.raises(ConfigError, match=message):
        ClaimsSpec.from_dict(data, "claims.yaml")


@pytest.mark.parametrize("change,message", [
    (lambda d: d["settings"].update(seeds=[0, 0]), r"field 'settings', seeds: \[0, 0\] repeats a seed"),
    (lambda d: d["settings"].update(min_seeds=1), r"min_seeds: 1 is not an integer >= 2"),
    (lambda d: d["settings"].update(colour=1), r"field 'settings': unknown colour"),
    (lambda d: d.update(claims=[_one("dapo-clip-higher"), _one("dapo-clip-higher")]),
     "claim id\\(s\\) dapo-clip-higher named more than once"),
    (lambda d: d.pop("claims"), "missing field 'claims'"),
])
def test_a_bad_claims_file_is_refused_naming_the_field(change, message):
    data = _spec_data()
    data["claims"] = [_one("dapo-clip-higher")]
    change(data)
    with pytest.raises(ConfigError, match=message):
        ClaimsSpec.from_dict(data, "claims.yaml")


def test_a_run_option_the_trainer_refuses_stops_the_run_before_anything_runs(tmp_path):
    """Each arm's config of each seed passes the trainer's own checks first (``claims_run.validate``); the error
    names the claim, the arm and the seed, and nothing is written."""
    from lab.compare import claims_run

    data = _spec_data()
    data["claims"] = [_one("dapo-clip-higher")]
    data["settings"]["options"]["steps"] = 0
    spec = ClaimsSpec.from_dict(data, "claims.yaml")
    with pytest.raises(ConfigError, match=r"claim dapo-clip-higher, arm with, seed 0: .*steps"):
        claims_run.run(spec, tmp_path / "claims", out=sys.stderr)
    assert not (tmp_path / "claims").exists()


def test_a_claims_file_is_read_with_the_grid_files_bounds(tmp_path):
    """The grid files' reader: a link, or a YAML alias, is refused with the file's name."""
    (tmp_path / "c.yaml").write_text("a: &x [1]\nb: *x\n")
    with pytest.raises(ConfigError, match="aliases are not allowed"):
        ClaimsSpec.load(tmp_path / "c.yaml")
    (tmp_path / "link.yaml").symlink_to(CLAIMS_FILE)
    with pytest.raises(ConfigError, match="is not a regular file"):
        ClaimsSpec.load(tmp_path / "link.yaml")


# -- summaries and the pilot's check ----------------------------------------------------------------------------------
def test_summaries_leave_out_critic_warmup_steps_and_missing_values():
    rows = [{"step": 1, "phase": "critic-warmup", "kl": 9.0}, {"step": 2, "phase": "policy", "kl": None},
            *({"step": s, "phase": "policy", "kl": float(s)} for s in range(3, 11))]
    assert metric_values(rows, "kl") == [(s, float(s)) for s in range(3, 11)]
    values = [float(s) for s in range(3, 11)]  # 8 values: the last quarter is the last 2
    assert summarise(values, "last_quarter_mean") == 9.5 and summarise(values, "mean") == 6.5
    assert summarise(values, "final") == 10.0 and summarise(values, "max") == 10.0 and summarise([], "mean") is None
    assert summarise([1.0, 2.0, 3.0], "last_quarter_mean") == 3.0  # ceil(3 / 4) = 1 step


def test_the_pilot_check_reads_halving_and_thresholds():
    spec = ClaimsSpec.load()
    halving = spec.claim("pass-at-k-exploration").pilot_check
    falling = [{"step": s, "entropy": e} for s, e in enumerate([2.0, 1.6, 1.2, 0.9, 0.8, 0.8, 0.7, 0.7], 1)]
    assert check_value(halving, falling) == pytest.approx(0.35) and check_passes(halving, 0.35) is True
    assert check_passes(halving, 0.6) is False and check_passes(halving, None) is None
    clip = spec.claim("dapo-clip-higher").pilot_check
    rows = [{"step": 1, "clip_frac_high": 0.0}, {"step": 2, "clip_frac_high": 0.03}]
    assert check_value(clip, rows) == pytest.approx(0.015) and check_passes(clip, 0.015) is True
    assert check_passes(clip, 0.009) is False


# -- the statistics and the four verdicts on hand-made paired numbers -------------------------------------------------
def test_the_seed_paired_test_against_hand_values():
    """d = (0.1, 0.2, 0.3, 0.2, 0.2): mean 0.2, sd sqrt(0.005), se sd / sqrt(5), t on 4 df."""
    from scipy.stats import t

    c = compare_seed_summaries([1.1, 1.2, 1.3, 1.2, 1.2], [1.0, 1.0, 1.0, 1.0, 1.0])
    se = math.sqrt(0.005) / math.sqrt(5)
    assert c.difference == pytest.approx(0.2) and c.se == pytest.approx(se) and c.df == 4
    assert c.low == pytest.approx(0.2 - t.ppf(0.975, 4) * se) and c.high == pytest.approx(0.2 + t.ppf(0.975, 4) * se)
    assert c.p_value == pytest.approx(2 * t.sf(0.2 / se, 4)) and c.seeds == 5 and not c.one_run
    with pytest.raises(ValueError, match="at least 2 paired seeds"):
        compare_seed_summaries([1.0], [0.0])
    with pytest.raises(ValueError, match="paired"):
        compare_seed_summaries([1.0, 2.0], [0.0])
    # a power plan from the pilot's spread: sd 0.1, effect 0.1 at alpha 0.05 -> the fewest n with
    # (t_.975 + t_.8) * 0.1 / sqrt(n) <= 0.1 on n - 1 df
    n = seeds_for_seed_summaries([0.0, 0.1, 0.2], 0.1)
    assert n == next(k for k in range(2, 51) if (t.ppf(0.975, k - 1) + t.ppf(0.8, k - 1)) / math.sqrt(k) <= 1.0)


HIGH = [0.50, 0.52, 0.49, 0.51, 0.50]  # "with" entropy, five seeds


@pytest.mark.parametrize("without,direction,effect,expected", [
    ([0.30, 0.31, 0.28, 0.33, 0.29], "higher", 0.05, REPRODUCED),       # +0.20, tight: the predicted sign
    ([0.30, 0.31, 0.28, 0.33, 0.29], "lower", 0.05, REVERSED),          # the same numbers, the other prediction
    ([0.50, 0.53, 0.48, 0.50, 0.51], "higher", 0.05, NOT_REPRODUCED),   # ~0 with an interval far inside +-0.05
    ([0.20, 0.80, 0.10, 0.90, 0.45], "higher", 0.05, COULD_NOT_TELL),   # ~0 with a wide interval
])
def test_each_verdict_from_hand_made_paired_numbers(without, direction, effect, expected):
    c = compare_seed_summaries(HIGH, without)
    assert verdict(direction, c, c.p_value, effect, pairs=5, min_seeds=5) == expected


def test_too_few_pairs_or_none_cannot_give_a_verdict():
    c = compare_seed_summaries(HIGH[:3], [0.3, 0.31, 0.28])
    assert verdict("higher", c, c.p_value, 0.05, pairs=3, min_seeds=5) == COULD_NOT_TELL
    assert verdict("higher", None, None, 0.05, pairs=0, min_seeds=5) == NOT_RUN


def _record(claim_id: str, arm: str, seed: int, values: list[float], metric: str, complete: bool = True) -> dict:
    return {"cell": f"x-s{seed}", "implementation": "calculator-dapo", "algo": "grpo", "env": "calculator",
            "seed": seed, "claim": claim_id, "arm": arm, "budget": {"mu": 16}, "complete": complete,
            "incomplete_reason": None if complete else "stopped", "config": {"steps": len(values), "lr": 3e-5},
            "base_model": "smollm2-135m-instruct",
            "metric_rows": [{"step": i + 1, "phase": "policy", metric: v} for i, v in enumerate(values)]}


def _write(root, claim_id, arm, seed, record, exported=False):
    folder = root / claim_id / arm
    path = folder / f"s{seed}.json" if exported else folder / f"s{seed}" / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))


def test_claim_lines_pair_by_seed_holm_over_the_claims_and_say_not_run(tmp_path):
    """Hand-made records of two claims (five seed pairs each; one pair incomplete and one seed missing an arm in
    the second): the lines pair the complete seeds only, Holm runs over the two tested claims, the others say
    ``not run`` or ``no ablation switch yet``."""
    from reference_impls.stats import holm

    spec = _spec_with_a_claim_without_switch()
    for seed, (w, wo) in enumerate(zip(HIGH, [0.30, 0.31, 0.28, 0.33, 0.29])):
        _write(tmp_path, "dapo-clip-higher", "with", seed, _record("dapo-clip-higher", "with", seed, [1.0, w], "entropy"))
        _write(tmp_path, "dapo-clip-higher", "without", seed,
               _record("dapo-clip-higher", "without", seed, [1.0, wo], "entropy"), exported=seed % 2 == 1)
    lengths = {0: (20, 22), 1: (21, 25), 2: (19, 20), 3: (22, 21), 4: (20, 26)}
    for seed, (w, wo) in lengths.items():
        _write(tmp_path, "dr-grpo-length", "with", seed,
               _record("dr-grpo-length", "with", seed, [30.0, w], "len_incorrect", complete=seed != 3))
        if seed != 4:
            _write(tmp_path, "dr-grpo-length", "without", seed,
                   _record("dr-grpo-length", "without", seed, [30.0, wo], "len_incorrect"))
    lines = {line["id"]: line for line in claim_lines(spec, tmp_path)}
    clip = lines["dapo-clip-higher"]
    direct = compare_seed_summaries(HIGH, [0.30, 0.31, 0.28, 0.33, 0.29])  # last quarter of 2 steps: the last
    assert clip["seeds"] == 5 and clip["diff"] == pytest.approx(direct.difference)
    assert (clip["ci_low"], clip["ci_high"]) == (pytest.approx(direct.low), pytest.approx(direct.high))
    length = lines["dr-grpo-length"]
    assert length["seeds"] == 3 and length["verdict"] == COULD_NOT_TELL and "fewer than the 5" in length["why"]
    expected = holm([clip["p_raw"], length["p_raw"]])
    assert (clip["p_holm"], length["p_holm"]) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    assert clip["tests"] == 2 and clip["verdict"] == REPRODUCED and clip["detectable"] > 0
    assert clip["settings"]["model"] == "smollm2-135m-instruct" and clip["settings"]["mu"] == 16
    assert lines["gspo-sequence-clip"]["verdict"] == NOT_RUN and lines["gspo-sequence-clip"]["seeds"] == 0
    assert lines["rloo-leave-one-out"]["verdict"] == NO_SWITCH
    rows = figure_rows([{"seed": 0, "series": {"with": [(1, 1.0), (2, 0.5)], "without": [(1, 1.0)]}},
                        {"seed": 1, "series": {"with": [(1, 0.0), (2, 0.7)], "without": [(1, 0.5)]}}])
    means = {(r["arm"], r["step"]): r["value"] for r in rows if r["kind"] == "mean"}
    assert means == {("with", 1): 0.5, ("with", 2): pytest.approx(0.6), ("without", 1): 0.75}


# -- the command line ------------------------------------------------------------------------------------------------
def test_claims_json_prints_one_line_per_claim_with_its_keys(tmp_path):
    out = run_main(main, ["claims", "--json", "--dir", str(tmp_path)], prog="python -m lab.compare")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    spec = ClaimsSpec.load()
    assert [line["id"] for line in lines] == [c.id for c in spec.claims]
    for line in lines:
        assert set(CLAIM_FIELDS) <= set(line)
        assert line["verdict"] in (NOT_RUN, NO_SWITCH) and line["seeds"] == 0 and line["diff"] is None
    markdown = run_main(main, ["claims", "--markdown", "--dir", str(tmp_path)], prog="python -m lab.compare").stdout
    assert [row.split(" | ")[0] for row in markdown.splitlines()[2:]] == [
        f"| {c.id} ({c.implementation})" for c in spec.claims]
    bad = run_main(main, ["claims", "run", "--claim", "nosuch", "--dir", str(tmp_path)], prog="python -m lab.compare")
    assert bad.returncode == 2 and "no claim 'nosuch'" in bad.stderr


# -- the runner, end to end on the tiny model --------------------------------------------------------------------------
def _tiny_spec(tmp_path, steps: int, seeds: list[int]) -> str:
    """A claims file of one claim on the random tiny model: the machinery's test, not a measurement."""
    claim = _one("dr-grpo-length")
    claim.update(metric="entropy", summary="mean", mu=2,
                 pilot_check={"arm": "without", "metric": "entropy", "summary": "mean", "at_least": 0.0})
    data = {"name": "tiny-claims", "settings": {
        "recipe": "quick", "seeds": seeds, "min_seeds": 2, "budget": "sampled-episodes",
        "options": {"model": "tiny", "steps": steps, "prompts_per_step": 1, "group_size": 2,
                    "max_new_tokens_per_turn": 8, "max_completion_tokens": 16, "checkpoint_every": 1,
                    "sft_steps": 1, "sft_examples": 4}},
        "pilot": {"seeds": list(seeds)}, "claims": [claim]}
    path = tmp_path / "tiny-claims.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _run_tiny(tmp_path, monkeypatch, steps: int, seeds: list[int]):
    """Both arms of one claim through ``claims run``: stopped after one arm run, then resumed; the stages run in
    this process (an interpreter and torch's import per stage would cost most of the time)."""
    from lab.compare import claims_run

    spec_path = _tiny_spec(tmp_path, steps, seeds)
    root = tmp_path / "claims"
    calls = []

    def in_process(args, log):
        calls.append([a for a in args if a in ("_claimwarm", "_claimarm", "with", "without")])
        out = run_main(main, args, env=dict(os.environ, HF_HUB_OFFLINE="1"), prog="python -m lab.compare")
        log.write_text(out.stdout + out.stderr)
        return out.returncode

    monkeypatch.setattr("lab.compare.driver.stage_process", in_process)
    spec = ClaimsSpec.load(spec_path)
    claim = spec.claims[0]
    t0 = time.time()
    # stopped after one arm run: seed 0's warm start and its 'with' arm
    assert claims_run.run(spec, root, max_cells=1, out=sys.stderr) == 0
    assert calls == [["_claimwarm"], ["_claimarm", "with"]]
    first = root / claim.id / "with" / "s0" / "result.json"
    stamp = first.stat().st_mtime_ns
    assert [r["state"] for r in claims_run.status(spec, root)] == ["done"] + ["pending"] * (2 * len(seeds) - 1)
    # resumed: what is done is kept, the rest runs
    calls.clear()
    out = run_main(main, ["claims", "run", "--spec", spec_path, "--dir", str(root)], prog="python -m lab.compare")
    assert out.returncode == 0, out.stdout + out.stderr
    assert calls == [["_claimarm", "without"]] + [["_claimwarm"], ["_claimarm", "with"],
                                                  ["_claimarm", "without"]] * (len(seeds) - 1)
    assert first.stat().st_mtime_ns == stamp
    print(f"tiny claim, {steps} steps: {time.time() - t0:.0f}s", file=sys.stderr)
    return spec, spec_path, root, claim


def _check_pairing(spec, root, claim, steps):
    from lab.compare.claims_run import arm_difference

    folder = root / claim.id
    for seed in spec.seeds:
        configs = {arm: json.loads((folder / arm / f"s{seed}" / "config.json").read_text()) for arm in ARMS}
        assert arm_difference(configs["with"], configs["without"]) == {"loss_type": ("dr_grpo", "grpo")}
        records = {arm: json.loads((folder / arm / f"s{seed}" / "result.json").read_text()) for arm in ARMS}
        for arm, r in records.items():
            assert (r["claim"], r["arm"], r["seed"], r["complete"]) == (claim.id, arm, seed, True)
            assert [row["step"] for row in r["metric_rows"]] == list(range(1, steps + 1))
            assert all("entropy" in row for row in r["metric_rows"])
            assert len(r["provenance"]["commit"]) == 40 and r["provenance"]["versions"]["torch"]
            assert r["warm_start"] == ("calculator" if seed == 0 else "calculator@w1")
            assert not (folder / arm / f"s{seed}" / "run").exists()  # the weights go once recorded
        assert records["with"]["warm_weights_sha256"] == records["without"]["warm_weights_sha256"]
    assert records["with"]["ablation"] == {} and records["without"]["ablation"] == {"loss_type": "grpo"}


def test_a_tiny_claim_runs_both_arms_and_resumes_after_a_stop(tmp_path, monkeypatch):
    """The slow test's path at one seed and one step: the seed's warm start shared by both arms, the arms
    differing in the ablation only, a stop after one arm run and a resume that keeps it; then ``claims --json``
    reads the pair (one pair: "could not tell", and a tiny run is never a finding: it writes random tokens)."""
    spec, spec_path, root, claim = _run_tiny(tmp_path, monkeypatch, steps=1, seeds=[0])
    _check_pairing(spec, root, claim, steps=1)
    out = run_main(main, ["claims", "--json", "--spec", spec_path, "--dir", str(root)], prog="python -m lab.compare")
    line = json.loads(out.stdout.splitlines()[0])
    assert line["seeds"] == 1 and line["settings"]["model"] == "tiny" and line["settings"]["steps"] == 1
    assert line["verdict"] == COULD_NOT_TELL and line["ci_low"] is None and line["diff"] is not None


@pytest.mark.slow
def test_a_tiny_claim_of_two_steps_runs_resumes_and_reports(tmp_path, monkeypatch):
    """Issue 61's end-to-end check: one claim, 2 seeds and 2 steps through the runner, stopped and resumed, then
    the verdict line, the pilot report and the export."""
    from lab.compare import claims_run

    spec, spec_path, root, claim = _run_tiny(tmp_path, monkeypatch, steps=2, seeds=[0, 1])
    _check_pairing(spec, root, claim, steps=2)
    lines = claim_lines(spec, root)
    assert lines[0]["seeds"] == 2 and lines[0]["tests"] == 1 and lines[0]["p_holm"] == lines[0]["p_raw"]
    shipped = tmp_path / "shipped"
    assert claims_run.export(spec, root, shipped) == 4
    assert claim_lines(spec, shipped)[0]["diff"] == pytest.approx(lines[0]["diff"])
    assert sorted(p.name for p in (shipped / claim.id).iterdir()) == ["claim.yaml", "grid.yaml", "with", "without"]


def test_the_pilot_report_reads_the_check_and_plans_seeds(tmp_path):
    """Hand-made pilot records: the check's value per seed in the arm it names, whether it moved, and the seed
    pairs a power plan asks for (from the two pilot pairs' spread)."""
    spec = ClaimsSpec.load()
    pilot = tmp_path / "pilot"
    for seed, clip in ((0, [0.0, 0.03]), (1, [0.01, 0.02])):
        for arm, entropy in (("with", [1.0, 0.8 + 0.05 * seed]), ("without", [1.0, 0.6])):
            record = _record("dapo-clip-higher", arm, seed, entropy, "entropy")
            for row, c in zip(record["metric_rows"], clip):
                row["clip_frac_high"] = c
            _write(pilot, "dapo-clip-higher", arm, seed, record)
    line = next(p for p in pilot_lines(spec, tmp_path) if p["id"] == "dapo-clip-higher")
    assert line["values"] == {"0": pytest.approx(0.015), "1": pytest.approx(0.015)} and line["moves"] is True
    tests = sum(c.runnable for c in spec.claims)
    assert line["seeds_needed"] == seeds_for_seed_summaries(line["pilot_diffs"], 0.05, tests)
    other = next(p for p in pilot_lines(spec, tmp_path) if p["id"] == "gspo-sequence-clip")
    assert other["moves"] is None and other["plan"] == "a power plan needs two pilot seed pairs"
