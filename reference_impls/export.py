"""Export a run's recipe for a bigger machine: TRL's GRPOTrainer (+ accelerate, vLLM, DeepSpeed).

    python -m reference_impls.export --run RUN_DIR --target trl --out DIR

writes a folder that trains the same environment with the same hyperparameters under TRL::

    DIR/export.json              environment, options, model, GRPOConfig under TRL's names, rollout lengths
    DIR/train_trl.py             the training script (GRPOTrainer + reference_impls.trl_bridge)
    DIR/accelerate_multi_gpu.yaml  an accelerate config for N GPUs (edit num_processes)
    DIR/verl_grpo.yaml           the same hyperparameters as a verl config (not run here; its fields checked
                                 against verl's pinned config schema, verl_config_schema.yaml)
    DIR/README.md                the name mapping, what has no TRL equivalent, and the command lines

Every TrainConfig and algorithm option is either mapped (a table in the README) or listed as having no
TRL equivalent, never silently dropped. The model is the run's latest checkpoint when it has one,
else the run's model. Only the GRPO family exports to GRPOTrainer (RLOO, PPO and DPO have no multi-turn
TRL counterpart here: the export refuses them by name).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import yaml

from .implementations import Implementation
from .options import ConfigError
from .rundir import RunDir, RunDirError

#: our TrainConfig name -> GRPOConfig name (same meaning)
TRAIN_TO_TRL = {"steps": "max_steps", "lr": "learning_rate", "seed": "seed", "weight_decay": "weight_decay",
                "max_grad_norm": "max_grad_norm", "group_size": "num_generations",
                "max_completion_tokens": "max_completion_length", "temperature": "temperature",
                "checkpoint_every": "save_steps", "keep_checkpoints": "save_total_limit"}
#: our GRPO option -> GRPOConfig name (same meaning)
GRPO_TO_TRL = {"loss_type": "loss_type", "epsilon_low": "epsilon", "epsilon_high": "epsilon_high", "beta": "beta",
               "importance_sampling_level": "importance_sampling_level", "num_iterations": "num_iterations"}
#: settings with no GRPOConfig equivalent, and what the export does about each
NO_TRL_EQUIVALENT = {
    "dynamic_sampling": "TRL keeps every group (a group with equal rewards gets advantage 0 and no gradient, "
                        "but is not dropped and not re-sampled); not exported",
    "micro_batch_size": "memory only: use per_device_train_batch_size / gradient_accumulation_steps in TRL",
    "micro_batch_tokens": "memory only: TRL has no token bound on a forward/backward; lower "
                          "per_device_train_batch_size instead",
    "max_wall_s": "no wall-clock stop in TRL; not exported",
    "update": "--no-update is a benchmark's no-update control (lr 0, no loss computed); not exported",
    "share_prompts": "our prompt-sharing forward; TRL scores each row separately (same result, more compute)",
    "sft_steps": "the warm start is not part of TRL's run: export a run after its warm start (its checkpoint is "
                 "the model), or run python -m reference_impls.sft first",
    "prompts_per_step": "mapped: per_device_train_batch_size = prompts_per_step x group_size on one process",
    "mini_batches": "mapped: steps_per_generation = mu and per_device_train_batch_size = P x G / mu (TRL shuffles "
                    "the generation batch before splitting it; ours splits it in group order)",
    "max_new_tokens_per_turn": "handled by our rollout inside TRL (rollout_func), not a GRPOConfig field",
    "train_pool": "the dataset: train_pool problems of the environment",
    "overlong_buffer": "mapped: trl.rewards.get_soft_overlong_punishment as a second reward, weight "
                       "overlong_penalty",
    # our trainer's rollout engine (vLLM is optional)
    "rollout_engine": "which engine writes our trainer's turns; the exported rollout_func uses our cached engine, "
                      "and TRL's own vLLM (--use-vllm) is the GPU path there; not exported",
}


def trl_config(cfg: dict) -> tuple[dict, list[str]]:
    """(GRPOConfig keyword arguments, notes) for a run's TrainConfig data. Raises ConfigError for an
    algorithm GRPOTrainer cannot run."""
    if cfg["algo"] != "grpo":
        raise ConfigError(f"--target trl: algorithm {cfg['algo']!r} has no multi-turn TRL trainer here; only the "
                          f"GRPO family (grpo with its loss_type / importance_sampling_level switches) exports to "
                          f"GRPOTrainer")
    from .algorithms.grpo.grpo import Config as GRPOOptions
    from .options import build

    algo = dataclasses.asdict(build(GRPOOptions, cfg.get("algo_config", {}), "option of --algo grpo"))
    kwargs = {TRAIN_TO_TRL[k]: cfg[k] for k in TRAIN_TO_TRL}
    kwargs.update({GRPO_TO_TRL[k]: algo[k] for k in GRPO_TO_TRL})
    episodes, mu = cfg["prompts_per_step"] * cfg["group_size"], int(cfg.get("mini_batches", 1))
    if episodes % mu:
        raise ConfigError(f"--target trl: --mini-batches {mu} does not divide the step's {episodes} episodes; TRL's "
                          "steps_per_generation needs equal minibatches")
    kwargs.update(
        scale_rewards="group" if algo["scale_rewards"] else "none",
        per_device_train_batch_size=episodes // mu, gradient_accumulation_steps=1,
        steps_per_generation=mu, lr_scheduler_type="constant", warmup_steps=0, adam_beta1=0.9, adam_beta2=0.99,
        output_dir=str(cfg["out"]), save_strategy="steps", logging_steps=1, report_to="none",
    )
    notes = []
    if algo["dynamic_sampling"]:
        notes.append("dynamic_sampling: " + NO_TRL_EQUIVALENT["dynamic_sampling"])
    if cfg.get("max_wall_s"):
        notes.append("max_wall_s: " + NO_TRL_EQUIVALENT["max_wall_s"])
    if cfg.get("sft_steps"):
        notes.append("sft_steps: " + NO_TRL_EQUIVALENT["sft_steps"])
    return kwargs, notes


def export_trl(run: Path, out: Path) -> dict:
    rd = RunDir(run)
    cfg = rd.read_config()
    if not cfg:
        raise RunDirError(f"--run {run}: no config.json (not a run folder)")
    kwargs, notes = trl_config(cfg)
    ckpt = rd.latest_model()
    model = str(ckpt.resolve()) if ckpt is not None else cfg["model"]
    algo = cfg.get("algo_config", {})
    spec = {"env": cfg["env"], "env_options": cfg.get("env_options", {}), "model": model,
            "train_pool": cfg["train_pool"], "seed": cfg["seed"],
            "rollout": {"max_new_tokens_per_turn": cfg["max_new_tokens_per_turn"],
                        "max_completion_tokens": cfg["max_completion_tokens"], "temperature": cfg["temperature"]},
            "overlong": {"buffer": algo.get("overlong_buffer", 0), "penalty": algo.get("overlong_penalty", 1.0)},
            "grpo_config": {**kwargs, "output_dir": "trl-output"}, "notes": notes, "exported_from": str(run)}
    files = {"export.json": json.dumps(spec, indent=1), "train_trl.py": SCRIPT,
             "accelerate_multi_gpu.yaml": yaml.safe_dump(ACCELERATE, sort_keys=False),
             "verl_grpo.yaml": verl_file(cfg, kwargs),
             "README.md": readme(cfg, spec, notes)}
    _check_out(run, out, files)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            with open(out / name, "x") as f:  # never replaces a file (one may have appeared since the check)
                f.write(text)
    except OSError as err:
        raise RunDirError(f"--out {out}: cannot write the export ({err.strerror or err})") from None
    return spec


def _check_out(run: Path, out: Path, files) -> None:
    """Refuse an ``--out`` that is a file, lies in the exported run (its checkpoints included), or holds a
    file the export would replace; nothing is written then."""
    if out.exists() and not out.is_dir():
        raise RunDirError(f"--out {out}: this is a file, not a folder; give a new or empty folder")
    target, source = out.resolve(), Path(run).resolve()
    if target == source or source in target.parents:
        raise RunDirError(f"--out {out}: inside the run folder {run}; the export goes to a folder of its own")
    taken = [name for name in files if (out / name).exists() or (out / name).is_symlink()]
    if taken:
        raise RunDirError(f"--out {out}: already holds {', '.join(taken)}; the export replaces no file, so give "
                          "a new or empty folder (or move them away)")


ACCELERATE = {"compute_environment": "LOCAL_MACHINE", "distributed_type": "MULTI_GPU", "num_machines": 1,
              "num_processes": 8, "machine_rank": 0, "mixed_precision": "bf16", "main_training_function": "main",
              "rdzv_backend": "static", "same_network": True, "use_cpu": False}


VERL_SCHEMA = Path(__file__).resolve().parent / "verl_config_schema.yaml"
_VERL_TYPES = {"float": (int, float), "int": (int,), "bool": (bool,), "str": (str,), "list": (list,), "dict": (dict,)}


def verl_schema() -> dict:
    """The pinned schema of verl's trainer config (``verl_config_schema.yaml``: its source commit and fields)."""
    return yaml.safe_load(VERL_SCHEMA.read_text())


def check_verl_config(config: dict, schema: dict | None = None) -> None:
    """Raise ConfigError naming the first field of ``config`` (a verl trainer config as nested mappings) that the
    pinned schema does not have, or whose value has the wrong type or is not one of its allowed values."""
    from .options import close_matches

    schema = schema or verl_schema()
    commit = schema["source"]["commit"][:7]

    def walk(values, fields, path):
        if not isinstance(values, dict):
            raise ConfigError(f"verl config: {path or 'the config'} must be a mapping of fields, got {values!r}",
                              field=path or None)
        for key, value in values.items():
            where = f"{path}.{key}" if path else str(key)
            if key not in fields:
                raise ConfigError(f"verl config: unknown field {where}{close_matches(str(key), fields)} (verl "
                                  f"{commit}: {', '.join(map(str, fields))} there)", field=where)
            rule = fields[key]
            if isinstance(rule, dict):
                walk(value, rule, where)
                continue
            if rule.startswith("one of: "):
                allowed = [a.strip() for a in rule[len("one of: "):].split(",")]
                if value not in allowed:
                    raise ConfigError(f"verl config: {where} is {value!r}; verl {commit} takes one of "
                                      f"{', '.join(allowed)}", field=where)
                continue
            kinds = rule.split("|")
            if value is None and "null" in kinds:
                continue
            ok = any(isinstance(value, _VERL_TYPES[k]) and not (isinstance(value, bool) and k in ("int", "float"))
                     for k in kinds if k != "null")
            if not ok:
                raise ConfigError(f"verl config: {where} must be {' or '.join(kinds)}, got {value!r}", field=where)

    walk(config, schema["fields"], "")


def verl_config(cfg: dict, kwargs: dict) -> dict:
    """The run's GRPO recipe in verl's trainer config (checked against the pinned schema by the export)."""
    return {"algorithm": {"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": kwargs["scale_rewards"] != "none",
                          "use_kl_in_reward": False},
            "data": {"train_batch_size": cfg["prompts_per_step"], "max_response_length": cfg["max_completion_tokens"]},
            "actor_rollout_ref": {
                "actor": {"optim": {"lr": cfg["lr"], "weight_decay": cfg["weight_decay"]},
                          "clip_ratio_low": kwargs["epsilon"], "clip_ratio_high": kwargs["epsilon_high"],
                          "use_kl_loss": kwargs["beta"] > 0, "kl_loss_coef": kwargs["beta"], "kl_loss_type": "low_var_kl",
                          "loss_agg_mode": {"grpo": "seq-mean-token-mean", "dapo": "token-mean",
                                            "dr_grpo": "seq-mean-token-sum-norm"}[kwargs["loss_type"]],
                          "grad_clip": cfg["max_grad_norm"], "ppo_epochs": kwargs["num_iterations"],
                          # verl counts a minibatch in prompts: mu minibatches of P / mu prompts (left out, and
                          # said in the file's header, when mu does not divide P)
                          **({"ppo_mini_batch_size": cfg["prompts_per_step"] // kwargs["steps_per_generation"]}
                             if cfg["prompts_per_step"] % kwargs["steps_per_generation"] == 0 else {})},
                "rollout": {"n": cfg["group_size"], "temperature": cfg["temperature"],
                            "multi_turn": {"enable": True, "max_assistant_turns": None}}},
            "trainer": {"total_training_steps": cfg["steps"], "save_freq": cfg["checkpoint_every"]}}


def verl_file(cfg: dict, kwargs: dict) -> str:
    """verl_grpo.yaml: the header (what is not run or not mapped) and the config, checked against the schema."""
    config = verl_config(cfg, kwargs)
    check_verl_config(config)
    mu = kwargs["steps_per_generation"]
    header = ["verl GRPO config for the same hyperparameters. NOT RUN HERE (no Ray / vLLM / GPU on these machines); "
              f"its fields are checked against verl's config at commit {verl_schema()['source']['commit'][:7]} "
              "(reference_impls/verl_config_schema.yaml).",
              f"The environment {cfg['env']!r} is reached as a verl tool: write its tool config with "
              f"reference_impls.verl_tool.tool_config({cfg['env']!r}) and name it in "
              "actor_rollout_ref.rollout.multi_turn.tool_config_path (not run here)."]
    if "ppo_mini_batch_size" not in config["actor_rollout_ref"]["actor"]:
        header.append(f"ppo_mini_batch_size is left to verl: mu = {mu} does not divide {cfg['prompts_per_step']} prompts.")
    return "".join(f"# {line}\n" for line in header) + yaml.safe_dump(config, sort_keys=False)


SCRIPT = '''"""Train an exported Agentic RL Atlas recipe with TRL's GRPOTrainer (see README.md beside this file).

    python train_trl.py [--max-steps N] [--output-dir DIR] [--use-cpu] [--use-vllm --vllm-mode colocate|server]
    accelerate launch --config_file accelerate_multi_gpu.yaml train_trl.py
"""
import argparse
import json
from pathlib import Path

from reference_impls.trl_bridge import build_trainer

HERE = Path(__file__).resolve().parent


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\\n")[0])
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--output-dir", default=None)
    p.add_argument("--use-cpu", action="store_true")
    p.add_argument("--use-vllm", action="store_true")
    p.add_argument("--vllm-mode", choices=("colocate", "server"), default=None)
    args = p.parse_args(argv)
    spec = json.loads((HERE / "export.json").read_text())
    overrides = {k: v for k, v in {"max_steps": args.max_steps, "output_dir": args.output_dir,
                                   "use_cpu": args.use_cpu or None, "use_vllm": args.use_vllm or None,
                                   "vllm_mode": args.vllm_mode}.items() if v is not None}
    trainer = build_trainer(spec, **overrides)
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
'''


def readme(cfg: dict, spec: dict, notes: list[str]) -> str:
    rows = "\n".join(f"| `{ours}` | `{trl}` | `{spec['grpo_config'].get(trl)}` |" for ours, trl in TRAIN_TO_TRL.items())
    rows += "\n" + "\n".join(f"| `{ours}` (GRPO option) | `{trl}` | `{spec['grpo_config'].get(trl)}` |"
                             for ours, trl in GRPO_TO_TRL.items())
    rows += (f"\n| `scale_rewards` (GRPO option) | `scale_rewards` | `{spec['grpo_config']['scale_rewards']}` |"
             f"\n| `prompts_per_step` x `group_size` | `per_device_train_batch_size` | "
             f"`{spec['grpo_config']['per_device_train_batch_size']}` |")
    unmapped = "\n".join(f"- `{k}`: {v}" for k, v in NO_TRL_EQUIVALENT.items())
    active = "\n".join(f"- {n}" for n in notes) or "- none"
    return f"""# TRL export of `{spec['exported_from']}`

Algorithm `{cfg['algo']}` on environment `{cfg['env']}` (options `{json.dumps(spec['env_options'])}`), model
`{spec['model']}`. The environment runs inside TRL through our rollout (`rollout_func`, see
`reference_impls/trl_bridge.py`): the same problems, tool tags, loss masks (`env_mask`) and reward as in the
Atlas trainer. Requires this project installed (`pip install -e <atlas repo> --no-deps` after its
requirements) and TRL 1.16.

## Commands
```bash
python train_trl.py --use-cpu --max-steps 2          # a CPU smoke run (verified on the Atlas CI machine)
python train_trl.py                                  # one GPU
accelerate launch --config_file accelerate_multi_gpu.yaml train_trl.py   # N GPUs (edit num_processes)
```
- **vLLM**: our rollout drives generation with the policy model itself (`rollout_func`), so TRL's
  `use_vllm` does not speed up this path; for vLLM generation use a model whose chat template renders
  tool calls and the `environment_factory` path (`trl_bridge.environment_class`), with
  `--use-vllm --vllm-mode colocate` (one process shares the GPU) or `--vllm-mode server` (start
  `trl vllm-serve --model MODEL` on separate GPUs first). Not verified here (no GPU, no vLLM).
- **DeepSpeed ZeRO**: `accelerate launch --use_deepspeed --zero_stage 2 train_trl.py` (ZeRO-3 for models that
  do not fit one GPU). Not verified here.

## Our names -> TRL's (values of this run)
| ours | GRPOConfig | value |
|---|---|---|
{rows}

Also set to match our trainer: `lr_scheduler_type=constant`, `adam_beta2=0.99`, `steps_per_generation=1`,
`gradient_accumulation_steps=1`.

## No TRL equivalent
{unmapped}

Settings of this run that TRL will not honour:
{active}
"""


def export_archive(run: Path) -> bytes:
    """The TRL export of ``run`` as a zip archive (what the Lab's "Export for a cluster" downloads)."""
    import io
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / f"{Path(run).name}-trl"
        export_trl(Path(run), folder)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for f in sorted(folder.iterdir()):
                zf.write(f, f"{folder.name}/{f.name}")
        return buffer.getvalue()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m reference_impls.export", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="run folder (config.json, checkpoints/)")
    p.add_argument("--target", choices=("trl",), default="trl")
    p.add_argument("--out", required=True, help="folder to write")
    args = p.parse_args(argv)
    try:
        spec = export_trl(Path(args.run), Path(args.out))
    except (ConfigError, RunDirError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps({"out": args.out, "model": spec["model"], "notes": spec["notes"]}))
    return 0


# -- the row of node fw-rlhf-llm: a recipe trained here, then carried to TRL and verl by this module --
IMPLEMENTATIONS = (
    Implementation(
        "calculator-grpo-trl", "GRPO recipe exported to TRL and verl (calculator)", "grpo", "calculator",
        "The calculator GRPO recipe as RLHF/LLM fine-tuning frameworks run it: train it here for a few steps, then "
        "python -m reference_impls.export --run RUN --target trl --out DIR writes the same recipe as a TRL "
        "GRPOTrainer script and as a verl trainer config.",
        nodes=("fw-rlhf-llm",),
        changes="Same loss and options as calculator-grpo; what this row adds is the way out to the frameworks "
                "the node is about. The export (reference_impls/export.py, export_trl; the Runs page's \"Export "
                "for a cluster\" downloads the same folder as a zip) writes into DIR: train_trl.py (TRL's "
                "GRPOTrainer with our multi-turn rollout, reference_impls/trl_bridge.py, so the problems, tool "
                "tags, loss masks and reward are this environment's), export.json (GRPOConfig under TRL's names), "
                "accelerate_multi_gpu.yaml, verl_grpo.yaml (the same hyperparameters as a verl trainer config, "
                "checked offline field by field against the schema of verl's documented config pinned to one "
                "verl commit, reference_impls/verl_config_schema.yaml: an unknown field, wrong type or value "
                "stops the export naming it) and a README with the name map and what has no equivalent. On a GPU "
                "cluster, with this project installed (pip install -e . --no-deps after its requirements) and TRL "
                "1.16: python DIR/train_trl.py on one GPU, accelerate launch --config_file "
                "DIR/accelerate_multi_gpu.yaml DIR/train_trl.py on N GPUs of a node (num_processes = N; "
                "accelerate's --use_deepspeed --zero_stage 2 for bigger models); for verl, each field of "
                "verl_grpo.yaml overrides verl's default trainer config (python -m verl.trainer.main_ppo "
                "algorithm.adv_estimator=grpo ... with data.train_files and actor_rollout_ref.model.path added), "
                "the environment reached as a verl tool (reference_impls/verl_tool.py, row "
                "calculator-grpo-verl-tool). Checked here: the TRL script trains 2 steps on CPU "
                "(tests/reference_impls/test_trl_bridge.py); neither framework's GPU path (vLLM, DeepSpeed, Ray) "
                "was run on these machines.",
        paper="TRL (Hugging Face's transformer reinforcement learning library) and verl (HybridFlow, arXiv "
              "2409.19256), the exported recipe's algorithm being GRPO (arXiv 2402.03300)"),
)


if __name__ == "__main__":
    sys.exit(main())
