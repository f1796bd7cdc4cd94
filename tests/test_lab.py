"""The Lab's data: implementations, node links, presets (recipe files), form fields and validation (no
Streamlit). Every field is an option of a typed config, and validation is the trainer's own."""
import pytest

from lab import catalog as lab
from lab import recipes
from reference_impls.run_config import config_from_dict, resolve


def test_only_runnable_implementations_are_listed():
    from reference_impls.envs import ENVS
    from reference_impls.run_config import ALGORITHMS

    ids = [i.id for i in lab.available()]
    assert "calculator-grpo" in ids and "calculator-rloo" in ids
    for impl in lab.available():
        assert impl.algo in ALGORITHMS and impl.env in ENVS
        assert lab.source_path(impl).exists() and lab.equation(impl)


def test_node_links_point_at_the_right_switches():
    assert [i.id for i in lab.for_node("alg-dapo")] == ["calculator-dapo"]
    assert lab.preset_config(lab.get("calculator-dr-grpo"), "quick")["scale_rewards"] is False
    assert lab.preset_config(lab.get("calculator-gspo"), "quick")["importance_sampling_level"] == "sequence"
    assert lab.for_node("introduction") == []
    assert lab.for_node("no-such-node") == []


def test_every_link_targets_a_real_node(taxonomy):
    for impl in lab.available():
        for node_id in impl.nodes:
            assert node_id in taxonomy, (impl.id, node_id)


@pytest.mark.parametrize("impl_id", [i.id for i in lab.available()])
@pytest.mark.parametrize("preset", list(lab.PRESETS))
def test_presets_are_valid_for_the_trainer(impl_id, preset):
    impl = lab.get(impl_id)
    config = lab.preset_config(impl, preset)
    assert lab.validate(impl, config) == {}
    cfg = config_from_dict({**config, "out": "/tmp/x"})
    resolve(cfg)
    assert cfg.algo == impl.algo and cfg.steps == config["steps"]


@pytest.mark.parametrize(
    "change,field,message",
    [
        ({"lr": -1.0}, "lr", "below"),
        ({"steps": 0}, "steps", "below 1"),
        ({"steps": -5}, "steps", "below 1"),
        ({"steps": 2.5}, "steps", "an integer"),
        ({"group_size": 1}, "group_size", "at least 2 samples"),
        ({"group_size": 0}, "group_size", "below 1"),
        ({"loss_type": "ppo"}, "loss_type", "one of grpo, dr_grpo, dapo"),
        ({"temperature": float("nan")}, "temperature", "finite"),
        ({"max_new_tokens_per_turn": 100, "max_completion_tokens": 50}, "max_new_tokens_per_turn", "cannot exceed"),
        ({"dynamic_sampling": "maybe"}, "dynamic_sampling", "true or false"),
        ({"model": "gpt-5"}, "model", "neither one of"),
        ({"env_options": {"levels": [4]}}, "env_options.levels", "one of 1, 2, 3"),
    ],
)
def test_invalid_hyperparameters_named(change, field, message):
    impl = lab.get("calculator-grpo")
    errors = lab.validate(impl, {**lab.preset_config(impl, "quick"), **change})
    assert field in errors and message in errors[field], errors


def test_text_options_are_validated_before_a_process_starts():
    impl = lab.get("calculator-ppo")
    errors = lab.validate(impl, {**lab.preset_config(impl, "quick"), "kl_estimator": "k9"})
    assert "one of k1, k3" in errors["kl_estimator"]


def test_form_fields_come_from_the_typed_configs():
    impl = lab.get("calculator-grpo")
    names = [s.name for s in lab.train_fields()]
    assert names == list(lab.FORM_OPTIONS)
    loss_type = next(s for s in lab.algo_fields(impl) if s.name == "loss_type")
    assert loss_type.kind == "choice" and loss_type.choices == ("grpo", "dr_grpo", "dapo") and loss_type.help
    levels = next(s for s in lab.env_fields(impl) if s.name == "levels")
    assert levels.kind == "ints" and levels.choices == (1, 2, 3)


def test_real_presets_warm_start_and_memory_stays_label_free():
    calc = lab.preset_config(lab.get("calculator-grpo"), "smollm2")
    assert calc["model"] == "smollm2-135m-instruct" and calc["sft_steps"] > 0 and not calc.get("sft_env")
    memory = lab.preset_config(lab.get("memory-grpo"), "smollm2")
    # the memory env's own demonstrations are the rule manager's operations (labels): its warm start uses
    # the random-operation format env instead, and the setting reaches the trainer's config
    assert memory["sft_env"] == "memory-format" and "sft_env" in lab.HIDDEN_KEYS
    cfg = config_from_dict({**memory, "out": "/tmp/x"})
    resolve(cfg)
    assert cfg.sft_env == "memory-format" and cfg.sft_steps == memory["sft_steps"]
    # the reward that prices overwrites (several questions) and the one-memory prompt reach the trainer
    assert cfg.env_options["k"] == 1 and cfg.env_options["questions"] == 3
    assert lab.preset_config(lab.get("calculator-grpo"), "quick")["sft_steps"] == 0


def test_real_ppo_preset_warms_up_its_critic():
    config = lab.preset_config(lab.get("calculator-ppo"), "smollm2")
    assert config["critic_warmup_steps"] == 2 and config["critic_lr"] == 5e-5
    errors = lab.validate(lab.get("calculator-ppo"), {**config, "critic_warmup_steps": -1})
    assert "below 0" in errors["critic_warmup_steps"]
    assert "critic_warmup_steps" not in lab.preset_config(lab.get("calculator-grpo"), "smollm2")


def test_every_preset_says_what_it_can_show():
    for name, preset in lab.PRESETS.items():
        assert preset["label"] and preset["note"], name


def test_real_calculator_preset_is_the_benchmarked_recipe():
    # the numbers the Lab quotes come from benchmarks/calculator_learning.py: keep the settings equal
    config = lab.preset_config(lab.get("calculator-grpo"), "smollm2")
    assert (config["env_options"]["levels"], config["prompts_per_step"], config["group_size"], config["lr"],
            config["sft_steps"], config["max_new_tokens_per_turn"], config["max_completion_tokens"]) == \
        ([2, 3], 4, 8, 2e-5, 12, 24, 96)


def test_unknown_recipe_is_named():
    with pytest.raises(KeyError, match="unknown recipe 'nope'; known: .*quick"):
        recipes.load("nope")


@pytest.mark.parametrize("preset", list(lab.PRESETS))
def test_no_preset_warm_starts_the_memory_env_on_operation_labels(preset):
    memory = lab.preset_config(lab.get("memory-grpo"), preset)
    if memory.get("sft_steps", 0) > 0:
        assert memory.get("sft_env") == "memory-format"


def test_run_this_opens_a_learning_preset_where_one_is_measured_else_quick():
    """Issue 16: "Run this" on a calculator implementation opens the preset measured to visibly learn there
    (learn.yaml's default_for); elsewhere the tiny model's quick preset. Every link is built from this one rule."""
    from app.presentation.lab import run_link

    assert "calculator" in recipes.load("learn")["default_for"]
    assert lab.default_preset(lab.get("calculator-grpo")) == "learn"
    assert lab.default_preset(lab.get("calculator-dapo")) == "learn"
    assert lab.default_preset(lab.get("zoom-grpo")) == "quick"
    assert lab.preset_config(lab.get("calculator-grpo"), "learn")["model"] == "smollm2-135m-instruct"
    assert "preset=learn" in run_link(lab.get("calculator-grpo")).url


@pytest.mark.parametrize("change,field", [({"lr": 5.0}, "lr"), ({"loss_type": "x"}, "loss_type"),
                                          ({"env_options": {"levels": [7]}}, "env_options.levels"),
                                          ({"group_size": 1}, "group_size"), ({"model": "gpt-5"}, "model"),
                                          ({"mini_batches": 64}, "mini_batches")])
def test_a_config_error_names_its_field(change, field):
    from reference_impls.options import ConfigError

    with pytest.raises(ConfigError) as err:
        resolve(config_from_dict({"algo": "grpo", "env": "calculator", "out": "x", **change}))
    assert err.value.field == field


def test_the_form_is_validated_once_and_its_errors_placed_by_field():
    from app.presentation.lab import form_error_summary

    impl = lab.get("calculator-grpo")
    config = lab.preset_config(impl, "quick")
    valid = lab.check(impl, config)
    assert valid.errors == {} and valid.resolved.cfg.lr == config["lr"] and valid.resolved.algo_cls.name == "grpo"
    # a bad field and a cross-option error on an option the form does not show (mini_batches)
    bad = lab.check(impl, {**config, "lr": -1.0, "mini_batches": 64})
    assert bad.resolved is None and set(bad.errors) == {"lr", "mini_batches"}
    summary = form_error_summary(bad.errors, shown={"lr", "steps"})
    assert "lr" in summary and f"mini_batches: {bad.errors['mini_batches']}" in summary
    assert bad.errors["lr"] not in summary  # it stands beside its field
