"""Capture the flag in the sandbox: find a flag hidden in a small generated file system by writing programs that
search it, decode it or break its cipher.

Tag format (inside the assistant turn; the environment's text is loss-masked)::

    user:  the challenge: how many files, the flag's form, a hint of the family
    model: <run>import os ... print(...)</run>              runs in the sandbox, in the challenge directory
    env:   <result>FLAG{3fa09c1b2e}</result>                 what the program printed (the start of it)
    model: <answer>FLAG{3fa09c1b2e}</answer>                 the flag ends the episode

Problems
    A problem is a generated directory tree of plausible files (logs, configs, notes, data) and one flag of the
    form ``FLAG{`` ten lowercase hex digits ``}``. Families: ``find``: the flag is written in plain text in one
    file; ``encoded``: it is stored base64-encoded (level 1) or as base64, hex or reversed text (level 2);
    ``cipher``: a file holds it under a Caesar shift of its letters (level 1) or XORed with one secret byte and
    written in hex (level 2). Level 1 is 6 to 8 files two directories deep; level 2 is 14 to 20 files up to
    three deep, hidden dot-files, and decoy flags of the wrong form (``FLAG{not_the_flag}``, eight hex digits).
Splits
    ``train``, ``validation`` and ``heldout`` hold different flags: a problem belongs to one split by a stable
    hash of its flag (one in four held out, one in eight for validation).
The sandbox
    Model text runs only in :mod:`reference_impls.sandbox`, never in this process. Our harness (``main.py``)
    writes the tree into ``challenge/`` from ``tree.json``, deletes ``tree.json``, changes into ``challenge/`` and
    runs the model's program (``solve.py``); what it prints (stdout, then the end of stderr) comes back in
    ``<result>``, cut to ``max_output_chars``.
Reward
    1 when the answer is the flag, else 0. An answer that is not of the flag's form ends the episode with reward
    0 and ``parse_error`` saying so; nothing the model writes is evaluated in this process.
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import re
from dataclasses import dataclass

from .. import sandbox
from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec

TOOL = ToolSpec(
    name="run",
    description="Runs a Python program in the sandbox, in the challenge directory, and returns what it prints.",
    call_open="<run>",
    call_close="</run>",
    result_open="<result>",
    result_close="</result>",
)
FAMILIES = ("find", "encoded", "cipher")
LEVELS = (1, 2)
SPLITS = ("train", "validation", "heldout")
FLAG_FORM = re.compile(r"^FLAG\{[0-9a-f]{10}\}$")
HINTS = {
    "find": "The flag is written in plain text in one of the files.",
    "encoded": "The flag is stored encoded in one of the files (base64, hex, or reversed text).",
    "cipher": "The flag is stored encrypted in one of the files: a Caesar shift of its letters, or XOR with one "
              "secret byte written as hex.",
}

SYSTEM_PROMPT = (
    "You are solving a capture-the-flag challenge. The challenge files are in the current directory. "
    "<run>program</run> runs a Python program there (standard library only) and returns what it prints in "
    "<result>...</result>. When you have the flag, write <answer>FLAG{...}</answer>."
)

_WORDS = ("alpha", "backup", "cache", "daemon", "error", "fetch", "gateway", "host", "index", "job", "kernel", "login",
          "mount", "node", "offset", "proxy", "queue", "route", "session", "token", "update", "volume", "worker")
_DIRS = ("etc", "var", "home", "opt", "srv", "tmp", "logs", "data", "notes", "config", "app", "cache")
_NAMES = ("app.log", "access.log", "notes.txt", "config.ini", "readme.md", "todo.txt", "users.csv", "report.txt",
          "settings.yaml", "history.txt", "backup.dat", "keys.txt", "motd", "errors.log", "inventory.csv")


@dataclass(frozen=True)
class Problem:
    family: str
    level: int
    files: tuple[tuple[str, str], ...]  # (relative path, content)
    flag: str
    holder: str  # the file that holds the flag (for the tests and the docs; never shown)
    split: str
    uid: str


def split_of(flag: str) -> str:
    bucket = int(hashlib.sha256(f"ctf/{flag}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def caesar(text: str, shift: int) -> str:
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + shift) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + shift) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)


def _filler(rng: random.Random, name: str) -> str:
    """A few lines of plausible, flag-free content."""
    lines = []
    for i in range(rng.randint(2, 6)):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 5)))
        if name.endswith(".log"):
            lines.append(f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} {rng.choice(['INFO', 'WARN'])} {words}")
        elif name.endswith((".ini", ".yaml")):
            lines.append(f"{rng.choice(_WORDS)}_{i} = {rng.choice(_WORDS)}")
        elif name.endswith(".csv"):
            lines.append(f"{i},{rng.choice(_WORDS)},{rng.randint(0, 999)}")
        else:
            lines.append(words)
    return "\n".join(lines) + "\n"


def _stored(rng: random.Random, family: str, level: int, flag: str) -> str:
    """The line that holds the flag, in the family's form."""
    if family == "find":
        return f"{rng.choice(_WORDS)} {flag}"
    if family == "encoded":
        form = "base64" if level == 1 else rng.choice(["base64", "hex", "reversed"])
        if form == "base64":
            return f"blob: {base64.b64encode(flag.encode()).decode()}"
        if form == "hex":
            return f"blob: {flag.encode().hex()}"
        return f"blob: {flag[::-1]}"
    if level == 1:
        return f"message: {caesar(flag, rng.randint(1, 25))}"
    key = rng.randint(1, 255)
    return f"message: {bytes(b ^ key for b in flag.encode()).hex()}"


def make_problem(split: str, seed: int, level: int, family: str, index: int) -> Problem:
    rng = random.Random(f"ctf/{split}/{seed}/{level}/{family}/{index}")
    for _ in range(10_000):
        flag = "FLAG{" + "".join(rng.choice("0123456789abcdef") for _ in range(10)) + "}"
        if split_of(flag) == split:
            break
    else:  # pragma: no cover - a quarter to five eighths of all flags belong to each split
        raise RuntimeError("no flag found for the split")
    n_files = rng.randint(6, 8) if level == 1 else rng.randint(14, 20)
    depth = 2 if level == 1 else 3
    paths: list[str] = []
    while len(paths) < n_files:
        dirs = rng.sample(_DIRS, rng.randint(1, depth))
        name = rng.choice(_NAMES)
        if level == 2 and rng.random() < 0.25:
            name = "." + name
        path = "/".join([*dirs, name])
        if path not in paths and not any(p.startswith(path + "/") or path.startswith(p + "/") for p in paths):
            paths.append(path)
    contents = {p: _filler(rng, p) for p in paths}
    holder = rng.choice(paths)
    lines = contents[holder].splitlines()
    lines.insert(rng.randint(0, len(lines)), _stored(rng, family, level, flag))
    contents[holder] = "\n".join(lines) + "\n"
    if level == 2:  # decoys of the wrong form, in other files
        others = [p for p in paths if p != holder]
        decoys = ["FLAG{not_the_flag}", "FLAG{" + "".join(rng.choice("0123456789abcdef") for _ in range(8)) + "}",
                  "flag{example}"]
        for decoy, path in zip(decoys, rng.sample(others, min(len(others), len(decoys)))):
            contents[path] += f"{rng.choice(_WORDS)}: {decoy}\n"
    files = tuple(sorted(contents.items()))
    return Problem(family, level, files, flag, holder, split, f"{split}-{seed}-{level}-{family}-{index}")


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS, families=FAMILIES) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"ctf: split must be one of {', '.join(SPLITS)}, got {split!r}")
    combos = [(lv, f) for f in families for lv in levels]
    if not combos:
        raise ValueError("ctf: no levels or families chosen")
    return [make_problem(split, seed, *combos[i % len(combos)], i // len(combos)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# the sandboxed run

_HARNESS = r'''
import json, os, runpy, sys
with open("tree.json") as f:
    tree = json.load(f)
os.remove("tree.json")
for path, text in tree:
    full = os.path.join("challenge", path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
program = os.path.abspath("solve.py")
os.chdir("challenge")
sys.argv = ["solve.py"]
runpy.run_path(program, run_name="__main__")
'''


def run_program(program: str, problem: Problem, limits: sandbox.Limits) -> sandbox.Result:
    """``program`` run in the sandbox inside the problem's challenge directory."""
    files = {"tree.json": json.dumps([list(f) for f in problem.files]), "solve.py": program}
    return sandbox.check(sandbox.run_python(_HARNESS, limits=limits, files=files))


def run_report(result: sandbox.Result, max_chars: int) -> str:
    """What the agent reads of a run: its stdout, the end of stderr when it failed, cut to ``max_chars``."""
    out = result.stdout.strip()
    if result.status != "ok":
        err = result.stderr.strip().splitlines()
        # the harness's own frames are noise: show the program's last error line
        last = err[-1][:300] if err else ""
        head = f"the program did not finish cleanly ({result.status})" + (f": {last}" if last else "")
        out = head + (f"\noutput: {out}" if out else "")
    elif not out:
        out = "(the program printed nothing)"
    return out if len(out) <= max_chars else out[:max_chars] + f" ... [{len(out) - max_chars} more characters]"


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class CTFConfig(Options):
    """The ctf env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    families: tuple[str, ...] = option(FAMILIES, "Challenges: find (the flag in plain text), encoded (base64, hex "
                                       "or reversed), cipher (a Caesar shift or a one-byte XOR).", choices=FAMILIES)
    levels: tuple[int, ...] = option(LEVELS, "1 = 6-8 files, one encoding; 2 = 14-20 files, hidden files, decoy "
                                     "flags, more encodings.", choices=LEVELS)
    max_runs: int = option(4, "<run> programs allowed; one more ends the episode with reward 0.", low=0, high=20,
                           aliases=("max_tool_calls",))
    max_output_chars: int = option(800, "Characters of a run's output shown back.", low=50, high=20000)
    cpu_seconds: int = option(2, "CPU seconds for one sandboxed run.", low=1, high=60)
    wall_seconds: float = option(6.0, "Wall-clock seconds for one sandboxed run.", low=0.5, high=120.0)
    max_code_chars: int = option(8000, "A longer program is refused without running it.", low=100, high=200000)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels or not self.families:
            raise ConfigError("--levels / --families (options of --env ctf): choose at least one of each")


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_+-]*\s*\n(.*?)\n?\s*```\s*$", re.S)


class CTFEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close, TOOL.answer_close)

    def __init__(self, problem: Problem, config: CTFConfig | None = None):
        self.problem = problem
        self.config = config or CTFConfig()
        self.runs = 0

    def reset(self) -> list[dict[str, str]]:
        self.runs = 0
        p = self.problem
        dirs = sorted({path.split("/")[0] for path, _ in p.files})
        user = (f"The challenge directory holds {len(p.files)} files under {', '.join(d + '/' for d in dirs)}"
                f"{' (some hidden: their names start with a dot)' if p.level == 2 else ''}. {HINTS[p.family]} The "
                f"flag has the form FLAG{{ten lowercase hex digits}}. You may run {self.config.max_runs} programs.")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def step(self, model_text: str) -> StepResult:
        cfg = self.config
        action = TOOL.first_action(model_text)
        base = {"tool_calls": self.runs}
        if action is None:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None,
                                                "parse_error": "no <run> program or <answer> in the turn"})
        kind, m = action
        if kind == "answer":
            answer = m.group(1).strip()
            info = {**base, "answer": answer[:40]}
            if not FLAG_FORM.match(answer):
                return StepResult(None, True, 0.0, {**info, "correct": False,
                                                    "parse_error": f"the answer {answer[:40]!r} is not of the form "
                                                                   "FLAG{ten lowercase hex digits}"})
            correct = answer == self.problem.flag
            return StepResult(None, True, float(correct), {**info, "correct": correct})
        if self.runs >= cfg.max_runs:
            return StepResult(None, True, 0.0, {**base, "correct": False, "answer": None, "truncated": True,
                                                "error": f"all {cfg.max_runs} runs were used; answer with "
                                                         "<answer>FLAG{...}</answer>"})
        self.runs += 1
        fenced = _FENCE.match(m.group(1))
        program = (fenced.group(1) if fenced else m.group(1)).strip("\n")
        if not program.strip():
            text = "error: the program is empty"
        elif len(program) > cfg.max_code_chars:
            text = f"error: the program is {len(program)} characters long; at most {cfg.max_code_chars}"
        else:
            limits = sandbox.Limits(cpu_seconds=cfg.cpu_seconds, wall_seconds=cfg.wall_seconds)
            text = run_report(run_program(program, self.problem, limits), cfg.max_output_chars)
        return StepResult(TOOL.result(text), False, 0.0, {"tool_calls": self.runs})


#: the demonstration's solver: every token of every file, tried as it is, reversed, base64 and hex decoded, under
#: every Caesar shift (tokens with a brace) and every one-byte XOR (decoded tokens as long as a flag), against the
#: flag's form
SOLVER = r'''import base64, binascii, os, re
form = re.compile(r"FLAG\{[0-9a-f]{10}\}")
def readings(token):
    yield token
    yield token[::-1]
    for shift in range(1, 26 if "{" in token else 1):
        yield "".join(chr((ord(c) - b + shift) % 26 + b) if c.isascii() and c.isalpha() else c
                      for c in token for b in [97 if c.islower() else 65])
    raw = []
    try:
        raw.append(base64.b64decode(token, validate=True))
    except (binascii.Error, ValueError):
        pass
    try:
        raw.append(bytes.fromhex(token))
    except ValueError:
        pass
    for data in raw:
        for key in range(256 if len(data) >= 16 else 1):
            yield bytes(b ^ key for b in data).decode("latin-1")
for root, _, names in sorted(os.walk(".")):
    for name in sorted(names):
        path = os.path.join(root, name)
        for token in open(path, errors="replace").read().split():
            for text in readings(token):
                found = form.search(text)
                if found:
                    print(path, found.group())
'''


def demonstration(problem: Problem) -> list[tuple[str, str]]:
    """Run the general solver once (the real sandboxed output), then answer the flag."""
    env = CTFEnv(problem, CTFConfig())
    env.reset()
    call = f"{TOOL.call_open}\n{SOLVER}{TOOL.call_close}"
    return [("model", call), ("env", env.step(call).observation),
            ("model", f"{TOOL.answer_open}{problem.flag}{TOOL.answer_close}")]


def _problems(split: str, n: int, seed: int, config: CTFConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels, families=config.families)


SPEC = EnvSpec("ctf", CTFConfig, _problems, CTFEnv, demonstration,
               title="Capture the flag: search, decode or decrypt a generated file system with sandboxed programs",
               uses_sandbox=True, validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

IMPLEMENTATIONS = (
    Implementation("ctf-grpo", "Cybersecurity: capture the flag with sandboxed programs (GRPO)", "grpo", "ctf",
                   "An agent that writes programs to search a generated file system for a flag, decode it or break "
                   "a simple cipher, runs them in the sandbox, and submits the flag; rewarded for the exact flag.",
                   nodes=("env-cybersecurity", "env-domain-specific"),
                   changes="A small stand-in for capture-the-flag environments: keeps their loop (explore an "
                           "unfamiliar system with commands you write, read the output, recognise and decode what "
                           "you find, submit a flag that is checked exactly), with every command run in the "
                           "sandbox. Simplifies: the 'system' is a directory of 6 to 20 generated text files, the "
                           "commands are Python programs (no shell, no network, no services to exploit), and the "
                           "protections are base64, hex, reversal, a Caesar shift and a one-byte XOR; no binary "
                           "exploitation, web targets or privilege escalation. The survey's example here "
                           "(SecRepoBench) grades secure code rather than attacks; this row covers the offensive "
                           "side of security environments, and the code rows (code-grpo) are the nearest thing "
                           "to its functional-correctness half, with no vulnerability checks.",
                   equation=r"r = \mathbb{1}[\hat{\text{flag}} = \text{flag}]"),
)
