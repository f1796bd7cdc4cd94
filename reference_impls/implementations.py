"""Every runnable implementation: an algorithm (with its switches) on an environment, and the taxonomy
nodes it serves. ``python -m reference_impls.train --list --json`` prints this list with each entry's full
default options, ``--impl ID`` runs one, and the Lab and the taxonomy's node pages read the same list.

Adding one is a row here; a new algorithm or environment registers itself in ``train.ALGORITHMS`` /
``envs.register_env`` and appears here with the nodes it serves.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .options import ConfigError, close_matches


@dataclass(frozen=True)
class Implementation:
    id: str
    title: str
    algo: str
    env: str
    source: str  # the file under reference_impls/ the Lab shows beside the curves
    summary: str
    algo_options: dict = field(default_factory=dict)
    env_options: dict = field(default_factory=dict)
    nodes: tuple[str, ...] = ()  # taxonomy nodes whose "Run this" opens this implementation
    # shown on the node page, in the project's own words: what the variant changes relative to its family's
    # base and why; the paper it implements (arXiv id or citation); where the survey's Table 2 cell and the
    # paper disagree, what each says; LaTeX of its objective (else the algorithm's, lab.catalog.EQUATIONS)
    changes: str = ""
    paper: str = ""
    survey_vs_paper: str = ""
    equation: str = ""

    def config(self) -> dict:
        """Its options as TrainConfig data (the trainer's defaults fill the rest)."""
        return {"algo": self.algo, "env": self.env, "algo_config": dict(self.algo_options),
                "env_options": dict(self.env_options)}


CALCULATOR_NODES = ("tool-use", "tool-use-react-style", "tool-use-tool-integrated-rl", "tool-use-long-horizon-tir",
                    "math", "math-informal")
SEARCH_NODES = ("search-research", "search-open-source", "search-external-web", "search-internal-knowledge")
PLANNING_NODES = ("planning", "planning-internal-driver", "env-simulated-game", "capability-others")
MEMORY_NODES = ("memory", "memory-rag-style", "memory-token-level", "memory-structured")

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation("calculator-grpo", "GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "A policy that calls a calculator tool over several turns, trained with group-relative advantages.",
                   nodes=("rl-algorithms", "alg-grpo-family", "alg-grpo", *CALCULATOR_NODES)),
    Implementation("calculator-dapo", "DAPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32},
                   nodes=("alg-dapo",)),
    Implementation("calculator-dr-grpo", "Dr.GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}, nodes=("alg-dr-grpo",)),
    Implementation("calculator-gspo", "GSPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with a sequence-level importance ratio (GSPO).", {"importance_sampling_level": "sequence"},
                   nodes=("alg-gspo",)),
    Implementation("calculator-rloo", "RLOO tool agent (calculator)", "rloo", "calculator", "rloo.py",
                   "REINFORCE with a leave-one-out baseline over the group.", nodes=("alg-reinforce",)),
    Implementation("calculator-ppo", "PPO tool agent (calculator)", "ppo", "calculator", "ppo.py",
                   "PPO with a value head, token-level GAE over model tokens, clipped policy and value losses.",
                   nodes=("alg-ppo-family", "alg-ppo")),
    Implementation("calculator-dpo", "DPO on tool-use preference pairs", "dpo", "calculator", "dpo.py",
                   "Offline preference optimisation on correct vs incorrect rollouts of the same prompt.",
                   nodes=("alg-dpo-family", "alg-dpo")),
    Implementation("calculator-ipo", "IPO on tool-use preference pairs", "dpo", "calculator", "dpo.py",
                   "DPO with IPO's squared loss on the preference margin.", {"loss": "ipo"}, nodes=("alg-ipo",)),
    Implementation("search-grpo", "Search-R1-style agent (GRPO)", "grpo", "search", "envs/search.py",
                   "An agent whose tool searches this catalog; rewarded by exact match of its final answer.",
                   nodes=SEARCH_NODES),
    Implementation("search-ppo", "Search-R1-style agent (PPO)", "ppo", "search", "envs/search.py",
                   "The search agent trained with PPO and a critic."),
    Implementation("memory-grpo", "Memory-R1-style memory manager (GRPO)", "grpo", "memory", "envs/memory.py",
                   "A memory manager choosing ADD/UPDATE/DELETE/NOOP, rewarded by a frozen answer agent's exact match.",
                   nodes=MEMORY_NODES),
    Implementation("memory-ppo", "Memory-R1-style memory manager (PPO)", "ppo", "memory", "envs/memory.py",
                   "The memory manager trained with PPO and a critic."),
    # -- DPO family variants (issue 18) --------------------------------------------------------------

    # -- PPO family variants (issue 18) --------------------------------------------------------------

    # -- GRPO family variants, part a (issue 19) -----------------------------------------------------

    # -- GRPO family variants, part b (issue 19) -----------------------------------------------------

    # -- planning and interactive worlds (issue 20) --------------------------------------------------
    Implementation("frozenlake-grpo", "GRPO planner on FrozenLake (text)", "grpo", "frozenlake", "envs/frozenlake.py",
                   "A policy that walks gymnasium's FrozenLake from S to G over several turns of <move> tags, "
                   "rewarded when it reaches the goal.",
                   nodes=PLANNING_NODES,
                   changes="Keeps gymnasium's own FrozenLake: its random-map generator (seeded, levels by map size and "
                           "hole density) and its step function, with the deterministic (non-slippery) ice so that a "
                           "plan can be checked. Simplifies the observation to a text grid and the action to words "
                           "in a <move> tag (a few moves per turn). The reward is the sparse success of the original; "
                           "a shaping switch adds distance progress, either once at the end or per turn (the "
                           "long-horizon option), off by default."),
    Implementation("frozenlake-grpo-turn-reward", "GRPO planner on FrozenLake, turn-level shaping", "grpo",
                   "frozenlake", "envs/frozenlake.py",
                   "FrozenLake with a turn-level reward: each turn earns its distance progress minus a turn cost, "
                   "summed into the episode reward (vs the outcome-only default).",
                   env_options={"levels": (3, 4), "shaping": 0.5, "shaping_mode": "turn", "turn_cost": 0.02},
                   nodes=("capability-others", "planning-internal-driver"),
                   changes="The same lake on the larger maps, with a dense per-turn reward (progress towards the goal "
                           "minus a small cost per turn) on top of success. The rollout still credits the episode with "
                           "one number: the turn rewards are summed, and listed per turn in the episode info."),
    Implementation("sokoban-grpo", "GRPO planner on Sokoban (text)", "grpo", "sokoban", "envs/sokoban.py",
                   "A policy that pushes boxes onto targets over several turns of <move> tags, rewarded when "
                   "every box is placed.",
                   nodes=PLANNING_NODES,
                   changes="Keeps Sokoban's rules (push only, one box at a time, walls) and its success criterion. "
                           "Simplifies the puzzles to small rooms (6x6 or 7x7, one or two boxes) from our own "
                           "reverse-play generator, each checked by an exact breadth-first solver whose shortest plan "
                           "is the warm-start demonstration. Text grid, a few moves per turn; a shaping switch adds "
                           "the fraction of boxes on targets (at the end or per turn). Deadlocks are not detected."),
    Implementation("sokoban-grpo-guided", "GRPO on Sokoban guided by an external planner", "grpo", "sokoban",
                   "envs/plansearch.py",
                   "Sokoban where every observation carries the next moves of a value-guided best-first search "
                   "from the current state; the policy learns when to follow the planner.",
                   env_options={"levels": (2, 3), "hint_moves": 4}, nodes=("planning-external-guide",),
                   changes="The planner is weighted A* over (player, boxes) ordered by a value function: a fixed, "
                           "admissible heuristic (each box's distance to its nearest target), so its plans are "
                           "optimal; a learned value head can replace it (any callable), which the reference does "
                           "not train yet. The LLM stays the actor: it sees the planner's suggestion as text and "
                           "writes the moves itself. The warm-start demonstrations do not show the hint line."),
    Implementation("household-grpo", "GRPO household agent (ALFWorld-style text world)", "grpo", "household",
                   "envs/household.py",
                   "A text household: rooms, containers and objects; the agent navigates, opens, takes, cleans "
                   "and puts with one command per turn, rewarded when the goal holds.",
                   nodes=("embodied", "env-general-purpose", "other-text-game"),
                   changes="Keeps ALFWorld's shape: a household described in text, goals such as 'put a clean mug "
                           "in the cabinet', one command per turn (go to, open, take, clean, put), success reward, "
                           "and the optional list of admissible commands. Simplifies it to our own small simulator "
                           "with seeded layouts (4-5 rooms, a dozen objects), a handful of verbs and task types, and "
                           "rooms as places (no receptacle-level navigation); a scripted solver proves every goal "
                           "reachable and writes the demonstrations."),
    Implementation("household-navigation-grpo", "GRPO household agent, navigation tasks", "grpo", "household",
                   "envs/household.py",
                   "Navigation-only household tasks: find an object somewhere in the house.",
                   env_options={"tasks": ("find",)}, nodes=("embodied-navigation",),
                   changes="Only the 'find X' goals: the agent walks between connected rooms (and opens containers) "
                           "until the object is in view; no manipulation."),
    Implementation("household-manipulation-grpo", "GRPO household agent, manipulation tasks", "grpo", "household",
                   "envs/household.py",
                   "Manipulation household tasks: pick and place, and clean then place.",
                   env_options={"tasks": ("place", "clean_place")}, nodes=("embodied-manipulation",),
                   changes="Only the manipulation goals: take an object (from a possibly closed container), clean it "
                           "at a sink when asked, and put it in or on the named receptacle."),

    # -- code, SQL and web (issue 21) ----------------------------------------------------------------

)
BY_ID = {impl.id: impl for impl in IMPLEMENTATIONS}


def get_implementation(impl_id: str) -> Implementation:
    if impl_id not in BY_ID:
        raise ConfigError(f"--impl: unknown implementation {impl_id!r}{close_matches(impl_id, BY_ID)}; "
                          f"known: {', '.join(BY_ID)}")
    return BY_ID[impl_id]


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node (a pure lookup: imports no model code)."""
    return [impl for impl in IMPLEMENTATIONS if node_id in impl.nodes]
