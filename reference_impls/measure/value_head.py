"""The learned value of :mod:`reference_impls.measure.value_search` (the module docstring there gives the
method): the grid puzzles as search problems, the states a value is trained on with their targets (the exact
solver's ``V*`` or the policy's Monte Carlo success), the frozen LM's features, the value head and its fit,
saved as ``value_head.pt`` + ``value_head.json``. A library; ``value_search train`` is its command."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Iterable

import torch
from torch import nn

from ..common import position_ids_from_mask
from ..envs import frozenlake, get_env, plansearch, sokoban
from ..envs.gridgames import DIRECTIONS
from ..models import load_policy
from ..rollout import RolloutConfig

# ----------------------------------------------------------------------------------------------------
# the puzzles as search problems

@dataclass(frozen=True)
class SearchProblem:
    """One puzzle as a graph: what best-first search, the labels and the features need."""

    start: Hashable
    successors: Callable[[Hashable], Iterable[tuple[str, Hashable, float]]]
    is_goal: Callable[[Hashable], bool]
    heuristic: Callable[[Hashable], float]
    render: Callable[[Hashable], str]  # the text the env shows for the state
    distance: Callable[[Hashable], int | None]  # exact moves to the goal (None: unreachable)
    state_of: Callable[[object], Hashable]  # the state of a running env's game (for the policy's episodes)


def _sokoban(p: sokoban.Problem) -> SearchProblem:
    def successors(state):
        for mv in DIRECTIONS:
            out = sokoban.push(p.walls, state[1], state[0], mv)
            if out is not None:
                yield mv, (out[1], out[0]), 1.0

    def distance(state):
        plan = sokoban.solve(p.walls, p.targets, state[1], state[0], budget=50_000)
        return None if plan is None else len(plan)

    return SearchProblem((p.player, frozenset(p.boxes)), successors, lambda s: s[1] == p.targets,
                         lambda s: plansearch.box_distance(s[1], p.targets),
                         lambda s: sokoban.render(p.size, p.walls, p.targets, s[1], s[0]), distance,
                         lambda game: (game.player, frozenset(game.boxes)))


def _frozenlake(p: frozenlake.Problem) -> SearchProblem:
    grid = p.grid
    goal = next((r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "G")
    start = next((r, c) for r, row in enumerate(grid) for c, x in enumerate(row) if x == "S")

    def successors(pos):
        if grid[pos[0]][pos[1]] in "HG":
            return
        for mv, (dr, dc) in DIRECTIONS.items():
            q = (pos[0] + dr, pos[1] + dc)
            if 0 <= q[0] < len(grid) and 0 <= q[1] < len(grid[0]):
                yield mv, q, 1.0  # a hole is a state (a dead one), as in the game

    def distance(pos):
        if grid[pos[0]][pos[1]] == "H":
            return None
        plan = frozenlake.bfs(grid, pos)
        return None if plan is None else len(plan)

    def render(pos):
        return "\n".join("".join("P" if (r, c) == pos else x for c, x in enumerate(row)) for r, row in enumerate(grid))

    return SearchProblem(start, successors, lambda s: s == goal,
                         lambda s: abs(s[0] - goal[0]) + abs(s[1] - goal[1]), render, distance,
                         lambda game: game.pos)


#: the puzzles this module can search, by env name (a registry, like envs.ENVS)
SEARCH_PROBLEMS: dict[str, Callable] = {"sokoban": _sokoban, "frozenlake": _frozenlake}


def search_problem(env: str, problem) -> SearchProblem:
    if env not in SEARCH_PROBLEMS:
        raise ValueError(f"value search: no search adapter for env {env!r}; known: {', '.join(SEARCH_PROBLEMS)}")
    return SEARCH_PROBLEMS[env](problem)


# ----------------------------------------------------------------------------------------------------
# states and their targets

def collect_states(sp: SearchProblem, rng: random.Random, gamma: float, walks: int = 4,
                   walk_length: int = 12) -> list[tuple[str, float]]:
    """``(rendered state, V*(state))`` for the states of the solver's episode and of ``walks`` random walks
    from the start (each distinct state once)."""
    seen: dict[Hashable, float] = {}

    def label(state):
        if state not in seen:
            d = sp.distance(state)
            seen[state] = 0.0 if d is None else gamma ** d
        return seen[state]

    state = sp.start
    label(state)
    plan, _ = plansearch.best_first(sp.start, sp.successors, sp.is_goal, sp.heuristic)
    for mv in plan or []:  # the solver's episode
        state = next(nxt for a, nxt, _ in sp.successors(state) if a == mv)
        label(state)
    for _ in range(walks):  # exploratory episodes
        state = sp.start
        for _ in range(walk_length):
            moves = list(sp.successors(state))
            if not moves or sp.is_goal(state):
                break
            state = rng.choice(moves)[1]
            label(state)
    return [(sp.render(s), v) for s, v in seen.items()]


def monte_carlo_targets(trace: list[tuple[Hashable, int]], solved: bool, gamma: float) -> list[tuple[Hashable, float]]:
    """Discounted success of one episode at each of its recorded states: ``trace`` is ``(state, moves made so
    far)`` after every turn (the start first); the target is ``gamma ** (moves to the episode's end)`` when the
    episode solved the puzzle, else 0."""
    total = trace[-1][1]
    return [(state, gamma ** (total - moves) if solved else 0.0) for state, moves in trace]


class _StateRecorder:
    """Wraps one episode's env: records the game's state and the moves made after every turn."""

    def __init__(self, env, state_of):
        self.env, self.state_of = env, state_of
        self.stop_strings = env.stop_strings
        self.trace: list[tuple[Hashable, int]] = []
        self.solved = False

    def reset(self):
        messages = self.env.reset()
        self.trace = [(self.state_of(self.env.game), 0)]
        return messages

    def step(self, text):
        result = self.env.step(text)
        self.trace.append((self.state_of(self.env.game), self.env.moves_made))
        if result.done:
            self.solved = bool(result.info.get("correct"))
        return result


def policy_states(model, tokenizer, env: str, problems, gamma: float, episodes: int = 4,
                  max_new_tokens_per_turn: int = 16, max_completion_tokens: int = 192,
                  env_options: dict | None = None) -> list[tuple[str, float]]:
    """``(rendered state, target)`` from ``episodes`` sampled episodes of the policy per puzzle, the target being
    the episode's discounted success from that state (Monte Carlo; a state seen several times gets the mean)."""
    from ..rollout import Sample, render_prompt, run_episodes

    spec = get_env(env)
    env_config = spec.config_of(env_options)
    envs, samples, adapters = [], [], []
    for g, p in enumerate(problems):
        sp = search_problem(env, p)
        for _ in range(episodes):
            rec = _StateRecorder(spec.make(p, env_config), sp.state_of)
            ids = render_prompt(tokenizer, rec.reset())
            envs.append(rec)
            adapters.append((g, sp))
            samples.append(Sample(prompt_ids=ids, group=g, segments=[{"role": "prompt", "text": ""}]))
    cfg = RolloutConfig(group_size=1, max_new_tokens_per_turn=max_new_tokens_per_turn,
                        max_completion_tokens=max_completion_tokens)
    run_episodes(model, tokenizer, envs, samples, cfg)
    targets: dict[tuple[int, Hashable], list[float]] = {}  # (puzzle, state) -> its targets
    for (g, sp), rec in zip(adapters, envs):
        for state, target in monte_carlo_targets(rec.trace, rec.solved, gamma):
            targets.setdefault((g, state), []).append(target)
    by_puzzle = dict(adapters)
    return [(by_puzzle[g].render(state), sum(v) / len(v)) for (g, state), v in targets.items()]


class Features:
    """The frozen LM's last hidden layer averaged over a text's tokens; one call = one forward pass."""

    def __init__(self, model, tokenizer):
        self.model, self.tokenizer = model, tokenizer
        self.device = next(model.parameters()).device
        self.calls = 0

    @torch.no_grad()
    def __call__(self, texts: list[str]) -> torch.Tensor:
        self.calls += len(texts)
        enc = self.tokenizer(texts, return_tensors="pt", padding=True).to(self.device)
        # positions from the mask, so a padded row gets the features it would get alone
        out = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         position_ids=position_ids_from_mask(enc["attention_mask"]), output_hidden_states=True)
        h = out.hidden_states[-1].float()
        m = enc["attention_mask"].unsqueeze(-1).float()
        return (h * m).sum(1) / m.sum(1).clamp(min=1.0)


class ValueHead(nn.Module):
    """V(s) in (0, 1) from the features of s."""

    def __init__(self, hidden: int, width: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x)).squeeze(-1)


def fit_value_head(features: torch.Tensor, targets: torch.Tensor, epochs: int = 300, lr: float = 3e-3,
                   seed: int = 0) -> tuple[ValueHead, list[float]]:
    """Regress ``targets`` on ``features`` (full-batch Adam on the mean squared error); returns the head and
    the loss per epoch."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        head = ValueHead(features.shape[1])
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        loss = ((head(features) - targets) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return head.eval(), losses


def _dataset(env: str, split: str, n: int, seed: int, gamma: float, env_options: dict, target: str = "solver",
             policy=None, episodes: int = 4, lengths: tuple[int, int] = (16, 192)):
    spec = get_env(env)
    problems = spec.problems(split, n=n, seed=seed, config=env_options)
    if target == "policy":
        return policy_states(*policy, env, problems, gamma, episodes, *lengths, env_options=env_options)
    rng = random.Random(f"value/{env}/{split}/{seed}")
    rows = []
    for p in problems:
        rows += collect_states(search_problem(env, p), rng, gamma)
    return rows


def train_value(env: str, model_name: str, out: str | Path, puzzles: int = 40, seed: int = 0, gamma: float = 0.9,
                epochs: int = 300, env_options: dict | None = None, model=None, tokenizer=None, target: str = "solver",
                episodes: int = 4, max_new_tokens_per_turn: int = 16, max_completion_tokens: int = 192) -> dict:
    """Collect states of ``puzzles`` train puzzles, fit the head, save it into ``out``; returns the fit
    report (train and held-out mean squared error next to the constant predictor's). ``target="solver"``:
    V* on the solver's and random-walk episodes' states; ``"policy"``: the Monte Carlo discounted success of
    ``episodes`` sampled episodes of the model itself per puzzle (its own value, V of the policy)."""
    if target not in ("solver", "policy"):
        raise ValueError(f"target must be 'solver' or 'policy', got {target!r}")
    env_options = dict(env_options or {})
    if model is None:
        model, tokenizer = load_policy(model_name)
    feats = Features(model, tokenizer)
    extra = dict(target=target, policy=(model, tokenizer), episodes=episodes,
                 lengths=(max_new_tokens_per_turn, max_completion_tokens))
    rows = _dataset(env, "train", puzzles, seed, gamma, env_options, **extra)
    held = _dataset(env, "heldout", max(4, puzzles // 4), seed, gamma, env_options, **extra)
    x = torch.cat([feats([t for t, _ in rows[i:i + 64]]) for i in range(0, len(rows), 64)])
    y = torch.tensor([v for _, v in rows])
    xh = torch.cat([feats([t for t, _ in held[i:i + 64]]) for i in range(0, len(held), 64)])
    yh = torch.tensor([v for _, v in held])
    head, losses = fit_value_head(x, y, epochs=epochs, seed=seed)
    with torch.no_grad():
        report = {
            "env": env, "model": model_name, "gamma": gamma, "env_options": env_options, "puzzles": puzzles,
            "target": target, "episodes": episodes if target == "policy" else None,
            "seed": seed, "hidden": x.shape[1], "train_states": len(rows), "heldout_states": len(held),
            "train_mse": float(((head(x) - y) ** 2).mean()), "train_mse_constant": float(y.var(unbiased=False)),
            "heldout_mse": float(((head(xh) - yh) ** 2).mean()),
            "heldout_mse_constant": float(((yh - y.mean()) ** 2).mean()),
            "first_loss": losses[0], "last_loss": losses[-1],
        }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(head.state_dict(), out / "value_head.pt")
    (out / "value_head.json").write_text(json.dumps(report, indent=2))
    return report


def load_value(folder: str | Path) -> tuple[ValueHead, dict]:
    folder = Path(folder)
    meta_file = folder / "value_head.json"
    if not meta_file.exists():
        raise FileNotFoundError(f"{folder}: no value_head.json (train one with `value_search train`)")
    meta = json.loads(meta_file.read_text())
    head = ValueHead(meta["hidden"])
    head.load_state_dict(torch.load(folder / "value_head.pt", weights_only=True))
    return head.eval(), meta
