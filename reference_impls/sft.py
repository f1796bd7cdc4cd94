"""Supervised warm start on synthetic tool-use transcripts (the step before RL).

Usage::

    python -m reference_impls.sft --model smollm2-135m-instruct --out runs/sft --n 96 --steps 12
    python -m reference_impls.train --algo grpo --model runs/sft --out runs/grpo ...   # RL from it

Each transcript is the env's own demonstration of a correct solution, tokenised segment by segment
exactly as the rollout does (model segments as the model would write them, env segments as the
env appends them), so SFT and RL see identical token boundaries::

    [prompt: system + user + assistant header]  loss mask 0
    <calc>23+45</calc>                          loss mask 1   (model)
    <result>68</result>                         loss mask 0   (env: the model never learns to
                                                               predict tool output)
    <answer>68</answer><|im_end|>               loss mask 1   (model)

The trainer can run the same step in-process before RL (``train --sft-steps N``, the Lab's presets), and the
comparison grid runs it once per environment (``lab.compare.warm``): both call ``warm_start`` with
``WarmStartSettings``.

Loss: mean negative log-likelihood over the model tokens of the batch,
``L = -(1/sum m) sum_t m_t log pi(x_t | x_<t)``.

The problems demonstrated are the environment's defaults narrowed by its ``demonstration_options``
(the calculator demonstrates only ``calculator.SFT_FAMILIES``, deliberately narrow: the remaining
families are where RL has headroom); any environment option given here (``--levels 1,2``,
``--env-option families=``) overrides them. The output folder is a ``save_pretrained`` model + tokenizer that
``load_policy(folder)`` (and so every CLI's ``--model``) accepts.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

from .common import adamw, collate, completion_logprobs, masked_mean, micro_batches, seed_everything
from .envs import ENVS, get_env, load_env_module
from .models import load_policy
from .options import ConfigError, add_flags, given_flags, key_values
from .rollout import Sample, render_prompt


def demonstrated_config(task, env_config=None):
    """The env config a demonstration of ``task`` is played under (``demonstration_sample``): the run's
    (typed, or a mapping) for an env whose demonstration follows its options, else the env's defaults."""
    return task.config_of(env_config if task.demonstration_takes_config else None)


def demonstration_sample(tokenizer, task, problem, env_config=None) -> Sample:
    """``problem``'s demonstration as a Sample. An env whose demonstration follows its options
    (``EnvSpec.demonstration_takes_config``: moves per tag, planner hints, results per search) is demonstrated
    in an episode built with ``env_config``, the run's, so that SFT shows the format its rollouts are played
    in. Any other env's transcript is written for its defaults, so its prompt is too: zoom's with
    ``max_zooms=0`` would forbid the zooms its demonstration makes."""
    env_config = demonstrated_config(task, env_config)
    env = task.make(problem, env_config)
    sample = Sample(prompt_ids=render_prompt(tokenizer, env.reset()))
    segments = task.demonstrate(problem, env_config)
    segments[-1] = (segments[-1][0], segments[-1][1] + tokenizer.eos_token)  # the model ends its turn
    for role, text in segments:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        sample.completion_ids += ids
        sample.loss_mask += [1 if role == "model" else 0] * len(ids)
        sample.old_logprobs += [0.0] * len(ids)
        sample.segments.append({"role": role, "text": text})
    return sample


def demonstrations(tokenizer, env: str, n: int, seed: int = 0, options: dict | None = None,
                   episode_options: dict | None = None) -> list[Sample]:
    """``n`` demonstration transcripts of ``env``'s train split, tokenised like rollouts.

    Drawn from their own seed stream (``seed + 7919``) so the SFT problems are not the first RL problems.
    The problems' options are the env's ``demonstration_options`` overridden by ``options``. The episodes
    (prompt, moves per tag, hints, results per search) are built with ``episode_options`` when given, else with
    ``options`` (the env's defaults where neither says): a run's warm start passes the run's env options there,
    so SFT shows the format its rollouts are played in, while its problems stay the demonstrated ones."""
    task = get_env(env)
    problems = task.problems("train", n=n, seed=seed + 7919, **{**task.demonstration_options, **(options or {})})
    episode = task.config_of(options if episode_options is None else episode_options)  # typed once
    return [demonstration_sample(tokenizer, task, pr, episode) for pr in problems]


BATCH_SIZE = 8  # transcripts per SFT step


def sft(model, tokenizer, samples: list[Sample], steps: int, batch_size: int = BATCH_SIZE, lr: float = 5e-5,
        seed: int = 0, log=None, micro_batch_size: int | None = None, micro_batch_tokens: int = 0) -> list[float]:
    """``steps`` AdamW steps on shuffled mini-batches of ``samples``; returns the loss per step.
    ``log(step, loss)`` is called after every step (it may raise to stop early). ``micro_batch_size`` and
    ``micro_batch_tokens`` (memory only): at most that many sequences and padded tokens per forward/backward
    (``common.micro_batches``; None / 0 = no bound); a batch split into micro-batches takes the same step, since
    each part's token log-likelihoods are summed and divided by the whole batch's model-token count."""
    seed_everything(seed)
    device = next(model.parameters()).device
    optimizer = adamw(model.parameters(), lr=lr)
    model.train()
    order, losses = [], []
    rng = random.Random(seed)
    micro = max(1, micro_batch_size or batch_size)
    for step in range(steps):
        if len(order) < batch_size:
            order += rng.sample(range(len(samples)), len(samples))
        idx, order = order[:batch_size], order[batch_size:]
        optimizer.zero_grad(set_to_none=True)
        parts = micro_batches(samples, idx, micro, micro_batch_tokens)
        if len(parts) == 1:  # one pass: the masked mean over the batch
            batch = collate([samples[i] for i in idx], tokenizer.pad_token_id, device)
            logps, _ = completion_logprobs(model, batch)
            loss = -masked_mean(logps, batch["loss_mask"])
            loss.backward()
        else:  # long transcripts (TextWorld's): the same loss, accumulated over parts of the batch
            tokens = max(1.0, float(sum(sum(samples[i].loss_mask) for i in idx)))
            loss = torch.zeros(())
            for part_idx in parts:
                batch = collate([samples[i] for i in part_idx], tokenizer.pad_token_id, device)
                logps, _ = completion_logprobs(model, batch)
                part = -(logps * batch["loss_mask"]).sum() / tokens
                part.backward()
                loss = loss + part.detach().cpu()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        if log:
            log(step + 1, losses[-1])
    model.eval()
    return losses


@dataclasses.dataclass(frozen=True)
class WarmStartSettings:
    """What a warm start trains: ``steps`` SFT steps at ``lr`` on ``examples`` demonstrations of ``env``, seeded
    with ``seed``. ``problem_options``: which problems are demonstrated (over the env's ``demonstration_options``;
    None = those alone). ``episode_config``: the env config the episodes are played in (typed, or a mapping; None =
    ``problem_options``, then the env's defaults), so SFT shows the format the run's rollouts use.
    ``micro_batch_size``, ``micro_batch_tokens``: memory only (``sft``)."""

    env: str
    examples: int
    steps: int
    lr: float
    seed: int
    micro_batch_size: int | None = None
    micro_batch_tokens: int = 0
    problem_options: dict | None = None
    episode_config: Any = None

    @classmethod
    def of_run(cls, cfg, env_config) -> "WarmStartSettings":
        """A training run's warm start (a ``train.TrainConfig`` and the run's typed env config): its episodes are
        the run's when it demonstrates its own env (another env's options would not fit the transcripts)."""
        same_env = not cfg.sft_env or cfg.sft_env == cfg.env
        return cls(env=cfg.sft_env or cfg.env, examples=cfg.sft_examples, steps=cfg.sft_steps, lr=cfg.sft_lr,
                   seed=cfg.seed, micro_batch_size=cfg.micro_batch_size, micro_batch_tokens=cfg.micro_batch_tokens,
                   episode_config=env_config if same_env else None)


def warm_start(model, tokenizer, settings: WarmStartSettings,
               log: Callable[[int, float], None] | None = None) -> list[float]:
    """The supervised warm start before RL: ``settings.examples`` demonstrations (``demonstrations``), then
    ``settings.steps`` SFT steps on them (``sft``); ``model`` is trained in place. ``log(step, loss)`` after each
    step (it may raise to stop). Returns the loss per step (empty when ``steps`` is 0). The one warm start of the
    trainer (``--sft-steps``) and of the comparison grid: equal settings give equal weights."""
    if settings.steps <= 0:
        return []
    samples = demonstrations(tokenizer, settings.env, settings.examples, settings.seed,
                             options=settings.problem_options, episode_options=settings.episode_config)
    return sft(model, tokenizer, samples, settings.steps, lr=settings.lr, seed=settings.seed, log=log,
               micro_batch_size=settings.micro_batch_size, micro_batch_tokens=settings.micro_batch_tokens)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument("--env", default="calculator")
    peek.add_argument("--env-module", action="append", default=[])
    known, _ = peek.parse_known_args(argv)
    p = argparse.ArgumentParser(prog="python -m reference_impls.sft", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--out", required=True, help="folder for the fine-tuned model + tokenizer")
    p.add_argument("--env", default="calculator", help="whose demonstrations")
    p.add_argument("--env-module", action="append", default=[], help="import a module that registers an env")
    p.add_argument("--n", type=int, default=96, help="number of synthetic transcripts")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    p.add_argument("--micro-batch-size", type=int, default=None,
                   help="sequences per forward/backward (memory only; default: the whole batch)")
    p.add_argument("--micro-batch-tokens", type=int, default=0,
                   help="padded tokens per forward/backward, a longer transcript alone (memory only; 0: no bound)")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--env-option", action="append", default=[], metavar="KEY=VALUE")
    try:
        for module in known.env_module:
            load_env_module(module)
        taken = {"model", "out", "env", "env_module", "n", "steps", "batch_size", "micro_batch_size", "micro_batch_tokens", "lr",
                 "seed", "env_option"}
        if known.env in ENVS:
            add_flags(p.add_argument_group(f"options of --env {known.env} (which problems are demonstrated)"),
                      ENVS[known.env].option_specs(), "env", taken)
        args = p.parse_args(argv)
        options = {**given_flags(args, "env"), **key_values(args.env_option)}
        get_env(args.env).options({**get_env(args.env).demonstration_options, **options})  # validate early
        if args.micro_batch_tokens < 0:
            raise ConfigError(f"--micro-batch-tokens: {args.micro_batch_tokens} is negative; give a bound in padded "
                              "tokens, or 0 for none", field="micro_batch_tokens")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    model, tokenizer = load_policy(args.model, seed=args.seed)
    samples = demonstrations(tokenizer, args.env, args.n, args.seed, options)
    t0 = time.time()

    def log(step, loss):
        print(f"sft step {step}/{args.steps} loss {loss:.4f} {time.time() - t0:.0f}s", file=sys.stderr, flush=True)

    losses = sft(model, tokenizer, samples, args.steps, args.batch_size, args.lr, args.seed, log,
                 micro_batch_size=args.micro_batch_size, micro_batch_tokens=args.micro_batch_tokens)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "sft.json").write_text(json.dumps({**{k.replace(":", "_"): v for k, v in vars(args).items()},
                                              "losses": losses, "wall_s": time.time() - t0}, indent=2))
    print(json.dumps({"out": str(out), "final_loss": losses[-1] if losses else None, "wall_s": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
