"""The text environments as ``gymnasium.Env`` (so a general-purpose RL library can drive them), and the other way
round: a gymnasium text environment as an environment of this trainer.

**Project env -> gymnasium** (:class:`TextEnv`, one class for every registered environment):

- ``TextEnv("sokoban", options={...})``, or ``gymnasium.make("atlas/sokoban-v0")`` after :func:`register`
  (one id ``atlas/<name>-v0`` per environment of ``envs.ENVS``, a user's ``--env-module`` ones included).
- Spaces: ``gymnasium.spaces.Text`` for both. An observation is the text the policy reads this turn: at reset
  the prompt (the chat messages written as ``[role]`` blocks; ``info["messages"]`` has them as messages), after a
  step the environment's answer (``<result>68</result>``). An action is the policy's text for one turn, the same
  text the trainer's rollout hands to ``env.step``. The character set is wide (printable Latin, Greek,
  punctuation, arrows, mathematical and box-drawing symbols, tab and newlines): an observation character outside
  it is shown as U+FFFD, so an observation is always in the space; an action's characters are passed on as
  they are (the environment's parser judges the text, as in a training rollout).
- ``reset(seed=...)``: a seeded reset draws the same problem (an index into a pool of ``pool_size`` problems of
  ``split``, listed once with ``problem_seed``); ``options={"split": "heldout", "problem": 3}`` picks one.
- ``step(action)`` returns ``(observation, reward, terminated, truncated, info)``. The reward is the
  environment's episode reward, paid on the step that ends the episode (these environments score an episode,
  not a move; turn-level shaping is summed into it); ``terminated`` is the environment's own end,
  ``truncated`` the wrapper's ``max_steps``; ``info`` is the environment's step info (a copy).
- A bad action gets an observation naming what was wrong and does not reach the environment: not a ``str``,
  or longer than the action space's ``max_length``. An action that the environment reads as no action ends
  most episodes with an empty answer; the wrapper then says so: which closing tags the turn lacked, the
  environment's own error where its info has one, and the reward.
- ``render_mode="ansi"``: the transcript so far. :meth:`TextEnv.demonstration` is the environment's own
  correct transcript of the current problem (``EnvSpec.demonstrate``).

**gymnasium -> project env** (environment ``gymnasium``, option ``gym_id``): a registered gymnasium environment
with Text spaces played by the trainer, so ``train --env gymnasium --env-option gym_id=atlas/frozenlake-v0``
trains through gymnasium's API alone. A problem is a reset seed; its split goes to ``reset`` as the option
``split`` (which :class:`TextEnv` honours; another environment must accept or ignore it). The prompt is
``info["messages"]`` where the environment gives them, else one user message holding the observation; the
episode's reward is the sum of the step rewards; the stop strings are the environment's ``stop_strings``
attribute (none: the model writes until end of text). A demonstration exists where the environment has a
``demonstration()`` method.

``python -m reference_impls.envs.gym_text --env sokoban --policy demonstration --episodes 3`` drives a wrapped
environment through gymnasium and prints each episode's return (``--policy random`` samples the action space).
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from dataclasses import dataclass
from functools import lru_cache

import gymnasium
from gymnasium import spaces

from ..implementations import Implementation
from ..options import ConfigError, Options, as_dict, key_values, option
from . import ENVS, EnvSpec, StepResult, get_env

#: characters an observation may hold: printable Latin (with its supplements), Greek, general punctuation,
#: arrows, mathematical operators, technical, box-drawing and other symbols; tab, newlines; U+FFFD stands in
#: for any other character
CHARSET = "".join(dict.fromkeys(
    "\t\n\r\ufffd" + "".join(chr(c) for lo, hi in ((0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x2000, 0x2BFF))
                              for c in range(lo, hi + 1) if chr(c).isprintable())))
_CHARSET = frozenset(CHARSET)
OBSERVATION_MAX = 1 << 16  # characters; a longer observation is cut, saying so
ACTION_MAX = 1 << 13  # characters of one turn (the rollout's token limits keep real turns far below it)
NAMESPACE = "atlas"
SPLITS = ("train", "heldout")  # and "validation" for an environment that has it (EnvSpec.validation_split)
RESET_OPTIONS = ("split", "problem")


def gym_id(env: str) -> str:
    """The gymnasium id of a registered environment: ``atlas/<name>-v0``."""
    return f"{NAMESPACE}/{env}-v0"


def register() -> list[str]:
    """Register every environment of ``envs.ENVS`` with gymnasium as ``atlas/<name>-v0`` (those not registered
    yet; a user's environment added later is registered by the next call); returns all their ids."""
    ids = []
    for name, spec in ENVS.items():
        if spec is SPEC:
            continue  # the adapter below plays gymnasium environments; wrapping it again would go round in circles
        env_id = gym_id(name)
        if env_id not in gymnasium.registry:
            gymnasium.register(env_id, entry_point=f"{__name__}:TextEnv", kwargs={"env": name},
                               nondeterministic=False)
        ids.append(env_id)
    return ids


def prompt_text(messages) -> str:
    """Chat messages as one text: a ``[role]`` line before each message's content."""
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)


def fit_observation(text: str) -> str:
    """``text`` inside the observation space: characters outside ``CHARSET`` become U+FFFD, and a text over
    ``OBSERVATION_MAX`` characters is cut with a note saying how much."""
    text = "".join(c if c in _CHARSET else "\ufffd" for c in text)
    if len(text) > OBSERVATION_MAX:
        note = f"\n[cut: {len(text)} characters, over the observation space's {OBSERVATION_MAX}]"
        text = text[:OBSERVATION_MAX - len(note)] + note
    return text


@lru_cache(maxsize=64)
def _pool(env: str, split: str, size: int, seed: int, options_key: str) -> tuple:
    spec = get_env(env)
    return tuple(spec.problems(split, size, seed, spec.options(json.loads(options_key))))


class TextEnv(gymnasium.Env):
    """One registered text environment as a ``gymnasium.Env`` (see the module's docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}  # ansi: one frame (the transcript) per step

    def __init__(self, env: str, *, split: str = "train", options: dict | None = None, pool_size: int = 128,
                 problem_seed: int = 0, max_steps: int = 64, render_mode: str | None = None):
        self.spec_ = get_env(env)  # ``spec`` is gymnasium's (the registration); this is the environment's
        self.env_name = env
        self.config = self.spec_.options(options)  # validated: a bad option is a ConfigError naming it
        self.splits = SPLITS + (("validation",) if self.spec_.validation_split else ())
        self.split = self._check_split(split)
        for name, value, low in (("pool_size", pool_size, 1), ("max_steps", max_steps, 1),
                                 ("problem_seed", problem_seed, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"TextEnv({env!r}): {name} must be an integer >= {low}, got {value!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"TextEnv({env!r}): render_mode must be None or one of "
                             f"{self.metadata['render_modes']}, got {render_mode!r}")
        self.pool_size, self.problem_seed, self.max_steps = pool_size, problem_seed, max_steps
        self.render_mode = render_mode
        self._options_key = json.dumps(as_dict(self.config), sort_keys=True, default=list)
        self.observation_space = spaces.Text(OBSERVATION_MAX, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(ACTION_MAX, min_length=0, charset=CHARSET)
        # the strings that close this environment's actions (tool calls, answers): the same for every problem
        self.stop_strings = tuple(self.spec_.make(self._problems(self.split)[0], self.config).stop_strings)
        self.problem = None
        self._episode = None
        self._over = True
        self._steps = 0
        self._transcript: list[str] = []

    def _check_split(self, split) -> str:
        if split not in self.splits:
            raise ValueError(f"TextEnv({self.env_name!r}): split must be one of {', '.join(self.splits)}, got {split!r}")
        return split

    def _problems(self, split: str) -> tuple:
        return _pool(self.env_name, split, self.pool_size, self.problem_seed, self._options_key)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"TextEnv.reset: unknown option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}")
        split = self._check_split(options.get("split", self.split))
        pool = self._problems(split)
        index = options.get("problem")
        if index is None:
            index = int(self.np_random.integers(len(pool)))
        elif not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(pool):
            raise ValueError(f"TextEnv.reset: option 'problem' must be an index in [0, {len(pool)}), got {index!r}")
        self.problem = pool[index]
        self._episode = self.spec_.make(self.problem, self.config)
        messages = [dict(m) for m in self._episode.reset()]
        self._over, self._steps = False, 0
        observation = fit_observation(prompt_text(messages))
        self._transcript = [observation]
        info = {"env": self.env_name, "split": split, "problem": index, "messages": messages,
                "stop_strings": list(self.stop_strings)}
        return observation, info

    def _refused(self, action) -> str:
        """Why ``action`` cannot be a turn at all ('' when it can)."""
        if not isinstance(action, str):
            return (f"an action is the policy's text for one turn (a str), got {type(action).__name__} "
                    f"{str(action)[:80]!r}")
        if len(action) > ACTION_MAX:
            return f"the action is {len(action)} characters long, over the action space's max_length {ACTION_MAX}"
        return ""

    def _ending(self, action: str, reward: float, info: dict) -> tuple[str, str]:
        """(observation, what was wrong or '') for a step that ended the episode without an answer text."""
        tags = [s for s in self.stop_strings if s.startswith("</")]
        errors = [str(v) for k, v in sorted(info.items()) if k.endswith("error") and isinstance(v, str) and v]
        wrong = ""
        if tags and not any(t in action for t in tags):
            wrong = (f"the turn closed none of this environment's tags ({', '.join(tags)}), so it held no tool call "
                     f"and no answer")
        elif errors:
            wrong = "; ".join(errors)
        if wrong and errors and errors[0] not in wrong:
            wrong += f" ({'; '.join(errors)})"
        end = f"The episode is over: reward {reward:g}."
        return (f"Bad action: {wrong}. {end}" if wrong else end), wrong

    def step(self, action):
        if self._episode is None or self._over:
            raise gymnasium.error.ResetNeeded("TextEnv.step: the episode is over (or never started); call reset()")
        self._steps += 1
        refused = self._refused(action)
        if refused:
            observation = f"Bad action: {refused}. Nothing was done; write this turn again."
            reward, terminated, info = 0.0, False, {"bad_action": refused}
        else:
            result: StepResult = self._episode.step(action)
            terminated = bool(result.done)
            reward = float(result.reward) if terminated else 0.0
            info = copy.deepcopy(dict(result.info))
            observation = result.observation or ""
            if terminated and not observation:
                observation, wrong = self._ending(action, reward, info)
                if wrong:
                    info["bad_action"] = wrong
        truncated = not terminated and self._steps >= self.max_steps
        self._over = terminated or truncated
        observation = fit_observation(observation)
        self._transcript += [str(action)[:ACTION_MAX], observation]
        return observation, reward, terminated, truncated, info

    def render(self):
        if self.render_mode == "ansi":
            return "\n".join(self._transcript)
        return None

    def demonstration(self) -> list[tuple[str, str]]:
        """The environment's correct transcript of the current problem: ``[(role, text), ...]`` with role
        ``model`` (an action) or ``env`` (what the environment answered), as the SFT warm start uses it."""
        if self.problem is None:
            raise gymnasium.error.ResetNeeded("TextEnv.demonstration: call reset() first (it picks the problem)")
        return self.spec_.demonstrate(self.problem, self.config)


# ----------------------------------------------------------------------------------------------------
# a gymnasium text environment as an environment of the trainer

@dataclass(frozen=True)
class GymnasiumOptions(Options):
    gym_id: str = option(gym_id("frozenlake"), "A registered gymnasium environment with Text observation and action "
                         "spaces (the atlas/<env>-v0 ids wrap this project's environments; MODULE:ID imports MODULE "
                         "first, as gymnasium.make does).")

    def __post_init__(self):
        super().__post_init__()
        if ":" not in self.gym_id and self.gym_id not in register() + [i for i in gymnasium.registry]:
            raise ConfigError(f"env option gym_id: {self.gym_id!r} is not a registered gymnasium environment; the "
                              f"atlas ids are {', '.join(register())}", field="env_options.gym_id")


@dataclass(frozen=True)
class Seeded:
    """A problem of the gymnasium environment: the seed of its reset, and the split it is drawn from."""

    seed: int
    split: str


def _seeds(split: str, n: int, seed: int, config: GymnasiumOptions) -> list[Seeded]:
    rng = random.Random(f"{config.gym_id}:{split}:{seed}")
    return [Seeded(rng.randrange(2 ** 31), split) for _ in range(n)]


def make_gym(env_id: str) -> gymnasium.Env:
    """``gymnasium.make(env_id)`` with the atlas ids registered; an unknown id or a space that is not Text is a
    ConfigError naming the option."""
    register()
    try:
        env = gymnasium.make(env_id)
    except gymnasium.error.Error as err:
        raise ConfigError(f"env option gym_id: cannot make {env_id!r} ({err}); the atlas ids are "
                          f"{', '.join(register())}", field="env_options.gym_id") from err
    for which in ("observation_space", "action_space"):
        if not isinstance(getattr(env, which), spaces.Text):
            raise ConfigError(f"env option gym_id: {env_id!r} has a {type(getattr(env, which)).__name__} {which}; "
                              f"the trainer reads and writes text (gymnasium.spaces.Text)", field="env_options.gym_id")
    return env


class GymnasiumEpisode:
    """One episode of a gymnasium text environment, played through its ``reset``/``step`` only."""

    def __init__(self, problem: Seeded, config: GymnasiumOptions):
        self.problem = problem
        self.env = make_gym(config.gym_id)
        self.stop_strings = tuple(getattr(self.env.unwrapped, "stop_strings", ()))
        self.total = 0.0

    def reset(self) -> list[dict[str, str]]:
        observation, info = self.env.reset(seed=self.problem.seed, options={"split": self.problem.split})
        messages = info.get("messages") or [{"role": "user", "content": observation}]
        return [dict(m) for m in messages]

    def step(self, model_text: str) -> StepResult:
        observation, reward, terminated, truncated, info = self.env.step(model_text)
        self.total += float(reward)
        done = bool(terminated or truncated)
        return StepResult(None if done else observation, done, self.total if done else 0.0,
                          {**info, "truncated": bool(truncated)})


def _demonstration(problem: Seeded, config: GymnasiumOptions) -> list[tuple[str, str]]:
    env = make_gym(config.gym_id)
    env.reset(seed=problem.seed, options={"split": problem.split})
    demonstrate = getattr(env.unwrapped, "demonstration", None)
    if demonstrate is None:
        raise ConfigError(f"env option gym_id: {config.gym_id!r} has no demonstration() method, so it cannot "
                          "warm-start a policy (run with --sft-steps 0)", field="env_options.gym_id")
    return demonstrate()


SPEC = EnvSpec("gymnasium", GymnasiumOptions, _seeds, GymnasiumEpisode, _demonstration,
               title="any gymnasium text environment, played through reset/step (the atlas/<env>-v0 ids wrap "
                     "this project's environments)",
               demonstration_takes_config=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS

IMPLEMENTATIONS = (
    Implementation(
        "gymnasium-frozenlake-grpo", "GRPO through gymnasium's Env API (FrozenLake)", "grpo", "gymnasium",
        "The FrozenLake planner trained through gymnasium alone: the trainer sees the environment only as a "
        "gymnasium.Env with Text spaces (reset(seed), step -> observation, reward, terminated, truncated, info), "
        "the interface general-purpose RL libraries are written against. Drive any wrapped environment without "
        "training: python -m reference_impls.envs.gym_text --env sokoban --policy demonstration.",
        env_options={"gym_id": gym_id("frozenlake")},
        nodes=("fw-general-rl",),
        changes="No general-purpose library (RLlib, Stable-Baselines3, Tianshou ...) is run here: they drive "
                "gymnasium environments, and their built-in policies read vectors, not text. What this row shows "
                "is the contract between them: every environment of this project is a gymnasium.Env "
                "(atlas/<env>-v0, checked by gymnasium's own environment checker in the tests), and the trainer "
                "plays a gymnasium text environment through reset and step only. The episode reward is the same "
                "as the direct frozenlake-grpo row's, paid on the last step."),
)


# ----------------------------------------------------------------------------------------------------
# the command line: drive a wrapped environment through gymnasium

def play(env: gymnasium.Env, policy: str, seed: int) -> dict:
    """One episode of ``env`` (made with ``gymnasium.make``) under ``policy``: ``demonstration`` (the
    environment's own correct transcript) or ``random`` (samples of the action space)."""
    observation, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    actions = ([text for role, text in env.unwrapped.demonstration() if role == "model"]
               if policy == "demonstration" else None)
    total, steps, terminated, truncated, info = 0.0, 0, False, False, {}
    while not (terminated or truncated):
        if actions is not None and steps >= len(actions):
            break  # the demonstration is played out (it ends the episode in every built-in environment)
        action = actions[steps] if actions is not None else env.action_space.sample()
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
    return {"seed": seed, "return": total, "steps": steps, "terminated": bool(terminated),
            "truncated": bool(truncated), "correct": info.get("correct"), "last_observation": observation[:200]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_impls.envs.gym_text",
                                     description="Play episodes of a project environment through gymnasium's API "
                                                 "and print each return.")
    parser.add_argument("--env", default="frozenlake", help="an environment name (train --list names them)")
    parser.add_argument("--policy", choices=("demonstration", "random"), default="demonstration")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", default="train")
    parser.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the environment (repeatable)")
    parser.add_argument("--json", action="store_true", help="one JSON line per episode")
    args = parser.parse_args(argv)
    register()
    if args.env not in ENVS:
        parser.error(f"--env: unknown environment {args.env!r}; registered: {', '.join(sorted(ENVS))}")
    if args.episodes < 1:
        parser.error(f"--episodes must be at least 1, got {args.episodes}")
    try:
        env = gymnasium.make(gym_id(args.env), split=args.split, options=key_values(args.env_option))
    except (ConfigError, ValueError) as err:
        parser.error(str(err))
    returns = []
    for episode in range(args.episodes):
        result = play(env, args.policy, args.seed + episode)
        returns.append(result["return"])
        print(json.dumps(result) if args.json else
              f"episode {episode} (seed {result['seed']}): return {result['return']:g} in {result['steps']} steps"
              f"{', correct' if result['correct'] else ''}{', truncated' if result['truncated'] else ''}")
    if not args.json:
        print(f"{gym_id(args.env)}, {args.policy} policy: mean return {sum(returns) / len(returns):g} over "
              f"{len(returns)} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
