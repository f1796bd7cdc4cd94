"""Issue 65: the taxonomy nodes that name something runnable have a row of ``train --list --json``: the frameworks
(fw-rlhf-llm: a recipe exported to TRL and verl; fw-agentic-rl: an environment as a verl tool), the survey's
preliminaries (one task as a one-step MDP and as a multi-turn POMDP) and the sharpen-or-expand debate (pass@k up
to k = 256). Each row is checked where ``--list --json`` prints it, and each one that trains takes a tiny CLI step."""
import ast
import asyncio
import json

import pytest
import yaml

from pathlib import Path

from reference_impls import export, train, verl_tool
from reference_impls.envs import get_env
from reference_impls.envs.arith import format_number
from reference_impls.implementations import CONCEPT_CODE, PRELIMINARY_NODES
from reference_impls.options import ConfigError
from reference_impls.stats import pass_at_k, pass_at_k_curve

#: row id -> the nodes it must serve (issue 65); a row or a node that disappears fails here
ISSUE_65_ROWS = {
    "calculator-grpo-trl": {"fw-rlhf-llm"},
    "calculator-grpo-verl-tool": {"fw-agentic-rl"},
    "calculator-one-step-grpo": set(PRELIMINARY_NODES),
    "calculator-multi-turn-grpo": set(PRELIMINARY_NODES),
    "calculator-grpo-passk": {"mechanistic-debate"},
}


@pytest.fixture(scope="module")
def listed(train_list_json):
    """``train --list --json``, by row id."""
    return {row["id"]: row for row in json.loads(train_list_json)}


@pytest.mark.parametrize("impl_id", sorted(ISSUE_65_ROWS))
def test_the_row_is_listed_with_its_nodes(listed, taxonomy, impl_id):
    assert impl_id in listed, f"{impl_id} is not in train --list --json"
    nodes = set(listed[impl_id]["nodes"])
    assert ISSUE_65_ROWS[impl_id] <= nodes, (impl_id, nodes)
    assert all(node in taxonomy for node in nodes)


def test_the_issue_65_nodes_are_served(listed):
    served = {node for row in listed.values() for node in row["nodes"]}
    missing = set().union(*ISSUE_65_ROWS.values()) - served
    assert not missing, f"nodes no row serves: {sorted(missing)}"


def _train(impl_id: str, out, *extra: str) -> None:
    assert train.main(["--impl", impl_id, "--model", "tiny", "--steps", "1", "--prompts-per-step", "2",
                       "--group-size", "2", "--max-new-tokens-per-turn", "8", "--max-completion-tokens", "24",
                       "--out", str(out), *extra]) == 0


# -- fw-rlhf-llm: the recipe, trained here, exported to TRL and verl --------------------------------------------

def test_the_trl_row_trains_and_exports_a_checked_verl_config(tmp_path):
    run = tmp_path / "run"
    _train("calculator-grpo-trl", run)
    assert json.loads((run / "config.json").read_text())["algo"] == "grpo"
    out = tmp_path / "export"
    assert export.main(["--run", str(run), "--target", "trl", "--out", str(out)]) == 0
    assert {"train_trl.py", "export.json", "accelerate_multi_gpu.yaml", "verl_grpo.yaml", "README.md"} <= {
        f.name for f in out.iterdir()}
    verl = yaml.safe_load((out / "verl_grpo.yaml").read_text())
    export.check_verl_config(verl)  # the pinned schema of verl's config takes every field
    assert verl["actor_rollout_ref"]["rollout"]["n"] == 2 and verl["data"]["max_response_length"] == 24
    spec = json.loads((out / "export.json").read_text())
    assert spec["env"] == "calculator" and spec["grpo_config"]["num_generations"] == 2
    bad = {**verl, "trainer": {**verl["trainer"], "total_training_step": 1}}
    with pytest.raises(ConfigError, match="unknown field trainer.total_training_step"):
        export.check_verl_config(bad)


# -- fw-agentic-rl: the agent trained here; the environment as verl's tool, with verl's configs checked --------

def test_the_verl_tool_row_trains_and_writes_checked_tool_and_trainer_configs(tmp_path):
    run = tmp_path / "run"
    _train("calculator-grpo-verl-tool", run)
    out = tmp_path / "verl"
    assert verl_tool.main(["--env", "calculator", "--run", str(run), "--out", str(out)]) == 0
    tools = yaml.safe_load((out / "tool_config.yaml").read_text())
    verl_tool.check_tool_config(tools)
    trainer = yaml.safe_load((out / "verl_agentic.yaml").read_text())
    export.check_verl_config(trainer)
    multi_turn = trainer["actor_rollout_ref"]["rollout"]["multi_turn"]
    assert multi_turn["enable"] and multi_turn["tool_config_path"] == "tool_config.yaml"
    # the tool verl would build from the written file plays an episode to the environment's reward
    entry = tools["tools"][0]
    assert entry["class_name"] == "reference_impls.verl_tool.AtlasVerlTool"
    tool = verl_tool.AtlasVerlTool(entry["config"], entry["tool_schema"])
    async def episode():
        instance = await tool.create(create_kwargs={"seed": 3})
        problem = tool._instances[instance]["env"].problem  # the problem the seeded reset drew
        assert tool.prompt(instance)[-1]["content"] == problem.question
        _, _, first = await tool.execute(instance, {"argument": "2+3"})
        _, _, end = await tool.execute(instance, {"answer": format_number(problem.answer)})
        return first, end, await tool.calc_reward(instance)

    first, end, reward = asyncio.run(episode())
    assert not first["done"] and end["done"] and end["correct"] and reward == 1.0
    # a second write into the same folder is refused, naming the file; nothing is replaced
    assert verl_tool.main(["--env", "calculator", "--out", str(out)]) == 2
    assert verl_tool.main(["--env", "calculator", "--run", str(tmp_path / "missing"), "--out",
                           str(tmp_path / "other")]) == 2


# -- the preliminaries: one task as a one-step MDP and as a multi-turn POMDP -------------------------------------

def test_the_two_rows_differ_in_the_form_of_the_task_only(listed):
    one, multi = listed["calculator-one-step-grpo"], listed["calculator-multi-turn-grpo"]
    assert one["env_options"]["mode"] == "direct" and multi["env_options"]["mode"] == "tool"
    assert {k: v for k, v in one["env_options"].items() if k != "mode"} == {
        k: v for k, v in multi["env_options"].items() if k != "mode"}
    assert one["options"] == multi["options"] and one["algo_options"] == multi["algo_options"]


def test_direct_mode_is_one_prompt_one_answer_one_reward():
    spec = get_env("calculator")
    problem = spec.problems("train", 1, 0, spec.config_of({}))[0]
    right = f"<answer>{format_number(problem.answer)}</answer>"
    direct = spec.make(problem, mode="direct")
    assert "<calc>" not in direct.reset()[0]["content"] and direct.stop_strings == ("</answer>",)
    end = direct.step(right)
    assert end.done and end.reward == 1.0 and end.info["correct"] and end.info["tool_calls"] == 0
    direct.reset()
    end = direct.step("<calc>2+3</calc>")  # no tool in the one-step MDP: the first turn is the only one
    assert end.done and end.reward == 0.0 and end.observation is None
    tool = spec.make(problem, mode="tool")
    assert "<calc>" in tool.reset()[0]["content"]
    call = tool.step("<calc>2+3</calc>")
    assert not call.done and call.reward == 0.0 and "5" in call.observation
    assert tool.step(right).reward == 1.0
    # the warm start's transcript is the run's form: the answer alone, or the calls then the answer
    assert spec.demonstrate(problem, {"mode": "direct"}) == [("model", right)]
    assert spec.demonstrate(problem, {"mode": "tool"}) == spec.demonstrate(problem, None)
    assert len(spec.demonstrate(problem, None)) > 1
    with pytest.raises(ConfigError, match="mode"):
        spec.config_of({"mode": "single"})


def _defined_names(path: Path) -> set[str]:
    """Top-level functions and classes of a file, and Class.method for the methods of its classes."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)}
    return names


def test_every_preliminary_node_points_at_code_that_exists():
    root = Path(__file__).resolve().parents[2]
    assert set(PRELIMINARY_NODES) <= set(CONCEPT_CODE)
    for node, places in CONCEPT_CODE.items():
        assert places, node
        for path, name, what in places:
            assert (root / path).is_file(), (node, path)
            assert name in _defined_names(root / path), (node, path, name)
            assert len(what) > 40, (node, name)


@pytest.mark.parametrize("impl_id", ["calculator-one-step-grpo", "calculator-multi-turn-grpo"])
def test_the_preliminary_rows_train_a_step(tmp_path, impl_id):
    _train(impl_id, tmp_path / "run")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["env_options"]["mode"] == ("direct" if "one-step" in impl_id else "tool")
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics and metrics[-1]["step"] == 1


# -- mechanistic-debate: pass@k up to k = 256 -----------------------------------------------------------------

def test_the_debate_grid_measures_pass_at_k_up_to_256_of_its_row():
    from lab.compare.grid import Grid

    grid = Grid.load("debate")
    assert grid.passk["samples"] == 256 and max(grid.passk["k"]) == 256 and 1 in grid.passk["k"]
    assert grid.passk_implementation("calculator") == "calculator-grpo-passk"
    assert {impl for impl, _ in grid.cells()} == {"calculator-grpo-passk"}


def test_pass_at_k_is_exact_at_256_samples():
    # one correct of 256: pass@k = k / 256 (the one correct sample is among the k drawn without replacement)
    for k in (1, 4, 64, 128, 256):
        assert pass_at_k(256, 1, k) == pytest.approx(k / 256, abs=1e-12)
    # two correct: 1 - C(254, k) / C(256, k) = 1 - (256 - k)(255 - k) / (256 * 255)
    for k in (1, 16, 255):
        assert pass_at_k(256, 2, k) == pytest.approx(1 - (256 - k) * (255 - k) / (256 * 255), abs=1e-12)
    assert pass_at_k(256, 0, 256) == 0.0 and pass_at_k(256, 256, 1) == 1.0
    curve = pass_at_k_curve([0, 1, 2, 256], 256)
    assert list(curve) == list(range(1, 257)) and curve[256] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(256, 1, 257)


def test_the_debate_row_trains_a_step(tmp_path):
    _train("calculator-grpo-passk", tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["algo"] == "grpo"
