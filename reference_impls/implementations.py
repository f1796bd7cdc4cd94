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

    # -- GRPO family variants, part b (issue 19) -----------------------------------------------------
    Implementation("calculator-chord", "CHORD tool agent (calculator)", "chord", "calculator", "chord.py",
                   "GRPO plus a decaying, mu-weighted SFT loss on the environment's demonstrations.",
                   nodes=("alg-chord",),
                   changes="GRPO's loss gets a supervised term on expert transcripts (here the calculator's own "
                           "demonstrations of the step's problems), mixed as (1-mu) RL + mu SFT. mu warms up and then "
                           "decays on a cosine, so early steps imitate and later steps explore; the phi switch "
                           "weights each expert token by p(1-p) so tokens the policy already knows, or finds very "
                           "unlikely, barely move it.",
                   paper="On-Policy RL Meets Off-Policy Experts: Harmonizing Supervised Fine-Tuning and "
                         "Reinforcement Learning via Dynamic Weighting (arXiv 2508.11408)",
                   equation=r"\mathcal{L}=(1-\mu_t)\,\mathcal{L}_{\mathrm{GRPO}}-\mu_t\,\frac{1}{\sum m}\sum_t m_t\,\phi_t\log\pi_\theta(y^*_t\mid x,y^*_{<t}),\quad \phi_t\in\{1,\;p_t(1-p_t)\}"),
    Implementation("calculator-luffy", "LUFFY tool agent (calculator)", "luffy", "calculator", "luffy.py",
                   "Mixed-policy GRPO: one demonstration per group, policy-shaped by x/(x+gamma).",
                   {"loss_type": "dapo"}, nodes=("alg-luffy",),
                   changes="Each group trades one of its rollouts for an off-policy demonstration (the "
                           "calculator's correct transcript, scored by the environment), so advantages compare the "
                           "policy with an expert. Demonstration tokens are weighted by f(pi)=pi/(pi+gamma) of the "
                           "policy's own probability instead of a clipped ratio, which amplifies the gradient on "
                           "expert tokens the policy finds unlikely; on-policy tokens keep GRPO's clipped ratio.",
                   paper="Learning to Reason under Off-Policy Guidance (arXiv 2504.14945)",
                   survey_vs_paper="The survey's table says the objective is the same as GRPO's; the paper replaces "
                                   "the clipped importance ratio on off-policy tokens by the shaping function "
                                   "f(pi)=pi/(pi+gamma), unclipped.",
                   equation=r"\mathcal{L}=-\frac{1}{Z}\Big[\sum_{i\in\mathrm{on}}\sum_t\min(w_{i,t}A_i,\mathrm{clip}(w_{i,t})A_i)+\sum_{j\in\mathrm{off}}\sum_t\frac{\pi_\theta(\tau_{j,t})}{\pi_\theta(\tau_{j,t})+\gamma}A_j\Big]"),
    Implementation("calculator-dars", "DARS tool agent (calculator)", "dars", "calculator", "dars.py",
                   "GRPO with a second rollout stage that gives the step's hardest problems extra samples.",
                   nodes=("alg-dars",),
                   changes="After the usual G rollouts, every problem whose mean reward is below a threshold gets "
                           "extra rollouts (the same number for all, or more the lower its accuracy), so hard "
                           "problems contribute more positive samples and more advantage mass. Groups then differ "
                           "in size and advantages are normalised within each group.",
                   paper="Depth-Breadth Synergy in RLVR: Unlocking LLM Reasoning Gains with Adaptive Exploration "
                         "(arXiv 2508.13755)",
                   equation=r"A_i=\frac{r_i-\mathrm{mean}_{g(i)}r}{\mathrm{std}_{g(i)}r},\quad |g_j|=G+\Delta n_j,\ \Delta n_j=\lceil N\,(\tau-a_j)/\tau\rceil\ \text{if }a_j<\tau"),
    Implementation("calculator-ghpo", "GHPO tool agent (calculator)", "ghpo", "calculator", "ghpo.py",
                   "GRPO that re-rolls all-wrong groups with a growing hint from the reference solution.",
                   nodes=("alg-ghpo",),
                   changes="A group whose rollouts all fail carries no gradient, so it is rolled out again with the "
                           "beginning of the reference solution (the calculator demonstration's first tool calls "
                           "and results) appended to the problem, showing a larger share at each stage until some "
                           "sample succeeds. Problems the policy can solve stay plain on-policy RL.",
                   paper="GHPO: Adaptive Guidance for Stable and Efficient LLM Reinforcement Learning "
                         "(arXiv 2507.10628)",
                   survey_vs_paper="The survey's table lists the objective as a policy gradient with a plain reward; "
                                   "the paper optimises GRPO's clipped group-relative objective on the refined prompts.",
                   equation=r"q_k=q\oplus h(\omega_k)\ \text{while}\ \max_i r_i=0,\quad \omega_k=k\,\Delta\omega;\ \ \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(q_k)"),
    Implementation("calculator-starpo", "StarPO-S tool agent (calculator)", "starpo", "calculator", "starpo.py",
                   "Trajectory-level GRPO on multi-turn episodes with variance filtering and clip-higher.",
                   nodes=("alg-starpo",),
                   changes="The whole multi-turn episode (reasoning text and a tool call per turn, tool results "
                           "masked) is one trajectory with one group-relative advantage. StarPO-S's stabilisers are "
                           "on: only the quarter of groups with the largest reward spread are trained on, the clip "
                           "range is asymmetric (0.2 / 0.28) and there is no KL term or critic.",
                   paper="RAGEN: Understanding Self-Evolution in LLM Agents via Multi-Turn Reinforcement Learning "
                         "(arXiv 2504.20073)",
                   equation=r"J=\mathbb{E}_{\tau:\,\mathrm{std}(R_{g(\tau)})\in\text{top }p}\Big[\frac{1}{|\tau|}\sum_t m_t\min\big(w_tA(\tau),\mathrm{clip}(w_t,1-\epsilon_l,1+\epsilon_h)A(\tau)\big)\Big]"),
    Implementation("calculator-skywork-r1v2", "Skywork R1V2 selective sample buffer (calculator)", "skywork_ssb",
                   "calculator", "skywork.py",
                   "GRPO whose constant-reward groups are replaced by replayed high-|advantage| samples.",
                   nodes=("alg-skywork-r1v2",),
                   changes="Samples that carried a non-zero advantage are cached; when groups come back with equal "
                           "rewards (zero advantages), their places in the batch are filled by cached samples drawn "
                           "in proportion to |A|, keeping their advantage and sampling log-probs. This keeps the "
                           "effective batch from shrinking as the policy improves; the paper's MPO stage and hybrid "
                           "reward model are not part of this implementation.",
                   paper="Skywork R1V2: Multimodal Hybrid Reinforcement Learning for Reasoning (arXiv 2504.16656)",
                   equation=r"\mathcal{B}\leftarrow\mathcal{B}\cup\{o_i:A_i\neq0\},\ \ o\sim\mathcal{B}\ \text{w.p.}\propto|A_o|\ \text{replaces constant groups};\ \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}"),
    Implementation("calculator-treepo", "TreePO tool agent (calculator)", "treepo", "calculator", "treepo.py",
                   "Tree-sampled groups: samples share their first tool turn and branch after it; tree advantages.",
                   nodes=("alg-treepo",),
                   changes="A group is sampled as a tree: a few root episodes run to the end, then each branches "
                           "after its first tool result into siblings that share that prefix, so the shared turn is "
                           "generated and prefilled once. Each leaf's advantage averages its reward normalised "
                           "within the whole group and within its subtree. The paper branches at fixed token "
                           "windows with heuristic choices; here segments are tool turns and the branch factor is "
                           "fixed.",
                   paper="TreePO: Bridging the Gap of Policy Optimization and Efficacy and Inference Efficiency with "
                         "Heuristic Tree-based Modeling (arXiv 2508.17445)",
                   equation=r"A_i=\frac{1}{|N(i)|}\sum_{n\in N(i)}\frac{r_i-\mathrm{mean}_{j\in n}r_j}{\mathrm{std}_{j\in n}r_j},\quad \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(A)"),
    Implementation("calculator-arpo", "ARPO tool agent (calculator)", "arpo", "calculator", "arpo.py",
                   "Entropy-guided branching after tool results, with hard advantage attribution on shared tokens.",
                   {"attribution": "hard"}, nodes=("alg-arpo",),
                   changes="Half of each group's budget goes to full episodes; after every tool result whose next "
                           "tokens are more uncertain (higher entropy) than the episode's first turn, the episode "
                           "branches from there, and any budget left is filled with fresh episodes. Tokens shared by "
                           "a parent and its branches get the mean of their advantages, tokens after the branch "
                           "point their own. The calculator's tool turns are the steps.",
                   paper="Agentic Reinforced Policy Optimization (arXiv 2507.19849)",
                   equation=r"P_t=\alpha+\beta\,\frac{H_t-H_0}{\log|V|}>\tau\Rightarrow\text{branch};\quad \hat A_{i,t}=\begin{cases}\mathrm{mean}_{j\in S_t}A_j & t\ \text{shared by}\ S_t\\ A_i & \text{otherwise}\end{cases}"),
    Implementation("calculator-papo", "PAPO tool agent (calculator, numbers masked)", "papo", "calculator",
                   "papo.py", "GRPO plus a KL term that rewards depending on the problem's numbers.",
                   nodes=("alg-papo",),
                   changes="GRPO's loss subtracts gamma times the KL between the policy reading the full problem "
                           "and the policy reading it with every digit masked, on the sampled completion, so answers "
                           "that ignore the numbers are discouraged. The paper masks image patches of a multimodal "
                           "model; here the input to perceive is the text problem's numbers, and the paper's entropy "
                           "regularisers against over-optimising the KL are left out.",
                   paper="Perception-Aware Policy Optimization for Multimodal Reasoning (arXiv 2507.06448)",
                   equation=r"\mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}-\gamma\,\frac{1}{\sum m}\sum_{i,t}m_{i,t}\,\mathrm{k3}\Big(\frac{\pi_\theta(o_{i,t}\mid q_{\mathrm{mask}},o_{i,<t})}{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}\Big)"),

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
