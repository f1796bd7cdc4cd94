"""An environment as a verl tool (reference_impls/verl_tool.py, node fw-agentic-rl), checked against the pinned copy
of verl's tool interface and tool config format (reference_impls/verl_tool_interface.yaml): the class has verl's
methods with their parameters and coroutine-ness, the config file it writes has verl's fields (a wrong one is
refused by name), and a calculator episode played through the tool's calls reaches the environment's reward."""
import asyncio
import copy
import inspect

import pytest

from reference_impls import verl_tool
from reference_impls.envs import get_env
from reference_impls.options import ConfigError


def test_the_class_has_verls_tool_interface():
    pinned = verl_tool.interface()
    assert len(pinned["source"]["commit"]) == 40
    for name, method in pinned["methods"].items():
        ours = getattr(verl_tool.AtlasVerlTool, name)
        assert inspect.iscoroutinefunction(ours) == method["coroutine"], name
        params = list(inspect.signature(ours).parameters.values())[1:]  # after self
        named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY)]
        assert named == method["parameters"], name
        assert any(p.kind == p.VAR_KEYWORD for p in params) == method.get("var_keyword", False), name


def test_the_tool_config_has_verls_fields_and_a_wrong_one_is_named():
    config = verl_tool.tool_config("calculator")
    verl_tool.check_tool_config(config)
    assert config["tools"][0]["tool_schema"]["function"]["name"] == "calculator"
    for path, value, message in [(("tools", 0, "class"), "x", "unknown field tools[0].class (did you mean class_name?)"),
                                 (("tools", 0, "tool_schema", "function", "desc"), "x",
                                  "unknown field tools[0].tool_schema.function.desc"),
                                 (("tools", 0, "class_name"), 3, "tools[0].class_name must be str, got 3")]:
        bad = copy.deepcopy(config)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                           .replace("]", r"\]").replace("?", r"\?")):
            verl_tool.check_tool_config(bad)
    bad = copy.deepcopy(config)
    del bad["tools"][0]["config"]["type"]
    with pytest.raises(ConfigError, match=r"tools\[0\]\.config\.type is missing"):
        verl_tool.check_tool_config(bad)


def test_a_calculator_episode_through_the_tool_reaches_the_environments_reward():
    tool = verl_tool.AtlasVerlTool({"type": "native", "env": "calculator"}, None)
    spec = get_env("calculator")

    async def episode(seed):
        instance = await tool.create(create_kwargs={"seed": seed})
        env = tool._instances[instance]["env"]
        rewards = []
        for role, text in env.demonstration():
            if role != "model":
                continue
            kind, match = tool.tool.first_action(text)
            response, reward, metrics = await tool.execute(instance, {kind if kind == "answer" else "argument":
                                                                      match.group(1)})
            rewards.append(reward)
            assert isinstance(response["text"], str)
        total = await tool.calc_reward(instance)
        await tool.release(instance)
        return total, rewards, metrics

    for seed in (0, 1):
        total, rewards, metrics = asyncio.run(episode(seed))
        assert total == 1.0 and rewards[-1] == 1.0 and metrics == {"done": True, "correct": True}
    assert spec.name == "calculator"


@pytest.mark.parametrize("parameters, named", [({"arg": "1+1"}, "got ['arg']"), ({}, "got []"),
                                               ({"argument": "1", "answer": "2"}, "got ['answer', 'argument']"),
                                               ("1+1", "got str"), ({"argument": 7}, "got ['argument']")])
def test_bad_tool_arguments_are_named_and_change_nothing(parameters, named):
    tool = verl_tool.AtlasVerlTool({"type": "native", "env": "calculator"}, None)

    async def call():
        instance = await tool.create(create_kwargs={"seed": 0})
        response, reward, metrics = await tool.execute(instance, parameters)
        return response, reward, metrics, tool._instances[instance]["env"].unwrapped._steps

    response, reward, metrics, steps = asyncio.run(call())
    assert response["text"].startswith("error: the calculator tool takes one of") and named in response["text"]
    assert reward == 0.0 and metrics["bad_action"] and steps == 0


def test_a_tool_config_without_an_environment_is_named():
    with pytest.raises(ConfigError, match="config.env"):
        verl_tool.AtlasVerlTool({"type": "native"}, None)
    with pytest.raises(ConfigError, match="unknown environment 'nope'"):
        verl_tool.AtlasVerlTool({"type": "native", "env": "nope"}, None)
