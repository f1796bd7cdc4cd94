"""Biomedical questions over a SYNTHETIC knowledge base, answered with a lookup tool.

Every name and fact here is generated (seeded syllables and random links): no drug, gene, disease or pathway
is real, and no answer says anything about medicine. The environment keeps the shape of biomedical agent tasks,
questions whose answer needs a chain of lookups in a knowledge base, on data invented for it.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    model: <tool>lookup Lordomab</tool>          the knowledge base's entry of one drug, gene, disease or pathway
    env:   <result>drug Lordomab: targets gene WKX7; interacts with drug Veldozole; class antibody</result>
    model: <answer>WKX7</answer>                 the final answer ends the episode

Knowledge base
    One knowledge base is ``DRUGS`` drugs, ``GENES`` genes, ``DISEASES`` diseases and ``PATHWAYS`` pathways with
    invented names. Each drug targets one gene (no two drugs the same gene) and interacts with exactly one other
    drug (the drugs are paired); each gene is on one chromosome, in one pathway and linked to one disease. An
    entry lists these facts; a disease's or pathway's entry lists its genes.
Problems
    A question comes from a template (its ``family``) about one drug or gene of the knowledge base; its level is
    the number of lookups its answer needs: 1 = a drug's target, a gene's pathway or chromosome; 2 = the disease
    or pathway of a drug's target, the target of a drug's partner; 3 = the disease or pathway of the target of a
    drug's partner. Every answer is unique, since each link leads to one entity.
Splits
    ``train``, ``validation`` and ``heldout`` use different knowledge bases whose names come from disjoint parts
    of the name space: a name belongs to one split by a stable hash of the name (one in four held out, one in
    eight for validation), so no held-out entity is ever seen in training.
Reward
    ``1.0`` when the final ``<answer>`` matches the gold answer after the project's answer normalisation
    (``reference_impls.scoring``: case, punctuation, articles), else ``0.0``. A chromosome is answered as ``7`` or
    ``chromosome 7``.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import lru_cache

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec, answer_step

TOOL = ToolSpec(
    name="lookup",
    description="Knowledge base: 'lookup NAME' returns the entry of a drug, gene, disease or pathway.",
    call_open="<tool>",
    call_close="</tool>",
    result_open="<result>",
    result_close="</result>",
)

SYSTEM_PROMPT = (
    "Answer the question from a knowledge base of drugs, genes, diseases and pathways (the data are synthetic). "
    "<tool>lookup NAME</tool> returns the entry of one drug, gene, disease or pathway, named exactly; the entry "
    "comes back in <result>...</result>. End with the answer alone, e.g. <answer>QZV7</answer>."
)

LEVELS = (1, 2, 3)
SPLITS = ("train", "validation", "heldout")
DRUGS, GENES, DISEASES, PATHWAYS = 8, 8, 5, 4
KBS_PER_SPLIT = 16  # distinct knowledge bases per (split, seed)
MAX_NAME_CHARS = 80

# invented syllables: the names they make are not real drugs, genes, diseases or pathways
_DRUG_HEAD = ("vel", "mor", "tazi", "quen", "lor", "brix", "dal", "fen", "oxa", "pira", "sul", "zan", "cor", "vy")
_DRUG_MID = ("ro", "ta", "li", "ve", "ni", "qua", "do")
_DRUG_TAIL = {"nib": "kinase inhibitor", "mab": "antibody", "stat": "enzyme blocker", "zole": "receptor agonist",
              "pril": "channel blocker"}
_GENE_LETTERS = "QXZVKJW"
_DISEASE_HEAD = ("Arvel", "Brenn", "Corvad", "Duskin", "Ember", "Falkor", "Garro", "Hestin", "Ivrel", "Joskar",
                 "Kellan", "Lumer", "Morvey", "Nesta", "Orrin", "Pellar", "Quorin", "Rastel", "Sarvik", "Tolbar",
                 "Ulmen", "Varrow", "Wexlan", "Yarrik")
_DISEASE_TAIL = ("syndrome", "disease", "dystrophy", "fever")
_PATHWAY_HEAD = ("Norvex", "Quillan", "Ombrel", "Vastik", "Tessar", "Yorvan", "Krellis", "Palowen", "Zintar",
                 "Drovel", "Emmerok", "Fassil", "Gorvent", "Hallix", "Irvesk", "Jandor", "Korvath", "Lessimar",
                 "Mirrex", "Nandrel")
_PATHWAY_TAIL = ("signalling", "cascade", "pathway", "axis")


def split_of(name: str) -> str:
    """The split a name belongs to (a stable hash: 1/4 held out, 1/8 validation, the rest train)."""
    bucket = int(hashlib.sha256(f"biomed/{name.lower()}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _names(rng: random.Random, make, count: int, split: str) -> list[str]:
    """``count`` distinct names of ``split``, each ``make(rng)``."""
    chosen: list[str] = []
    for _ in range(100_000):
        name = make(rng)
        if name not in chosen and split_of(name) == split:
            chosen.append(name)
            if len(chosen) == count:
                return chosen
    raise RuntimeError("not enough names for the split")  # pragma: no cover - every split holds many names


def _drug(rng):
    return (rng.choice(_DRUG_HEAD) + rng.choice(_DRUG_MID) + rng.choice(tuple(_DRUG_TAIL))).capitalize()


def _gene(rng):
    return "".join(rng.choice(_GENE_LETTERS) for _ in range(3)) + str(rng.randint(1, 9))


def _disease(rng):
    return f"{rng.choice(_DISEASE_HEAD)} {rng.choice(_DISEASE_TAIL)}"


def _pathway(rng):
    return f"{rng.choice(_PATHWAY_HEAD)} {rng.choice(_PATHWAY_TAIL)}"


@dataclass(frozen=True)
class Drug:
    name: str
    target: str
    partner: str
    drug_class: str


@dataclass(frozen=True)
class Gene:
    name: str
    chromosome: int
    pathway: str
    disease: str


@dataclass(frozen=True)
class KnowledgeBase:
    drugs: dict
    genes: dict
    diseases: tuple[str, ...]
    pathways: tuple[str, ...]

    def entry(self, name: str) -> str | None:
        """The text of the entry named ``name`` (case and spacing ignored), or None."""
        key = " ".join(name.split()).lower()
        for drug in self.drugs.values():
            if drug.name.lower() == key:
                return (f"drug {drug.name}: targets gene {drug.target}; interacts with drug {drug.partner}; "
                        f"class {drug.drug_class}")
        for gene in self.genes.values():
            if gene.name.lower() == key:
                return (f"gene {gene.name}: chromosome {gene.chromosome}; pathway {gene.pathway}; linked disease "
                        f"{gene.disease}")
        for disease in self.diseases:
            if disease.lower() == key:
                genes = sorted(g.name for g in self.genes.values() if g.disease == disease)
                return f"disease {disease}: linked genes {', '.join(genes) or 'none known'}"
        for pathway in self.pathways:
            if pathway.lower() == key:
                genes = sorted(g.name for g in self.genes.values() if g.pathway == pathway)
                return f"pathway {pathway}: genes {', '.join(genes) or 'none known'}"
        return None


@lru_cache(maxsize=256)
def knowledge_base(key: str) -> KnowledgeBase:
    """The knowledge base ``key`` (``split/seed/index``): a pure function of the key."""
    split = key.split("/", 1)[0]
    rng = random.Random(f"biomed-kb/{key}")
    drugs = _names(rng, _drug, DRUGS, split)
    genes = _names(rng, _gene, GENES, split)
    diseases = _names(rng, _disease, DISEASES, split)
    pathways = _names(rng, _pathway, PATHWAYS, split)
    gene_facts = {g: Gene(g, rng.randint(1, 22), rng.choice(pathways), rng.choice(diseases)) for g in genes}
    targets = rng.sample(genes, len(drugs))
    order = rng.sample(drugs, len(drugs))
    partner = {}
    for a, b in zip(order[::2], order[1::2]):
        partner[a], partner[b] = b, a
    drug_facts = {d: Drug(d, t, partner[d], next(c for tail, c in _DRUG_TAIL.items() if d.endswith(tail)))
                  for d, t in zip(drugs, targets)}
    return KnowledgeBase(drug_facts, gene_facts, tuple(diseases), tuple(pathways))


# ----------------------------------------------------------------------------------------------------
# questions

@dataclass(frozen=True)
class Problem:
    question: str
    answers: tuple[str, ...]  # accepted answers; the first is the one the demonstration writes
    lookups: tuple[str, ...]  # the names a solver looks up, in order (the demonstration's calls)
    kb_key: str
    family: str
    level: int
    split: str
    uid: str


def _ask(family: str, kb: KnowledgeBase, rng: random.Random):
    """(question, answers, lookups) of one question of ``family`` about a drug or gene drawn with ``rng``."""
    drug = kb.drugs[rng.choice(sorted(kb.drugs))]
    gene = kb.genes[rng.choice(sorted(kb.genes))]
    target = kb.genes[drug.target]
    partner = kb.drugs[drug.partner]
    partner_target = kb.genes[partner.target]
    if family == "drug_target":
        return f"Which gene does the drug {drug.name} target?", (drug.target,), (drug.name,)
    if family == "gene_pathway":
        return f"Which pathway is the gene {gene.name} part of?", (gene.pathway,), (gene.name,)
    if family == "gene_chromosome":
        return (f"On which chromosome is the gene {gene.name}?", (str(gene.chromosome), f"chromosome {gene.chromosome}"),
                (gene.name,))
    if family == "target_disease":
        return (f"Which disease is linked to the gene that the drug {drug.name} targets?", (target.disease,),
                (drug.name, target.name))
    if family == "target_pathway":
        return (f"Which pathway is the target gene of the drug {drug.name} part of?", (target.pathway,),
                (drug.name, target.name))
    if family == "partner_target":
        return (f"Which gene is targeted by the drug that interacts with {drug.name}?", (partner.target,),
                (drug.name, partner.name))
    if family == "partner_disease":
        return (f"Which disease is linked to the target gene of the drug that interacts with {drug.name}?",
                (partner_target.disease,), (drug.name, partner.name, partner_target.name))
    return (f"Which pathway is the target gene of the drug that interacts with {drug.name} part of?",
            (partner_target.pathway,), (drug.name, partner.name, partner_target.name))  # partner_pathway


FAMILIES = {1: ("drug_target", "gene_pathway", "gene_chromosome"),
            2: ("target_disease", "target_pathway", "partner_target"),
            3: ("partner_disease", "partner_pathway")}


def make_problem(split: str, seed: int, family: str, level: int, index: int) -> Problem:
    rng = random.Random(f"biomed/{split}/{seed}/{family}/{index}")
    kb_key = f"{split}/{seed}/{rng.randrange(KBS_PER_SPLIT)}"
    question, answers, lookups = _ask(family, knowledge_base(kb_key), rng)
    return Problem(question, answers, lookups, kb_key, family, level, split, f"{split}-{seed}-{family}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"biomed: split must be one of {', '.join(SPLITS)}, got {split!r}")
    chosen = [(f, lv) for lv in tuple(levels) for f in FAMILIES[lv]]
    if not chosen:
        raise ValueError("biomed: choose at least one level")
    return [make_problem(split, seed, *chosen[i % len(chosen)], i // len(chosen)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class BiomedConfig(Options):
    """The biomed env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Lookups a question needs: 1, 2 or 3 (a chain of drug, partner drug, "
                                     "target gene, its disease or pathway).", choices=LEVELS)
    max_lookups: int = option(4, "Lookups allowed; one more ends the episode with reward 0.", low=0, high=64,
                              aliases=("max_tool_calls",))

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env biomed): choose at least one level")


class BiomedEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: BiomedConfig | None = None):
        self.problem = problem
        self.config = config or BiomedConfig()
        self.lookups = 0

    def reset(self) -> list[dict[str, str]]:
        self.lookups = 0
        user = f"{self.problem.question}\nYou may look up {self.config.max_lookups} entries."
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def tool_result(self, command: str) -> str:
        """The text of a lookup's answer (never raises)."""
        words = command.strip().split(None, 1)
        if not words or words[0].lower() != "lookup":
            verb = words[0][:40] if words else ""
            return f"error: unknown command {verb!r}; use lookup NAME"
        name = words[1].strip().strip("'\"`") if len(words) > 1 else ""
        if not name:
            return "error: lookup needs a name, e.g. lookup Velronib"
        if len(name) > MAX_NAME_CHARS:
            return f"error: a name has at most {MAX_NAME_CHARS} characters; got {len(name)}"
        entry = knowledge_base(self.problem.kb_key).entry(name)
        if entry is None:
            return (f"error: no entry named {name[:40]!r}; look up a drug, gene, disease or pathway by its exact "
                    f"name as the question or an entry writes it")
        return entry

    def step(self, model_text: str) -> StepResult:
        action = TOOL.first_action(model_text)
        ended = answer_step(action, {"tool_calls": self.lookups}, self.problem.answers, self.lookups,
                            self.config.max_lookups, "lookups")
        if ended is not None:
            return ended
        self.lookups += 1
        return StepResult(TOOL.result(self.tool_result(action[1].group(1))), False, 0.0,
                          {"tool_calls": self.lookups})


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Look up the chain of entries the question needs, then answer."""
    env = BiomedEnv(problem, BiomedConfig())
    env.reset()
    segments: list[tuple[str, str]] = []
    for name in problem.lookups:
        call = f"{TOOL.call_open}lookup {name}{TOOL.call_close}"
        segments += [("model", call), ("env", env.step(call).observation)]
    segments.append(("model", f"{TOOL.answer_open}{problem.answers[0]}{TOOL.answer_close}"))
    return segments


def _problems(split: str, n: int, seed: int, config: BiomedConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("biomed", BiomedConfig, _problems, BiomedEnv, demonstration,
               title="Biomedical questions over a synthetic knowledge base, with a lookup tool",
               validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("biomed-grpo", "Biomedical lookup agent on a synthetic knowledge base (GRPO)", "grpo", "biomed",
                   "An agent that answers questions about drugs, genes, diseases and pathways by looking up entries "
                   "of a generated knowledge base (1 to 3 lookups per question), rewarded by exact match.",
                   nodes=("env-biomedical", "env-domain-specific"),
                   changes="A small stand-in for biomedical agent environments, on SYNTHETIC data: every drug, "
                           "gene, disease and pathway name and every link between them is generated, so nothing it "
                           "learns or answers is medical fact. Keeps the structure of knowledge-base question "
                           "answering in the domain: entity-typed entries (a drug's target and interacting drug, a "
                           "gene's chromosome, pathway and disease), questions that chain one to three lookups, "
                           "and exact-match answers. Simplifies: tens of entities per knowledge base instead of "
                           "curated databases, one link of each kind per entity, templated questions, and no "
                           "free-text literature."),
)
