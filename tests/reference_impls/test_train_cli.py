"""The train/evaluate CLIs end to end with the tiny model: files, resume, SIGTERM, torchrun DDP.

``train``/``evaluate`` call the CLIs' ``main`` in this process (see tests/inprocess.py); SIGTERM and torchrun
need real processes and keep them."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inprocess import run_main

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--prompts-per-step", "2", "--group-size", "2",
        "--max-new-tokens-per-turn", "6", "--max-completion-tokens", "10", "--checkpoint-every", "1"]


def env():
    e = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    return e


def train(*args):
    """``python -m reference_impls.train ARGS`` (with env()'s OMP_NUM_THREADS=1), run in this process."""
    from reference_impls.train import main

    return run_main(main, args, env=env(), cwd=ROOT, threads=1, prog="python -m reference_impls.train")


def train_subprocess(*args, timeout=120):
    """``python -m reference_impls.train ARGS`` as a real process."""
    return subprocess.run([sys.executable, "-m", "reference_impls.train", *args], cwd=ROOT, env=env(),
                          capture_output=True, text=True, timeout=timeout)


def evaluate(*args):
    """``python -m reference_impls.measure.evaluate ARGS``, run in this process."""
    from reference_impls.measure.evaluate import main

    return run_main(main, args, env=env(), cwd=ROOT, threads=1, prog="python -m reference_impls.measure.evaluate")


def metric_rows(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


REQUIRED = {"step", "reward_mean", "accuracy", "loss", "kl", "clip_frac", "entropy", "grad_norm", "tokens_per_s", "wall_s"}


def test_two_steps_write_everything(tmp_path):
    out = tmp_path / "run"
    r = train(*FAST, "--steps", "2", "--out", str(out), "--beta", "0.04", "--loss-type", "dr_grpo")
    assert r.returncode == 0, r.stderr
    rows = metric_rows(out)
    assert [row["step"] for row in rows] == [1, 2] and REQUIRED <= set(rows[0])
    config = json.loads((out / "config.json").read_text())
    assert config["algo_config"] == {"beta": 0.04, "loss_type": "dr_grpo"}
    sample = json.loads((out / "samples.jsonl").read_text().splitlines()[0])
    assert sample["step"] == 1 and sample["segments"][0]["role"] == "prompt"
    assert list((out / "tb").glob("events.out.tfevents.*"))
    ckpt = out / "checkpoints" / "step_000002"
    assert {"model.safetensors", "optimizer.pt", "trainer_state.json", "rng_rank0.pt"} <= {p.name for p in ckpt.iterdir()}
    assert not list((out / "checkpoints").glob(".tmp-*"))
    assert json.loads((out / "status.json").read_text())["state"] == "completed"
    assert "ETA" in r.stderr

    ev = evaluate("--run", str(out), "--n", "4", "--json", "--max-new-tokens-per-turn", "6", "--max-completion-tokens", "10")
    assert ev.returncode == 0, ev.stderr
    result = json.loads(ev.stdout.strip().splitlines()[-1])
    assert result["n"] == 4 and 0.0 <= result["accuracy"] <= 1.0


def test_resume_loses_and_duplicates_nothing(tmp_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert train(*FAST, "--steps", "3", "--out", str(straight)).returncode == 0
    assert train(*FAST, "--steps", "2", "--out", str(resumed)).returncode == 0
    # a crash after the checkpoint at step 2 left a line for step 3 and a torn line behind
    with open(resumed / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"step": 3, "reward_mean": 9.0}) + "\n" + '{"step": 4, "rew')
    r = train("--resume", str(resumed), "--steps", "3")
    assert r.returncode == 0, r.stderr
    rows = metric_rows(resumed)
    assert [row["step"] for row in rows] == [1, 2, 3]
    # every step's randomness is a function of (seed, step), and model + optimizer were restored:
    # the resumed step 3 is the straight run's step 3
    assert rows[2]["entropy"] == pytest.approx(metric_rows(straight)[2]["entropy"], rel=1e-5)
    assert rows[2]["loss"] == pytest.approx(metric_rows(straight)[2]["loss"], abs=1e-6)
    assert sorted(p.name for p in (resumed / "checkpoints").iterdir()) == ["step_000002", "step_000003"]


def test_sigterm_checkpoints_and_exits_zero(tmp_path):
    out = tmp_path / "run"
    args = [a if a != "1" else "1000" for a in FAST]  # checkpoint only because of the signal
    proc = subprocess.Popen([sys.executable, "-m", "reference_impls.train", *args, "--steps", "100000",
                             "--out", str(out)], cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 90
    while time.time() < deadline:
        if (out / "metrics.jsonl").exists() and (out / "metrics.jsonl").read_text().count("\n") >= 1:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "stopped"
    rows = metric_rows(out)
    assert rows[-1]["step"] == status["step"] == len(rows)
    assert (out / "checkpoints" / f"step_{status['step']:06d}" / "model.safetensors").exists()


@pytest.mark.xdist_group("torchrun")  # with test_torchrun.py's: one torchrun (two processes) at a time
def test_torchrun_two_processes(tmp_path):
    out = tmp_path / "ddp"
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                        "-m", "reference_impls.train", *FAST, "--steps", "2", "--out", str(out),
                        "--loss-type", "dapo"],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = metric_rows(out)
    assert [row["step"] for row in rows] == [1, 2]  # written once (rank 0), not once per rank
    assert (out / "checkpoints" / "step_000002" / "rng_rank1.pt").exists()
    assert json.loads((out / "status.json").read_text())["state"] == "completed"


def test_boolean_train_flags_parse_both_ways():
    # a bool field must not go through type=bool (which reads "False" as True)
    from reference_impls.train import parse

    assert parse(["--out", "/tmp/x", "--no-share-prompts"])[0].share_prompts is False
    assert parse(["--out", "/tmp/x"])[0].share_prompts is True


# -- a TRL user's flags: a default the user did not set follows the budget the user did set ----------------

TRL_FIRST_COMMAND = ["--algo", "grpo", "--env", "calculator", "--model", "tiny", "--num-generations", "4",
                     "--max-completion-length", "32", "--steps", "1"]


def test_a_trl_users_first_command_parses_with_the_per_turn_default_under_the_budget():
    from reference_impls.options import spec_map
    from reference_impls.run_config import TrainConfig
    from reference_impls.train import parse

    per_turn_default = spec_map(TrainConfig)["max_new_tokens_per_turn"].default
    assert per_turn_default > 32  # else this command never met the contradiction
    cfg, _, _ = parse([*TRL_FIRST_COMMAND, "--out", "/tmp/x"])
    assert (cfg.group_size, cfg.max_completion_tokens, cfg.max_new_tokens_per_turn, cfg.steps) == (4, 32, 32, 1)
    # a budget above the default leaves the default; an explicit per-turn value under the budget is kept
    wide = parse([*TRL_FIRST_COMMAND[:-4], "--max-completion-length", "500", "--out", "/tmp/x"])[0]
    assert wide.max_new_tokens_per_turn == per_turn_default
    explicit = parse([*TRL_FIRST_COMMAND, "--max-new-tokens-per-turn", "8", "--out", "/tmp/x"])[0]
    assert explicit.max_new_tokens_per_turn == 8


def test_two_explicit_token_limits_that_contradict_each_other_are_an_error():
    from reference_impls.options import ConfigError
    from reference_impls.train import parse

    contradiction = r"--max-new-tokens-per-turn: 48 cannot exceed --max-completion-tokens \(32\)"
    with pytest.raises(ConfigError, match=contradiction) as err:
        parse([*TRL_FIRST_COMMAND, "--max-new-tokens-per-turn", "48", "--out", "/tmp/x"])
    assert err.value.field == "max_new_tokens_per_turn"


def test_a_trl_users_first_command_trains(tmp_path):
    out = tmp_path / "run"
    r = train(*TRL_FIRST_COMMAND, "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert [row["step"] for row in metric_rows(out)] == [1]
    config = json.loads((out / "config.json").read_text())
    assert (config["group_size"], config["max_completion_tokens"], config["max_new_tokens_per_turn"]) == (4, 32, 32)


# -- a user's algorithm plugs in with --algo-module ------------------------------------------------------------

USER_ALGO = str(Path(__file__).with_name("user_algo.py"))


def test_user_algorithm_trains_through_the_cli_and_its_options_are_validated(tmp_path):
    from reference_impls.registry import algorithms

    out = tmp_path / "mean"
    r = train("--algo-module", USER_ALGO, *FAST[2:], "--algo", "mean-baseline", "--advantage-scale", "0.5",
              "--steps", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert [row["step"] for row in metric_rows(out)] == [1, 2]
    config = json.loads((out / "config.json").read_text())
    assert config["algo"] == "mean-baseline" and config["algo_config"] == {"advantage_scale": 0.5}
    bad = train("--algo-module", USER_ALGO, "--algo", "mean-baseline", "--advantage-scale", "99",
                "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--advantage-scale" in bad.stderr and "above 10" in bad.stderr
    assert "mean-baseline" not in algorithms()  # a process's own: gone with it (tests/inprocess.py)
    unknown = train("--algo", "mean-baseline", "--out", str(tmp_path / "unknown"))
    assert unknown.returncode == 2 and "--algo-module" in unknown.stderr


def test_an_algorithm_module_without_an_algorithm_is_named(tmp_path):
    empty = tmp_path / "not_an_algo.py"
    empty.write_text("X = 1\n")
    r = train("--algo-module", str(empty), "--out", str(tmp_path / "r"))
    assert r.returncode == 2 and "defines no algorithm" in r.stderr and "not_an_algo.py" in r.stderr
    missing = train("--algo-module", str(tmp_path / "nope.py"), "--out", str(tmp_path / "r"))
    assert missing.returncode == 2 and "--algo-module: no such file" in missing.stderr


# -- a prepared run: its config.json, validated where it was written, is read without a second validation ----

def test_a_prepared_run_is_read_as_validated_and_its_config_written_once(tmp_path, monkeypatch):
    from reference_impls import run_config, trainer
    from reference_impls import train as train_module
    from reference_impls.run_config import config_from_dict, resolve, stored
    from reference_impls.rundir import RunDir

    out = tmp_path / "prepared"
    cfg = resolve(config_from_dict({"algo": "grpo", "env": "calculator", "model": "tiny", "steps": 1,
                                    "prompts_per_step": 2, "group_size": 2, "max_completion_tokens": 10,
                                    "out": str(out)})).cfg
    RunDir(out).write_config(stored(cfg))
    written = (out / "config.json").stat().st_mtime_ns

    def no_second_validation(*_, **__):
        raise AssertionError("a prepared run's config was validated again")

    for module in (train_module, trainer, run_config):
        monkeypatch.setattr(module, "resolve", no_second_validation)
    r = train("--prepared", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert [row["step"] for row in metric_rows(out)] == [1]
    assert (out / "config.json").stat().st_mtime_ns == written  # the one stored config, not written again
    assert json.loads((out / "config.json").read_text()) == json.loads(json.dumps(stored(cfg)))


def test_a_prepared_run_takes_no_other_option_and_a_hand_broken_file_is_named(tmp_path):
    from reference_impls.run_config import TrainConfig, stored
    from reference_impls.rundir import RunDir

    out = tmp_path / "prepared"
    RunDir(out).write_config({**stored(TrainConfig(out=str(out))), "steps": "many"})
    r = train("--prepared", str(out))
    assert r.returncode == 2 and "config.json: steps is 'many', not an integer" in r.stderr
    RunDir(out).write_config(stored(TrainConfig(out=str(out))))
    r = train("--prepared", str(out), "--lr", "0.5")
    assert r.returncode == 2 and "give no other option" in r.stderr


def test_the_command_line_is_validated_once_on_its_way_to_the_optimizer(tmp_path, monkeypatch):
    from reference_impls import run_config, trainer
    from reference_impls import train as train_module

    calls = []

    def counted(cfg, *args, **kwargs):
        calls.append(cfg.out)
        return run_config.resolve(cfg, *args, **kwargs)

    for module in (train_module, trainer):
        monkeypatch.setattr(module, "resolve", counted)
    out = tmp_path / "once"
    r = train(*FAST, "--lr", "3e-4", "--steps", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    assert calls == [str(out)]  # train.parse's, and no other (the Trainer takes the resolved config as it is)
    assert json.loads((out / "config.json").read_text())["lr"] == 3e-4
