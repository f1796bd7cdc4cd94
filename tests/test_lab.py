"""The Lab's data: implementations, node links, presets and validation (no Streamlit)."""
import pytest

from reference_impls import lab
from reference_impls.runs import config_to_argv
from reference_impls.train import build_parser


def test_only_runnable_implementations_are_listed():
    from reference_impls.envs import ENVS
    from reference_impls.train import ALGORITHMS

    ids = [i.id for i in lab.available()]
    assert "calculator-grpo" in ids and "calculator-rloo" in ids
    for impl in lab.available():
        assert impl.algo in ALGORITHMS and impl.env in ENVS
        assert lab.source_path(impl).exists()


def test_static_algorithm_names_match_the_trainer():
    from reference_impls.train import ALGORITHMS

    assert set(lab.ALGORITHM_NAMES) == set(ALGORITHMS)


def test_node_links_point_at_the_right_switches():
    assert [i.id for i in lab.for_node("alg-dapo")] == ["calculator-dapo"]
    assert lab.preset_config(lab.get("calculator-dr-grpo"), "quick")["scale_rewards"] is False
    assert lab.preset_config(lab.get("calculator-gspo"), "quick")["importance_sampling_level"] == "sequence"
    assert lab.for_node("introduction") == []
    assert lab.for_node("no-such-node") == []


def test_every_link_targets_a_real_node(taxonomy):
    for node_id in lab.NODE_LINKS:
        assert node_id in taxonomy, node_id


@pytest.mark.parametrize("impl_id", [i.id for i in lab.IMPLEMENTATIONS if i.id in {x.id for x in lab.available()}])
@pytest.mark.parametrize("preset", list(lab.PRESETS))
def test_presets_are_valid_and_parse_as_train_flags(impl_id, preset):
    impl = lab.get(impl_id)
    config = lab.preset_config(impl, preset)
    assert lab.validate(impl, config) == {}
    args = build_parser().parse_args(config_to_argv(config) + ["--out", "/tmp/x"])
    assert args.algo == impl.algo and args.steps == config["steps"]


@pytest.mark.parametrize(
    "change,field,message",
    [
        ({"lr": -1.0}, "lr", "at least"),
        ({"steps": 0}, "steps", "at least 1"),
        ({"steps": 2.5}, "steps", "integer"),
        ({"group_size": 1}, "group_size", "at least 2 samples"),
        ({"loss_type": "ppo"}, "loss_type", "one of grpo, dr_grpo, dapo"),
        ({"temperature": float("nan")}, "temperature", "number"),
        ({"max_new_tokens_per_turn": 100, "max_completion_tokens": 50}, "max_new_tokens_per_turn", "cannot exceed"),
        ({"dynamic_sampling": "yes"}, "dynamic_sampling", "true or false"),
        ({"model": "gpt-5"}, "model", "must be one of"),
    ],
)
def test_invalid_hyperparameters_named(change, field, message):
    impl = lab.get("calculator-grpo")
    errors = lab.validate(impl, {**lab.preset_config(impl, "quick"), **change})
    assert field in errors and message in errors[field]


def test_real_presets_warm_start_and_memory_stays_label_free():
    calc = lab.preset_config(lab.get("calculator-grpo"), "smollm2")
    assert calc["model"] == "smollm2-135m-instruct" and calc["sft_steps"] > 0 and not calc.get("sft_env")
    memory = lab.preset_config(lab.get("memory-grpo"), "smollm2")
    # the memory env's own demonstrations are the rule manager's operations (labels): its warm start uses
    # the random-operation format env instead, and the flag reaches the trainer
    assert memory["sft_env"] == "memory-format" and "sft_env" in lab.HIDDEN_KEYS
    args = build_parser().parse_args(config_to_argv(memory) + ["--out", "/tmp/x"])
    assert args.sft_env == "memory-format" and args.sft_steps == memory["sft_steps"]
    # the reward that prices overwrites (several questions) and the one-memory prompt reach the trainer
    assert sorted(args.env_option) == ["k=1", "questions=3"] and "env_options" in lab.HIDDEN_KEYS
    assert lab.preset_config(lab.get("calculator-grpo"), "quick")["sft_steps"] == 0


def test_real_ppo_preset_warms_up_its_critic():
    config = lab.preset_config(lab.get("calculator-ppo"), "smollm2")
    assert config["critic_warmup_steps"] == 2 and config["critic_lr"] == 5e-5
    errors = lab.validate(lab.get("calculator-ppo"), {**config, "critic_warmup_steps": -1})
    assert "at least 0" in errors["critic_warmup_steps"]
    assert "critic_warmup_steps" not in lab.preset_config(lab.get("calculator-grpo"), "smollm2")


def test_every_preset_says_what_it_can_show():
    assert set(lab.PRESET_NOTES) == set(lab.PRESETS)


def test_real_calculator_preset_is_the_benchmarked_recipe():
    # the numbers the Lab quotes come from benchmarks/calculator_learning.py: keep the settings equal
    config = lab.preset_config(lab.get("calculator-grpo"), "smollm2")
    assert (config["levels"], config["prompts_per_step"], config["group_size"], config["lr"], config["sft_steps"],
            config["max_new_tokens_per_turn"], config["max_completion_tokens"]) == ("2,3", 4, 8, 2e-5, 12, 24, 96)
    args = build_parser().parse_args(config_to_argv(config) + ["--out", "/tmp/x"])
    assert args.levels == "2,3"
