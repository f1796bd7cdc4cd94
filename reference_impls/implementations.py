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

    # -- code, SQL and web (issue 21) ----------------------------------------------------------------
    Implementation("code-grpo", "Code generation with hidden unit tests (GRPO)", "grpo", "code", "envs/code.py",
                   "A policy that writes a small Python function from a spec; the reward is the fraction of hidden "
                   "unit tests its code passes in a sandboxed process.",
                   nodes=("code", "code-generation", "env-coding-benchmarks"),
                   changes="Keeps the HumanEval/MBPP-style loop that code RL (e.g. CodeRL, PPOCoder, RLEF) trains "
                           "on: a natural-language spec with examples, generated code executed against unit tests "
                           "the model never sees, and a test-based reward (fraction passed, or pass/fail with "
                           "all_pass_only). Simplifies: twelve procedurally generated function families in three "
                           "levels (parameters seeded per problem) instead of human-written problems, single-file "
                           "standard-library code, and return values compared after a JSON round trip. Code runs "
                           "only in the sandbox (bubblewrap namespaces here), never in the trainer."),
    Implementation("code-refine-grpo", "Code refinement with a test-running tool (GRPO)", "grpo", "code-refine",
                   "envs/code.py",
                   "A multi-turn coder that runs drafts on the visible examples with a <run> tool, reads the "
                   "failures and resubmits; rewarded by the hidden tests.",
                   nodes=("code-refinement",),
                   changes="Keeps the execution-feedback loop of refinement methods (RLEF, self-debugging): the "
                           "agent runs its draft, gets concrete failures (call, returned value, expected value, "
                           "or the exception) and revises before the final submission, which is scored on hidden "
                           "tests. Simplifies: feedback comes only from the two visible examples, a fixed budget "
                           "of runs, and the same small generated function families as the code env; there is no "
                           "repository, no compiler and no critic model."),
    Implementation("webshop-grpo", "WebShop-style shopping agent (GRPO)", "grpo", "webshop", "envs/webshop.py",
                   "A multi-turn agent that searches a simulated shop, opens products, picks color and size and "
                   "buys; rewarded by how many of the instruction's attributes the purchase matches.",
                   nodes=("gui-rl-interactive", "env-gui"),
                   changes="Keeps the interactive web-agent loop of WebShop-style GUI RL: an instruction with "
                           "attributes and a budget, a site with search, result lists, product pages with options "
                           "and a buy button, numbered elements to act on, distractor products that miss one "
                           "attribute, and an attribute-match reward (category, color, size, price each a quarter). "
                           "Simplifies: text pages instead of HTML or screenshots, a generated catalog of 12-20 "
                           "products per task instead of a million scraped ones, keyword search, and exactly one "
                           "product that fits."),
    Implementation("web-step-grpo", "One GUI action on a shop page (GRPO)", "grpo", "web-step", "envs/webshop.py",
                   "Static GUI action prediction: given the instruction, the actions so far and the current page, "
                   "predict the expert's next action; reward 1 when it matches.",
                   nodes=("gui-rl-static",),
                   changes="Keeps the static setting of GUI-R1 / UI-R1-style RL: one screen, an instruction and the "
                           "history, one action scored by a rule against the ground-truth action (here the element "
                           "number, or for a search any query whose results contain the target). Simplifies: the "
                           "screen is the webshop env's text page (no pixels, no coordinates), the states come from "
                           "expert trajectories of generated shopping tasks, and there are two action types."),
    Implementation("sql-grpo", "Text-to-SQL agent with database tools (GRPO)", "grpo", "sql", "envs/sql.py",
                   "An agent that lists tables, describes them and runs read-only queries on a generated SQLite "
                   "database, rewarded by execution match of its final query with the gold query.",
                   nodes=("other-table",),
                   changes="Keeps what Spider/BIRD-style text-to-SQL RL measures: a natural-language question over a "
                           "real relational database, a gold query, and execution match (same result set, ordered "
                           "only when the gold query orders) as the reward, plus the agentic part (inspect the schema "
                           "and try queries before answering). Simplifies: two small generated schemas (shop, school) "
                           "with tens of rows instead of hundreds of real databases, templated questions in three "
                           "levels (filter/count, aggregation/ordering, joins), and no value linking or dirty data. "
                           "Every query runs read-only (mode=ro, query_only, an authorizer, a time and row limit)."),

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
