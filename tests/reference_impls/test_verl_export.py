"""The export's verl config (reference_impls/export.py, verl_grpo.yaml) checked against the pinned copy of verl's
documented trainer config (reference_impls/verl_config_schema.yaml): the exported recipe passes, and a wrong
field, type or value is refused with an error naming it."""
import copy
import re

import pytest
import yaml

from reference_impls import export
from reference_impls.options import ConfigError
from reference_impls.run_config import TrainConfig


def recipe(**options):
    cfg = {**TrainConfig(model="tiny", out="x", **options).__dict__, "env": "calculator"}
    kwargs, _ = export.trl_config(cfg)
    return cfg, kwargs


def test_the_schema_is_pinned_to_a_verl_commit():
    source = export.verl_schema()["source"]
    assert source["repository"] == "volcengine/verl" and re.fullmatch(r"[0-9a-f]{40}", source["commit"])


@pytest.mark.parametrize("options", [{}, {"prompts_per_step": 4, "group_size": 8}])
def test_the_exported_recipe_passes_the_schema(options):
    cfg, kwargs = recipe(**options)
    config = export.verl_config(cfg, kwargs)
    export.check_verl_config(config)  # raises on any field verl's config does not have
    actor = config["actor_rollout_ref"]["actor"]
    assert actor["optim"]["lr"] == cfg["lr"] and config["actor_rollout_ref"]["rollout"]["n"] == cfg["group_size"]


@pytest.mark.parametrize("path, value, message", [
    (("actor_rollout_ref", "actor", "clip_ratio_hi"), 0.28,
     "unknown field actor_rollout_ref.actor.clip_ratio_hi (did you mean clip_ratio_high"),
    (("algorithm", "kl_coef"), 0.1, "unknown field algorithm.kl_coef"),
    (("trainers",), {}, "unknown field trainers (did you mean trainer?)"),
    (("actor_rollout_ref", "actor", "ppo_epochs"), "1", "actor_rollout_ref.actor.ppo_epochs must be int, got '1'"),
    (("actor_rollout_ref", "actor", "ppo_epochs"), True, "actor_rollout_ref.actor.ppo_epochs must be int, got True"),
    (("actor_rollout_ref", "actor", "loss_agg_mode"), "seq-mean", "actor_rollout_ref.actor.loss_agg_mode is 'seq-mean'"),
    (("actor_rollout_ref", "rollout", "multi_turn"), True, "actor_rollout_ref.rollout.multi_turn must be a mapping"),
])
def test_a_wrong_field_is_refused_by_name(path, value, message):
    cfg, kwargs = recipe()
    config = copy.deepcopy(export.verl_config(cfg, kwargs))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        export.check_verl_config(config)
    assert message in str(err.value)
    assert err.value.field == ".".join(path)


def test_null_is_allowed_only_where_verls_default_is_null():
    cfg, kwargs = recipe()
    config = export.verl_config(cfg, kwargs)
    assert config["actor_rollout_ref"]["rollout"]["multi_turn"]["max_assistant_turns"] is None
    export.check_verl_config(config)
    config["trainer"]["save_freq"] = None
    with pytest.raises(ConfigError, match="trainer.save_freq must be int, got None"):
        export.check_verl_config(config)


def test_the_written_file_says_what_it_is_and_reads_back_as_the_checked_config():
    cfg, kwargs = recipe(prompts_per_step=4, group_size=8)
    text = export.verl_file(cfg, kwargs)
    assert text.startswith("# verl GRPO config") and "NOT RUN HERE" in text and "035682e" in text
    export.check_verl_config(yaml.safe_load(text))
    uneven = {**cfg, "prompts_per_step": 3, "group_size": 4, "mini_batches": 2}
    kwargs, _ = export.trl_config(uneven)
    text = export.verl_file(uneven, kwargs)
    assert "ppo_mini_batch_size is left to verl: mu = 2 does not divide 3 prompts" in text
    assert "ppo_mini_batch_size" not in yaml.safe_load(text)["actor_rollout_ref"]["actor"]
