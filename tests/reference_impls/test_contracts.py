"""The contracts every algorithm, environment and run option goes through (issue: explicit contracts).

- one typed run config: flags, files (--config), TRL's names and validation all come from option fields,
  and a bad value fails before any model is loaded;
- environments own their options, and a user's environment plugs in with --env-module;
- the run folder is one RunDir: a new run never overwrites another run's files, a damaged checkpoint is
  skipped for the newest good one;
- ``train --list --json`` is the list of runnable implementations the Lab and node pages read.
"""
import json
import re
from pathlib import Path

import pytest
import torch

from test_train_cli import FAST, ROOT, evaluate, metric_rows, train, train_subprocess

USER_ENV = str(Path(__file__).with_name("user_env.py"))


# -- typed options -------------------------------------------------------------------------------------

def test_bad_option_fails_before_any_model_is_loaded():
    # a real process: `python -m reference_impls.train` exits 2, and its whole stderr shows no model load
    r = train_subprocess("--algo", "grpo", "--loss-type", "foo", "--out", "/tmp/never-written")
    assert r.returncode == 2
    assert "--loss-type" in r.stderr and "'foo'" in r.stderr and "grpo, dr_grpo, dapo" in r.stderr
    assert "Loading weights" not in r.stderr and not Path("/tmp/never-written").exists()


@pytest.mark.parametrize("args,expected", [
    (["--steps", "-5"], "--steps: '-5' is not valid (below 1)"),
    (["--group-size", "0"], "--group-size: '0' is not valid (below 1)"),
    (["--group-size", "1"], "at least 2 samples per problem"),
    (["--algo", "ppo", "--kl-estimator", "k9"], "one of k1, k3"),
    (["--levels", "1,7"], "--levels (option of --env calculator): '1,7' is not valid"),
    (["--env-option", "nope=1"], "unknown option of --env calculator 'nope'"),
    (["--algo", "grpoo"], "did you mean grpo"),
    (["--env", "calculater"], "did you mean calculator"),
    (["--model", "no-such-model"], "--model: 'no-such-model' is neither one of"),
    (["--max-new-tokens-per-turn", "99", "--max-completion-tokens", "10"], "cannot exceed"),
])
def test_every_bad_value_is_named(args, expected):
    from reference_impls.options import ConfigError
    from reference_impls.train import parse

    with pytest.raises(ConfigError) as err:
        parse([*args, "--out", "/tmp/x"])
    assert expected in str(err.value)


def test_trl_names_train_the_tiny_model(tmp_path):
    out = tmp_path / "trl-named"
    r = train("--model", "tiny", "--num-generations", "4", "--max-completion-length", "32", "--learning-rate", "1e-5",
              "--max-steps", "1", "--output-dir", str(out), "--max-new-tokens-per-turn", "8")
    assert r.returncode == 0, r.stderr[-3000:]
    config = json.loads((out / "config.json").read_text())
    assert (config["group_size"], config["max_completion_tokens"], config["lr"], config["steps"]) == (4, 32, 1e-5, 1)
    assert [row["step"] for row in metric_rows(out)] == [1]


def test_config_file_then_flags(tmp_path):
    from reference_impls.train import parse

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("algo: grpo\nloss_type: dapo\nlearning_rate: 3.0e-5\nenv_options: {levels: [2, 3]}\n")
    cfg, _, _ = parse(["--config", str(recipe), "--out", "/tmp/x", "--levels", "3"])
    assert cfg.lr == 3e-5 and cfg.algo_config == {"loss_type": "dapo"} and cfg.env_options == {"levels": [3]}
    (tmp_path / "bad.json").write_text('{"lr": "fast"}')
    from reference_impls.options import ConfigError

    with pytest.raises(ConfigError, match=r"--lr: 'fast' is not valid"):
        parse(["--config", str(tmp_path / "bad.json"), "--out", "/tmp/x"])


def test_old_run_configs_still_resolve():
    # config.json written before environments owned their options (levels at the top level)
    from reference_impls.run_config import config_from_dict, resolve

    cfg = config_from_dict({"algo": "grpo", "env": "calculator", "out": "x", "levels": "2,3", "families": "",
                            "algo_config": {"loss_type": "dapo"}, "env_options": {"max_turns": 2}})
    resolve(cfg)
    assert cfg.env_options == {"levels": [2, 3], "max_tool_calls": 2}


def test_a_top_level_env_option_of_any_name_moves_into_env_options():
    # the old layout is read from the environment's own option fields, not from a list of names
    from reference_impls.run_config import config_from_dict

    cfg = config_from_dict({"algo": "grpo", "env": "frozenlake", "out": "x", "shaping": 0.5, "moves_per_turn": "",
                            "beta": 0.01})
    assert cfg.env_options == {"shaping": 0.5} and cfg.algo_config == {"beta": 0.01}


def test_one_typed_env_config_from_resolve_to_every_episode(tmp_path, monkeypatch):
    """``resolve`` builds the environment's typed config once; the trainer's context, the rollout config, the
    train pool and every episode get that same object (no dict copies, no per-episode re-validation)."""
    from reference_impls import envs
    from reference_impls.run_config import TrainConfig
    from reference_impls.trainer import Trainer

    seen, built = [], []
    make, options = envs.EnvSpec.make, envs.EnvSpec.options
    monkeypatch.setattr(envs.EnvSpec, "make", lambda self, problem, config=None, **kw: (
        seen.append(config), make(self, problem, config, **kw))[1])
    monkeypatch.setattr(envs.EnvSpec, "options", lambda self, values=None: (
        built.append(dict(values or {})), options(self, values))[1])
    trainer = Trainer(TrainConfig(algo="grpo", env="calculator", model="tiny", steps=1, out=str(tmp_path / "r"),
                                  prompts_per_step=2, group_size=2, max_new_tokens_per_turn=4,
                                  max_completion_tokens=8, env_options={"levels": [2, 3]}))
    typed = trainer.ctx.env_config
    assert isinstance(typed, trainer.task.config) and tuple(typed.levels) == (2, 3)
    assert trainer.ctx.rollout_config.env_config is typed
    built.clear()
    trainer.run()
    assert len(seen) >= 4 and all(c is typed for c in seen)
    assert built == []  # no episode rebuilt the config from a mapping


# -- environments own their options; a user's environment plugs in -------------------------------------

def test_user_environment_trains_and_evaluates_through_the_cli(tmp_path):
    out = tmp_path / "echo"
    r = train("--env-module", USER_ENV, "--env", "echo", "--words", "3", "--model", "tiny", "--steps", "2",
              "--prompts-per-step", "2", "--group-size", "2", "--max-new-tokens-per-turn", "6",
              "--max-completion-tokens", "6", "--sft-steps", "1", "--sft-examples", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert [row["step"] for row in metric_rows(out)] == [1, 2]
    assert json.loads((out / "config.json").read_text())["env_options"] == {"words": 3}
    sample = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert re.search(r"Write <answer>(apple|river|stone)</answer>", sample["segments"][0]["text"])
    ev = evaluate("--env-module", USER_ENV, "--run", str(out), "--n", "4", "--json", "--max-new-tokens-per-turn", "6",
                  "--max-completion-tokens", "6")
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert json.loads(ev.stdout.strip().splitlines()[-1])["n"] == 4
    bad = train("--env-module", USER_ENV, "--env", "echo", "--words", "99", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--words" in bad.stderr


def test_no_environment_names_in_generic_code():
    generic = ["reference_impls/train.py", "reference_impls/run_config.py", "reference_impls/trainer.py",
               "reference_impls/sft.py", "reference_impls/measure/evaluate.py", "reference_impls/rollout.py",
               "lab/catalog.py", "lab/runs.py", "lab/worker.py", "app/views/lab.py", "app/presentation/lab.py"]
    for path in generic:
        text = (ROOT / path).read_text()
        assert not re.search(r"""[=!]=\s*["'](calculator|memory|search)["']|["'](calculator|memory|search)["']\s*[=!]=""",
                             text), path


def test_algorithms_import_no_environment_module():
    """Algorithms test what an environment offers (its EnvSpec, e.g. ``steps``), never which one it is: no module
    under reference_impls/algorithms imports an environment's module, only the ``reference_impls.envs`` package."""
    import ast
    import pkgutil

    import reference_impls.envs as envs

    env_modules = {info.name for info in pkgutil.iter_modules(envs.__path__)}
    checked = 0
    for path in sorted((ROOT / "reference_impls" / "algorithms").rglob("*.py")):
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])  # the module's package
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parent + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                checked += target.startswith("reference_impls.envs")
                parts = target.split(".")
                assert not (parts[:2] == ["reference_impls", "envs"] and len(parts) > 2 and parts[2] in env_modules), \
                    f"{path.relative_to(ROOT)} imports {target}"
    assert checked  # the walk saw the algorithms' imports of reference_impls.envs (resolved relative imports)


def test_tool_tags_are_parsed_from_the_tool_spec():
    from reference_impls.envs.calculator import TOOL

    action = TOOL.first_action("x <calc>2+3</calc> <answer>5</answer>")
    assert action[0] == "call" and action[1].group(1) == "2+3"
    assert TOOL.first_action("<answer>5</answer><calc>1</calc>")[0] == "answer"
    assert TOOL.first_action("no tags") is None


# -- the algorithm interface -----------------------------------------------------------------------------

def test_constant_groups_get_exactly_zero_advantages():
    from reference_impls.algorithms.grpo import grpo
    from reference_impls.algorithms.reinforce import rloo

    rewards = torch.tensor([2 / 3] * 8 + [1.0, 0.0, 1 / 3, 2 / 3, 0.0, 0.0, 1.0, 1 / 3], dtype=torch.float32)
    for scale in (True, False):
        adv = grpo.group_advantages(rewards, 8, scale_rewards=scale)
        assert torch.equal(adv[:8], torch.zeros(8)) and adv[8:].abs().sum() > 0
    adv = rloo.leave_one_out_advantages(rewards, 8)
    assert torch.equal(adv[:8], torch.zeros(8)) and adv[8:].abs().sum() > 0
    # what float32 gave before: |A| ~ 6e-4 of one sign in the constant group
    grouped = rewards[:8]
    centred = grouped - grouped.mean()
    assert float((centred / (grouped.std() + 1e-4)).abs().max()) > 1e-5


def test_every_algorithm_implements_the_interface():
    from reference_impls.algorithm import Algorithm
    from reference_impls.options import specs
    from reference_impls.run_config import ALGORITHMS

    for name, cls in ALGORITHMS.items():
        assert issubclass(cls, Algorithm) and cls.update is not Algorithm.update, name
        for spec in specs(cls.Config):  # every option has help text, so --help and the Lab can show it
            assert spec.help, (name, spec.name)


# -- the run folder ---------------------------------------------------------------------------------------

def test_new_run_refuses_a_folder_of_another_run(tmp_path):
    out = tmp_path / "run"
    assert train(*FAST, "--steps", "1", "--out", str(out)).returncode == 0
    (out / "checkpoints" / "step_000001" / "my-notes.txt").write_text("mine")
    before = (out / "metrics.jsonl").read_text()
    r = train(*FAST, "--steps", "1", "--out", str(out), "--lr", "1e-3")
    assert r.returncode == 2 and "already holds files of another run" in r.stderr and "--resume" in r.stderr
    assert (out / "metrics.jsonl").read_text() == before
    assert (out / "checkpoints" / "step_000001" / "my-notes.txt").read_text() == "mine"
    r = train(*FAST, "--steps", "1", "--out", str(out), "--lr", "1e-3", "--overwrite")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["lr"] == 1e-3


def test_resume_skips_a_damaged_checkpoint(tmp_path):
    out = tmp_path / "run"
    assert train(*FAST, "--steps", "3", "--keep-checkpoints", "3", "--out", str(out)).returncode == 0
    newest = out / "checkpoints" / "step_000003" / "model.safetensors"
    newest.write_bytes(newest.read_bytes()[:1000])  # truncated
    (out / "checkpoints" / "step_000004").mkdir()  # an empty newer folder
    r = train("--resume", str(out), "--steps", "4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "step_000003" in r.stderr and "resumed from step_000002" in r.stderr
    assert [row["step"] for row in metric_rows(out)] == [1, 2, 3, 4]
    status = json.loads((out / "status.json").read_text())
    # a truncated file is caught by the header check before loading (issue 63), which names what is wrong
    assert status["state"] == "completed" and "step_000003: model.safetensors: its header length says" in status["note"]


def test_resume_without_config_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    r = train("--resume", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no config.json" in r.stderr and "Traceback" not in r.stderr


# -- the list of implementations --------------------------------------------------------------------------

def test_list_json_is_the_implementations_contract(taxonomy):
    r = train("--list", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    by_id = {row["id"]: row for row in rows}
    assert {"calculator-grpo", "calculator-dapo", "calculator-ppo", "calculator-dpo", "search-grpo", "memory-grpo"} <= set(by_id)
    dapo = by_id["calculator-dapo"]
    assert dapo["algorithm"] == "grpo" and dapo["algo_options"]["loss_type"] == "dapo"
    assert dapo["options"]["group_size"] == 4 and dapo["env_options"]["levels"] == [1, 2, 3]
    for row in rows:
        assert all(node in taxonomy for node in row["nodes"]), row["id"]


def test_impl_runs_a_listed_implementation(tmp_path):
    out = tmp_path / "dapo"
    r = train("--impl", "calculator-dapo", "--model", "tiny", "--steps", "1", "--prompts-per-step", "2",
              "--max-new-tokens-per-turn", "6", "--max-completion-tokens", "40", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    config = json.loads((out / "config.json").read_text())
    assert config["algo_config"]["loss_type"] == "dapo" and config["algo_config"]["dynamic_sampling"] is True


def test_measurement_clis_pick_the_model_by_one_rule(tmp_path):
    """evaluate, self_correction, mas_pipeline and report all load rundir.policy_to_evaluate(--run, --model)."""
    from reference_impls.rundir import RunDirError, policy_to_evaluate

    assert policy_to_evaluate(None, None) == "smollm2-135m-instruct"
    assert policy_to_evaluate(None, "tiny") == "tiny"
    empty = tmp_path / "run"
    empty.mkdir()
    with pytest.raises(RunDirError, match="no complete checkpoint to evaluate"):
        policy_to_evaluate(str(empty), None)
    assert policy_to_evaluate(str(empty), "tiny") == "tiny"  # nothing saved yet: the named model
    # a run with a checkpoint wins over --model: tests/reference_impls/test_env_multiagent_perception.py trains one
    # and evaluates it with evaluate and mas_pipeline through --run


def test_a_finished_run_can_drop_its_resume_state_and_stay_evaluable(tmp_path):
    """RunDir.drop_resume_state keeps the newest checkpoint's weights only; evaluation (latest_model,
    policy_to_evaluate) still finds them, resuming (latest_checkpoint) no longer does."""
    from reference_impls.rundir import RunDir, policy_to_evaluate

    run = RunDir(tmp_path / "run")
    for step in (4, 8):
        ckpt = run.checkpoint_path(step)
        ckpt.mkdir(parents=True)
        for name in ("model.safetensors", "optimizer.pt", "critic.pt", "rng_rank0.pt", "tokenizer.json"):
            (ckpt / name).write_bytes(b"x" * 10)
        (ckpt / "trainer_state.json").write_text(json.dumps({"step": step}))
    assert run.latest_checkpoint() == run.latest_model() == run.checkpoint_path(8)

    assert run.drop_resume_state() == run.checkpoint_path(8)
    assert run.checkpoints() == [run.checkpoint_path(8)]
    assert sorted(p.name for p in run.checkpoint_path(8).iterdir()) == [
        "model.safetensors", "tokenizer.json", "trainer_state.json"]
    assert run.latest_checkpoint() is None and run.latest_model() == run.checkpoint_path(8)
    assert policy_to_evaluate(str(run.path), None) == str(run.checkpoint_path(8))

    # a checkpoint with torn weights is not a model; with no weights anywhere nothing is deleted
    (run.checkpoint_path(8) / "model.safetensors").write_bytes(b"")
    assert run.latest_model() is None
    assert run.drop_resume_state() is None and run.checkpoints() == [run.checkpoint_path(8)]
