"""An environment of this project as a tool of verl's multi-turn rollout (node fw-agentic-rl).

Agentic RL frameworks built on verl (verl's own agent loop, VerlTool and others) drive an environment as a *tool*:
an object with ``create`` (one instance per trajectory), ``execute`` (one tool call: its JSON arguments in, the
response text, a step reward and metrics out), ``calc_reward`` and ``release``, all coroutines, named in a tool
config file. :class:`AtlasVerlTool` is that object for any environment of ``envs.ENVS`` that has a tool, played
through :class:`~reference_impls.envs.gym_text.TextEnv` (so bad arguments get the same named observations).
verl is not installed here (it needs Ray and a GPU inference engine): the class follows verl's ``BaseTool`` as
written down, pinned to one commit, in ``reference_impls/verl_tool_interface.yaml``, without importing it, and
``tests/reference_impls/test_verl_tool.py`` checks it and the config file against that copy.

- The tool's arguments: ``{"argument": TEXT}`` makes one tool call (the environment's call tags around TEXT);
  ``{"answer": TEXT}`` gives the final answer (its answer tags), which ends the episode.
- ``create(instance_id, create_kwargs={"seed": S})`` (or ``{"problem": I, "split": ...}``) starts the problem a
  seeded reset draws; the prompt is the returned instance's ``prompt`` (verl takes prompts from its dataset:
  write them with the same seeds).
- ``calc_reward``: the environment's episode reward so far (0 until the episode ends).

``tool_config("calculator")`` is the config file verl reads (``multi_turn.tool_config_path``).
``python -m reference_impls.verl_tool --env calculator --run RUN --out DIR`` writes it as ``DIR/tool_config.yaml``
and, for a run of this project, ``DIR/verl_agentic.yaml``: the run's GRPO recipe as a verl trainer config whose
multi-turn rollout names that tool file, both checked against the pinned copies of verl's formats (not run here).
"""
from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

import yaml

from .envs.gym_text import TextEnv
from .implementations import Implementation
from .options import ConfigError, close_matches, key_values
from .rundir import RunDir, RunDirError

INTERFACE = Path(__file__).resolve().parent / "verl_tool_interface.yaml"
ARGUMENTS = ("argument", "answer")


def interface() -> dict:
    """The pinned copy of verl's tool interface and tool config format."""
    return yaml.safe_load(INTERFACE.read_text())


def _tool_spec(env: TextEnv):
    tool = getattr(env.spec_.make(env._problems(env.split)[0], env.config), "tool", None)
    if tool is None:
        raise ConfigError(f"verl tool: environment {env.env_name!r} has no tool (a ToolSpec) to expose",
                          field="config.env")
    return tool


def tool_schema(env: str, env_options: dict | None = None) -> dict:
    """The OpenAI function schema of ``env``'s tool (verl's ``tool_schema``)."""
    tool = _tool_spec(TextEnv(env, options=env_options, pool_size=1))
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description,
                         "parameters": {"type": "object",
                                        "properties": {"argument": {"type": "string", "description":
                                                                    f"what to send to the {tool.name} tool"},
                                                       "answer": {"type": "string", "description":
                                                                  "the final answer (ends the episode)"}},
                                        "required": []}}}


def tool_config(env: str, env_options: dict | None = None) -> dict:
    """The tool config file verl reads for ``env`` (checked against the pinned format)."""
    config = {"tools": [{"class_name": f"{__name__}.AtlasVerlTool",
                         "config": {"type": "native", "env": env, "env_options": dict(env_options or {})},
                         "tool_schema": tool_schema(env, env_options)}]}
    check_tool_config(config)
    return config


def check_tool_config(config: dict) -> None:
    """Raise ConfigError naming the first field of a tool config that the pinned format does not have (a tool's
    ``config`` may carry the tool's own keys beside ``type``; a schema's ``properties`` are free)."""
    fields = interface()["tool_config"]

    def walk(values, rule, path):
        if isinstance(rule, list):
            if not isinstance(values, list):
                raise ConfigError(f"verl tool config: {path} must be a list", field=path)
            for i, item in enumerate(values):
                walk(item, rule[0], f"{path}[{i}]")
            return
        if isinstance(rule, dict):
            if not isinstance(values, dict):
                raise ConfigError(f"verl tool config: {path} must be a mapping", field=path)
            missing = [f"{path}.{k}" if path else k for k in rule if k not in values]
            if missing:
                raise ConfigError(f"verl tool config: {missing[0]} is missing", field=missing[0])
            for key, value in values.items():
                where = f"{path}.{key}" if path else key
                if key not in rule:
                    if path.endswith("].config"):
                        continue  # the tool's own settings (verl hands this mapping to the tool's __init__)
                    raise ConfigError(f"verl tool config: unknown field {where}{close_matches(key, rule)}", field=where)
                walk(value, rule[key], where)
            return
        kind = {"str": str, "dict": dict, "list": list}[rule]
        if not isinstance(values, kind):
            raise ConfigError(f"verl tool config: {path} must be {rule}, got {values!r}", field=path)

    walk(config, fields, "")


class AtlasVerlTool:
    """An environment of this project in the shape of verl's ``BaseTool`` (see the module's docstring)."""

    def __init__(self, config: dict, tool_schema: dict | None):
        self.config = dict(config or {})
        if "env" not in self.config:
            raise ConfigError("verl tool: config.env (the environment's name) is missing", field="config.env")
        self._template = TextEnv(self.config["env"], options=self.config.get("env_options"),
                                 split=self.config.get("split", "train"))
        self.tool = _tool_spec(self._template)
        if tool_schema is not None and hasattr(tool_schema, "model_dump"):  # verl's pydantic schema
            tool_schema = tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        self.tool_schema = tool_schema or globals()["tool_schema"](self.config["env"], self.config.get("env_options"))
        self.name = self.tool_schema["function"]["name"]
        self._instances: dict[str, dict] = {}

    def get_openai_tool_schema(self) -> dict:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs) -> str:
        instance_id = instance_id or str(uuid.uuid4())
        start = dict(kwargs.get("create_kwargs") or {})
        seed = start.pop("seed", None)
        env = TextEnv(self.config["env"], options=self.config.get("env_options"),
                      split=self.config.get("split", "train"))
        prompt, info = env.reset(seed=seed, options=start or None)
        self._instances[instance_id] = {"env": env, "prompt": prompt, "messages": info["messages"], "reward": 0.0,
                                        "done": False}
        return instance_id

    def prompt(self, instance_id: str) -> list[dict]:
        """The chat messages of the instance's problem (verl's dataset row for it holds the same)."""
        return self._instances[instance_id]["messages"]

    async def execute(self, instance_id: str, parameters: dict, **kwargs) -> tuple[dict, float, dict]:
        state = self._instances.get(instance_id)
        if state is None:
            return {"text": f"error: no instance {instance_id!r} (call create first)"}, 0.0, {"error": "no instance"}
        if state["done"]:
            return {"text": "error: the episode has ended"}, 0.0, {"done": True}
        given = sorted(parameters) if isinstance(parameters, dict) else []
        chosen = [k for k in ARGUMENTS if isinstance(parameters, dict) and isinstance(parameters.get(k), str)]
        if len(chosen) != 1 or len(given) != 1:
            wrong = (f"the {self.name} tool takes one of {{\"argument\": text}} or {{\"answer\": text}}, got "
                     f"{given if isinstance(parameters, dict) else type(parameters).__name__}")
            return {"text": f"error: {wrong}"}, 0.0, {"bad_action": wrong}
        text = parameters[chosen[0]]
        tool = self.tool
        action = (f"{tool.call_open}{text}{tool.call_close}" if chosen[0] == "argument"
                  else f"{tool.answer_open}{text}{tool.answer_close}")
        observation, reward, terminated, truncated, info = state["env"].step(action)
        state["reward"] += reward
        state["done"] = terminated or truncated
        metrics = {"done": state["done"], **({"correct": info["correct"]} if "correct" in info else {})}
        if "bad_action" in info:
            metrics["bad_action"] = info["bad_action"]
        return {"text": observation}, float(reward), metrics

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        return float(self._instances[instance_id]["reward"]) if instance_id in self._instances else 0.0

    async def release(self, instance_id: str, **kwargs) -> None:
        self._instances.pop(instance_id, None)


# ----------------------------------------------------------------------------------------------------
# the command line: the files an agentic RL framework on verl reads

def agentic_config(run: Path, tool_config_path: str) -> dict:
    """The GRPO recipe of ``run`` (a run folder of this project) as a verl trainer config whose multi-turn
    rollout calls the environment as the tool of ``tool_config_path``, checked against verl's pinned schema."""
    from .export import check_verl_config, trl_config, verl_config

    cfg = RunDir(run).read_config()
    if not cfg:
        raise RunDirError(f"--run {run}: no config.json (not a run folder)")
    kwargs, _ = trl_config(cfg)
    config = verl_config(cfg, kwargs)
    config["actor_rollout_ref"]["rollout"]["multi_turn"]["tool_config_path"] = tool_config_path
    config["data"]["return_raw_chat"] = True  # verl's multi-turn rollout renders the chat itself
    check_verl_config(config)
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reference_impls.verl_tool",
                                     description="Write the verl tool config of an environment (and, with --run, "
                                                 "the run's recipe as a verl multi-turn trainer config).")
    parser.add_argument("--env", default="calculator", help="an environment with a tool (train --list names them)")
    parser.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the environment (repeatable)")
    parser.add_argument("--run", help="a run folder of this project (GRPO family): also write verl_agentic.yaml")
    parser.add_argument("--out", required=True, help="folder to write (a new or empty one)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        options = key_values(args.env_option)
        files = {"tool_config.yaml": yaml.safe_dump(tool_config(args.env, options), sort_keys=False)}
        if args.run:
            config = agentic_config(Path(args.run), "tool_config.yaml")
            files["verl_agentic.yaml"] = ("# verl trainer config (NOT RUN HERE): the run's recipe with the "
                                          "environment as a tool; fields checked against "
                                          "reference_impls/verl_config_schema.yaml. Run verl from this folder "
                                          "(tool_config_path is relative).\n"
                                          + yaml.safe_dump(config, sort_keys=False))
        if out.exists() and not out.is_dir():
            raise RunDirError(f"--out {out}: this is a file, not a folder")
        taken = [name for name in files if (out / name).exists()]
        if taken:
            raise RunDirError(f"--out {out}: already holds {', '.join(taken)}; give a new or empty folder")
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (out / name).write_text(text)
    except (ConfigError, RunDirError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps({"out": str(out), "files": sorted(files)}))
    return 0


# -- the row of node fw-agentic-rl: what runs here, and the adapter that carries it to verl --
IMPLEMENTATIONS = (
    Implementation(
        "calculator-grpo-verl-tool", "Calculator agent as a verl multi-turn tool (GRPO)", "grpo", "calculator",
        "The multi-turn calculator agent that agentic RL frameworks built on verl train: it runs here with this "
        "project's trainer; python -m reference_impls.verl_tool --env calculator --run RUN --out DIR writes the "
        "verl tool config and trainer config for the same recipe, checked offline.",
        nodes=("fw-agentic-rl",),
        changes="The training run is calculator-grpo's (same loss, same options): on CPU the model writes "
                "<calc>..</calc> tool calls, the environment's results are appended as loss-masked tokens, and "
                "the episode reward comes at the answer. An agentic framework on verl drives the same episode "
                "through a tool object: AtlasVerlTool (reference_impls/verl_tool.py) has verl's BaseTool methods "
                "(create per trajectory, execute per tool call with JSON arguments {argument} or {answer}, "
                "calc_reward, release), each call handed to the environment as the tags above, so rewards and "
                "error observations are the environment's own. Its command line writes tool_config.yaml "
                "(checked against the pinned copy of verl's tool interface and config format, "
                "reference_impls/verl_tool_interface.yaml) and verl_agentic.yaml (the run's recipe with "
                "multi_turn.enable and tool_config_path set, checked against "
                "reference_impls/verl_config_schema.yaml). verl itself (Ray, a GPU inference engine) is not "
                "installed here; the tests play episodes through the tool's coroutines, not through verl.",
        paper="verl (HybridFlow: A Flexible and Efficient RLHF Framework, arXiv 2409.19256); the recipe's "
              "algorithm is GRPO (arXiv 2402.03300)"),
)


if __name__ == "__main__":
    sys.exit(main())
