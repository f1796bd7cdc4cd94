"""Procedurally generated multi-session dialogues with a ground-truth memory state (a LoCoMo stand-in).

Two speakers talk over one to three sessions. Each speaker has *slots* (``job``, ``city``, ``pet``,
``trip``); a fact turn sets a slot, later turns *change* it ("I moved to Oslo in May"), *contradict* it
("Correction: I live in Oslo, not Rome") or *retract* it ("The trip to Lima is cancelled"). Between
facts the other speaker answers with small talk (turns a memory manager should skip). The generator
tracks the true state after every turn, so questions can be asked about the end of the dialogue (the
benchmark) or about any prefix (the RL decisions, see ``reference_impls/envs/memory.py``).

Question kinds (answers are exact strings, lower case)::

    single     a slot set once and never changed        "What is Alice's job?"              -> "nurse"
    updated    a slot changed or corrected since        "Where does Alice live?"            -> "oslo"
    multi_hop  identify the speaker by one fact, then   "What is the name of the pet of the
               read another                              person who works as a chef?"        -> "milo"
    temporal   the month of the slot's latest event     "In which month did Alice move to
                                                          Oslo?"                              -> "may"

Levels: 1 = one session, two slots per speaker, at most one change; 2 = two sessions, three slots,
changes and corrections; 3 = three sessions, four slots, changes, corrections and retractions.

Splits: ``train`` and ``heldout`` draw names, cities, jobs and pet names from disjoint halves of the
word lists, and the split name is part of every seed, so no held-out value or dialogue is seen in
training. Everything is a pure function of (split, seed, level, index).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

SLOTS = ("job", "city", "pet", "trip")
KINDS = ("single", "updated", "multi_hop", "temporal")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")

# Each list is split in two by position parity: even positions -> train, odd positions -> heldout.
_NAMES = ("Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kara",
          "Liam", "Mona", "Nico", "Olga", "Pablo", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera")
_VALUES = {
    "job": ("nurse", "teacher", "chef", "pilot", "baker", "lawyer", "plumber", "dentist", "farmer",
            "painter", "banker", "florist", "librarian", "architect", "journalist", "mechanic"),
    "city": ("paris", "oslo", "rome", "lima", "cairo", "dublin", "madrid", "vienna", "seoul", "quito",
             "lisbon", "prague", "boston", "denver", "nairobi", "sydney"),
    "pet": ("milo", "luna", "rex", "bella", "oscar", "coco", "max", "daisy", "leo", "ruby", "toby",
            "nala", "otis", "pip", "ziggy", "hazel"),
    "trip": ("iceland", "peru", "japan", "kenya", "norway", "chile", "egypt", "vietnam", "morocco",
             "canada", "greece", "nepal", "mexico", "finland", "jordan", "portugal"),
}
_SPECIES = ("dog", "cat", "parrot", "rabbit")


def vocab(split: str) -> dict[str, tuple[str, ...]]:
    if split not in ("train", "heldout"):
        raise ValueError("split must be 'train' or 'heldout'")
    par = 0 if split == "train" else 1
    out = {k: v[par::2] for k, v in _VALUES.items()}
    out["name"] = _NAMES[par::2]
    return out


def cap(v: str) -> str:
    return v[:1].upper() + v[1:]


# Turn templates. {v} value, {old} previous value, {m} month, {sp} species.
SET = {
    "job": ("I work as a {v}.", "I started a new job as a {v} in {m}."),
    "city": ("I live in {V}.", "I moved to {V} in {m}."),
    "pet": ("I have a {sp} named {V}.", "We adopted a {sp} named {V} in {m}."),
    "trip": ("I am planning a trip to {V}.", "In {m} I booked a trip to {V}."),
}
CHANGE = {
    "job": ("I quit being a {old}; I started working as a {v} in {m}.",),
    "city": ("I left {OLD} and moved to {V} in {m}.",),
    "pet": ("{OLD} went to live with my parents, and in {m} we adopted a {sp} named {V}.",),
    "trip": ("We changed our plans: in {m} we booked a trip to {V} instead of {OLD}.",),
}
CORRECT = {
    "job": ("Sorry, I misspoke: I am a {v}, not a {old}.",),
    "city": ("Correction: I live in {V}, not {OLD}.",),
    "pet": ("Oops, I mixed up names: my {sp} is called {V}, not {OLD}.",),
    "trip": ("Correction: the trip is to {V}, not {OLD}.",),
}
RETRACT = {
    "job": ("I am no longer a {old}; I left that job.",),
    "city": ("I don't live in {OLD} anymore.",),
    "pet": ("Sadly {OLD} went to live with my parents.",),
    "trip": ("The trip to {OLD} is cancelled.",),
}
FILLER = ("That sounds great!", "How was your weekend?", "Haha, true.", "The weather is lovely today.",
          "I had pasta for lunch.", "Nice to hear from you.", "Wow, really?", "I am a bit tired today.",
          "Good luck with that!", "Let's talk again soon.", "I watched a movie last night.", "Sounds fun!")
QUESTION = {
    "job": "What is {n}'s job?",
    "city": "Where does {n} live?",
    "pet": "What is the name of {n}'s pet?",
    "trip": "Where is {n}'s trip going?",
}
TEMPORAL = {
    "job": "In which month did {n} start working as a {v}?",
    "city": "In which month did {n} move to {V}?",
    "pet": "In which month did {n} adopt {V}?",
    "trip": "In which month did {n} book the trip to {V}?",
}
DESCRIBE = {  # how a speaker is identified in a multi-hop question
    "job": "the person who works as a {v}",
    "city": "the person who lives in {V}",
    "pet": "the person whose pet is called {V}",
    "trip": "the person whose trip goes to {V}",
}
HOP = {
    "job": "What is the job of {d}?",
    "city": "Where does {d} live?",
    "pet": "What is the name of the pet of {d}?",
    "trip": "Where is the trip of {d} going?",
}
# canonical memory sentence of a slot value (the ground-truth memory state, written out)
CANON = {
    "job": "{n} works as a {v}.",
    "city": "{n} lives in {V}.",
    "pet": "{n} has a pet named {V}.",
    "trip": "{n} plans a trip to {V}.",
}


@dataclass(frozen=True)
class Turn:
    index: int
    session: int
    speaker: str
    text: str
    # what the turn does to the true state: kind in {"filler", "set", "change", "correct", "retract"}
    kind: str = "filler"
    slot: str | None = None
    value: str | None = None
    month: str | None = None

    @property
    def line(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    answer: str
    speaker: str
    slot: str


@dataclass(frozen=True)
class Dialogue:
    uid: str
    split: str
    level: int
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    species: tuple[tuple[str, str], ...] = field(default=())  # (speaker, species of the pet)

    def state(self, upto: int | None = None) -> dict:
        """True state after turns[:upto] (all turns when None): {(speaker, slot): (value, month)}."""
        return replay_state(self.turns[: len(self.turns) if upto is None else upto])

    def gold_memory(self, upto: int | None = None) -> list[str]:
        """The ground-truth memory as canonical sentences (one per live slot)."""
        return [CANON[slot].format(n=sp, v=v, V=cap(v)) for (sp, slot), (v, _m) in sorted(self.state(upto).items())]


def replay_state(turns) -> dict:
    state: dict[tuple[str, str], tuple[str, str | None]] = {}
    for t in turns:
        if t.kind in ("set", "change", "correct"):
            state[(t.speaker, t.slot)] = (t.value, t.month)  # a correction carries no month
        elif t.kind == "retract":
            state.pop((t.speaker, t.slot), None)
    return state


LEVELS = {  # sessions, slots per speaker, changes, corrections, retractions, fillers between facts
    1: dict(sessions=1, slots=2, changes=1, corrections=0, retractions=0, filler=(0, 1)),
    2: dict(sessions=2, slots=3, changes=2, corrections=1, retractions=0, filler=(1, 1)),
    3: dict(sessions=3, slots=4, changes=2, corrections=1, retractions=1, filler=(1, 1)),
}


def _pick_new(rng, pool, used):
    free = [v for v in pool if v not in used]
    v = rng.choice(free)
    used.add(v)
    return v


def make_dialogue(split: str, seed: int, level: int, index: int) -> Dialogue:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {sorted(LEVELS)}")
    spec = LEVELS[level]
    rng = random.Random(f"memory/{split}/{seed}/{level}/{index}")
    voc = vocab(split)
    speakers = tuple(rng.sample(voc["name"], 2))
    used: set[str] = set()  # values are unique within a dialogue (multi-hop needs that)
    slots = {sp: rng.sample(SLOTS, spec["slots"]) for sp in speakers}
    species = {sp: rng.choice(_SPECIES) for sp in speakers}
    # events: first every slot is set, then changes / corrections / retractions in later sessions
    events = [(sp, slot, "set") for sp in speakers for slot in slots[sp]]
    rng.shuffle(events)
    later = []
    pairs = [(sp, s) for sp in speakers for s in slots[sp]]
    for kind, count in (("change", "changes"), ("correct", "corrections"), ("retract", "retractions")):
        for sp, s in rng.sample(pairs, min(len(pairs), spec[count])):
            later.append((sp, s, kind))
    rng.shuffle(later)
    # a retraction is followed by a fresh value later (so the slot ends with a value to ask about)
    seq = []
    for e in later:
        seq.append(e)
        if e[2] == "retract":
            seq.append((e[0], e[1], "set"))
    # distribute: session 1 holds the initial sets, the later events split over the other sessions
    sessions = [events] + [[] for _ in range(spec["sessions"] - 1)]
    for i, e in enumerate(seq):
        # contiguous chunks keep the order (a retraction stays before the value that follows it)
        sessions[1 + i * (spec["sessions"] - 1) // len(seq) if spec["sessions"] > 1 else 0].append(e)
    state: dict = {}
    turns: list[Turn] = []

    def emit(session, speaker, text, **kw):
        turns.append(Turn(len(turns), session, speaker, text, **kw))

    for si, evs in enumerate(sessions):
        for sp, slot, kind in evs:
            other = speakers[1 - speakers.index(sp)]
            old = state.get((sp, slot), (None, None))[0]
            month = rng.choice(MONTHS)
            if kind == "set":
                v = _pick_new(rng, voc[slot], used)
                tpl = rng.choice(SET[slot])
                m = month if "{m}" in tpl else None
            elif kind in ("change", "correct"):
                if old is None:  # slot was retracted earlier: a plain set instead
                    kind, tpl = "set", SET[slot][1]
                else:
                    tpl = rng.choice(CHANGE[slot] if kind == "change" else CORRECT[slot])
                v = _pick_new(rng, voc[slot], used)
                m = month if "{m}" in tpl else None
            else:  # retract
                if old is None:
                    continue
                tpl, v, m = rng.choice(RETRACT[slot]), None, None
            text = tpl.format(v=v, V=cap(v) if v else "", old=old, OLD=cap(old) if old else "", m=cap(month),
                              sp=species[sp])
            emit(si, sp, text, kind=kind, slot=slot, value=v, month=m)
            if kind == "retract":
                state.pop((sp, slot), None)
            else:
                state[(sp, slot)] = (v, m)
            for _ in range(rng.randint(*spec["filler"])):
                emit(si, other, rng.choice(FILLER))
    questions = make_questions(turns, speakers, rng)
    return Dialogue(f"{split}-{seed}-{level}-{index}", split, level, speakers, tuple(turns), tuple(questions),
                    tuple(sorted(species.items())))


def slot_history(turns) -> dict:
    """{(speaker, slot): [kinds of the turns that touched it, in order]}"""
    hist: dict = {}
    for t in turns:
        if t.slot:
            hist.setdefault((t.speaker, t.slot), []).append(t.kind)
    return hist


def make_questions(turns, speakers, rng, upto: int | None = None, max_per_kind: int = 2) -> list[Question]:
    """Questions about the state after turns[:upto], up to ``max_per_kind`` of each kind (fewer when the
    dialogue has no instance of a kind), in a fixed order: single, updated, multi_hop, temporal."""
    turns = list(turns)[: len(turns) if upto is None else upto]
    state = replay_state(turns)
    hist = slot_history(turns)
    out: list[Question] = []
    keys = sorted(state)
    single = [k for k in keys if hist[k] == ["set"]]
    updated = [k for k in keys if len(hist[k]) > 1]
    for kind, pool in (("single", single), ("updated", updated)):
        for sp, slot in rng.sample(pool, min(max_per_kind, len(pool))):
            out.append(Question(kind, QUESTION[slot].format(n=sp), state[(sp, slot)][0], sp, slot))
    hops = [(a, b, sp) for sp in speakers for a in SLOTS for b in SLOTS
            if a != b and (sp, a) in state and (sp, b) in state]
    for a, b, sp in rng.sample(hops, min(max_per_kind, len(hops))):
        va = state[(sp, a)][0]
        d = DESCRIBE[a].format(v=va, V=cap(va))
        out.append(Question("multi_hop", HOP[b].format(d=d), state[(sp, b)][0], sp, b))
    temporal = [k for k in keys if state[k][1] is not None]
    for sp, slot in rng.sample(temporal, min(max_per_kind, len(temporal))):
        v, m = state[(sp, slot)]
        out.append(Question("temporal", TEMPORAL[slot].format(n=sp, v=v, V=cap(v)), m, sp, slot))
    return out


def gold_answer(dialogue: Dialogue, question: Question, upto: int | None = None) -> str:
    """The answer recomputed from the ground-truth state (independent of how the question was made)."""
    state = dialogue.state(upto)
    if question.kind == "temporal":
        return state[(question.speaker, question.slot)][1]
    return state[(question.speaker, question.slot)][0]


def dialogues(split: str = "heldout", n: int = 20, seed: int = 0, levels=(1, 2, 3)) -> list[Dialogue]:
    """``n`` dialogues cycling over ``levels``; the same arguments always give the same list."""
    levels = tuple(levels)
    return [make_dialogue(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


def render(dialogue: Dialogue) -> str:
    lines = []
    for t in dialogue.turns:
        if t.index == 0 or dialogue.turns[t.index - 1].session != t.session:
            lines.append(f"-- session {t.session + 1} --")
        lines.append(t.line)
    return "\n".join(lines)
