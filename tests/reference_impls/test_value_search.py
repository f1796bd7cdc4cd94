"""Planning with a learned value (planning-external-guide, issue 20): targets, the head, budgeted search, and the
policy / heuristic / learned comparison through the CLI with the tiny model."""
from __future__ import annotations

import json
import math
import os
import random
import re

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from reference_impls.measure import value_search as vs  # noqa: E402
from reference_impls.envs import frozenlake, sokoban  # noqa: E402


def test_targets_are_the_discounted_success_of_the_solver():
    p = sokoban.problems("train", n=1, seed=0, levels=(1,))[0]
    sp = vs.search_problem("sokoban", p)
    rows = dict(vs.collect_states(sp, random.Random(0), gamma=0.5, walks=3, walk_length=6))
    # the start is len(plan) moves from the goal; the goal state has value 1
    assert rows[sp.render(sp.start)] == pytest.approx(0.5 ** len(p.plan))
    assert max(rows.values()) == 1.0 and all(0.0 <= v <= 1.0 for v in rows.values())
    # FrozenLake: a hole is worth 0, and every safe state gamma ** (BFS distance)
    lake = frozenlake.problems("train", n=1, seed=0, levels=(2,))[0]
    spl = vs.search_problem("frozenlake", lake)
    for pos in [(r, c) for r in range(len(lake.grid)) for c in range(len(lake.grid[0]))]:
        d = spl.distance(pos)
        if lake.grid[pos[0]][pos[1]] == "H":
            assert d is None
        else:
            assert d == len(frozenlake.bfs(lake.grid, pos))


def test_learned_estimate_inverts_the_value_and_counts_calls():
    class Fixed(torch.nn.Module):  # a head that outputs gamma ** 3 for any features
        def forward(self, x):
            return torch.full((x.shape[0],), 0.9 ** 3)

    class Feats:
        calls = 0

        def __call__(self, texts):
            Feats.calls += len(texts)
            return torch.zeros(len(texts), 4)

    lake = frozenlake.problems("train", n=1, seed=0, levels=(1,))[0]
    sp = vs.search_problem("frozenlake", lake)
    est = vs.learned_estimate(Fixed(), Feats(), sp, gamma=0.9)
    assert est(sp.start) == pytest.approx(3.0)
    Feats.calls = 0
    counted = vs.CountedValue(est, budget=2)
    counted(sp.start), counted(sp.start)  # memoised: one call
    assert counted.calls == 1 and Feats.calls == 1
    counted((0, 1))
    with pytest.raises(vs.BudgetSpent):
        counted((1, 0))
    # a search allowed one evaluation cannot find a plan; one allowed every state of the 4x4 lake always does
    assert vs.budgeted_search(sp, sp.heuristic, budget=1)[0] is None
    plan, used = vs.budgeted_search(sp, sp.heuristic, budget=16)
    assert plan is not None and used <= 16 and vs.plan_solves(frozenlake.SPEC, lake, plan)


def test_value_head_fits_its_targets():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = torch.sigmoid(x[:, 0] * 2)
    head, losses = vs.fit_value_head(x, y, epochs=200)
    assert losses[-1] < 0.2 * losses[0]
    with torch.no_grad():
        assert float(((head(x) - y) ** 2).mean()) < 0.1 * float(y.var(unbiased=False))


def test_train_and_compare_through_the_cli(tmp_path, capsys, monkeypatch):
    out = tmp_path / "value"
    assert vs.main(["train", "--env", "frozenlake", "--model", "tiny", "--puzzles", "6", "--levels", "1",
                    "--epochs", "200", "--out", str(out)]) == 0
    report = json.loads((out / "value_head.json").read_text())
    assert report["train_states"] > 0 and report["train_mse"] < report["train_mse_constant"]
    head, meta = vs.load_value(out)
    assert meta["env"] == "frozenlake" and meta["hidden"] == 64
    capsys.readouterr()
    result_file = tmp_path / "cmp.json"
    assert vs.main(["compare", "--value", str(out), "--n", "3", "--budget", "16", "--max-new-tokens-per-turn", "8",
                    "--max-completion-tokens", "48", "--out", str(result_file)]) == 0
    result = json.loads(result_file.read_text())
    assert set(result["methods"]) == {"policy", "uninformed", "heuristic", "learned"} and result["n"] == 3
    for method in result["methods"].values():
        s = method["success"]
        assert 0.0 <= s["low"] <= s["mean"] <= s["high"] <= 1.0
        assert method["max_calls"] <= 16 and len(method["per_problem"]) == 3
    # a 4x4 lake has at most 16 states: every search always finds (and replays) a plan within 16 evaluations
    for method in ("uninformed", "heuristic", "learned"):
        assert result["methods"][method]["success"]["mean"] == 1.0
    assert len(result["methods"]["policy"]["per_problem_calls"]) == 3

    # --policy-from: the searches are redone, the policy's results are taken from the earlier file, not sampled
    def no_sampling(*args, **kwargs):
        raise AssertionError("the policy was sampled again")

    monkeypatch.setattr(vs, "policy_successes", no_sampling)
    again = tmp_path / "again.json"
    assert vs.main(["compare", "--value", str(out), "--n", "3", "--budget", "16", "--max-new-tokens-per-turn", "8",
                    "--max-completion-tokens", "48", "--policy-from", str(result_file), "--out", str(again)]) == 0
    reran = json.loads(again.read_text())
    assert reran["methods"]["policy"] == result["methods"]["policy"] and reran["policy_from"] == "cmp.json"
    assert reran["methods"]["learned"]["per_problem"] == result["methods"]["learned"]["per_problem"]
    capsys.readouterr()
    # a file of another budget (or other puzzles) is refused, naming the field
    assert vs.main(["compare", "--value", str(out), "--n", "3", "--budget", "8", "--max-new-tokens-per-turn", "8",
                    "--max-completion-tokens", "48", "--policy-from", str(result_file)]) == 2
    assert "cmp.json: its budget is 16, this comparison's is 8" in capsys.readouterr().err
    monkeypatch.undo()
    paired = result["learned_vs_policy"]  # one search run a side: an exact test, Holm over five, one-seed wording
    assert paired["verdict"].startswith("one seed: an observation") and paired["test"].startswith("exact McNemar")
    assert paired["p_value"] <= paired["p_holm"] <= 1
    assert vs.main(["compare", "--value", str(tmp_path / "missing")]) == 2
    assert math.isfinite(result["optimal_length"])

    # export: one portable record of the head and its comparisons, read back by the Lab and the node page
    shipped = tmp_path / "shipped" / "frozenlake.json"
    assert vs.main(["export", "--value", str(out), "--compare", str(result_file), "--to", str(shipped)]) == 0
    text = shipped.read_text()
    assert str(tmp_path) not in text  # no path of this machine travels with a shipped result
    from lab import value_search_results

    [record] = value_search_results.for_node("planning-external-guide", shipped.parent)
    assert record["env"] == "frozenlake" and record["value"]["train_states"] == report["train_states"]
    assert [b["budget"] for b in record["budgets"]] == [16]
    assert record["budgets"][0]["methods"]["learned"]["per_problem"] == result["methods"]["learned"]["per_problem"]
    assert value_search_results.for_node("planning-internal-driver", shipped.parent) == []
    # the same budget twice, or a comparison of another env, is refused with the file named
    assert vs.main(["export", "--value", str(out), "--compare", str(result_file), str(result_file),
                    "--to", str(tmp_path / "x.json")]) == 2
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**result, "env": "sokoban"}))
    assert vs.main(["export", "--value", str(out), "--compare", str(other), "--to", str(tmp_path / "y.json")]) == 2
    assert "other.json" in capsys.readouterr().err and not (tmp_path / "y.json").exists()


def test_shipped_value_search_records_are_read_with_clear_errors(tmp_path):
    from lab import value_search_results
    from taxonomy import DataError

    assert value_search_results.load(tmp_path / "none") == []
    (tmp_path / "bad.json").write_text('{"node": "planning-external-guide",\n "env": ')
    with pytest.raises(DataError, match=r"bad\.json, line 2: not JSON"):
        value_search_results.load(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"node": "x", "env": "sokoban", "model": "m", "value": {},
                                                   "budgets": [{"budget": 8, "methods": {"policy": {}}}]}))
    with pytest.raises(DataError, match=r"bad\.json, budgets\[1\], field 'methods': no heuristic, learned"):
        value_search_results.load(tmp_path)


def _method(mean, low, high, calls):
    return {"success": {"mean": mean, "low": low, "high": high}, "mean_calls": calls, "per_problem": []}


def recorded_verdicts(line: str) -> list[tuple[str, ...]]:
    """(against, difference, low, high, verdict) of each stored comparison a verdict line reports."""
    return re.findall(r"vs (the heuristic|the policy|no guidance) ([+-]\d+) points \[([+-]\d+), ([+-]\d+)\], "
                      r"as recorded: (\w+)", line)


def test_value_search_table_and_verdicts_from_a_hand_record():
    from app.presentation.node_sections import VALUE_SEARCH_METHODS, value_search_frame, value_search_verdicts

    diff = {"difference": {"mean": 0.25, "low": 0.1, "high": 0.4}, "verdict": "better", "p_value": 0.001}
    record = {"budgets": [{"budget": 32, "n": 100, "plan_length": {"heuristic": 9.0, "learned": 11.5},
                           "methods": {"policy": _method(0.05, 0.01, 0.1, 30.2), "heuristic": _method(0.6, 0.5, 0.7, 20),
                                       "learned": _method(0.3, 0.21, 0.39, 25.25)},
                           "learned_vs_heuristic": {**diff, "difference": {"mean": -0.3, "low": -0.42, "high": -0.18},
                                                    "verdict": "worse"},
                           "learned_vs_policy": diff}]}
    frame = value_search_frame(record)  # a record from before the uninformed control: 3 methods
    labels = VALUE_SEARCH_METHODS
    assert list(frame["method"]) == [labels["policy"], labels["heuristic"], labels["learned"]]
    learned = frame.iloc[2]
    assert (learned["solved %"], learned["95% low"], learned["95% high"], learned["mean calls"],
            learned["mean plan length (puzzles it solved)"]) == (30.0, 21.0, 39.0, 25.2, 11.5)
    assert frame["mean plan length (puzzles it solved)"].isna().iloc[0]  # the policy has none
    [line] = value_search_verdicts(record)
    # no per-puzzle results in this record: its stored figures and verdicts, said to be as recorded
    assert line.startswith("32 calls, 100 held-out puzzles: ")
    assert recorded_verdicts(line) == [("the heuristic", "-30", "-42", "-18", "worse"),
                                       ("the policy", "+25", "+10", "+40", "better")]
    # with the uninformed control: its row between the policy and the heuristic, and a third verdict
    record["budgets"][0]["methods"]["uninformed"] = _method(0.57, 0.47, 0.66, 48.85)
    record["budgets"][0]["learned_vs_uninformed"] = {**diff, "difference": {"mean": 0.33, "low": 0.24, "high": 0.42}}
    frame = value_search_frame(record)
    assert list(frame["method"]) == list(labels.values()) and frame.iloc[1]["solved %"] == 57.0
    [line] = value_search_verdicts(record)
    assert recorded_verdicts(line)[1:] == [("the policy", "+25", "+10", "+40", "better"),
                                           ("no guidance", "+33", "+24", "+42", "better")]
    del record["budgets"][0]["learned_vs_uninformed"]
    # a record is a file a user may have written: its verdict text is shown literally, not as Markdown
    record["budgets"][0]["learned_vs_policy"] = {**diff, "verdict": "[better](https://x.example) **bold**"}
    [line] = value_search_verdicts(record)
    assert "[better](https" not in line and "**bold**" not in line and r"\*\*bold\*\*" in line


def test_value_search_verdicts_recomputed_from_every_puzzle():
    """A record with every puzzle's result is read with the method's test (one value fit: one-seed wording, no
    p), not with the verdict it stored: a stored "better" on a difference McNemar cannot tell is not shown."""
    from app.presentation.node_sections import value_search_verdicts
    from reference_impls.stats import ONE_SEED

    learned = [1] * 6 + [0] * 94
    heuristic = [0] * 4 + [1] * 2 + [1] * 2 + [0] * 92  # 4 solved only by the learned value, 2 only by the heuristic
    method = lambda pp: {**_method(sum(pp) / 100, 0, 1, 10), "per_problem": pp}  # noqa: E731
    record = {"budgets": [{"budget": 64, "n": 100, "methods": {"learned": method(learned),
                                                                "heuristic": method(heuristic)},
                           "learned_vs_heuristic": {"difference": {"mean": 0.02, "low": 0.01, "high": 0.03},
                                                    "verdict": "better", "p_value": 0.01}}]}
    [line] = value_search_verdicts(record)
    assert "as recorded" not in line and "better" not in line and ONE_SEED in line
    # the difference, against whom, on how many problems, and the discordant counts (6 = 4 + 2)
    assert re.search(r"([+-][\d.]+) points against the heuristic on the same (\d+) problems", line).groups() == (
        "+2.0", "100")
    assert re.search(r"(\d+) problems differ: (\d+) solved only by this run, (\d+) only by the heuristic",
                     line).groups() == ("6", "4", "2")


def test_monte_carlo_targets_of_an_episode():
    trace = [("s0", 0), ("s1", 2), ("s2", 2), ("s3", 5)]  # (state, moves so far) after each turn
    got = dict(vs.monte_carlo_targets(trace, solved=True, gamma=0.5))
    assert got == {"s0": 0.5 ** 5, "s1": 0.5 ** 3, "s2": 0.5 ** 3, "s3": 1.0}
    assert all(v == 0.0 for _, v in vs.monte_carlo_targets(trace, solved=False, gamma=0.5))


def test_policy_episode_states_are_recorded(tiny, tmp_path):
    model, tok = tiny
    lake = frozenlake.problems("train", n=2, seed=0, levels=(1,))
    rows = vs.policy_states(model, tok, "frozenlake", lake, gamma=0.9, episodes=2, max_new_tokens_per_turn=8,
                            max_completion_tokens=32)
    starts = {vs.search_problem("frozenlake", p).render(vs.search_problem("frozenlake", p).start) for p in lake}
    texts = [t for t, _ in rows]
    assert starts <= set(texts) and len(texts) == len(set(texts))
    assert all(0.0 <= v <= 1.0 for _, v in rows)
    report = vs.train_value("frozenlake", "tiny", tmp_path / "v", puzzles=2, epochs=20, env_options={"levels": (1,)},
                            model=model, tokenizer=tok, target="policy", episodes=1, max_new_tokens_per_turn=8,
                            max_completion_tokens=32)
    assert report["target"] == "policy" and report["train_states"] >= 2 and (tmp_path / "v" / "value_head.pt").exists()


def test_policy_successes_counts_calls_per_problem_across_batched_chunks(monkeypatch):
    """The policy's budget rule, per problem, when problems are sampled several at a time: episodes are read in
    order, each model turn is a call, the first solving episode within the budget counts, and a problem neither
    solved nor out of calls is sampled again in another round until it is one or the other."""
    from types import SimpleNamespace

    def episode(group, turns, correct):
        segs = [{"role": r} for _ in range(turns) for r in ("model", "env")]
        return SimpleNamespace(group=group, segments=segs, info={"correct": correct})

    # per problem, its rounds of episodes as (turns, solved); problems 0-2 go in one chunk, 3-4 in the next
    plans = {0: [[(3, False), (2, True)]], 1: [[(2, False), (2, False)], [(3, False), (3, False)]],
             2: [[(5, False), (4, True)]], 3: [[(1, True)]], 4: [[(0, False)]]}
    rounds = {p: iter(r) for p, r in plans.items()}
    chunks = []

    def fake_rollout(model, tokenizer, spec, part, cfg):
        chunks.append(list(part))
        return [episode(i, t, c) for i, p in enumerate(part) for t, c in next(rounds[p])], {}

    monkeypatch.setattr(vs, "rollout", fake_rollout)
    got = vs.policy_successes(None, None, None, [0, 1, 2, 3, 4], budget=8, env_config=None, max_new_tokens_per_turn=4,
                              max_completion_tokens=16, episodes=2, chunk=3)
    # 0: solved on its 2nd episode after 3 + 2 calls; 1: 4 calls in round 1, then 3 more, and the next 3 would
    # pass 8, so 8 calls, none solved; 2: 5 + 4 > 8, so the budget runs out before its solving episode ends;
    # 3: solved at once; 4: a round with no model turn ends it (no endless loop)
    assert got == [(True, 5), (False, 8), (False, 8), (True, 1), (False, 0)]
    assert chunks == [[0, 1, 2], [3, 4], [1]]


def test_the_shipped_records_load_and_tabulate():
    """What ships in results/value-search/ is read by the node page: valid records, every method a row with an
    interval that holds its mean, and no path of the machine that made them."""
    from app.presentation.node_sections import value_search_frame, value_search_verdicts
    from lab import value_search_results

    records = value_search_results.load()
    assert {r["env"] for r in records} >= {"sokoban"}
    for record in records:
        assert record["node"] == "planning-external-guide" and not record["model"].startswith("/")
        frame = value_search_frame(record)
        assert len(frame) == sum(len(b["methods"]) for b in record["budgets"])
        assert ((frame["95% low"] <= frame["solved %"]) & (frame["solved %"] <= frame["95% high"])).all()
        assert len(value_search_verdicts(record)) == len(record["budgets"])
