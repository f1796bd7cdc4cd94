"""A GUI agent on a desktop application's settings, the screen rendered as text.

The screen lists the application's window and, when one is open, its settings dialog; every element the agent
can act on carries a number::

    [window] Text editor
      [1] button "Preferences..."
      [2] button "Print..."
    [dialog] Preferences (settings 1-4 of 6; scroll(down) for more)
      [11] field "Font size" = 12 (a whole number from 8 to 72)
      [12] checkbox "Word wrap" = off
      ...
      [18] button "Save"
      [19] button "Cancel"

Tag format (one action per turn, inside the assistant turn; the environment's text is loss-masked)::

    model: <action>click(1)</action>                       open the Preferences dialog
    env:   <screen>...</screen>                            the new screen
    model: <action>type(11, "14")</action>                 replace the text of field 11
    model: <action>click(18)</action>                      Save: the dialog's values become the settings
    model: <action>done()</action>                         ends the episode; the final state is scored

Actions: ``click(N)`` (a button opens its dialog, Save or Cancel; a checkbox toggles), ``type(N, "text")``
(replaces a field's text), ``scroll(down)`` / ``scroll(up)`` (moves the open dialog by a page of ``view_rows``
settings; only the settings in view can be acted on) and ``done()``. An action is read by :func:`parse_action`
(a regular expression and integer conversion; nothing the model writes is evaluated). A bad action (unknown,
malformed, an element not on the screen, a checkbox typed into, a value a field refuses, a window behind the open
dialog) changes nothing, spends the action and is answered with the screen under an ``error: ...`` line naming
what was wrong.
Problems
    An application (a title and two or three dialogs drawn from a pool: Preferences, Print, Account, Display),
    each dialog a seeded subset of its settings in a seeded order with seeded starting values, and a task: one or
    two settings to change and save. Level 1: one setting, a dialog of three settings (no scrolling at the
    default ``view_rows``); level 2: two settings of one dialog of six or seven (scrolling is usually needed);
    level 3: two settings in two different dialogs, each to be saved.
Splits
    ``train``, ``validation`` and ``heldout`` hold different tasks: a task (the application and its target
    settings and values) belongs to one split by a stable hash of itself (one in four held out, one in eight for
    validation), so no held-out task is trained on under any seed.
Reward
    Read from the final *saved* state when the episode ends with ``done()`` (a dialog left open counts as not
    saved): the share of target settings holding their target value, or 0 when any other setting differs from its
    starting value (a GUI task done with side effects is not done). ``correct`` when the share is 1. Running out
    of actions, or a turn without an action, ends the episode with 0.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

from ..options import ConfigError, Options, option
from . import EnvSpec, StepResult, ToolSpec, replay_calls

TOOL = ToolSpec(
    name="gui",
    description="Acts on the screen: click(N), type(N, \"text\"), scroll(down), scroll(up), done().",
    call_open="<action>",
    call_close="</action>",
    result_open="<screen>",
    result_close="</screen>",
)

SYSTEM_PROMPT = (
    "You operate a desktop application. The screen lists its elements, each with a number in brackets. Write one "
    "action per turn: <action>click(N)</action> (a button, or a checkbox to toggle it), "
    "<action>type(N, \"text\")</action> (replace the text of field N), <action>scroll(down)</action> or "
    "<action>scroll(up)</action> (show more of an open dialog), and <action>done()</action> when the task is "
    "finished. The new screen comes back in <screen>...</screen>. Changes count only after the dialog's Save "
    "button is clicked."
)

LEVELS = (1, 2, 3)
SPLITS = ("train", "validation", "heldout")
APPS = ("Text editor", "Mail", "Photo viewer", "Notes", "Music player", "Spreadsheet", "Calendar", "Chat")
MAX_TEXT = 40  # characters a field takes


@dataclass(frozen=True)
class Setting:
    """One setting of a dialog. ``kind``: number (a whole number from ``low`` to ``high``), choice (one of
    ``choices``), text (free text) or checkbox (value True/False)."""

    name: str
    kind: str
    value: object  # the starting value: int, str or bool
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()

    def read(self, text: str) -> tuple[object, str]:
        """The value a field shows after typing ``text`` into it -> (value, "") or (None, why it is refused)."""
        text = text.strip()
        if self.kind == "number":
            if not re.fullmatch(r"[-+]?\d{1,6}", text):
                return None, f"field {self.name!r} takes a whole number from {self.low} to {self.high}; got {text[:20]!r}"
            number = int(text)
            if not self.low <= number <= self.high:
                return None, f"field {self.name!r} takes a whole number from {self.low} to {self.high}; got {number}"
            return number, ""
        if self.kind == "choice":
            if text.lower() not in self.choices:
                return None, (f"field {self.name!r} takes one of {', '.join(self.choices)}; got {text[:20]!r}")
            return text.lower(), ""
        if not text:
            return None, f"field {self.name!r} cannot be empty"
        if len(text) > MAX_TEXT:
            return None, f"field {self.name!r} takes at most {MAX_TEXT} characters; got {len(text)}"
        return text, ""


def _number(name, low, high):
    return ("number", name, low, high, ())


def _choice(name, *choices):
    return ("choice", name, 0, 0, choices)


def _check(name):
    return ("checkbox", name, 0, 0, ())


def _text(name, *values):
    return ("text", name, 0, 0, values)  # values: what the generator draws from (any text is accepted)


#: dialog -> the settings it may hold
POOL = {
    "Preferences": (_number("Font size", 8, 72), _number("Tab width", 1, 16), _check("Word wrap"),
                    _check("Line numbers"), _check("Auto save"), _choice("Theme", "light", "dark", "sepia"),
                    _number("Autosave interval (minutes)", 1, 120)),
    "Print": (_number("Copies", 1, 99), _number("Margin (mm)", 0, 50), _check("Double-sided"), _check("Color"),
              _choice("Orientation", "portrait", "landscape"), _choice("Paper", "a4", "letter", "a5"),
              _check("Print headers")),
    "Account": (_text("Display name", "Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana"),
                _text("Status message", "busy", "away", "at lunch", "in a meeting", "back soon"),
                _check("Notifications"), _check("Two-factor login"), _choice("Language", "english", "french",
                                                                             "german", "spanish"),
                _number("Session timeout (minutes)", 5, 240), _check("Show online status")),
    "Display": (_number("Brightness", 0, 100), _number("Zoom (%)", 25, 400), _check("Dark mode"),
                _check("Show toolbar"), _choice("Density", "compact", "normal", "roomy"), _check("Animations"),
                _number("Sidebar width", 100, 600)),
}
DIALOGS = tuple(POOL)


@dataclass(frozen=True)
class Dialog:
    name: str
    settings: tuple[Setting, ...]


@dataclass(frozen=True)
class Problem:
    app: str
    dialogs: tuple[Dialog, ...]
    targets: tuple[tuple[int, int, object], ...]  # (dialog index, setting index, target value)
    instruction: str
    level: int
    split: str
    uid: str

    @property
    def family(self) -> str:
        return f"level-{self.level}"


# -- element ids: menu buttons 1.., then dialog d's settings 10*(d+1)+1.., its Save 10*(d+1)+8, Cancel +9

def menu_id(d: int) -> int:
    return d + 1


def setting_id(d: int, s: int) -> int:
    return 10 * (d + 1) + s + 1


def save_id(d: int) -> int:
    return 10 * (d + 1) + 8


def cancel_id(d: int) -> int:
    return 10 * (d + 1) + 9


def shown(setting: Setting, value) -> str:
    if setting.kind == "checkbox":
        return "on" if value else "off"
    return str(value)


def _phrase(setting: Setting, value, dialog: str) -> str:
    name = setting.name.lower()
    if setting.kind == "checkbox":
        return f"turn {'on' if value else 'off'} {name} in {dialog}"
    if setting.kind == "text":
        return f"change the {name} in {dialog} to \"{value}\""
    return f"set the {name} in {dialog} to {value}"


def split_of(app: str, dialogs: tuple[Dialog, ...], targets) -> str:
    """The split a task belongs to: a stable hash of the application and its targets (1/4 held out, 1/8
    validation, the rest train)."""
    key = "|".join([app] + [f"{dialogs[d].name}/{dialogs[d].settings[s].name}={v}" for d, s, v in targets])
    bucket = int(hashlib.sha256(f"gui/{key}".encode()).hexdigest()[:8], 16) % 8
    return "heldout" if bucket < 2 else "validation" if bucket == 2 else "train"


def _draw_value(rng: random.Random, kind: str, low: int, high: int, choices: tuple) -> object:
    if kind == "number":
        return rng.randint(low, high)
    if kind == "checkbox":
        return rng.random() < 0.5
    return rng.choice(choices)


def _dialog(rng: random.Random, name: str, size: int) -> Dialog:
    pool = list(POOL[name])
    rng.shuffle(pool)
    settings = tuple(Setting(n, kind, _draw_value(rng, kind, low, high, choices), low, high,
                             choices if kind == "choice" else ())
                     for kind, n, low, high, choices in pool[:size])
    return Dialog(name, settings)


def _target_value(rng: random.Random, setting: Setting, pool_choices: tuple) -> object:
    if setting.kind == "checkbox":
        return not setting.value
    options = ([v for v in range(setting.low, setting.high + 1)] if setting.kind == "number" else list(pool_choices))
    return rng.choice([v for v in options if v != setting.value])


def make_problem(split: str, seed: int, level: int, index: int) -> Problem:
    rng = random.Random(f"gui/{split}/{seed}/{level}/{index}")
    for _ in range(10_000):
        app = rng.choice(APPS)
        names = rng.sample(DIALOGS, 2 if level == 1 else 3)
        size = {1: 3, 2: rng.randint(6, 7), 3: rng.randint(5, 7)}[level]
        dialogs = tuple(_dialog(rng, name, size) for name in names)
        if level == 3:
            places = [(d, rng.randrange(size)) for d in sorted(rng.sample(range(len(dialogs)), 2))]
        else:
            d = rng.randrange(len(dialogs))
            places = [(d, s) for s in sorted(rng.sample(range(size), 1 if level == 1 else 2))]
        targets = []
        for d, s in places:
            setting = dialogs[d].settings[s]
            pool_choices = next(c for k, n, _, _, c in POOL[dialogs[d].name] if n == setting.name)
            targets.append((d, s, _target_value(rng, setting, pool_choices)))
        targets = tuple(targets)
        if split_of(app, dialogs, targets) != split:
            continue
        steps = [_phrase(dialogs[d].settings[s], v, dialogs[d].name) for d, s, v in targets]
        instruction = f"In {app}, {' and '.join(steps)}, then save."
        return Problem(app, dialogs, targets, instruction, level, split, f"{split}-{seed}-{level}-{index}")
    raise RuntimeError("no task found for the split")  # pragma: no cover - every split holds many tasks


def problems(split: str = "train", n: int = 100, seed: int = 0, levels=LEVELS) -> list[Problem]:
    if split not in SPLITS:
        raise ValueError(f"gui: split must be one of {', '.join(SPLITS)}, got {split!r}")
    levels = tuple(levels)
    if not levels:
        raise ValueError("gui: choose at least one level")
    return [make_problem(split, seed, levels[i % len(levels)], i // len(levels)) for i in range(n)]


# ----------------------------------------------------------------------------------------------------
# actions

_ACTION = re.compile(r"^\s*(?P<verb>[A-Za-z_]+)\s*\((?P<args>.*)\)\s*$", re.S)
_TYPE_ARGS = re.compile(r"^\s*(?P<id>[-+]?\d{1,6})\s*,\s*(?:\"(?P<dq>[^\"]*)\"|'(?P<sq>[^']*)'|(?P<bare>[^\"'].*?))\s*$",
                        re.S)
VERBS = ("click", "type", "scroll", "done")


def parse_action(text: str) -> tuple[tuple | None, str]:
    """``click(N)`` -> (("click", N), ""), ``type(N, "text")`` -> (("type", N, text), ""), ``scroll(down|up)``
    -> (("scroll", +1|-1), ""), ``done()`` -> (("done",), ""); else (None, what is wrong). Never raises, never
    evaluates."""
    text = text[:200]
    m = _ACTION.match(text)
    if m is None:
        return None, f"unknown action {text.strip()[:40]!r}; write click(N), type(N, \"text\"), scroll(down) or done()"
    verb, args = m.group("verb").lower(), m.group("args").strip()
    if verb not in VERBS:
        return None, f"unknown action {verb!r}; the actions are {', '.join(VERBS)}"
    if verb == "click":
        if not re.fullmatch(r"[-+]?\d{1,6}", args):
            return None, f"click takes one element number, e.g. click(3); got {args[:20]!r}"
        return ("click", int(args)), ""
    if verb == "type":
        t = _TYPE_ARGS.match(args)
        if t is None:
            return None, f"type takes an element number and a text, e.g. type(3, \"14\"); got {args[:30]!r}"
        value = next(v for v in (t.group("dq"), t.group("sq"), t.group("bare")) if v is not None)
        return ("type", int(t.group("id")), value), ""
    if verb == "scroll":
        direction = args.strip("\"' ").lower()
        if direction not in ("down", "up"):
            return None, f"scroll takes down or up; got {args[:20]!r}"
        return ("scroll", 1 if direction == "down" else -1), ""
    if args:
        return None, f"done takes nothing; got {args[:20]!r}"
    return ("done",), ""


# ----------------------------------------------------------------------------------------------------
# the screen

class Screen:
    """The application's state: saved settings, the open dialog (its draft values and scroll position)."""

    def __init__(self, problem: Problem, view_rows: int):
        self.problem = problem
        self.view_rows = view_rows
        self.saved = [[s.value for s in d.settings] for d in problem.dialogs]
        self.open: int | None = None
        self.draft: list = []
        self.top = 0  # the first setting in view

    def visible(self) -> range:
        if self.open is None:
            return range(0)
        n = len(self.problem.dialogs[self.open].settings)
        return range(self.top, min(n, self.top + self.view_rows))

    def render(self) -> str:
        lines = [f"[window] {self.problem.app}" + (" (behind the dialog)" if self.open is not None else "")]
        if self.open is None:
            lines += [f"  [{menu_id(d)}] button \"{dialog.name}...\"" for d, dialog in enumerate(self.problem.dialogs)]
            return "\n".join(lines)
        d = self.open
        dialog = self.problem.dialogs[d]
        rows, n = self.visible(), len(dialog.settings)
        where = ""
        if n > self.view_rows:
            more = [w for w, has in (("scroll(up)", rows.start > 0), ("scroll(down)", rows.stop < n)) if has]
            where = f" (settings {rows.start + 1}-{rows.stop} of {n}; {' or '.join(more)} for more)"
        lines.append(f"[dialog] {dialog.name}{where}")
        for s in rows:
            setting = dialog.settings[s]
            kind = "checkbox" if setting.kind == "checkbox" else "field"
            hint = ""
            if setting.kind == "number":
                hint = f" (a whole number from {setting.low} to {setting.high})"
            elif setting.kind == "choice":
                hint = f" ({', '.join(setting.choices)})"
            lines.append(f"  [{setting_id(d, s)}] {kind} \"{setting.name}\" = {shown(setting, self.draft[s])}{hint}")
        lines += [f"  [{save_id(d)}] button \"Save\"", f"  [{cancel_id(d)}] button \"Cancel\""]
        return "\n".join(lines)

    def _element(self, element: int) -> tuple[str, int | None, str]:
        """(kind, setting index or dialog index, "") of an element on the screen, or ("", None, why not)."""
        dialogs = self.problem.dialogs
        if self.open is None:
            for d in range(len(dialogs)):
                if element == menu_id(d):
                    return "menu", d, ""
            return "", None, f"element {element} is not on the screen"
        d = self.open
        if element == save_id(d):
            return "save", d, ""
        if element == cancel_id(d):
            return "cancel", d, ""
        for s in range(len(dialogs[d].settings)):
            if element == setting_id(d, s):
                if s in self.visible():
                    return "setting", s, ""
                direction = "down" if s >= self.visible().stop else "up"
                return "", None, f"element {element} is not in view; scroll({direction}) to reach it"
        if any(element == menu_id(k) for k in range(len(dialogs))):
            return "", None, (f"element {element} is behind the open dialog {dialogs[d].name!r}; click its Save or "
                              "Cancel first")
        return "", None, f"element {element} is not on the screen"

    def act(self, action: tuple) -> str:
        """Apply one parsed action (not done); "" or what was wrong (then nothing changed)."""
        verb = action[0]
        if verb == "scroll":
            if self.open is None:
                return "no dialog is open; there is nothing to scroll"
            n = len(self.problem.dialogs[self.open].settings)
            top = max(0, min(self.top + action[1] * self.view_rows, max(0, n - self.view_rows)))
            if top == self.top:
                return f"the dialog cannot scroll {'down' if action[1] > 0 else 'up'} any further"
            self.top = top
            return ""
        kind, index, error = self._element(action[1])
        if error:
            return error
        if verb == "type":
            if kind != "setting":
                return f"element {action[1]} is a button; type goes into a field"
            setting = self.problem.dialogs[self.open].settings[index]
            if setting.kind == "checkbox":
                return f"element {action[1]} is a checkbox; click it to toggle it"
            value, error = setting.read(action[2])
            if error:
                return error
            self.draft[index] = value
            return ""
        if kind == "menu":
            self.open, self.draft, self.top = index, list(self.saved[index]), 0
        elif kind in ("save", "cancel"):
            if kind == "save":
                self.saved[index] = list(self.draft)
            self.open, self.draft, self.top = None, [], 0
        else:
            setting = self.problem.dialogs[self.open].settings[index]
            if setting.kind != "checkbox":
                return f"element {action[1]} is a field; write into it with type({action[1]}, \"text\")"
            self.draft[index] = not self.draft[index]
        return ""

    def score(self) -> tuple[float, dict]:
        """(reward, info) of the saved state (see the module docstring)."""
        problem = self.problem
        target_places = {(d, s) for d, s, _ in problem.targets}
        done = sum(self.saved[d][s] == value for d, s, value in problem.targets)
        changed = [problem.dialogs[d].settings[s].name for d, dialog in enumerate(problem.dialogs)
                   for s, setting in enumerate(dialog.settings)
                   if (d, s) not in target_places and self.saved[d][s] != setting.value]
        reward = 0.0 if changed else done / len(problem.targets)
        return reward, {"correct": reward == 1.0, "targets_done": done, "changed_other": changed,
                        "dialog_open": self.open is not None}


# ----------------------------------------------------------------------------------------------------
# the environment

@dataclass
class GuiConfig(Options):
    """The gui env's options (``--env-option KEY=VALUE``, the Lab's form)."""

    levels: tuple[int, ...] = option(LEVELS, "Tasks: 1 = one setting in a short dialog; 2 = two settings of one "
                                     "longer dialog (scrolling); 3 = two settings in two dialogs, each saved.",
                                     choices=LEVELS)
    max_actions: int = option(12, "Actions allowed before done(); one more ends the episode with reward 0.", low=1,
                              high=64, aliases=("max_tool_calls",))
    view_rows: int = option(4, "Settings of a dialog in view at once (scroll shows the others).", low=2, high=10)

    def __post_init__(self):
        super().__post_init__()
        if not self.levels:
            raise ConfigError("--levels (option of --env gui): choose at least one level")


class GuiEnv:
    """One episode on one :class:`Problem`; see the module docstring for the protocol."""

    tool = TOOL
    stop_strings = (TOOL.call_close,)

    def __init__(self, problem: Problem, config: GuiConfig | None = None):
        self.problem = problem
        self.config = config or GuiConfig()
        self.screen = Screen(problem, self.config.view_rows)
        self.actions = 0

    def reset(self) -> list[dict[str, str]]:
        self.screen, self.actions = Screen(self.problem, self.config.view_rows), 0
        user = (f"Task: {self.problem.instruction} You may take {self.config.max_actions} actions.\n"
                f"{TOOL.result(self.screen.render())}")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]

    def step(self, model_text: str) -> StepResult:
        call = TOOL.find_call(model_text)
        base = {"tool_calls": self.actions}
        if call is None:
            return StepResult(None, True, 0.0, {**base, "correct": False,
                                                "error": "no <action>...</action> in the turn"})
        if self.actions >= self.config.max_actions:
            return StepResult(None, True, 0.0, {**base, "correct": False, "truncated": True,
                                                "error": f"all {self.config.max_actions} actions were used"})
        self.actions += 1
        action, error = parse_action(call.group(1))
        if action is not None and action[0] == "done":
            reward, info = self.screen.score()
            return StepResult(None, True, reward, {"tool_calls": self.actions, **info})
        if action is not None:
            error = self.screen.act(action)
        text = self.screen.render()
        return StepResult(TOOL.result(f"error: {error}\n{text}" if error else text), False, 0.0,
                          {"tool_calls": self.actions})


def expert_actions(problem: Problem, view_rows: int) -> list[str]:
    """A shortest correct action sequence: per target dialog, open it, scroll each target into view, set it,
    Save; then done()."""
    actions: list[str] = []
    for d in sorted({d for d, _, _ in problem.targets}):
        actions.append(f"click({menu_id(d)})")
        top = 0
        n = len(problem.dialogs[d].settings)
        for _, s, value in sorted(t for t in problem.targets if t[0] == d):
            while not top <= s < top + view_rows:
                step = 1 if s >= top + view_rows else -1
                top = max(0, min(top + step * view_rows, max(0, n - view_rows)))
                actions.append("scroll(down)" if step > 0 else "scroll(up)")
            setting = problem.dialogs[d].settings[s]
            if setting.kind == "checkbox":
                actions.append(f"click({setting_id(d, s)})")
            else:
                actions.append(f"type({setting_id(d, s)}, \"{value}\")")
        actions.append(f"click({save_id(d)})")
    return actions + ["done()"]


def demonstration(problem: Problem, config: GuiConfig | None = None) -> list[tuple[str, str]]:
    """The expert's actions played through an episode under the run's options, with the screens it gets."""
    config = config or GuiConfig()
    env = GuiEnv(problem, config)
    env.reset()
    return replay_calls(env, TOOL, expert_actions(problem, config.view_rows))


def _problems(split: str, n: int, seed: int, config: GuiConfig) -> list[Problem]:
    return problems(split, n, seed, levels=config.levels)


SPEC = EnvSpec("gui", GuiConfig, _problems, GuiEnv, demonstration, demonstration_takes_config=True,
               title="GUI agent: change an application's settings on a text-rendered screen", validation_split=True)
ENV_SPECS = (SPEC,)  # collected by envs.ENVS
make = SPEC.make


# -- implementation rows: runnable presets of this module, collected by reference_impls.registry --
from ..implementations import Implementation  # noqa: E402

GUI_REWARD = (r"r = \mathbb{1}[\text{no other setting changed}]\cdot\frac{1}{|T|}\sum_{t\in T}"
              r"\mathbb{1}[\text{saved}(t) = v_t]")

IMPLEMENTATIONS = (
    Implementation("gui-grpo", "GUI agent on a text-rendered settings screen (GRPO)", "grpo", "gui",
                   "An agent that clicks, types and scrolls on a desktop application's screen, rendered as text "
                   "with a number on every element, to change the settings a task names and save them; rewarded "
                   "on the saved state when it says done().",
                   nodes=("gui", "env-gui"),
                   changes="A small stand-in for GUI agents that keeps what separates them from web search: "
                           "modal dialogs, editable fields that refuse bad values, checkboxes, a view that must be "
                           "scrolled, and a task checked on the final state of the application rather than on one "
                           "action, with side effects penalised. Simplifies: the screen is an accessibility-style "
                           "text listing (no pixels, no coordinates), the applications are settings dialogs drawn "
                           "from a fixed pool, and an action is one of four verbs read by a parser.",
                   equation=GUI_REWARD),
    Implementation("gui-prompted", "GUI agent without RL: the model prompted with the fixed instruction", "", "gui",
                   "The RL-free reference point of the GUI task: the untrained instruction model, given only the "
                   "environment's fixed instruction prompt, acts on the held-out tasks that gui-grpo is scored "
                   "on; nothing is trained.",
                   nodes=("gui-rl-free",),
                   changes="Zero-shot prompting of an off-the-shelf model on a parsed screen, the training-free "
                           "branch of GUI agents, reduced to one text model and one fixed prompt (no set-of-mark "
                           "images, no planner, no retrieval of tutorials). The command scores greedy decoding on "
                           "100 held-out tasks; the same command with --run RUN scores a trained run on the very "
                           "same tasks, so the two are paired.",
                   equation=GUI_REWARD,
                   evaluation=("reference_impls.measure.evaluate", "--model", "smollm2-135m-instruct", "--env", "gui",
                               "--n", "100", "--max-new-tokens-per-turn", "24", "--max-completion-tokens", "1152",
                               "--json")),
)
