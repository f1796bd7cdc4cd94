"""Every runnable implementation: an algorithm (with its switches) on an environment, and the taxonomy
nodes it serves. ``python -m reference_impls.train --list --json`` prints this list with each entry's full
default options, ``--impl ID`` runs one, and the Lab and the taxonomy's node pages read the same list.

Adding one is a row here; a new algorithm or environment registers itself in ``train.ALGORITHMS`` /
``envs.register_env`` and appears here with the nodes it serves.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .options import ConfigError, close_matches


@dataclass(frozen=True)
class Implementation:
    id: str
    title: str
    algo: str
    env: str
    source: str  # the file under reference_impls/ the Lab shows beside the curves
    summary: str
    algo_options: dict = field(default_factory=dict)
    env_options: dict = field(default_factory=dict)
    nodes: tuple[str, ...] = ()  # taxonomy nodes whose "Run this" opens this implementation
    # shown on the node page, in the project's own words: what the variant changes relative to its family's
    # base and why; the paper it implements (arXiv id or citation); where the survey's Table 2 cell and the
    # paper disagree, what each says; LaTeX of its objective (else the algorithm's, lab.catalog.EQUATIONS)
    changes: str = ""
    paper: str = ""
    survey_vs_paper: str = ""
    equation: str = ""

    def config(self) -> dict:
        """Its options as TrainConfig data (the trainer's defaults fill the rest)."""
        return {"algo": self.algo, "env": self.env, "algo_config": dict(self.algo_options),
                "env_options": dict(self.env_options)}


CALCULATOR_NODES = ("tool-use", "tool-use-react-style", "tool-use-tool-integrated-rl", "tool-use-long-horizon-tir",
                    "math", "math-informal")
SEARCH_NODES = ("search-research", "search-open-source", "search-external-web", "search-internal-knowledge")
MEMORY_NODES = ("memory", "memory-rag-style", "memory-token-level", "memory-structured")

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation("calculator-grpo", "GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "A policy that calls a calculator tool over several turns, trained with group-relative advantages.",
                   nodes=("rl-algorithms", "alg-grpo-family", "alg-grpo", *CALCULATOR_NODES)),
    Implementation("calculator-dapo", "DAPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32},
                   nodes=("alg-dapo",)),
    Implementation("calculator-dr-grpo", "Dr.GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}, nodes=("alg-dr-grpo",)),
    Implementation("calculator-gspo", "GSPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with a sequence-level importance ratio (GSPO).", {"importance_sampling_level": "sequence"},
                   nodes=("alg-gspo",)),
    Implementation("calculator-rloo", "RLOO tool agent (calculator)", "rloo", "calculator", "rloo.py",
                   "REINFORCE with a leave-one-out baseline over the group.", nodes=("alg-reinforce",)),
    Implementation("calculator-ppo", "PPO tool agent (calculator)", "ppo", "calculator", "ppo.py",
                   "PPO with a value head, token-level GAE over model tokens, clipped policy and value losses.",
                   nodes=("alg-ppo-family", "alg-ppo")),
    Implementation("calculator-dpo", "DPO on tool-use preference pairs", "dpo", "calculator", "dpo.py",
                   "Offline preference optimisation on correct vs incorrect rollouts of the same prompt.",
                   nodes=("alg-dpo-family", "alg-dpo")),
    Implementation("calculator-ipo", "IPO on tool-use preference pairs", "dpo", "calculator", "dpo.py",
                   "DPO with IPO's squared loss on the preference margin.", {"loss": "ipo"}, nodes=("alg-ipo",)),
    Implementation("search-grpo", "Search-R1-style agent (GRPO)", "grpo", "search", "envs/search.py",
                   "An agent whose tool searches this catalog; rewarded by exact match of its final answer.",
                   nodes=SEARCH_NODES),
    Implementation("search-ppo", "Search-R1-style agent (PPO)", "ppo", "search", "envs/search.py",
                   "The search agent trained with PPO and a critic."),
    Implementation("memory-grpo", "Memory-R1-style memory manager (GRPO)", "grpo", "memory", "envs/memory.py",
                   "A memory manager choosing ADD/UPDATE/DELETE/NOOP, rewarded by a frozen answer agent's exact match.",
                   nodes=MEMORY_NODES),
    Implementation("memory-ppo", "Memory-R1-style memory manager (PPO)", "ppo", "memory", "envs/memory.py",
                   "The memory manager trained with PPO and a critic."),
    # -- DPO family variants (issue 18) --------------------------------------------------------------

    # -- PPO family variants (issue 18) --------------------------------------------------------------

    # -- GRPO family variants, part a (issue 19) -----------------------------------------------------
    Implementation(
        "calculator-gmpo", "GMPO tool agent (calculator)", "gmpo", "calculator", "grpo_variants/gmpo.py",
        "GRPO that maximises the geometric mean of token-level importance ratios instead of the arithmetic mean.",
        nodes=("alg-gmpo",),
        changes="GRPO averages each token's clipped ratio-times-advantage arithmetically, so a single token whose "
                "probability moved a lot can dominate the update. GMPO multiplies the clipped token ratios and takes "
                "the |o|-th root (a mean in log space), which barely reacts to one outlier; that lets it use a much "
                "wider clip range, e^-0.4 to e^0.4, here the default. Advantages are GRPO's.",
        paper="Geometric-Mean Policy Optimization (Zhao et al., 2025), arXiv 2507.20673",
        survey_vs_paper="The survey's table lists a margin-based reward; the paper trains on the same rule-based "
                        "answer-correctness reward as GRPO, normalised within the group.",
        equation=r"\mathcal{J}=\mathbb{E}\Big[\tfrac{1}{G}\sum_i \Big(\prod_t \big|\min(\rho_{i,t}\hat A_i,"
                 r"\,\mathrm{clip}(\rho_{i,t},e^{-\epsilon},e^{\epsilon})\hat A_i)\big|\Big)^{1/|o_i|}"
                 r"\mathrm{sgn}(\hat A_i)\Big]"),
    Implementation(
        "calculator-pass-at-k", "Pass@k Training tool agent (calculator)", "pass_at_k", "calculator",
        "grpo_variants/pass_at_k.py",
        "GRPO whose advantages are those of the pass@k reward of the group, computed analytically over all k-subsets.",
        nodes=("alg-pass-at-k-training",),
        changes="Instead of rewarding each sample alone (pass@1), a k-subset of the group is rewarded if any sample "
                "in it is correct, and each sample's advantage is the expectation of that set reward over every "
                "k-subset containing it, in closed form. Correct samples keep a positive advantage, while a wrong "
                "sample is penalised only as often as it sits in an all-wrong subset, so the policy is punished "
                "less for exploring. k = 1 recovers GRPO on binary rewards.",
        paper="Pass@k Training for Adaptively Balancing Exploration and Exploitation of Large Reasoning Models "
              "(Chen et al., 2025), arXiv 2508.10751",
        equation=r"\bar R=1-\tfrac{\binom{N_{neg}}{k}}{\binom{N}{k}},\ \hat A_{pos}=\tfrac{1-\bar R}{\sigma},\ "
                 r"\hat A_{neg}=\tfrac{1-\bar R-\binom{N_{neg}-1}{k-1}/\binom{N-1}{k-1}}{\sigma},\ "
                 r"\sigma=\sqrt{\bar R(1-\bar R)}"),
    Implementation(
        "calculator-srpo", "SRPO tool agent (calculator)", "srpo", "calculator", "grpo_variants/srpo.py",
        "GRPO with history resampling (prompts every sample solved last epoch are dropped) and two training stages.",
        {"srpo_stage_one_steps": 20},
        nodes=("alg-srpo",),
        changes="The update is GRPO's; what changes is the data. Each epoch records which prompts every sample "
                "solved (their advantages are all zero) and drops them from the next epoch, while keeping prompts "
                "that every sample failed, since those can still become informative. Training runs in two stages: "
                "the paper starts on hard math before adding code; here stage 1 uses the calculator's "
                "multi-call level-3 problems and stage 2 the whole pool.",
        paper="SRPO: A Cross-Domain Implementation of Large-Scale Reinforcement Learning on LLM (Zhang et al., 2025), "
              "arXiv 2504.14286",
        equation=r"\mathcal{D}_{e+1}=\{q\in\mathcal{D}:\neg\,\forall i\le G,\ r_i^{(e)}(q)=1\},\quad "
                 r"\mathcal{J}=\mathcal{J}_{\mathrm{GRPO}}\ \text{on}\ \mathcal{D}_{e+1}"),
    Implementation(
        "calculator-greso", "GRESO tool agent (calculator)", "greso", "calculator", "grpo_variants/greso.py",
        "GRPO that skips, before rollout, prompts whose reward history predicts an all-equal group.",
        nodes=("alg-greso",),
        changes="Prompts whose samples all got the same reward are useless to GRPO and tend to stay that way, so "
                "GRESO skips a prompt before rolling it out with a probability that grows with its streak of "
                "all-correct or all-wrong groups (1 - p^streak). The exploration probabilities p adapt after "
                "every step to hold the share of zero-variance prompts near a target. The loss is GRPO's; only "
                "the rollouts spent on useless prompts are saved.",
        paper="Act Only When It Pays: Efficient Reinforcement Learning for LLM Reasoning via Selective Rollouts "
              "(Zheng et al., 2025), arXiv 2506.02177",
        equation=r"P_{\mathrm{skip}}(q)=1-\max\big(p^{z(q)},\,0.01\big),\quad p\in\{p_{easy},p_{hard}\}"),

    Implementation(
        "calculator-posterior-grpo", "Posterior-GRPO tool agent (calculator)", "posterior_grpo", "calculator",
        "grpo_variants/posterior_grpo.py",
        "GRPO plus a process reward (share of correct tool steps) that only episodes with a correct answer receive.",
        nodes=("alg-posterior-grpo",),
        changes="A process reward added to every episode can be farmed without getting answers right. Posterior-GRPO "
                "adds it only when the outcome is correct, so it ranks correct episodes by the quality of their "
                "process and never rewards a wrong one. The paper scores code reasoning with a learned reward "
                "model; here the process is the calculator calls and its score is the fraction of calls that "
                "computed an intermediate value of a correct solution.",
        paper="Posterior-GRPO: Rewarding Reasoning Processes in Code Generation (Fan et al., 2025), arXiv 2508.05170",
        equation=r"r'_i=r_i+\lambda\,\mathbb{1}[o_i\ \text{correct}]\,r^{\mathrm{proc}}_i,\quad "
                 r"\hat A_i=\frac{r'_i-\mathrm{mean}(r')}{\mathrm{std}(r')}"),
    Implementation(
        "calculator-step-grpo", "StepGRPO tool agent (calculator)", "step_grpo", "calculator",
        "grpo_variants/step_grpo.py",
        "GRPO on rule-based step rewards: key-step accuracy (StepRAR) plus trajectory validity (StepRVR).",
        nodes=("alg-step-grpo",),
        changes="Outcome rewards say nothing about a wrong answer that got most steps right. StepGRPO adds two "
                "rule-based dense terms before GRPO's group normalisation: a small bonus for the share of a reference "
                "solution's key steps the response contains, and a validity reward for a complete, well-formed "
                "trajectory. The paper checks key steps in multimodal chains of thought; here key steps are the "
                "reference solution's intermediate values reached by calculator calls, and a trajectory is valid "
                "when every call evaluates and it ends with an answer.",
        paper="R1-VL: Learning to Reason with Multimodal Large Language Models via Step-wise Group Relative Policy "
              "Optimization (Zhang et al., 2025), arXiv 2503.12937",
        equation=r"r_i=\mathbb{1}[\text{ans}_i=y]+\alpha\frac{k_i}{|K|}+r^{\mathrm{val}}_i,\quad "
                 r"\hat A_i=\frac{r_i-\mathrm{mean}(r)}{\mathrm{std}(r)}"),
    Implementation(
        "calculator-prorl", "ProRL tool agent (calculator)", "prorl", "calculator", "grpo_variants/prorl.py",
        "GRPO with a KL penalty whose reference policy is reset to the current policy every N steps, plus DAPO's "
        "decoupled clipping and dynamic sampling.",
        {"beta": 0.0001, "prorl_reset_every": 100, "epsilon_high": 0.4, "dynamic_sampling": True},
        nodes=("alg-prorl",),
        changes="A KL penalty keeps long runs stable, but anchored to the starting model it grows until it blocks "
                "progress. ProRL keeps the KL term and periodically replaces the reference with the current policy "
                "(clearing the optimizer's moments), so the penalty limits each stretch of training rather than "
                "all of it. Its other stabilisers are DAPO's clip-higher (0.2/0.4) and dynamic sampling.",
        paper="ProRL: Prolonged Reinforcement Learning Expands Reasoning Boundaries in Large Language Models "
              "(Liu et al., 2025), arXiv 2505.24864",
        equation=r"\mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(\theta)"
                 r"+\beta\,D_{\mathrm{KL}}(\pi_\theta\|\pi_{\mathrm{ref}}),"
                 r"\quad \pi_{\mathrm{ref}}\leftarrow\pi_\theta\ \text{every}\ N\ \text{steps}"),

    Implementation(
        "calculator-edge-grpo", "EDGE-GRPO tool agent (calculator)", "edge_grpo", "calculator",
        "grpo_variants/edge_grpo.py",
        "GRPO with entropy-scaled advantages and guided corrections of wrong responses, against advantage collapse.",
        nodes=("alg-edge-grpo",),
        changes="When a group's rewards are all equal GRPO's advantages vanish. EDGE-GRPO divides each advantage by "
                "the response's entropy relative to its group, so confident answers move further than hesitant "
                "ones, and replaces some wrong responses by corrected ones so that failing groups still hold a "
                "rewarded sample. Of the paper's corrections, the two that need no re-generation are used: the "
                "response plus a reflection cue and the right answer, or the calculator's reference solution.",
        paper="EDGE-GRPO: Entropy-Driven GRPO with Guided Error Correction for Advantage Diversity (Zhang et al., "
              "2025), arXiv 2507.21848",
        equation=r"\hat A^{\mathrm{EDA}}_i=\frac{\hat A_i}{\hat P_i},\quad \hat P_i=\frac{P_i}{\frac1G\sum_j P_j},"
                 r"\quad P_i=\frac{1}{|o_i|}\sum_t \mathcal{H}\big(\pi_\theta(\cdot\mid q,o_{i,<t})\big)"),

    Implementation(
        "calculator-ktae", "KTAE tool agent (calculator)", "ktae", "calculator", "grpo_variants/ktae.py",
        "GRPO with token-level advantages: each token adds a key value from how it splits correct and wrong rollouts.",
        nodes=("alg-ktae",),
        changes="GRPO credits every token of a response equally. KTAE adds to each token's advantage a bounded value "
                "measuring how strongly that token's presence goes with correct rather than wrong rollouts of the same "
                "prompt: a Fisher exact test and the information gain on a 2x2 presence table set its strength, and a "
                "frequency contrast between correct and wrong rollouts its sign. No extra model is trained; groups "
                "that are all right or all wrong keep GRPO's advantages.",
        paper="KTAE: A Model-Free Algorithm to Key-Tokens Advantage Estimation in Mathematical Reasoning (Sun et al., "
              "2025), arXiv 2505.16826",
        equation=r"\hat A_{i,t}=\frac{r_i-\mathrm{mean}(r)}{\mathrm{std}(r)}+\tau\Big(2\sigma\big(\tfrac{(\alpha F"
                 r"+\beta\,\mathrm{IG})\,x}{\alpha+\beta}\big)-1\Big)(o_{i,t})"),

    # -- GRPO family variants, part b (issue 19) -----------------------------------------------------

)
BY_ID = {impl.id: impl for impl in IMPLEMENTATIONS}


def get_implementation(impl_id: str) -> Implementation:
    if impl_id not in BY_ID:
        raise ConfigError(f"--impl: unknown implementation {impl_id!r}{close_matches(impl_id, BY_ID)}; "
                          f"known: {', '.join(BY_ID)}")
    return BY_ID[impl_id]


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node (a pure lookup: imports no model code)."""
    return [impl for impl in IMPLEMENTATIONS if node_id in impl.nodes]
