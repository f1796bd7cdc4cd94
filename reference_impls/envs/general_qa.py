"""Open-domain question answering with retrieval: single-hop questions about general knowledge, answered by
searching a small encyclopedia of passages.

Tag format (inside the assistant turn; the environment's text is loss-masked; the search environment's tags)::

    model: <think>I need the capital of Ghana.</think><search>Ghana</search>    reasoning, then a query
    env:   <information>[1] Ghana: Ghana is a country in Africa. Its capital is Accra ...
           [2] ...</information>                                                   the top-k passages (BM25)
    model: <answer>Accra</answer>                                                  the final answer ends it

Why not the search environment
    ``search`` (reference_impls/envs/search.py) retrieves over this project's catalog of agentic-RL papers and
    asks about them (a work's year, algorithm, benchmark domain): a closed domain. Open-domain QA asks about
    anything, over a general corpus; so this environment keeps the search environment's tags, tool loop and
    exact-match reward, and changes the corpus and the questions.
Corpus
    :data:`ENCYCLOPEDIA`: 107 entities of general knowledge in eight kinds (countries, chemical elements,
    books, paintings, rivers, mountains, planets, discoveries), each with a few facts written for this project;
    each entity is one passage, written from its facts (:func:`passage`). Every split searches the whole corpus,
    as open-domain QA does: what is held out is the questions, not the documents. It is small and written by
    hand: well-known facts, chosen to have one accepted answer (alternatives are listed: "Oceania" or
    "Australia"), which a pretrained model may also know without searching.
Questions
    One per (entity, fact), from two phrasings per relation, single hop: the answer is in the entity's passage.
Splits
    ``train``, ``validation`` and ``heldout`` ask about different entities: an entity belongs to one split by a
    stable hash of its name (one in four held out, one in eight for validation), so no held-out question's
    entity is the subject of a training question.
Tool
    ``search(query)`` ranks the passages by BM25 (:class:`BM25`, Robertson and Zaragoza's Okapi weighting, the
    standard lexical retriever of open-domain QA baselines) and returns the top ``top_k``.
Reward
    ``1.0`` when the first ``<answer>`` equals one of the gold answers after the project's answer normalisation
    (``reference_impls.scoring``: case, punctuation, articles), else ``0.0``.
"""
from __future__ import annotations

import hashlib
import math
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from ..options import Options, option
from . import EnvSpec, StepResult, ToolSpec, answer_step

TOOL = ToolSpec(
    name="search",
    description="Searches a small general-knowledge encyclopedia and returns the top passages.",
    call_open="<search>",
    call_close="</search>",
    result_open="<information>",
    result_close="</information>",
)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

SYSTEM_PROMPT = (
    "Answer the general-knowledge question. Think in <think>...</think>. To look something up, write "
    "<search>query</search>; passages of an encyclopedia come back in <information>...</information>. "
    "Give the final short answer as <answer>...</answer>."
)

SPLITS = ("train", "validation", "heldout")
MAX_QUERY_CHARS = 200

# ----------------------------------------------------------------------------------------------------
# the encyclopedia: kind -> rows of (name, {relation: answers}); the first answer is the one passages use

_COUNTRIES = (  # name, capital, continent(s), currency(ies)
    ("France", "Paris", ("Europe",), ("euro",)),
    ("Japan", "Tokyo", ("Asia",), ("yen", "Japanese yen")),
    ("Kenya", "Nairobi", ("Africa",), ("Kenyan shilling", "shilling")),
    ("Peru", "Lima", ("South America",), ("sol", "Peruvian sol")),
    ("Canada", "Ottawa", ("North America",), ("Canadian dollar",)),
    ("Australia", "Canberra", ("Oceania", "Australia"), ("Australian dollar",)),
    ("Egypt", "Cairo", ("Africa",), ("Egyptian pound",)),
    ("Norway", "Oslo", ("Europe",), ("Norwegian krone", "krone")),
    ("Brazil", "Brasilia", ("South America",), ("real", "Brazilian real")),
    ("India", "New Delhi", ("Asia",), ("Indian rupee", "rupee")),
    ("Mexico", "Mexico City", ("North America",), ("Mexican peso", "peso")),
    ("Argentina", "Buenos Aires", ("South America",), ("Argentine peso", "peso")),
    ("Vietnam", "Hanoi", ("Asia",), ("dong", "Vietnamese dong")),
    ("Poland", "Warsaw", ("Europe",), ("zloty", "Polish zloty")),
    ("Morocco", "Rabat", ("Africa",), ("Moroccan dirham", "dirham")),
    ("Thailand", "Bangkok", ("Asia",), ("baht", "Thai baht")),
    ("Sweden", "Stockholm", ("Europe",), ("Swedish krona", "krona")),
    ("Chile", "Santiago", ("South America",), ("Chilean peso", "peso")),
    ("Ghana", "Accra", ("Africa",), ("cedi", "Ghanaian cedi")),
    ("Ethiopia", "Addis Ababa", ("Africa",), ("birr", "Ethiopian birr")),
    ("South Korea", "Seoul", ("Asia",), ("won", "South Korean won")),
    ("Switzerland", "Bern", ("Europe",), ("Swiss franc", "franc")),
    ("Hungary", "Budapest", ("Europe",), ("forint", "Hungarian forint")),
    ("Nigeria", "Abuja", ("Africa",), ("naira", "Nigerian naira")),
    ("Colombia", "Bogota", ("South America",), ("Colombian peso", "peso")),
    ("Denmark", "Copenhagen", ("Europe",), ("Danish krone", "krone")),
    ("Portugal", "Lisbon", ("Europe",), ("euro",)),
    ("Pakistan", "Islamabad", ("Asia",), ("Pakistani rupee", "rupee")),
    ("New Zealand", "Wellington", ("Oceania",), ("New Zealand dollar",)),
)
_ELEMENTS = (  # name, symbol, atomic number
    ("hydrogen", "H", 1), ("helium", "He", 2), ("carbon", "C", 6), ("nitrogen", "N", 7), ("oxygen", "O", 8),
    ("neon", "Ne", 10), ("sodium", "Na", 11), ("potassium", "K", 19), ("calcium", "Ca", 20), ("iron", "Fe", 26),
    ("copper", "Cu", 29), ("zinc", "Zn", 30), ("silver", "Ag", 47), ("tin", "Sn", 50), ("gold", "Au", 79),
    ("lead", "Pb", 82), ("uranium", "U", 92),
)
_BOOKS = (  # title, author(s), year of first publication (None: left out)
    ("Pride and Prejudice", ("Jane Austen",), 1813),
    ("Moby-Dick", ("Herman Melville",), 1851),
    ("Don Quixote", ("Miguel de Cervantes", "Cervantes"), None),
    ("One Hundred Years of Solitude", ("Gabriel Garcia Marquez", "Garcia Marquez"), 1967),
    ("Frankenstein", ("Mary Shelley",), 1818),
    ("Nineteen Eighty-Four", ("George Orwell",), 1949),
    ("Hamlet", ("William Shakespeare", "Shakespeare"), None),
    ("Crime and Punishment", ("Fyodor Dostoevsky", "Dostoevsky"), 1866),
    ("The Great Gatsby", ("F. Scott Fitzgerald", "Scott Fitzgerald"), 1925),
    ("Things Fall Apart", ("Chinua Achebe",), 1958),
    ("Jane Eyre", ("Charlotte Bronte",), 1847),
    ("Wuthering Heights", ("Emily Bronte",), 1847),
    ("The Divine Comedy", ("Dante Alighieri", "Dante"), None),
    ("Dracula", ("Bram Stoker",), 1897),
    ("War and Peace", ("Leo Tolstoy", "Tolstoy"), None),
    ("The Odyssey", ("Homer",), None),
)
_PAINTINGS = (  # title, painter(s), the city where it is kept (None: left out)
    ("Mona Lisa", ("Leonardo da Vinci", "Leonardo"), "Paris"),
    ("The Starry Night", ("Vincent van Gogh", "van Gogh"), "New York"),
    ("Guernica", ("Pablo Picasso", "Picasso"), "Madrid"),
    ("The Persistence of Memory", ("Salvador Dali", "Dali"), "New York"),
    ("The Birth of Venus", ("Sandro Botticelli", "Botticelli"), "Florence"),
    ("The Night Watch", ("Rembrandt", "Rembrandt van Rijn"), "Amsterdam"),
    ("Girl with a Pearl Earring", ("Johannes Vermeer", "Vermeer"), "The Hague"),
    ("The Scream", ("Edvard Munch", "Munch"), None),
    ("The Last Supper", ("Leonardo da Vinci", "Leonardo"), "Milan"),
)
_RIVERS = (  # name, where it ends, continent
    ("Amazon", "Atlantic Ocean", "South America"), ("Nile", "Mediterranean Sea", "Africa"),
    ("Danube", "Black Sea", "Europe"), ("Mississippi", "Gulf of Mexico", "North America"),
    ("Volga", "Caspian Sea", "Europe"), ("Ganges", "Bay of Bengal", "Asia"), ("Yangtze", "East China Sea", "Asia"),
    ("Rhine", "North Sea", "Europe"), ("Thames", "North Sea", "Europe"), ("Mekong", "South China Sea", "Asia"),
    ("Zambezi", "Indian Ocean", "Africa"), ("Congo", "Atlantic Ocean", "Africa"),
)
_MOUNTAINS = (  # name, country (countries), range
    ("Mount Everest", ("Nepal", "China"), "Himalayas"), ("Kilimanjaro", ("Tanzania",), None),
    ("Mont Blanc", ("France", "Italy"), "Alps"), ("Aconcagua", ("Argentina",), "Andes"),
    ("Denali", ("United States",), "Alaska Range"), ("Mount Fuji", ("Japan",), None),
    ("Matterhorn", ("Switzerland", "Italy"), "Alps"), ("Mount Elbrus", ("Russia",), "Caucasus"),
)
_PLANETS = (  # name, position from the Sun, largest moon (None: it has none)
    ("Mercury", 1, None), ("Venus", 2, None), ("Earth", 3, "the Moon"), ("Mars", 4, "Phobos"),
    ("Jupiter", 5, "Ganymede"), ("Saturn", 6, "Titan"), ("Uranus", 7, "Titania"), ("Neptune", 8, "Triton"),
)
_DISCOVERIES = (  # what, who, year
    ("penicillin", ("Alexander Fleming", "Fleming"), 1928),
    ("radium", ("Marie Curie", "Pierre Curie", "Marie and Pierre Curie", "the Curies"), 1898),
    ("the electron", ("J. J. Thomson", "Thomson"), 1897),
    ("the neutron", ("James Chadwick", "Chadwick"), 1932),
    ("insulin", ("Frederick Banting", "Banting", "Charles Best", "Banting and Best"), 1921),
    ("nuclear fission", ("Otto Hahn", "Hahn", "Fritz Strassmann", "Hahn and Strassmann"), 1938),
    ("the cell", ("Robert Hooke", "Hooke"), 1665),
    ("X-rays", ("Wilhelm Roentgen", "Roentgen", "Wilhelm Rontgen", "Rontgen"), 1895),
)
#: other accepted spellings of an answer (an answer's aliases are gold too)
ALIASES = {"United States": ("USA", "United States of America"), "the Moon": ("Moon",)}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


@dataclass(frozen=True)
class Entity:
    name: str
    kind: str
    facts: dict = field(hash=False)  # relation -> gold answers (the first is the one the passage writes)


def _with_aliases(entity: Entity) -> Entity:
    facts = {rel: tuple(dict.fromkeys(a for answer in answers for a in (answer, *ALIASES.get(answer, ()))))
             for rel, answers in entity.facts.items()}
    return Entity(entity.name, entity.kind, facts)


def _entities() -> tuple[Entity, ...]:
    out = []
    for name, capital, continents, currencies in _COUNTRIES:
        out.append(Entity(name, "country", {"capital": (capital,), "continent": continents, "currency": currencies}))
    for name, symbol, number in _ELEMENTS:
        out.append(Entity(name, "element", {"symbol": (symbol,), "atomic_number": (str(number),)}))
    for title, authors, year in _BOOKS:
        out.append(Entity(title, "book", {"author": authors, **({"year": (str(year),)} if year else {})}))
    for title, painters, city in _PAINTINGS:
        out.append(Entity(title, "painting", {"painter": painters, **({"city": (city,)} if city else {})}))
    for name, mouth, continent in _RIVERS:
        out.append(Entity(name, "river", {"mouth": (mouth,), "continent": (continent,)}))
    for name, countries, mountain_range in _MOUNTAINS:
        out.append(Entity(name, "mountain", {"country": countries,
                                             **({"range": (mountain_range,)} if mountain_range else {})}))
    for name, position, moon in _PLANETS:
        facts = {"position": (str(position), _ORDINALS[position - 1])}
        out.append(Entity(name, "planet", {**facts, **({"moon": (moon,)} if moon else {})}))
    for what, who, year in _DISCOVERIES:
        out.append(Entity(what, "discovery", {"who": who, "year": (str(year),)}))
    return tuple(_with_aliases(e) for e in out)


ENCYCLOPEDIA: tuple[Entity, ...] = _entities()
_COUNTRY_NAMES = {c for _, countries, _ in _MOUNTAINS for c in countries}  # a mountain's countries, not aliases


def passage(entity: Entity) -> str:
    """The entity's passage: its facts in sentences (the first gold answer of each)."""
    f = {rel: answers[0] for rel, answers in entity.facts.items()}
    n = entity.name
    if entity.kind == "country":
        return (f"{n} is a country in {f['continent']}. Its capital is {f['capital']} and its currency is the "
                f"{f['currency']}.")
    if entity.kind == "element":
        return (f"{n.capitalize()} is a chemical element with the symbol {f['symbol']} and atomic number "
                f"{f['atomic_number']}.")
    if entity.kind == "book":
        when = f", first published in {f['year']}" if "year" in f else ""
        return f"{n} is a literary work by {f['author']}{when}."
    if entity.kind == "painting":
        where = f" It is kept in {f['city']}." if "city" in f else ""
        return f"{n} is a painting by {f['painter']}.{where}"
    if entity.kind == "river":
        return f"The {n} is a river of {f['continent']}; it flows into the {f['mouth']}."
    if entity.kind == "mountain":
        countries = " and ".join(c for c in entity.facts["country"] if c in _COUNTRY_NAMES)
        rng = f" in the {f['range']}" if "range" in f else ""
        return f"{n} is a mountain{rng}, in {countries}."
    if entity.kind == "planet":
        moon = f" Its largest moon is {f['moon']}." if "moon" in f else " It has no moon."
        return f"{n} is the {entity.facts['position'][1]} planet from the Sun.{moon}"
    return f"The discovery of {n} is credited to {f['who']}, in {f['year']}."  # discovery


PHRASINGS: dict[tuple[str, str], tuple[str, ...]] = {
    ("country", "capital"): ("What is the capital of {x}?", "Which city is the capital of {x}?"),
    ("country", "continent"): ("On which continent is {x}?", "{x} lies on which continent?"),
    ("country", "currency"): ("What is the currency of {x}?", "Which currency is used in {x}?"),
    ("element", "symbol"): ("What is the chemical symbol of {x}?", "Which symbol stands for the element {x}?"),
    ("element", "atomic_number"): ("What is the atomic number of {x}?", "How many protons does an atom of {x} have?"),
    ("book", "author"): ("Who wrote {x}?", "Who is the author of {x}?"),
    ("book", "year"): ("In which year was {x} first published?", "When was {x} first published?"),
    ("painting", "painter"): ("Who painted {x}?", "Which artist painted {x}?"),
    ("painting", "city"): ("In which city is {x} kept?", "In which city can {x} be seen?"),
    ("river", "mouth"): ("Into which sea or ocean does the {x} flow?", "Where does the river {x} end?"),
    ("river", "continent"): ("On which continent is the {x} river?", "The river {x} is on which continent?"),
    ("mountain", "country"): ("In which country is {x}?", "{x} stands in which country?"),
    ("mountain", "range"): ("Which mountain range is {x} part of?", "{x} belongs to which range?"),
    ("planet", "position"): ("Which planet from the Sun is {x}, counting outwards?",
                             "What is {x}'s position among the planets, counting from the Sun?"),
    ("planet", "moon"): ("What is the largest moon of {x}?", "Which is {x}'s largest moon?"),
    ("discovery", "who"): ("Who is credited with the discovery of {x}?", "Who discovered {x}?"),
    ("discovery", "year"): ("In which year was {x} discovered?", "When was {x} discovered?"),
}


# ----------------------------------------------------------------------------------------------------
# retrieval

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an the of in on is was which what who when where does do how to its it and by with from "
                      "for as at".split())


def terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of documents: ``score(q, d) = sum_{t in q} idf(t) * f(t, d) * (k1 + 1) /
    (f(t, d) + k1 * (1 - b + b * |d| / avgdl))`` with ``idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))``
    (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009, eq. 3.13 with the
    non-negative idf of Lucene). Ties keep the documents' order."""

    def __init__(self, documents, k1: float = 1.2, b: float = 0.75):
        self.docs = [Counter(terms(d)) for d in documents]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avgdl = sum(self.lengths) / max(1, len(self.docs))
        df = Counter(t for c in self.docs for t in c)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        out = []
        for counts, length in zip(self.docs, self.lengths):
            norm = self.k1 * (1 - self.b + self.b * length / self.avgdl)
            out.append(sum(self.idf[t] * counts[t] * (self.k1 + 1) / (counts[t] + norm)
                           for t in set(terms(query)) if t in counts))
        return out

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the ``k`` best documents with a positive score, best first."""
        scored = [(s, i) for i, s in enumerate(self.scores(query)) if s > 0]
        return [i for _, i in sorted(scored, key=lambda si: (-si[0], si[1]))[:k]]


@lru_cache(maxsize=1)
def _index() -> BM25:
    return BM25(f"{e.name}: {passage(e)}" for e in ENCYCLOPEDIA)


def search(query: str, k: int = 3) -> list[tuple[str, str]]:
    """(entity name, ``name: passage``) of the ``k`` best passages for ``query``."""
    found = [ENCYCLOPEDIA[i] for i in _index().top(query, k)]
    return [(e.name, f"{e.name}: {passage(e)}") for e in found]


def information_block(results: list[tuple[str, str]]) -> str:
    body = "\n".join(f"[{i + 1}] {text}" for i, (_, text) in enumerate(results)) or "no results"
    return TOOL.result(body)


# ----------------------------------------------------------------------------------------------------
# questions

@dataclass(frozen=True)
class Problem:
    question: str
    answers: tuple[str, ...]  # gold answers; any one matches
    family: str  # kind/relation, e.g. "country/capital"
    entity: str  # the entity the question is about (its passage holds the answer)
    split: str
    uid: str


def split_of(entity: str) -> str:
    """The split of an entity's questions: a stable hash of its name (1/4 held out, 1/8 validation)."""
    bucket = int(hashlib.sha256(f"general-qa/{entity.lower()}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def facts(split: str) -> list[tuple[Entity, str]]:
    """(entity, relation) of every question of ``split``, in the encyclopedia's order."""
    return [(e, rel) for e in ENCYCLOPEDIA if split_of(e.name) == split for rel in e.facts]


def problems(split: str = "train", n: int = 100, seed: int = 0, kinds=None) -> list[Problem]:
    """Up to ``n`` questions of ``split`` (fewer when it has fewer), shuffled by ``seed``; ``kinds`` narrows the
    entity kinds (empty = all). Deterministic in its arguments."""
    if split not in SPLITS:
        raise ValueError(f"general-qa: split must be one of {', '.join(SPLITS)}, got {split!r}")
    rng = random.Random(f"general-qa/{split}/{seed}")
    pool = [(e, rel) for e, rel in facts(split) if not kinds or e.kind in kinds]
    rng.shuffle(pool)
    out = []
    for entity, rel in pool[:n]:
        phrasings = PHRASINGS[(entity.kind, rel)]
        question = phrasings[rng.randrange(len(phrasings))].format(x=entity.name)
        question = question[0].upper() + question[1:]
        out.append(Problem(question, tuple(entity.facts[rel]), f"{entity.kind}/{rel}", entity.name, split,
                           f"{split}-{entity.name}-{rel}"))
    return out


# ----------------------------------------------------------------------------------------------------
# the environment

KINDS = ("country", "element", "book", "painting", "river", "mountain", "planet", "discovery")


@dataclass
class GeneralQAConfig(Options):
    """The general-qa env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    kinds: tuple[str, ...] = option((), "Entity kinds the questions are about; empty = all.", choices=KINDS)
    max_tool_calls: int = option(2, "Searches allowed; one more search ends the episode with reward 0.", low=0,
                                 high=64)
    top_k: int = option(3, "Passages per <information> block.", low=1, high=20)


class GeneralQAEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: GeneralQAConfig | None = None):
        self.problem = problem
        self.config = config or GeneralQAConfig()
        self.searches, self.retrieved = 0, []

    def reset(self) -> list[dict[str, str]]:
        self.searches, self.retrieved = 0, []
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": self.problem.question}]

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        base = {"searches": self.searches, "gold_retrieved": self.problem.entity in self.retrieved}
        ended = answer_step(action, base, self.problem.answers, self.searches, self.config.max_tool_calls, "searches")
        if ended is not None:
            return ended
        self.searches += 1
        query = " ".join(action[1].group(1).split())[:MAX_QUERY_CHARS]
        if not terms(query):
            return StepResult(TOOL.result("error: the query has no searchable word; search for a name, e.g. "
                                          "<search>Ghana</search>"), False, 0.0,
                              {"searches": self.searches, "query": query, "gold_retrieved": base["gold_retrieved"]})
        results = search(query, self.config.top_k)
        self.retrieved += [name for name, _ in results]
        return StepResult(information_block(results), False, 0.0,
                          {"searches": self.searches, "query": query,
                           "gold_retrieved": self.problem.entity in self.retrieved})


def demonstration(problem: Problem, config: GeneralQAConfig | None = None) -> list[tuple[str, str]]:
    """Think, search for the entity by name, read the real passages, answer."""
    env = GeneralQAEnv(problem, config or GeneralQAConfig())
    env.reset()
    relation = problem.family.split("/")[1].replace("_", " ")
    call = (f"{THINK_OPEN}I need the {relation} of {problem.entity}.{THINK_CLOSE}"
            f"{TOOL.call_open}{problem.entity}{TOOL.call_close}")
    observation = env.step(call).observation
    answer = f"{TOOL.answer_open}{problem.answers[0]}{TOOL.answer_close}"
    return [("model", call), ("env", observation), ("model", answer)]


def _problems(split: str, n: int, seed: int, config: GeneralQAConfig) -> list[Problem]:
    return problems(split, n, seed, kinds=config.kinds)


SPEC = EnvSpec("general-qa", GeneralQAConfig, _problems, GeneralQAEnv, demonstration,
               title="Open-domain QA with retrieval over a small encyclopedia", demonstration_takes_config=True,
               validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("general-qa-grpo", "Open-domain QA with retrieval (GRPO)", "grpo", "general-qa",
                   "An agent that answers single-hop general-knowledge questions (capitals, authors, elements, "
                   "rivers ...) by searching a small encyclopedia with BM25; rewarded by exact match.",
                   nodes=("other-general-qa",),
                   changes="A small stand-in for open-domain QA with retrieval (the Natural Questions / TriviaQA "
                           "setting of Search-R1 and its kin): keeps the loop of query, read the retrieved "
                           "passages, answer, and the exact-match reward. Simplifies: a hand-written corpus of "
                           "107 short passages (one per entity) instead of Wikipedia, templated single-hop "
                           "questions, and a BM25 retriever. The search environment, by contrast, asks about this "
                           "project's catalog of papers (a closed domain)."),
)
