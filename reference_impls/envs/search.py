"""Search environment (Search-R1 style): questions about the catalog, answered by searching the catalog.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <think>I need the year of ReAct.</think><search>ReAct</search>     reasoning, then a query
    env:   <information>[1] ReAct (2022, method): ReAct: synergizing ...     the top-k catalog entries
           [2] ...</information>
    model: <answer>2022</answer>                                             the final answer ends it

Questions
    Generated from catalog facts that have one checkable answer, in five *families*:

    ``year``        the year of the work that introduced a named method        (``Work.year``)
    ``algorithm``   the RL algorithm a named work trains with                  (``Work.algorithms``)
    ``variant``     the family (PPO / DPO / GRPO) of an RL variant             (survey table 2)
    ``benchmark``   the task domain of a benchmark or environment              (survey table 9)
    ``framework``   the framework that offers a given key feature              (survey table 10)

    Only unambiguous facts are asked: a named work whose name is unique in the catalog; a feature
    offered by exactly one framework. Answers with several valid values (a work that uses two
    algorithms, a benchmark with two domains) list every value as gold and accept any of them.
Splits
    ``heldout`` (the test questions): each fact (family + entity) whose stable hash falls in 1 of
    ``HELDOUT_FRACTION`` buckets, independently of the seed. ``validation`` (where a comparison chooses its
    settings): the facts of the works (catalog keys) whose hash falls in 1 of ``VALIDATION_FRACTION`` buckets,
    among the facts that share neither their entity nor their work with any held-out fact. ``train``: the
    remaining facts that share neither their entity nor their work with a held-out or a validation fact (a
    fact that does is asked in no split). So the three splits are disjoint by construction in what a question
    is about, the entity it names and the document that answers it, under any seed and any ``n``
    (``_splits``; tests/reference_impls/test_search_env.py). The seed decides the phrasing and the order of
    the questions, so the same ``(split, n, seed)`` always gives the same list.
Tool
    ``search(query)`` runs the project's own search index (``papers.search.SearchIndex``; BM25 by
    default, ``search_mode="hybrid"`` for BM25 + MiniLM) and returns the top ``top_k`` works as
    one ``<information>`` block, each entry a one-line rendering of the work's catalog facts
    (:func:`entry_text`). The index is built once per process and cached. Any callable
    ``search_fn(query, k) -> [(key, text), ...]`` can replace it (tests use a lexical index with a stub
    embedder, so MiniLM is never loaded). Why lexical by default: the questions name a work, a
    benchmark or a feature, which BM25 finds directly. Measured on all 503 facts with the demonstration
    query, the gold work is in the top 3 for 499 (lexical) vs 487 (hybrid), at ~5-30 ms vs ~230 ms per
    query on 2 busy CPU cores (the dense side encodes every query with MiniLM); see
    benchmarks/search_env_retrieval.py and docs/results_part2.md.
Reward
    ``1.0`` when the first ``<answer>`` equals one of the gold answers after normalisation
    (:func:`normalize_answer`: lower case, punctuation and articles removed, whitespace collapsed, as
    SQuAD / Search-R1 exact match), else ``0.0``; an optional ``format_reward`` for ending with an
    ``<answer>`` at all (off by default).
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec
from ..scoring import exact_match, normalize_answer  # noqa: F401  (normalize_answer: part of this env's API)

TOOL = ToolSpec(
    name="search",
    description="Searches the catalog of agentic-RL works and returns the top entries.",
    call_open="<search>",
    call_close="</search>",
    result_open="<information>",
    result_close="</information>",
)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

SYSTEM_PROMPT = (
    "Answer the question about agentic RL research. Think in <think>...</think>. To look something up, "
    "write <search>query</search>; the results come back in <information>...</information>. "
    "Give the final short answer as <answer>...</answer>."
)

FAMILIES = ("year", "algorithm", "variant", "benchmark", "framework")
HELDOUT_FRACTION = 4  # one fact in HELDOUT_FRACTION is held out
VALIDATION_FRACTION = 5  # of the works no held-out fact touches, one in VALIDATION_FRACTION is for validation
SPLITS = ("train", "validation", "heldout")

PHRASINGS: dict[str, tuple[str, ...]] = {
    "year": ("In which year was the work that introduced {x} published?",
             "What year is the paper introducing {x} from?"),
    "algorithm": ("Which RL algorithm does {x} train with?",
                  "Name the reinforcement learning algorithm used by {x}."),
    "variant": ("Which algorithm family is {x} a variant of: PPO, DPO or GRPO?",
                "Is {x} a variant of PPO, DPO or GRPO?"),
    "benchmark": ("What task domain does the benchmark {x} cover?",
                  "Which task domain does {x} belong to as a benchmark?"),
    "framework": ("Which RL framework offers '{x}' as its key feature?",
                  "Name the RL framework whose key feature is '{x}'."),
}


@dataclass(frozen=True)
class Problem:
    question: str
    answers: tuple[str, ...]  # gold answers; any one matches
    family: str  # question type (``FAMILIES``); named family so evaluate.py reports per type
    entity: str  # the name the question is about
    key: str  # the catalog work that holds the fact
    query: str  # a query that finds it (used by the SFT demonstration)
    split: str
    uid: str


# ----------------------------------------------------------------------------------------------------
# the catalog, facts and questions

@lru_cache(maxsize=1)
def _catalog():
    from papers import Catalog

    return Catalog.load()


def _split_of(family: str, entity: str) -> str:
    h = int(hashlib.sha256(f"search/{family}/{entity}".encode()).hexdigest()[:8], 16)
    return "heldout" if h % HELDOUT_FRACTION == 0 else "train"


def _values(cell) -> list[str]:
    return [v.strip() for v in str(cell or "").split(";") if v.strip()]


def facts(catalog=None) -> list[dict]:
    """Every askable fact: ``{"family", "entity", "key", "answers", "query"}``, in a fixed order."""
    cat = catalog or _catalog()
    works = list(cat)
    name_count: dict[str, int] = {}
    for w in works:
        for n in {w.name.lower(), *(a.lower() for a in w.aliases)} - {""}:
            name_count[n] = name_count.get(n, 0) + 1
    unique = [w for w in works if w.name and name_count[w.name.lower()] == 1]
    out: list[dict] = []
    for w in unique:
        if w.kind == "method" and w.year:
            out.append(dict(family="year", entity=w.name, key=w.key, answers=(str(w.year),), query=w.name))
    for w in unique:
        algs = tuple(a for a in w.algorithms if a.lower() != w.name.lower())
        if algs and len(algs) == len(w.algorithms):
            out.append(dict(family="algorithm", entity=w.name, key=w.key, answers=algs, query=w.name))
    t2 = cat.tables["table02_rl_algorithm_variants"].frame
    for _, row in t2.iterrows():
        fam = str(row["family"]).replace(" family", "").strip()
        if str(row["method"]).strip().upper() == fam:  # "Which family is PPO a variant of?" is not a question
            continue
        out.append(dict(family="variant", entity=str(row["method"]), key=_values(row["work_key"])[0],
                        answers=(fam,), query=str(row["method"])))
    t9 = cat.tables["table09_environments_benchmarks"].frame
    for _, row in t9.iterrows():
        domains = tuple(_values(row["task_domain"]))
        if domains:
            out.append(dict(family="benchmark", entity=str(row["name"]), key=_values(row["work_key"])[0],
                            answers=domains, query=str(row["name"])))
    t10 = cat.tables["table10_rl_frameworks"].frame
    feats = [str(f).strip() for f in t10["key_features"]]
    for _, row in t10.iterrows():
        feat = str(row["key_features"]).strip()
        if feat and feats.count(feat) == 1:
            out.append(dict(family="framework", entity=feat, key=_values(row["work_key"])[0],
                            answers=(str(row["framework"]).strip(),), query=f"RL framework {feat}"))
    return out


def _in_validation(key: str) -> bool:
    h = int(hashlib.sha256(f"search/validation/{key}".encode()).hexdigest()[:8], 16)
    return h % VALIDATION_FRACTION == 0


@lru_cache(maxsize=1)
def _splits() -> dict[str, tuple[dict, ...]]:
    """split -> its facts (module docstring, Splits): held-out by the fact's hash (unchanged since the split
    was made, so the test questions stay the same), validation by the work's hash among the facts that touch
    no held-out entity or work, train the rest that touches neither."""
    every = facts()
    heldout = [f for f in every if _split_of(f["family"], f["entity"]) == "heldout"]

    def touching(found):
        entities, keys = {f["entity"].lower() for f in found}, {f["key"] for f in found}
        return lambda f: f["entity"].lower() in entities or f["key"] in keys

    near_heldout = touching(heldout)
    free = [f for f in every if _split_of(f["family"], f["entity"]) != "heldout" and not near_heldout(f)]
    validation = [f for f in free if _in_validation(f["key"])]
    near_validation = touching(validation)
    return {"heldout": tuple(heldout), "validation": tuple(validation),
            "train": tuple(f for f in free if not near_validation(f))}


def _split_facts(split: str) -> tuple[dict, ...]:
    return _splits()[split]


def problems(split: str = "train", n: int = 100, seed: int = 0, families=None, **_) -> list[Problem]:
    """Up to ``n`` questions of ``split`` (``SPLITS``; fewer when the split has fewer facts), families interleaved
    round-robin so every family is represented. Deterministic in ``(split, n, seed, families)``."""
    if split not in SPLITS:
        raise ValueError(f"search: split must be one of {', '.join(SPLITS)}, got {split!r}")
    chosen = tuple(families) if families else FAMILIES
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown search families {sorted(unknown)}; known: {', '.join(FAMILIES)}")
    rng = random.Random(f"search/{split}/{seed}")
    by_family = {f: [x for x in _split_facts(split) if x["family"] == f] for f in chosen}
    for pool in by_family.values():
        rng.shuffle(pool)
    out: list[Problem] = []
    depth = 0
    while len(out) < n and any(depth < len(p) for p in by_family.values()):
        for fam in chosen:
            pool = by_family[fam]
            if depth < len(pool) and len(out) < n:
                f = pool[depth]
                phr = PHRASINGS[fam][rng.randrange(len(PHRASINGS[fam]))]
                out.append(Problem(phr.format(x=f["entity"]), tuple(f["answers"]), fam, f["entity"], f["key"],
                                   f["query"], split, f"{split}-{fam}-{f['entity']}"))
        depth += 1
    return out


# ----------------------------------------------------------------------------------------------------
# the search tool

def _short(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def entry_text(work, catalog=None, title_words: int = 10) -> str:
    """One line per work: what a search result shows (name, year, kind, algorithms, table facts, title)."""
    cat = catalog or _catalog()
    bits = [f"{w}" for w in (str(work.year) if work.year else "", work.kind) if w]
    head = f"{work.name or _short(work.title, title_words)} ({', '.join(bits)})"
    facts_ = []
    if work.algorithms:
        facts_.append("algorithms: " + ", ".join(work.algorithms))
    rows = cat.table_rows_for_work(work.key)
    for name, frame in rows.items():
        for _, row in frame.iterrows():
            if name.startswith("table02"):
                facts_.append(f"variant of: {row['family']}")
            elif name.startswith("table09"):
                facts_.append(f"task domain: {', '.join(_values(row['task_domain']))}")
            elif name.startswith("table10"):
                facts_.append(f"framework {row['framework']}, key feature: {row['key_features']}")
    tail = f"; {'; '.join(dict.fromkeys(facts_))}" if facts_ else ""
    return f"{head}{tail}: {_short(work.title, title_words)}"


@lru_cache(maxsize=4)
def catalog_search(mode: str = "hybrid") -> Callable[[str, int], list[tuple[str, str]]]:
    """``search(query, k) -> [(key, entry_text), ...]`` over the project's search index, built once per
    process and mode (the hybrid index loads MiniLM on the first query, ~10 s)."""
    from papers.search import SearchIndex

    cat = _catalog()
    index = SearchIndex.load_or_build(cat)
    return index_search(index, cat, mode)


def index_search(index, catalog, mode: str = "hybrid") -> Callable[[str, int], list[tuple[str, str]]]:
    """Wrap a built ``SearchIndex`` as the env's search callable (memoised per query)."""
    texts: dict[str, str] = {}

    @lru_cache(maxsize=8192)
    def search(query: str, k: int = 3) -> tuple[tuple[str, str], ...]:
        hits = index.search(query, k=k, mode=mode).hits
        out = []
        for h in hits:
            if h.key not in texts:
                texts[h.key] = entry_text(catalog.get(h.key), catalog)
            out.append((h.key, texts[h.key]))
        return tuple(out)

    return lambda query, k=3: list(search(query, k))


def information_block(results: list[tuple[str, str]]) -> str:
    body = "\n".join(f"[{i + 1}] {text}" for i, (_, text) in enumerate(results)) or "no results"
    return f"{TOOL.result_open}{body}{TOOL.result_close}"


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class SearchEnvConfig(Options):
    """The search env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    families: tuple[str, ...] = option((), "Question families to draw from; empty = all.", choices=FAMILIES)
    max_tool_calls: int = option(2, "Searches allowed; one more search ends the episode with reward 0.", low=0,
                                 high=64, aliases=("max_turns",))
    top_k: int = option(3, "Catalog entries per <information> block.", low=1, high=20)
    search_mode: str = option("lexical", "Retriever behind the tool: lexical (BM25), hybrid (BM25 + MiniLM) or dense.",
                              choices=("lexical", "hybrid", "dense"))
    max_query_chars: int = option(200, "Queries are cut to this many characters.", low=1, high=4096)
    format_reward: float = option(0.0, "Bonus for ending with an <answer>, right or wrong (0 = off).", low=0.0,
                                  high=10.0)


@dataclass
class SearchEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    problem: Problem
    config: SearchEnvConfig = field(default_factory=SearchEnvConfig)
    search_fn: Callable[[str, int], list[tuple[str, str]]] | None = None

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __post_init__(self):
        self.searches = 0
        self.retrieved: list[str] = []

    def reset(self) -> list[dict[str, str]]:
        self.searches, self.retrieved = 0, []
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.problem.question}]

    def _search(self, query: str) -> list[tuple[str, str]]:
        fn = self.search_fn or catalog_search(self.config.search_mode)
        return fn(query, self.config.top_k)

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"searches": self.searches, "gold_retrieved": self.problem.key in self.retrieved}
        if action is not None and action[0] == "answer":
            text = action[1].group(1).strip()
            correct = exact_match(text, self.problem.answers)
            reward = float(correct) + self.config.format_reward
            return StepResult(None, True, reward, {**base, "correct": correct, "answer": text})
        if action is None:  # EOS or length limit without a tag
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None})
        call = action[1]
        if self.searches >= self.config.max_tool_calls:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True})
        self.searches += 1
        query = " ".join(call.group(1).split())[: self.config.max_query_chars]
        results = self._search(query) if query else []
        self.retrieved += [key for key, _ in results]
        return StepResult(information_block(results), False, 0.0,
                          {"searches": self.searches, "query": query,
                           "gold_retrieved": self.problem.key in self.retrieved})


def demonstration(problem: Problem, search_fn=None, config: SearchEnvConfig | None = None) -> list[tuple[str, str]]:
    """A correct transcript: think, search with the fact's query, read the real results, answer."""
    env = SearchEnv(problem, config or SearchEnvConfig(), search_fn)
    what = {"year": "the year of", "algorithm": "the RL algorithm of", "variant": "the family of",
            "benchmark": "the task domain of", "framework": "the framework with"}[problem.family]
    call = f"{THINK_OPEN}I need {what} {problem.entity}.{THINK_CLOSE}{TOOL.call_open}{problem.query}{TOOL.call_close}"
    obs = env.step(call).observation
    return [("model", call), ("env", obs), ("model", f"{TOOL.answer_open}{problem.answers[0]}{TOOL.answer_close}")]


def _problems(split: str, n: int, seed: int, config: SearchEnvConfig) -> list[Problem]:
    return problems(split, n, seed, families=config.families or None)


SPEC = EnvSpec("search", SearchEnvConfig, _problems, SearchEnv, demonstration,
               title="Search-R1-style catalog search", demonstration_takes_config=True, validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS


def make(problem: Problem, search_fn=None, **options) -> SearchEnv:
    """An episode; ``search_fn`` replaces the catalog index (tests)."""
    return SearchEnv(problem, SPEC.options(options), search_fn)


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation, SEARCH_NODES  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("search-grpo", "Search-R1-style agent (GRPO)", "grpo", "search", "An agent whose tool searches this catalog; rewarded by exact match of its final answer.",
                   nodes=SEARCH_NODES),
    Implementation("search-prompted", "Deep-research agent without RL: the model prompted to search", "", "search",
                   "The prompting-only reference point of the search task: the untrained instruction model, given "
                   "the environment's fixed instruction prompt and its search tool, answers the held-out "
                   "questions that search-grpo is scored on; nothing is trained.",
                   nodes=("search-closed-source",),
                   changes="Stands where the survey's closed-source deep-research products stand in its comparison: "
                           "a reference point whose training the user cannot run or see. It is not one of those "
                           "products (they cannot be run here); it is what this project can run honestly in their "
                           "place, an off-the-shelf model that is only prompted to search, read and answer, scored "
                           "by exact match on the same held-out questions as the RL rows (--run RUN on the same "
                           "command scores a trained run on the very same questions).",
                   # the episode lengths of the search learning preset (lab/recipes/learn/search.yaml)
                   evaluation=("reference_impls.measure.evaluate", "--model", "smollm2-135m-instruct", "--env",
                               "search", "--n", "100", "--max-new-tokens-per-turn", "40",
                               "--max-completion-tokens", "256", "--json")),
    Implementation("search-ppo", "Search-R1-style agent (PPO)", "ppo", "search", "The search agent trained with PPO and a critic."),
    # the core comparison grid's algorithms here (lab/recipes/grids/core.yaml): each with the switches of its
    # calculator row (algorithms/), which tests/test_compare.py checks they keep
    Implementation("search-dr-grpo", "Search-R1-style agent (Dr.GRPO)", "grpo", "search",
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling. "
                   "On the search environment, for the comparison grid.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}),
    Implementation("search-dapo", "Search-R1-style agent (DAPO)", "grpo", "search",
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping. "
                   "On the search environment, for the comparison grid.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32}),
    Implementation("search-gspo", "Search-R1-style agent (GSPO)", "grpo", "search",
                   "GRPO with a sequence-level importance ratio (GSPO). "
                   "On the search environment, for the comparison grid.",
                   {"importance_sampling_level": "sequence", "epsilon_low": 3e-4, "epsilon_high": 4e-4}),
    Implementation("search-rloo", "Search-R1-style agent (RLOO)", "rloo", "search",
                   "REINFORCE with a leave-one-out baseline over the group. "
                   "On the search environment, for the comparison grid."),
    Implementation("search-dpo", "Search-R1-style agent (DPO)", "dpo", "search",
                   "Offline preference optimisation on correct vs incorrect rollouts of the same prompt. "
                   "On the search environment, for the comparison grid."),
)
