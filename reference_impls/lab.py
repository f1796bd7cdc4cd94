"""What the Lab offers: implementations, their presets and hyperparameters, and taxonomy links.

Everything here is plain data + validation, unit-tested without Streamlit; the Lab page renders it.
An implementation is listed only if its algorithm and environment are registered in the trainer
(``train.ALGORITHMS``, ``envs.ENVS``), so a node never links to something that cannot run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Implementation:
    id: str
    title: str
    algo: str
    env: str
    source: str  # file under reference_impls/ shown beside the curves
    equation: str  # LaTeX of the loss
    summary: str
    algo_defaults: dict = field(default_factory=dict)


@dataclass(frozen=True)
class HParam:
    name: str
    kind: str  # int | float | bool | choice | text
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()


GRPO_EQ = (
    r"\mathcal{L}=-\frac{1}{G}\sum_{i=1}^{G}\frac{1}{|o_i|}\sum_{t}m_{i,t}\Big[\min\big(w_{i,t}\hat A_i,\;"
    r"\mathrm{clip}(w_{i,t},1-\varepsilon_{low},1+\varepsilon_{high})\hat A_i\big)-\beta\,\mathbb{D}^{k3}_{i,t}\Big],"
    r"\quad \hat A_i=\frac{r_i-\mathrm{mean}(r)}{\mathrm{std}(r)}"
)
RLOO_EQ = r"\mathcal{L}=-\frac{1}{G}\sum_{i}\Big(r_i-\frac{1}{G-1}\sum_{j\ne i}r_j\Big)\sum_t m_{i,t}\log\pi_\theta(o_{i,t}\mid q,o_{i,<t})"
PPO_EQ = (
    r"\mathcal{L}=-\mathbb{E}_t\big[\min(w_t\hat A_t,\mathrm{clip}(w_t,1-\varepsilon,1+\varepsilon)\hat A_t)\big]"
    r"+c_v\,\mathbb{E}_t\big[\max\big((V_\phi-R_t)^2,(\mathrm{clip}(V_\phi,V_{old}\pm\varepsilon_v)-R_t)^2\big)\big],"
    r"\quad \hat A_t=\sum_l(\gamma\lambda)^l\delta_{t+l}"
)
DPO_EQ = (
    r"\mathcal{L}_{DPO}=-\log\sigma\Big(\beta\Big[\log\frac{\pi_\theta(y_w|x)}{\pi_{ref}(y_w|x)}-"
    r"\log\frac{\pi_\theta(y_l|x)}{\pi_{ref}(y_l|x)}\Big]\Big),\quad \mathcal{L}_{IPO}=\Big(h-\frac{1}{2\beta}\Big)^2"
)

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation("calculator-grpo", "GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py", GRPO_EQ,
                   "A policy that calls a calculator tool over several turns, trained with group-relative advantages."),
    Implementation("calculator-dapo", "DAPO tool agent (calculator)", "grpo", "calculator", "grpo.py", GRPO_EQ,
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32}),
    Implementation("calculator-dr-grpo", "Dr.GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py", GRPO_EQ,
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}),
    Implementation("calculator-gspo", "GSPO tool agent (calculator)", "grpo", "calculator", "grpo.py", GRPO_EQ,
                   "GRPO with a sequence-level importance ratio (GSPO).", {"importance_sampling_level": "sequence"}),
    Implementation("calculator-rloo", "RLOO tool agent (calculator)", "rloo", "calculator", "rloo.py", RLOO_EQ,
                   "REINFORCE with a leave-one-out baseline over the group."),
    Implementation("calculator-ppo", "PPO tool agent (calculator)", "ppo", "calculator", "ppo.py", PPO_EQ,
                   "PPO with a value head, token-level GAE over model tokens, clipped policy and value losses."),
    Implementation("calculator-dpo", "DPO on tool-use preference pairs", "dpo", "calculator", "dpo.py", DPO_EQ,
                   "Offline preference optimisation on correct vs incorrect rollouts of the same prompt."),
    Implementation("calculator-ipo", "IPO on tool-use preference pairs", "dpo", "calculator", "dpo.py", DPO_EQ,
                   "DPO with IPO's squared loss on the preference margin.", {"loss": "ipo"}),
    Implementation("search-grpo", "Search-R1-style agent (GRPO)", "grpo", "search", "envs/search.py", GRPO_EQ,
                   "An agent whose tool searches this catalog; rewarded by exact match of its final answer."),
    Implementation("search-ppo", "Search-R1-style agent (PPO)", "ppo", "search", "envs/search.py", PPO_EQ,
                   "The search agent trained with PPO and a critic."),
    Implementation("memory-grpo", "Memory-R1-style memory manager (GRPO)", "grpo", "memory", "envs/memory.py", GRPO_EQ,
                   "A memory manager choosing ADD/UPDATE/DELETE/NOOP, rewarded by a frozen answer agent's exact match."),
    Implementation("memory-ppo", "Memory-R1-style memory manager (PPO)", "ppo", "memory", "envs/memory.py", PPO_EQ,
                   "The memory manager trained with PPO and a critic."),
)

# taxonomy node -> implementation id (every node listed here has a "Run this" when the implementation exists)
NODE_LINKS: dict[str, str] = {
    "rl-algorithms": "calculator-grpo", "alg-grpo-family": "calculator-grpo", "alg-grpo": "calculator-grpo",
    "alg-dapo": "calculator-dapo", "alg-dr-grpo": "calculator-dr-grpo", "alg-gspo": "calculator-gspo",
    "alg-reinforce": "calculator-rloo", "alg-ppo-family": "calculator-ppo", "alg-ppo": "calculator-ppo",
    "alg-dpo-family": "calculator-dpo", "alg-dpo": "calculator-dpo", "alg-ipo": "calculator-ipo",
    "tool-use": "calculator-grpo", "tool-use-react-style": "calculator-grpo",
    "tool-use-tool-integrated-rl": "calculator-grpo", "tool-use-long-horizon-tir": "calculator-grpo",
    "math": "calculator-grpo", "math-informal": "calculator-grpo",
    "search-research": "search-grpo", "search-open-source": "search-grpo", "search-external-web": "search-grpo",
    "search-internal-knowledge": "search-grpo",
    "memory": "memory-grpo", "memory-rag-style": "memory-grpo", "memory-token-level": "memory-grpo",
    "memory-structured": "memory-grpo",
}

TRAIN_HPARAMS: tuple[HParam, ...] = (
    HParam("steps", "int", "Optimisation steps; each samples a fresh batch of problems.", 1, 5000),
    HParam("seed", "int", "Seeds problem sampling, generation and initialisation: same seed, same run.", 0, 2**31 - 1),
    HParam("lr", "float", "AdamW learning rate. 1e-6..2e-5 for SmolLM2; the tiny model tolerates far more.", 1e-8, 1.0),
    HParam("prompts_per_step", "int", "P: distinct problems per step.", 1, 256),
    HParam("group_size", "int", "G: samples per problem; group-relative methods compare within a group.", 1, 64),
    HParam("micro_batch_size", "int", "Sequences per forward/backward; lower it if memory runs short.", 1, 512),
    HParam("max_new_tokens_per_turn", "int", "Model tokens per turn before the turn is cut.", 1, 1024),
    HParam("max_completion_tokens", "int", "Model + tool tokens per episode; longer episodes are truncated.", 1, 4096),
    HParam("temperature", "float", "Sampling temperature of rollouts (1.0 = the policy itself).", 0.01, 3.0),
    HParam("checkpoint_every", "int", "Steps between checkpoints (stop also writes one).", 1, 10000),
    HParam("sft_steps", "int", "Supervised warm start on the task's demonstrations before RL (0 = none). "
           "SmolLM2 never writes a valid tool call without it, so RL from the base model sees no reward.", 0, 1000),
)
ALGO_HELP: dict[str, str] = {
    "loss_type": "How token losses are averaged: grpo (per sequence, then mean), dr_grpo (sum / constant), dapo (token mean).",
    "scale_rewards": "Divide advantages by the group's reward std (GRPO); off = Dr.GRPO.",
    "epsilon_low": "Clip range below 1 for the importance ratio.",
    "epsilon_high": "Clip range above 1; DAPO's clip-higher raises it to 0.28.",
    "beta": "Weight of the k3 KL penalty to the frozen reference; 0 skips the reference model.",
    "importance_sampling_level": "token ratios (GRPO) or one sequence-level ratio per sample (GSPO).",
    "dynamic_sampling": "Drop groups whose rewards are all equal (they carry no gradient): DAPO.",
    "overlong_buffer": "DAPO overlong shaping: tokens before the length limit where a soft penalty starts (0 = off).",
    "overlong_penalty": "DAPO overlong shaping: penalty reached at the length limit.",
    "num_iterations": "Optimisation passes over each rollout batch (ratios differ from 1 when > 1).",
    "epsilon": "Clip range of the importance ratio.",
    "normalize_by_length": "Average token log-probs per sequence instead of summing them.",
    "critic_warmup_steps": "PPO: the first N steps train only the critic; a cold critic's advantages are noise "
                           "and can wreck the policy in the first steps.",
    "critic_lr": "PPO: learning rate of the critic (0 = the policy's).",
}
ALGO_BOUNDS: dict[str, tuple[float, float]] = {
    "epsilon_low": (0.0, 1.0), "epsilon_high": (0.0, 10.0), "beta": (0.0, 10.0), "overlong_buffer": (0, 4096),
    "overlong_penalty": (0.0, 100.0), "num_iterations": (1, 16), "epsilon": (0.0, 10.0),
    "critic_warmup_steps": (0, 10000), "critic_lr": (0.0, 1.0),
}
ALGO_CHOICES: dict[str, tuple[str, ...]] = {
    "loss_type": ("grpo", "dr_grpo", "dapo"), "importance_sampling_level": ("token", "sequence"), "loss": ("sigmoid", "ipo"),
}


# train.ALGORITHMS's keys (a test keeps them equal): listing them here spares pages that only need
# to know *whether* something can run the import of the trainer (torch + transformers, seconds).
ALGORITHM_NAMES = ("grpo", "rloo", "ppo", "dpo")


def _algorithm_module(name: str):
    import importlib

    return importlib.import_module(f"reference_impls.{name}")


def available() -> list[Implementation]:
    from reference_impls.envs import ENVS

    return [i for i in IMPLEMENTATIONS if i.algo in ALGORITHM_NAMES and i.env in ENVS]


def get(impl_id: str) -> Implementation:
    for impl in available():
        if impl.id == impl_id:
            return impl
    raise KeyError(f"unknown or unavailable implementation '{impl_id}'")


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node (only those that can run)."""
    impl_id = NODE_LINKS.get(node_id)
    if impl_id is None:  # most nodes: answer without importing anything
        return []
    return [i for i in available() if i.id == impl_id]


def algo_hparams(impl: Implementation) -> list[HParam]:
    out = []
    for f in dataclasses.fields(_algorithm_module(impl.algo).Config):
        kind = "bool" if isinstance(f.default, bool) else "choice" if f.name in ALGO_CHOICES else \
            "int" if isinstance(f.default, int) else "float" if isinstance(f.default, float) else "text"
        low, high = ALGO_BOUNDS.get(f.name, (None, None))
        out.append(HParam(f.name, kind, ALGO_HELP.get(f.name, "See the algorithm's Config docstring."), low, high,
                          ALGO_CHOICES.get(f.name, ())))
    return out


def default_config(impl: Implementation) -> dict:
    """Trainer defaults for this implementation (TrainConfig + the algorithm's Config + the preset switches)."""
    from reference_impls.train import TrainConfig

    base = dataclasses.asdict(TrainConfig())
    config = {h.name: base[h.name] for h in TRAIN_HPARAMS}
    config.update({f.name: f.default for f in dataclasses.fields(_algorithm_module(impl.algo).Config)})
    config.update(impl.algo_defaults)
    config.update(algo=impl.algo, env=impl.env, model="tiny")
    return config


PRESETS: dict[str, dict] = {
    # the tiny model is random: it shows the machinery (rollouts, masks, curves), not learning
    "quick": {"label": "Quick demo (tiny random model, about a minute: the machinery, not learning)", "model": "tiny", "steps": 20, "prompts_per_step": 2,
              "group_size": 4, "max_new_tokens_per_turn": 16, "max_completion_tokens": 48, "lr": 1e-3,
              "checkpoint_every": 5},
    # the recipe of benchmarks/calculator_learning.py: 12 SFT steps (~2 min), then RL
    "smollm2": {"label": "Real run (SmolLM2-135M-Instruct, SFT warm start then RL, ~20-30 min on a laptop CPU)",
                "model": "smollm2-135m-instruct", "steps": 30, "prompts_per_step": 4, "group_size": 8,
                "max_new_tokens_per_turn": 24, "max_completion_tokens": 96, "lr": 2e-5, "checkpoint_every": 5,
                "sft_steps": 12},
}
# per-environment adjustments of a preset (the memory env's warm start must not use operation labels;
# its search episodes need longer turns)
ENV_PRESET_OVERRIDES: dict[tuple[str, str], dict] = {
    # k=1, questions=3 (asked about the turn's slot and the shown memory's fact, the env's default focus):
    # the setting in which PPO's manager passed add-only on the held-out dialogues (0.542 vs 0.525 after
    # 100 steps; GRPO with it: 0.408). With one random extra question per decision an overwrite went
    # unpunished and PPO learned to overwrite (docs/results_memory.md)
    ("smollm2", "memory"): {"sft_env": "memory-format", "sft_steps": 8, "max_new_tokens_per_turn": 8,
                            "max_completion_tokens": 8, "lr": 1e-5, "env_options": {"questions": 3, "k": 1}},
    ("smollm2", "calculator"): {"levels": "2,3"},  # as benchmarks/calculator_learning.py trains
    ("smollm2", "search"): {"max_new_tokens_per_turn": 40, "max_completion_tokens": 256, "lr": 1e-5,
                            "group_size": 4},
}


#: preset settings the page does not show as fields; they travel with the submitted config unchanged
HIDDEN_KEYS = ("sft_env", "levels", "env_options")


# per-algorithm adjustments: PPO's critic starts cold on a real model (docs/results_part2.md)
ALGO_PRESET_OVERRIDES: dict[tuple[str, str], dict] = {
    ("smollm2", "ppo"): {"critic_warmup_steps": 2, "critic_lr": 5e-5},
}


#: what each preset can show, in words the Lab prints under the preset choice
PRESET_NOTES: dict[str, str] = {
    "quick": "The tiny model is randomly initialised and never solves the task: its reward stays near 0. "
             "Use it to see the loop (rollouts, tool tokens masked, the loss, the curves) in a minute.",
    "smollm2": "SmolLM2-135M-Instruct: 12 supervised warm-start steps, then RL. With GRPO on the calculator "
               "these settings (with loss_type dapo) are those of benchmarks/calculator_learning.py, which took "
               "held-out accuracy from 17.5 % (warm start only) to 38 % after 21 GRPO steps, 22 minutes on "
               "2 CPU cores (docs/results_reference_impls.md).",
}


def preset_config(impl: Implementation, preset: str) -> dict:
    config = default_config(impl)
    config.update({k: v for k, v in PRESETS[preset].items() if k != "label"})
    config.update(ENV_PRESET_OVERRIDES.get((preset, impl.env), {}))
    config.update(ALGO_PRESET_OVERRIDES.get((preset, impl.algo), {}))
    return config


def validate(impl: Implementation, config: dict) -> dict[str, str]:
    """{field: message} for every invalid hyperparameter (empty = valid). Checked before any process starts."""
    errors: dict[str, str] = {}
    specs = {h.name: h for h in (*TRAIN_HPARAMS, *algo_hparams(impl))}
    for name, value in config.items():
        spec = specs.get(name)
        if spec is None:
            continue
        if spec.kind == "bool":
            if not isinstance(value, bool):
                errors[name] = "must be true or false"
            continue
        if spec.kind == "choice":
            if value not in spec.choices:
                errors[name] = f"must be one of {', '.join(spec.choices)}"
            continue
        if spec.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (spec.kind == "int" and int(value) != value):
                errors[name] = f"must be {'an integer' if spec.kind == 'int' else 'a number'}"
                continue
            if value != value:  # NaN
                errors[name] = "must be a number"
                continue
            if spec.low is not None and value < spec.low:
                errors[name] = f"must be at least {spec.low:g}"
            elif spec.high is not None and value > spec.high:
                errors[name] = f"must be at most {spec.high:g}"
    if not errors.get("max_new_tokens_per_turn") and config.get("max_new_tokens_per_turn", 0) > config.get("max_completion_tokens", 1e9):
        errors["max_new_tokens_per_turn"] = "cannot exceed max_completion_tokens"
    if impl.algo in ("grpo", "rloo") and "group_size" not in errors and config.get("group_size", 2) < 2:
        errors["group_size"] = "group-relative methods need at least 2 samples per problem"
    if "overlong_buffer" not in errors and config.get("overlong_buffer", 0) and config["overlong_buffer"] >= config.get("max_completion_tokens", 1e9):
        errors["overlong_buffer"] = "must be smaller than max_completion_tokens"
    from reference_impls.models import MODEL_NAMES

    if config.get("model") not in MODEL_NAMES:
        errors["model"] = f"must be one of {', '.join(MODEL_NAMES)}"
    return errors


def source_path(impl: Implementation) -> Path:
    return PACKAGE_DIR / impl.source
