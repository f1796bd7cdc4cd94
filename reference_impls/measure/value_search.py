"""Planning with a LEARNED value (the planning-external-guide node): a value head on the language model's
hidden state, trained by regression on states of the grid puzzles, then used as the value of
``envs.plansearch.best_first`` at inference; and the comparison of three ways to spend the same number of
model calls on held-out puzzles.

The value. For a state ``s`` of Sokoban or FrozenLake the regression target is the discounted success of
the exact solver from ``s``::

    V*(s) = gamma ** d*(s)          d*(s) = the shortest number of moves to the goal (BFS; Sokoban's
                                            solver, FrozenLake's bfs), V*(s) = 0 when the goal cannot be
                                            reached (a box in a dead corner, a hole)

on the states visited by the solver's episode of each training puzzle (its shortest plan, so positives
along the way) and by random-walk episodes from its start (an exploratory policy, which visits
dead ends and detours). With ``--target policy`` the states are those the LM itself reaches in sampled
episodes (after each turn), and the target is the Monte Carlo discounted success of that episode,
``gamma ** (moves to its end)`` if it solved the puzzle, else 0 (the policy's own value; a state seen in
several episodes gets the mean). The features are the frozen LM's last hidden layer, averaged over the tokens of
the state as the env renders it (the grid text the policy reads); the head is a two-layer MLP with a
sigmoid output, trained with the mean squared error ``mean((head(phi(s)) - V*(s))^2)`` (Adam). The
frozen LM is read, never trained here, so the same checkpoint serves as the policy and the value's
feature extractor. Saved as ``value_head.pt`` + ``value_head.json`` (env, model name, gamma, fit).

Search with it. best-first search orders states by ``g + weight * h``; a learned V is turned into an
estimate of the moves to go by inverting the target: ``h(s) = log(max(V(s), eps)) / log(gamma)``
(unbiased where V = V*; not admissible, so plans need not be optimal).

The comparison (``compare``), on held-out puzzles, every method given the same budget of ``B`` calls:

``policy``     the LLM plays the env (sampled episodes, restarted after a failure, in rounds) until the
               puzzle is solved or ``B`` generation calls (one call = one model turn) are spent;
``uninformed`` best-first search with no guidance (h = 0: uniform-cost search), allowed ``B`` state
               evaluations: the control that says what a value adds at all;
``heuristic``  best-first search with the fixed heuristic of ``plansearch`` (Sokoban: box distance;
               FrozenLake: Manhattan distance), allowed ``B`` state evaluations;
``learned``    best-first search with the learned value, allowed ``B`` state evaluations, each one a
               forward pass of the LM (a model call).
Each evaluation of a distinct state counts once (values are memoised per state, in both searches). A
search succeeds when it returns a plan within the budget, and the plan is then replayed in the env and
must solve it. Success rates come with 95% bootstrap intervals over puzzles (``stats.bootstrap_interval``)
and paired differences (``stats.compare``: one search run a side, an exact McNemar test, Holm over the five).

Usage::

    python -m reference_impls.measure.value_search train --env sokoban --model tiny --puzzles 40 --out runs/value
    python -m reference_impls.measure.value_search compare --value runs/value --n 30 --budget 64 --out cmp.json
    python -m reference_impls.measure.value_search export --value runs/value --compare cmp.json \\
        --to results/value-search/sokoban.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Callable, Hashable

import torch

from ..envs import get_env, plansearch
from ..models import load_policy
from ..rollout import RolloutConfig, rollout
from ..stats import bootstrap_interval, holm, verdict_sentence
from ..stats import compare as paired_test
from . import cli
from .value_head import Features, SearchProblem, ValueHead, load_value, search_problem, train_value
# the value's steps that callers (tests) reach through this module
from .value_head import SEARCH_PROBLEMS, collect_states, fit_value_head, monte_carlo_targets, policy_states  # noqa: F401

EPS = 1e-4


# ----------------------------------------------------------------------------------------------------
# budgeted search and the comparison

class BudgetSpent(Exception):
    pass


class CountedValue:
    """A value callable for best_first that memoises per state and stops the search (BudgetSpent) when a
    new state would exceed ``budget`` evaluations."""

    def __init__(self, estimate: Callable[[Hashable], float], budget: int):
        self.estimate, self.budget = estimate, budget
        self.memo: dict[Hashable, float] = {}

    @property
    def calls(self) -> int:
        return len(self.memo)

    def __call__(self, state) -> float:
        if state not in self.memo:
            if len(self.memo) >= self.budget:
                raise BudgetSpent
            self.memo[state] = float(self.estimate(state))
        return self.memo[state]


def learned_estimate(head: ValueHead, feats: Features, sp: SearchProblem, gamma: float):
    """Moves to go from the learned value: log V / log gamma."""
    def estimate(state):
        with torch.no_grad():
            v = float(head(feats([sp.render(state)]))[0])
        return math.log(max(v, EPS)) / math.log(gamma)
    return estimate


def budgeted_search(sp: SearchProblem, estimate, budget: int, weight: float = 1.0) -> tuple[list[str] | None, int]:
    """``(plan or None, evaluations used)`` of best-first search allowed ``budget`` state evaluations."""
    value = CountedValue(estimate, budget)
    try:
        plan, _ = plansearch.best_first(sp.start, sp.successors, sp.is_goal, value, weight)
    except BudgetSpent:
        plan = None
    return plan, value.calls


def plan_solves(spec, problem, plan: list[str]) -> bool:
    """Replay a plan in a fresh env (one move per turn): does the env say solved?"""
    env = spec.make(problem, moves_per_turn=1, max_turns=64)
    env.reset()
    result = None
    for mv in plan:
        result = env.step(f"<move>{mv}</move>")
        if result.done:
            break
    return bool(result is not None and result.done and result.info.get("correct"))


def policy_successes(model, tokenizer, spec, problems, budget: int, env_config, max_new_tokens_per_turn: int,
                     max_completion_tokens: int, episodes: int, chunk: int = 8) -> list[tuple[bool, int]]:
    """Per problem ``(solved within budget, generation calls used)``. Episodes are sampled in rounds of
    ``episodes`` per problem and read in order; each model turn is one call; the first episode that solves the
    puzzle before ``budget`` calls are spent counts. A problem that is neither solved nor out of calls after a
    round gets another round, so the policy spends its whole budget like the searches (an episode that ends
    early, on an illegal move or its token budget, leaves calls unspent). ``chunk`` problems are sampled in one
    batched rollout (chunk x episodes rows: the rollout engine's batching, many times faster on a CPU than one
    problem at a time; the rule per problem is the same)."""
    cfg = RolloutConfig(group_size=episodes, max_new_tokens_per_turn=max_new_tokens_per_turn,
                        max_completion_tokens=max_completion_tokens, env_config=env_config)
    used = [0] * len(problems)
    solved = [False] * len(problems)
    pending = list(range(len(problems)))
    while pending:
        finished = set()
        for start in range(0, len(pending), chunk):
            part = pending[start:start + chunk]
            samples, _ = rollout(model, tokenizer, spec, [problems[i] for i in part], cfg)
            by_problem: list[list] = [[] for _ in part]
            for s in samples:  # in sampling order within each problem's group
                by_problem[s.group].append(s)
            for i, group in zip(part, by_problem):
                before = used[i]
                for s in group:
                    calls = sum(seg["role"] == "model" for seg in s.segments)
                    if used[i] + calls > budget:
                        used[i] = budget
                        break
                    used[i] += calls
                    if s.info.get("correct"):
                        solved[i] = True
                        break
                # done: solved, budget spent, or a round that made no call (nothing more would be learned)
                if solved[i] or used[i] >= budget or used[i] == before:
                    finished.add(i)
        pending = [i for i in pending if i not in finished]
    return list(zip(solved, used))


def _reused_policy(path: str | Path, expected: dict) -> dict:
    """The policy's results from an earlier ``compare --out`` file, when it was run on the same puzzles, model,
    budget and token limits (sampling the policy is the expensive part; the searches are cheap to redo)."""
    earlier = json.loads(Path(path).read_text())
    if "policy" not in earlier.get("methods", {}):
        raise ValueError(f"{path}: no policy results in it (write it with `value_search compare --out`)")
    for key, want in expected.items():
        if key in earlier and earlier[key] != want:
            raise ValueError(f"{path}: its {key} is {earlier[key]!r}, this comparison's is {want!r}: the policy's "
                             f"results would not be for the same puzzles or budget")
    missing = [k for k in ("env", "model", "n", "budget", "seed") if k not in earlier]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    policy = earlier["methods"]["policy"]
    if len(policy.get("per_problem", [])) != expected["n"]:
        raise ValueError(f"{path}: methods.policy.per_problem has {len(policy.get('per_problem', []))} results, "
                         f"expected {expected['n']}")
    return policy


def compare(value_dir: str | Path, n: int = 30, budget: int = 64, seed: int = 0, model_name: str | None = None,
            max_new_tokens_per_turn: int = 16, max_completion_tokens: int = 192, model=None, tokenizer=None,
            policy_from: str | Path | None = None) -> dict:
    """Policy alone vs best-first search with no guidance, with the fixed heuristic and with the learned value,
    on ``n`` held-out puzzles at ``budget`` calls. ``policy_from``: take the policy's results from an earlier
    comparison of the same puzzles, model, budget and token limits instead of sampling it again."""
    head, meta = load_value(value_dir)
    env, gamma, env_options = meta["env"], meta["gamma"], dict(meta.get("env_options", {}))
    name = model_name or meta["model"]
    reused = None
    if policy_from is not None:
        reused = _reused_policy(policy_from, {
            "env": env, "model": name, "n": n, "budget": budget, "seed": seed, "env_options": env_options,
            "max_new_tokens_per_turn": max_new_tokens_per_turn, "max_completion_tokens": max_completion_tokens})
    if model is None:
        model, tokenizer = load_policy(name)
    if model.config.hidden_size != meta["hidden"]:
        raise ValueError(f"{value_dir}: the value head reads hidden size {meta['hidden']}, model {name!r} has "
                         f"{model.config.hidden_size}: use the model it was trained on ({meta['model']!r})")
    spec = get_env(env)
    problems = spec.problems("heldout", n=n, seed=seed, config=env_options)
    feats = Features(model, tokenizer)
    max_turns = spec.options(env_options).max_turns
    episodes = max(1, math.ceil(budget / max_turns))
    searches = {"uninformed": lambda sp: (lambda state: 0.0),  # uniform-cost search: what guidance adds
                "heuristic": lambda sp: sp.heuristic,
                "learned": lambda sp: learned_estimate(head, feats, sp, gamma)}
    rows = {"policy": [], **{k: [] for k in searches}}
    calls = {k: [] for k in rows}
    lengths = {k: [] for k in searches}
    t0 = time.time()
    if reused is None:
        policy = policy_successes(model, tokenizer, spec, problems, budget, spec.config_of(env_options),
                                  max_new_tokens_per_turn, max_completion_tokens, episodes)
    else:  # per-problem calls are in newer files; older ones keep only the mean and max, copied as they are
        policy = [(bool(ok), c) for ok, c in zip(reused["per_problem"],
                                                 reused.get("per_problem_calls", [None] * len(problems)))]
    for p, (ok, used) in zip(problems, policy):
        rows["policy"].append(float(ok))
        calls["policy"].append(used)
        sp = search_problem(env, p)
        for method, make in searches.items():
            plan, used = budgeted_search(sp, make(sp), budget)
            ok = plan is not None and plan_solves(spec, p, plan)
            rows[method].append(float(ok))
            calls[method].append(used)
            if ok:
                lengths[method].append(len(plan))

    def summary(method):
        c = calls[method]
        out = {"success": bootstrap_interval([rows[method]], seed=seed).as_dict(), "per_problem": rows[method]}
        if None in c:  # the policy reused from an older file, which kept only its mean and max calls
            return {**out, "mean_calls": reused["mean_calls"], "max_calls": reused["max_calls"]}
        return {**out, "mean_calls": sum(c) / len(c), "max_calls": max(c), "per_problem_calls": c}

    result = {
        "env": env, "model": name, "value": str(value_dir), "n": len(problems), "budget": budget, "seed": seed,
        "env_options": env_options, "max_new_tokens_per_turn": max_new_tokens_per_turn,
        "max_completion_tokens": max_completion_tokens, "policy_episodes_per_round": episodes,
        "policy_from": None if policy_from is None else Path(policy_from).name,
        "wall_s": round(time.time() - t0, 1),
        "methods": {k: summary(k) for k in rows},
        # mean over the puzzles each method solved (so not comparable between methods that solve different sets)
        "plan_length": {k: (sum(v) / len(v) if v else None) for k, v in lengths.items()},
        "optimal_length": sum(len(p.plan) for p in problems) / len(problems),
    }
    # one search run a side on the same puzzles: exact McNemar tests, Holm over the five, the one wording
    pairs = (("learned", "heuristic"), ("learned", "policy"), ("heuristic", "policy"),
             ("learned", "uninformed"), ("heuristic", "uninformed"))
    tests = [paired_test([rows[a]], [rows[b]]) for a, b in pairs]
    for (a, b), test, p_holm in zip(pairs, tests, holm([t.p_value for t in tests])):
        result[f"{a}_vs_{b}"] = {"difference": {"mean": test.difference, "low": test.low, "high": test.high},
                                 "p_value": test.p_value, "p_holm": p_holm, "test": test.test,
                                 "verdict": verdict_sentence(test, b, p_holm, len(tests))}
    return result


#: the taxonomy node this comparison belongs to (RL as an external guide of a search)
NODE = "planning-external-guide"


def export_results(value_dir: str | Path, compare_files: list[str | Path], dest: str | Path) -> dict:
    """One portable record of a value head and its comparisons at one or more budgets, for shipping with the
    repository (the explorer's planning-external-guide node page reads it): the head's fit report and, per
    budget, each method's success with its interval, the calls used, plan lengths and the paired verdicts.
    Paths of this machine are left out; the per-puzzle 0/1s stay, so the intervals can be recomputed."""
    _, meta = load_value(value_dir)
    budgets = []
    for f in compare_files:
        r = json.loads(Path(f).read_text())
        if r.get("env") != meta["env"]:
            raise ValueError(f"{f}: a comparison on {r.get('env')!r}, but the value head is for {meta['env']!r}")
        budgets.append({k: v for k, v in r.items() if k not in ("value", "model")})
    if not budgets:
        raise ValueError("no comparison files given")
    if len({b["budget"] for b in budgets}) != len(budgets):
        raise ValueError("two comparison files have the same budget")
    model = Path(str(meta["model"]))
    record = {"node": NODE, "env": meta["env"],
              # a saved checkpoint is named by its folder (e.g. warm/sokoban), never by this machine's path
              "model": meta["model"] if not model.is_absolute() else "/".join(model.parts[-2:]),
              "value": {k: v for k, v in meta.items() if k != "model"},
              "budgets": sorted(budgets, key=lambda b: b["budget"])}
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(record, indent=1))
    return record


def build_parser(argv=None) -> argparse.ArgumentParser:
    p = cli.new_parser("reference_impls.measure.value_search", __doc__)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="fit a value head on train puzzles and save it")
    t.add_argument("--env", default="sokoban", choices=sorted(SEARCH_PROBLEMS))
    t.add_argument("--model", default="smollm2-135m-instruct", help="model name or saved folder (its features)")
    t.add_argument("--puzzles", type=int, default=40)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--gamma", type=float, default=0.9)
    t.add_argument("--epochs", type=int, default=300)
    t.add_argument("--levels", default=None, help="comma-separated puzzle levels (default: the env's)")
    t.add_argument("--target", default="solver", choices=("solver", "policy"),
                   help="solver: V* on solver and random-walk states; policy: the model's own episodes (Monte Carlo)")
    t.add_argument("--episodes", type=int, default=4, help="sampled policy episodes per puzzle (--target policy)")
    t.add_argument("--max-new-tokens-per-turn", type=int, default=16)
    t.add_argument("--max-completion-tokens", type=int, default=192)
    t.add_argument("--out", required=True)
    c = sub.add_parser("compare", help="policy vs heuristic search vs learned-value search on held-out puzzles")
    c.add_argument("--value", required=True, help="folder written by `train`")
    c.add_argument("--model", default=None, help="policy model (default: the value head's; a run checkpoint works)")
    c.add_argument("--n", type=int, default=30)
    c.add_argument("--budget", type=int, default=64, help="model calls (or state evaluations) per puzzle")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--max-new-tokens-per-turn", type=int, default=16)
    c.add_argument("--max-completion-tokens", type=int, default=192)
    c.add_argument("--out", default=None, help="write the JSON here (else stdout only)")
    c.add_argument("--policy-from", default=None,
                   help="an earlier `compare --out` file of the same puzzles, model and budget: reuse its policy "
                        "results instead of sampling the policy again (the searches are redone)")
    e = sub.add_parser("export", help="one portable record of a value head and its comparisons (to ship)")
    e.add_argument("--value", required=True, help="folder written by `train`")
    e.add_argument("--compare", nargs="+", required=True, help="JSON files written by `compare --out`")
    e.add_argument("--to", required=True, help="the record's file (e.g. results/value-search/sokoban.json)")
    return p


def check_train(args) -> None:
    if not 0 < args.gamma < 1:
        build_parser().error("--gamma must be in (0, 1)")


def run_train(args, _) -> dict:
    opts = {"levels": tuple(int(x) for x in args.levels.split(","))} if args.levels else {}
    get_env(args.env).options(opts)
    return train_value(args.env, args.model, args.out, args.puzzles, args.seed, args.gamma, args.epochs, opts,
                       target=args.target, episodes=args.episodes, max_new_tokens_per_turn=args.max_new_tokens_per_turn,
                       max_completion_tokens=args.max_completion_tokens)


def run_compare(args, _) -> dict:
    result = compare(args.value, args.n, args.budget, args.seed, args.model, args.max_new_tokens_per_turn,
                     args.max_completion_tokens, policy_from=args.policy_from)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2))
    return result


def run_export(args, _) -> str:
    record = export_results(args.value, args.compare, args.to)
    return f"{args.to}: {record['env']}, budgets {', '.join(str(b['budget']) for b in record['budgets'])}"


# train's own refusals (a bad --levels) end in a traceback, as they did before the commands shared cli.main
COMMANDS = {"train": cli.Command(run_train, check_train),
            "compare": cli.Command(run_compare, errors=(FileNotFoundError, ValueError)),
            "export": cli.Command(run_export, errors=(FileNotFoundError, ValueError, KeyError))}


def main(argv=None) -> int:
    return cli.main(build_parser, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
