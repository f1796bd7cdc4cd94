"""Data parallel training under torchrun (2 processes, gloo on CPU): after the steps both ranks hold the
same weights, and they are the weights rank 0 checkpointed; a resumed DDP run ends where a straight one
does. Each rank writes a digest of its weights at the end (``ATLAS_DEBUG_PARAM_DIGEST=1``, see
``Trainer.write_param_digest``)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
# two processes each: one torchrun at a time (with test_train_cli's), not two on the 2-core CI machine
pytestmark = pytest.mark.xdist_group("torchrun")
FAST = ["--model", "tiny", "--prompts-per-step", "2", "--group-size", "4", "--max-new-tokens-per-turn", "6",
        "--max-completion-tokens", "10", "--checkpoint-every", "1"]
# the untrained tiny model earns mixed rewards on the parity env (reward variance: a gradient); on the
# calculator it solves nothing
PARITY = ["--env-module", str(ROOT / "tests" / "reference_impls" / "parity_env.py"), "--env", "parity"]
# options that make each algorithm exercise its data-parallel path on the tiny model
EXTRA = {
    "grpo": [*PARITY, "--loss-type", "dapo"],
    "rloo": PARITY,
    # 3 minibatches per epoch and a KL reference, on the calculator (all rewards 0: the critic and the KL
    # still move the weights): gradient sums, global whitening
    "ppo": ["--env", "calculator", "--group-size", "3", "--num-mini-batches", "3", "--micro-batch-size", "1"],
    # the untrained tiny model solves no calculator problem: pairs are verified demonstrations vs wrong
    # samples; 3 pairs a step over 2 ranks with one pair per micro-batch: rank 1 runs a zero-weight pass
    "dpo": ["--env", "calculator", "--group-size", "2", "--demonstration-chosen", "--pair-prompts", "4",
            "--pairs-per-step", "3", "--micro-batch-size", "2"],
    "papo": PARITY,
    "skywork-ssb": PARITY,
    "srpo": PARITY,
    "greso": PARITY,
}


def torchrun(*args, timeout=400):
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", ATLAS_DEBUG_PARAM_DIGEST="1")
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           "-m", "reference_impls.train", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def digests(out: Path) -> list[dict]:
    return [json.loads((out / f"param_digest_rank{r}.json").read_text()) for r in (0, 1)]


def checkpoint_digests(ckpt: Path, names) -> dict:
    """The digest of what rank 0 wrote: the policy as load_policy reads the checkpoint, the extra modules'
    state dicts as saved."""
    from reference_impls.distributed import state_digest
    from reference_impls.models import load_policy

    out = {"policy": state_digest(load_policy(str(ckpt), device="cpu")[0].state_dict())}
    for name in names:
        out[name] = state_digest(torch.load(ckpt / f"{name}.pt", map_location="cpu", weights_only=True))
    return out


@pytest.mark.parametrize("algo", [
    # issue 17's check, always run: the DDP family (grpo, rloo), PPO's own data-parallel update (critic,
    # minibatches) and DPO's split pairs; the variants with their own cross-rank state run with `pytest -m slow`
    "grpo", "rloo", "ppo", "dpo",
    *[pytest.param(a, marks=pytest.mark.slow) for a in ("papo", "skywork-ssb", "srpo", "greso")],
])
def test_two_ranks_end_with_identical_weights(tmp_path, algo):
    out = tmp_path / algo
    r = torchrun("--algo", algo, *FAST, *EXTRA[algo], "--steps", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    rank0, rank1 = digests(out)
    assert rank0["step"] == rank1["step"] == 2
    assert rank0 == rank1, "the replicas diverged"
    modules = [k for k in rank0 if k not in ("step", "policy")]
    assert modules == (["critic"] if algo == "ppo" else [])
    assert checkpoint_digests(out / "checkpoints" / "step_000002", modules) == {k: rank0[k] for k in ["policy", *modules]}
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(abs(row["grad_norm"]) > 0 for row in rows)  # the steps did move the weights


@pytest.mark.slow
def test_resumed_ddp_run_ends_where_a_straight_one_does(tmp_path):
    args = ["--algo", "ppo", *FAST, *EXTRA["ppo"]]
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert torchrun(*args, "--steps", "3", "--out", str(straight)).returncode == 0
    first = torchrun(*args, "--steps", "2", "--out", str(resumed))
    assert first.returncode == 0, first.stderr[-3000:]
    again = torchrun("--resume", str(resumed), "--steps", "3")
    assert again.returncode == 0, again.stderr[-3000:]
    assert digests(resumed)[0]["step"] == 3
    assert digests(straight) == digests(resumed)
    rows = lambda out: [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]  # noqa: E731
    drop = ("update_s", "step_s", "wall_s", "tokens_per_s", "rollout_s", "env_s")
    assert [{k: v for k, v in row.items() if k not in drop} for row in rows(straight)] == \
        [{k: v for k, v in row.items() if k not in drop} for row in rows(resumed)]


def test_digest_sees_every_bit_and_global_whitening_is_the_local_one_in_one_process():
    from reference_impls.distributed import state_digest
    from reference_impls.algorithms.ppo.ppo import masked_whiten

    a = {"w": torch.arange(6, dtype=torch.float32).view(2, 3), "b": torch.zeros(2)}
    b = {k: v.clone() for k, v in a.items()}
    assert state_digest(a) == state_digest(b)
    b["w"][1, 2] = torch.nextafter(b["w"][1, 2], torch.tensor(100.0))  # one ulp
    assert state_digest(a) != state_digest(b)
    assert state_digest({"w": a["w"].double()}) != state_digest({"w": a["w"]})  # dtype counts
    x, m = torch.randn(3, 5), (torch.rand(3, 5) > 0.3).float()
    assert torch.allclose(masked_whiten(x, m, over_ranks=True), masked_whiten(x, m), atol=1e-6)


@pytest.mark.slow
def test_two_rank_dpo_takes_the_one_process_step_on_the_same_pairs(tmp_path):
    """DPO is offline, so one process and two ranks can train on the very same pairs: the two ranks split
    each step's 3 pairs (2 + 1, with a zero-weight pass) and must take the one-process step."""
    from safetensors.torch import load_file

    from reference_impls.models import load_policy

    one, two = tmp_path / "one", tmp_path / "two"
    args = ["--algo", "dpo", *FAST, *EXTRA["dpo"], "--steps", "2", "--lr", "1e-3"]
    r = subprocess.run([sys.executable, "-m", "reference_impls.train", *args, "--out", str(one)], cwd=ROOT,
                       env=dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1"), capture_output=True, text=True,
                       timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    r = torchrun(*args, "--pairs-file", str(one / "pairs.jsonl"), "--out", str(two))
    assert r.returncode == 0, r.stderr[-3000:]
    start = load_policy("tiny", device="cpu", seed=0)[0].state_dict()
    w1 = load_file(str(one / "checkpoints" / "step_000002" / "model.safetensors"))
    w2 = load_file(str(two / "checkpoints" / "step_000002" / "model.safetensors"))
    moved = sum(float((w1[k] - start[k]).norm() ** 2) for k in w1) ** 0.5
    apart = sum(float((w1[k] - w2[k]).norm() ** 2) for k in w1) ** 0.5
    assert moved > 1e-3  # the steps moved the weights
    assert apart < 1e-3 * moved  # ... and the two runs moved them alike (float summation order aside)
    rows = lambda out: [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]  # noqa: E731
    for a, b in zip(rows(one), rows(two)):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["rewards/margins"] == pytest.approx(b["rewards/margins"], rel=1e-4, abs=1e-7)
