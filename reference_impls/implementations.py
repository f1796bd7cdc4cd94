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
PLANNING_NODES = ("planning", "planning-internal-driver", "env-simulated-game", "capability-others")
MEMORY_NODES = ("memory", "memory-rag-style", "memory-token-level", "memory-structured")

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation("calculator-grpo", "GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "A policy that calls a calculator tool over several turns, trained with group-relative advantages.",
                   nodes=("rl-algorithms", "alg-grpo-family", "alg-grpo", *CALCULATOR_NODES)),
    Implementation("calculator-dapo", "DAPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with DAPO's switches: clip-higher, dynamic sampling, token-level loss, overlong shaping.",
                   {"loss_type": "dapo", "epsilon_high": 0.28, "dynamic_sampling": True, "overlong_buffer": 32},
                   nodes=("alg-dapo",),
                   changes="Four switches on GRPO, as in the paper (eqs. 8-13): the clip range above 1 is raised to "
                           "0.28, groups whose samples all got the same reward are dropped, token losses are "
                           "averaged over the whole batch's tokens, and answers that run into the last 32 tokens "
                           "before the length limit lose reward linearly. Where the paper keeps sampling until the "
                           "batch is full again after dropping groups, this run trains on the smaller batch.",
                   paper="DAPO: An Open-Source LLM Reinforcement Learning System at Scale (arXiv 2503.14476)"),
    Implementation("calculator-dr-grpo", "Dr.GRPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO without length and std normalisation bias: constant normaliser, no std scaling.",
                   {"loss_type": "dr_grpo", "scale_rewards": False}, nodes=("alg-dr-grpo",)),
    Implementation("calculator-gspo", "GSPO tool agent (calculator)", "grpo", "calculator", "grpo.py",
                   "GRPO with a sequence-level importance ratio (GSPO).", {"importance_sampling_level": "sequence"},
                   nodes=("alg-gspo",),
                   changes="One importance ratio per answer, the geometric mean of its token ratios (eq. 7), is "
                           "clipped and multiplies the answer's advantage (eq. 5), so all tokens of an answer are "
                           "weighted alike. The paper clips this ratio to a range of order 1e-4 (3e-4 below, 4e-4 "
                           "above); the row keeps the token-level 0.2, so with one optimisation pass per batch (the "
                           "default) the sequence ratio, computed against the sampling log-probs, is practically "
                           "never clipped.",
                   paper="Group Sequence Policy Optimization (arXiv 2507.18071)"),
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
    Implementation(
        "calculator-simpo", "SimPO on tool-use preference pairs", "simpo", "calculator", "dpo_variants.py",
        "Reference-free preference optimisation: length-normalised log-likelihood reward with a target margin.",
        nodes=("alg-simpo",),
        changes="SimPO drops DPO's reference model: an episode's implicit reward is its average log-probability per "
                "model token, scaled by beta, so the reward matches how the policy ranks text when it generates and "
                "long episodes earn no bonus for length. The loss also demands that the correct episode beat the "
                "incorrect one by a margin gamma, not just by any amount. Pairs are DPO's: a correct and an "
                "incorrect calculator episode of the same prompt.",
        paper="SimPO: Simple Preference Optimization with a Reference-Free Reward (Meng, Xia, Chen; arXiv 2405.14734)",
        survey_vs_paper="The survey's table lists SimPO's KL penalty as 'Scaled'; the paper has no reference model "
                        "and no KL term at all: beta only scales the length-normalised reward.",
        equation=r"\mathcal{L}=-\log\sigma\Big(\tfrac{\beta}{|y_w|}\log\pi_\theta(y_w|x)"
                 r"-\tfrac{\beta}{|y_l|}\log\pi_\theta(y_l|x)-\gamma\Big)"),
    Implementation(
        "calculator-orpo", "ORPO on tool-use preference pairs", "orpo", "calculator", "dpo_variants.py",
        "SFT on the correct episode plus an odds-ratio penalty against the incorrect one; no reference model.",
        nodes=("alg-orpo",),
        changes="ORPO folds preference learning into supervised fine-tuning: the loss is the (per-token averaged) "
                "negative log-likelihood of the correct episode plus lambda times a log-sigmoid penalty on the log "
                "odds ratio between the correct and the incorrect episode. It needs no reference model and no "
                "separate SFT stage, because the NLL term keeps the policy on the chosen answers while the odds "
                "ratio pushes the rejected ones down.",
        paper="ORPO: Monolithic Preference Optimization without Reference Model (Hong, Lee, Thorne; arXiv 2403.07691)",
        survey_vs_paper="The survey's table expands ORPO as 'Online regularized preference optimization' with a KL "
                        "penalty, 'online stabilization' and an 'online feedback reward'; the paper's ORPO is Odds "
                        "Ratio Preference Optimization, trained offline on fixed preference pairs, with no reference "
                        "model and no KL term.",
        equation=r"\mathcal{L}=-\tfrac{1}{|y_w|}\log\pi_\theta(y_w|x)-\lambda\log\sigma\Big(\log"
                 r"\tfrac{\mathrm{odds}_\theta(y_w|x)}{\mathrm{odds}_\theta(y_l|x)}\Big),\ "
                 r"\mathrm{odds}_\theta(y|x)=\tfrac{P_\theta(y|x)}{1-P_\theta(y|x)}"),
    Implementation(
        "calculator-beta-dpo", "beta-DPO on tool-use preference pairs", "beta-dpo", "calculator", "dpo_variants.py",
        "DPO whose beta is recalibrated every batch from the pairs' reward margins, with outlier pairs filtered.",
        nodes=("alg-beta-dpo",),
        changes="beta-DPO keeps DPO's loss but sets beta per batch: a batch whose pairs are already far apart (a "
                "large mean log-ratio margin relative to a running threshold) gets a larger beta, so the update is "
                "conservative, and a batch of close pairs a smaller one. Before that, pairs whose margin lies far "
                "from the running threshold are dropped by a Gaussian-weighted draw, so a few outlying pairs cannot "
                "set the batch's beta. The running threshold and spread are moving averages kept across steps "
                "(saved in checkpoints).",
        paper="beta-DPO: Direct Preference Optimization with Dynamic beta (Wu et al.; arXiv 2407.08639)",
        equation=r"\mathcal{L}=-\log\sigma\big(\beta_{\mathrm{batch}}\,h\big),\ \beta_{\mathrm{batch}}="
                 r"\beta_0\big(1+\alpha(\mathbb{E}_{i\in\mathrm{batch}}[M_i]-M_0)\big)"),
    Implementation(
        "calculator-kto", "KTO on labelled tool-use episodes", "kto", "calculator", "kto.py",
        "Prospect-theoretic alignment on unpaired episodes: correct ones desirable, incorrect ones undesirable.",
        nodes=("alg-kto",),
        changes="KTO replaces DPO's pairs with a binary label per episode: every correct calculator episode is "
                "desirable and every incorrect one undesirable, so prompts whose samples are all right or all "
                "wrong still count. Each episode's implicit reward (its log-ratio to the reference model) is judged "
                "against a reference point, a batch estimate of the policy's KL from the reference on mismatched "
                "prompt/completion pairs, through a saturating sigmoid value function with separate weights for "
                "gains and losses.",
        paper="KTO: Model Alignment as Prospect Theoretic Optimization (Ethayarajh, Xu, Muennighoff, Jurafsky, Kiela; "
              "arXiv 2402.01306)",
        survey_vs_paper="The survey's table expands KTO as 'Knowledge transfer optimization' with 'teacher "
                        "stabilization' and a 'teacher-student logit' signal; the paper's KTO is Kahneman-Tversky "
                        "Optimization, which has no teacher: it learns from a binary desirable/undesirable label per "
                        "output against a KL reference point.",
        equation=r"\mathcal{L}=\mathbb{E}\big[\lambda_y-v(x,y)\big],\ v=\begin{cases}\lambda_D\,"
                 r"\sigma(\beta(r_\theta-z_0)) & y\ \text{desirable}\\ \lambda_U\,\sigma(\beta(z_0-r_\theta)) & "
                 r"y\ \text{undesirable}\end{cases}"),
    Implementation(
        "calculator-step-dpo", "Step-DPO on calculator tool steps", "step-dpo", "calculator", "step_dpo.py",
        "DPO on the first wrong tool step: a correct vs the erroneous next step after a shared correct prefix.",
        nodes=("alg-step-dpo",),
        changes="Step-DPO moves DPO's preference from whole episodes to single steps. Here a step is a calculator "
                "turn (a tool call or the final answer), checkable against the problem's reference solution. For "
                "an incorrect episode, the first wrong step is found; the pair shares the prompt plus the correct "
                "steps before it, rejects the wrong step and prefers a correct step the same model writes from that "
                "prefix (or, when it writes none, the reference solution's next step), so the loss credits exactly "
                "the step where the episode went wrong. The paper finds the wrong step with GPT-4 or a person and "
                "takes the chosen step from sampled continuations whose final answer is right; we check steps "
                "against the reference solution instead.",
        paper="Step-DPO: Step-wise Preference Optimization for Long-chain Reasoning of LLMs (Lai et al.; "
              "arXiv 2406.18629)",
        equation=r"\mathcal{L}=-\log\sigma\Big(\beta\log\tfrac{\pi_\theta(s_w|x,s_{<k})}"
                 r"{\pi_{\mathrm{ref}}(s_w|x,s_{<k})}-\beta\log\tfrac{\pi_\theta(s_l|x,s_{<k})}"
                 r"{\pi_{\mathrm{ref}}(s_l|x,s_{<k})}\Big)"),

    # -- PPO family variants (issue 18) --------------------------------------------------------------
    Implementation("calculator-liteppo", "LitePPO tool agent (calculator)", "liteppo", "calculator", "liteppo.py",
                   "Critic-free PPO clip loss with group-mean / batch-std advantages and a token-level loss.",
                   nodes=("alg-liteppo",),
                   changes="Keeps GRPO's critic-free, outcome-reward update but divides the group-centred reward by "
                           "the standard deviation of the whole batch instead of the group's, and averages the loss "
                           "over all model tokens of the batch. A group that is nearly all right or all wrong no "
                           "longer gets its tiny spread blown up into large advantages, and long episodes weigh "
                           "by their token count. It runs on the shared policy-gradient path because it has no critic.",
                   paper="Part I: Tricks or Traps? A Deep Dive into RL for LLM Reasoning (Liu et al. 2025, arXiv 2508.08221)",
                   equation=r"A_i=\frac{r_i-\operatorname{mean}_{j\in G(i)} r_j}{\operatorname{std}_{\text{batch}}(r)},\;"
                            r"\mathcal{L}=-\frac{1}{\sum_i|o_i|}\sum_{i,t}\min\big(w_{i,t}A_i,\operatorname{clip}(w_{i,t},1\pm\epsilon)A_i\big)"),
    Implementation("calculator-pf-ppo", "PF-PPO tool agent (calculator)", "pf-ppo", "calculator", "pfppo.py",
                   "PPO with a critic, trained only on each prompt's highest- and lowest-reward samples.",
                   {"policy_filter": "best_worst"}, nodes=("alg-pf-ppo",),
                   changes="Samples G responses per prompt as usual, then keeps only the best and the worst by reward "
                           "(or best and a random one, or only the best) and runs unchanged PPO with its critic on "
                           "that subset. The paper does this because a learned reward model is most reliable at the "
                           "extremes; our calculator reward is exact, so here the filter only changes which samples "
                           "the update sees. The paper draws each training sample from a filtered policy (best or "
                           "worst with probability 1/2 each; or best with 1/2 and any other with the rest); we keep "
                           "the best and the worst (or the best and one random other) once each, the same "
                           "proportions without a random draw.",
                   paper="Policy Filtration for RLHF to Mitigate Noise in Reward Models (Zhang et al. 2024, arXiv 2409.06957)",
                   equation=r"\mathcal{D}_{\text{PF}}=\{o_{\arg\max_i r_i},\,o_{\arg\min_i r_i}\},\;"
                            r"\mathcal{L}=\mathcal{L}^{\text{PPO}}_{\text{clip}}(\mathcal{D}_{\text{PF}})+c_v\mathcal{L}_V(\mathcal{D}_{\text{PF}})"),

    Implementation("calculator-vineppo", "VinePPO tool agent (calculator)", "vineppo", "calculator", "vineppo.py",
                   "PPO without a critic: values are Monte Carlo estimates from K extra rollouts at each turn boundary.",
                   nodes=("alg-vineppo",),
                   changes="Drops PPO's value network and GAE: the value of a state is the mean reward of K fresh "
                           "continuations sampled from it, and each step's advantage is the next state's estimate "
                           "minus this one's. The paper cuts reasoning text into steps; here the intermediate states "
                           "are the turn boundaries of the calculator episode (the prompt, then after each tool "
                           "result), reached again by replaying the episode's own turns in a fresh environment. The "
                           "rest is the paper's PPO setup: KL to the reference in the per-token reward, whitened "
                           "advantages, clipped ratio. It trades extra generation for unbiased credit per tool turn.",
                   paper="VinePPO: Refining Credit Assignment in RL Training of LLMs (Kazemnejad et al. 2024, arXiv 2410.01679)",
                   equation=r"\hat V(s_j)=\tfrac1K\sum_{k=1}^K R(\tau_k),\;\tau_k\sim\pi(\cdot\mid s_j),\;"
                            r"A_j=\hat V(s_{j+1})-\hat V(s_j),\;\hat V(s_n)=R"),

    Implementation("calculator-vapo", "VAPO tool agent (calculator)", "ppo", "calculator", "ppo.py",
                   "PPO with VAPO's value-side fixes: value pre-training, decoupled and length-adaptive GAE, "
                   "clip-higher, an LM loss on correct episodes.",
                   {"beta": 0.0, "critic_warmup_steps": 5, "lam_critic": 1.0, "length_adaptive_alpha": 0.05,
                    "epsilon_high": 0.28, "positive_lm_coef": 0.1},
                   nodes=("alg-vapo",),
                   changes="Keeps PPO's critic but makes it trustworthy: the critic is first fitted alone on the "
                           "initial policy's episodes (5 steps here, 50 in the paper), its targets are unbiased "
                           "Monte Carlo returns (lambda 1) while the policy's GAE lambda grows with episode length "
                           "as 1 - 1/(0.05 l). It also raises the upper clip to 0.28 and adds a small NLL loss on "
                           "the correct episodes. Token-level loss and group sampling (G episodes per problem) are "
                           "already how PPO runs here; no KL term (beta 0).",
                   paper="VAPO: Efficient and Reliable Reinforcement Learning for Advanced Reasoning Tasks "
                         "(Yue et al. 2025, arXiv 2504.05118)",
                   survey_vs_paper="The survey's table describes VAPO as an adaptive KL penalty plus variance control; "
                                   "the paper's techniques are value pre-training, decoupled and length-adaptive GAE, "
                                   "clip-higher, token-level loss, a positive-example LM loss and group sampling, "
                                   "with no adaptive KL penalty among them.",
                   equation=r"\lambda_{\text{policy}}=1-\frac{1}{\alpha l},\;\lambda_{\text{critic}}=1,\;"
                            r"\mathcal{L}=\mathcal{L}^{\text{PPO}}_{\text{clip}(1-\epsilon_l,1+\epsilon_h)}+\mu\,\mathcal{L}_{\text{NLL}}(\text{correct})"),

    Implementation("calculator-psgpo", "PSGPO tool agent (calculator)", "psgpo", "calculator", "psgpo.py",
                   "PPO with dense step rewards: each calculator call is checked against the problem's solution.",
                   nodes=("alg-psgpo",),
                   changes="Adds process rewards to PPO: besides the final answer's reward, every tool call earns "
                           "+0.2 when it produces a new value on the reference solution's path and -0.2 when it "
                           "fails or goes off the path, placed on the call's last token, so GAE gets signal inside "
                           "the episode. The paper scores lines of code with a learned process reward model; here the "
                           "steps are calculator tool turns and the verdict is checked exactly, and the paper's "
                           "critic initialisation from that model is left out.",
                   paper="Process Supervision-Guided Policy Optimization for Code Generation (Dai et al. 2024, arXiv 2410.17621)",
                   equation=r"r_t=R\,[t=T]+c\sum_j v_j\,[t=\text{end}(j)]-\beta\,\mathrm{KL}_t,\;v_j\in\{+1,-1,0\},\;"
                            r"\mathcal{L}=\mathcal{L}^{\text{PPO}}_{\text{clip}}+c_v\mathcal{L}_V"),

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
        "calculator-pass-at-k", "Pass@k Training tool agent (calculator)", "pass-at-k", "calculator",
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
        "calculator-posterior-grpo", "Posterior-GRPO tool agent (calculator)", "posterior-grpo", "calculator",
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
        "calculator-step-grpo", "StepGRPO tool agent (calculator)", "step-grpo", "calculator",
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
                "all of it. Its other stabilisers are DAPO's clip-higher (0.2/0.4) and dynamic sampling. The paper "
                "resets whenever a validation score stalls or drops; here resets come every N steps.",
        paper="ProRL: Prolonged Reinforcement Learning Expands Reasoning Boundaries in Large Language Models "
              "(Liu et al., 2025), arXiv 2505.24864",
        equation=r"\mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(\theta)"
                 r"+\beta\,D_{\mathrm{KL}}(\pi_\theta\|\pi_{\mathrm{ref}}),"
                 r"\quad \pi_{\mathrm{ref}}\leftarrow\pi_\theta\ \text{every}\ N\ \text{steps}"),

    Implementation(
        "calculator-edge-grpo", "EDGE-GRPO tool agent (calculator)", "edge-grpo", "calculator",
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
    Implementation("calculator-chord", "CHORD tool agent (calculator)", "chord", "calculator", "chord.py",
                   "GRPO plus a decaying, mu-weighted SFT loss on the environment's demonstrations.",
                   nodes=("alg-chord",),
                   changes="GRPO's loss gets a supervised term on expert transcripts (here the calculator's own "
                           "demonstrations of the step's problems), mixed as (1-mu) RL + mu SFT. mu warms up and then "
                           "decays on a cosine, so early steps imitate and later steps explore; the phi switch "
                           "weights each expert token by p(1-p) so tokens the policy already knows, or finds very "
                           "unlikely, barely move it. Unlike the paper's eq. 6 the SFT term is a per-token mean "
                           "(not a sum) and phi is a detached weight; the paper's mu schedule is a plain decay "
                           "(0.9 to 0.05 over 200 steps), the warm-up is ours.",
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
                           "range is asymmetric (0.2 / 0.28) and there is no KL term or critic. The paper's StarPO-S "
                           "also brings in a critic (PPO) as its third stabiliser; this row is the critic-free GRPO "
                           "form the paper trains as well, without its entropy bonus and format penalty.",
                   paper="RAGEN: Understanding Self-Evolution in LLM Agents via Multi-Turn Reinforcement Learning "
                         "(arXiv 2504.20073)",
                   equation=r"J=\mathbb{E}_{\tau:\,\mathrm{std}(R_{g(\tau)})\in\text{top }p}\Big[\frac{1}{|\tau|}\sum_t m_t\min\big(w_tA(\tau),\mathrm{clip}(w_t,1-\epsilon_l,1+\epsilon_h)A(\tau)\big)\Big]"),
    Implementation("calculator-skywork-r1v2", "Skywork R1V2 selective sample buffer (calculator)", "skywork-ssb",
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
                           "fixed. The paper's eq. 5 subtracts sub-group means, averages and divides by one global "
                           "std; here each sub-group is normalised by its own std before averaging.",
                   paper="TreePO: Bridging the Gap of Policy Optimization and Efficacy and Inference Efficiency with "
                         "Heuristic Tree-based Modeling (arXiv 2508.17445), eqs. 1-5",
                   equation=r"A_i=\frac{1}{|N(i)|}\sum_{n\in N(i)}\frac{r_i-\mathrm{mean}_{j\in n}r_j}{\mathrm{std}_{j\in n}r_j},\quad \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(A)"),
    Implementation("calculator-arpo", "ARPO tool agent (calculator)", "arpo", "calculator", "arpo.py",
                   "Entropy-guided branching after tool results, with hard advantage attribution on shared tokens.",
                   {"attribution": "hard"}, nodes=("alg-arpo",),
                   changes="Half of each group's budget goes to full episodes; after every tool result whose next "
                           "tokens are more uncertain (higher entropy) than the episode's first turn, the episode "
                           "branches from there, and any budget left is filled with fresh episodes. Tokens shared by "
                           "a parent and its branches get the mean of their advantages, tokens after the branch "
                           "point their own. The calculator's tool turns are the steps. The paper normalises the "
                           "entropy change by the vocabulary size and defaults to soft attribution; here it is "
                           "divided by log|V| (the largest entropy) and this row runs hard attribution.",
                   paper="Agentic Reinforced Policy Optimization (arXiv 2507.19849), Sec. 3.1-3.2, eqs. 3-7",
                   equation=r"P_t=\alpha+\beta\,\frac{H_t-H_0}{\log|V|}>\tau\Rightarrow\text{branch};\quad \hat A_{i,t}=\begin{cases}\mathrm{mean}_{j\in S_t}A_j & t\ \text{shared by}\ S_t\\ A_i & \text{otherwise}\end{cases}"),
    Implementation("calculator-papo", "PAPO tool agent (calculator, numbers masked)", "papo", "calculator",
                   "papo.py", "GRPO plus a KL term that rewards depending on the problem's numbers.",
                   nodes=("alg-papo",),
                   changes="GRPO's loss subtracts gamma times the KL between the policy reading the full problem "
                           "and the policy reading it with every digit masked, on the sampled completion, so answers "
                           "that ignore the numbers are discouraged. The paper masks image patches of a multimodal "
                           "model; here the input to perceive is the text problem's numbers, and the paper's entropy "
                           "regularisers against over-optimising the KL are left out. The paper's eq. 2 writes the "
                           "KL as k3 of pi_full/pi_mask; here it is k3 of pi_mask/pi_full, the standard k3 estimate "
                           "of KL(pi_full || pi_mask) on samples from pi_full.",
                   paper="Perception-Aware Policy Optimization for Multimodal Reasoning (arXiv 2507.06448), eqs. 1-2",
                   equation=r"\mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}-\gamma\,\frac{1}{\sum m}\sum_{i,t}m_{i,t}\,\mathrm{k3}\Big(\frac{\pi_\theta(o_{i,t}\mid q_{\mathrm{mask}},o_{i,<t})}{\pi_\theta(o_{i,t}\mid q,o_{i,<t})}\Big)"),

    # -- planning and interactive worlds (issue 20) --------------------------------------------------
    Implementation("frozenlake-grpo", "GRPO planner on FrozenLake (text)", "grpo", "frozenlake", "envs/frozenlake.py",
                   "A policy that walks gymnasium's FrozenLake from S to G over several turns of <move> tags, "
                   "rewarded when it reaches the goal.",
                   nodes=PLANNING_NODES,
                   changes="Keeps gymnasium's own FrozenLake: its random-map generator (seeded, levels by map size and "
                           "hole density) and its step function, with the deterministic (non-slippery) ice so that a "
                           "plan can be checked. Simplifies the observation to a text grid and the action to words "
                           "in a <move> tag (a few moves per turn). The reward is the sparse success of the original; "
                           "a shaping switch adds distance progress, either once at the end or per turn (the "
                           "long-horizon option), off by default."),
    Implementation("frozenlake-grpo-turn-reward", "GRPO planner on FrozenLake, turn-level shaping", "grpo",
                   "frozenlake", "envs/frozenlake.py",
                   "FrozenLake with a turn-level reward: each turn earns its distance progress minus a turn cost, "
                   "summed into the episode reward (vs the outcome-only default).",
                   env_options={"levels": (3, 4), "shaping": 0.5, "shaping_mode": "turn", "turn_cost": 0.02},
                   nodes=("capability-others", "planning-internal-driver"),
                   changes="The same lake on the larger maps, with a dense per-turn reward (progress towards the goal "
                           "minus a small cost per turn) on top of success. The rollout still credits the episode with "
                           "one number: the turn rewards are summed, and listed per turn in the episode info."),
    Implementation("sokoban-grpo", "GRPO planner on Sokoban (text)", "grpo", "sokoban", "envs/sokoban.py",
                   "A policy that pushes boxes onto targets over several turns of <move> tags, rewarded when "
                   "every box is placed.",
                   nodes=PLANNING_NODES,
                   changes="Keeps Sokoban's rules (push only, one box at a time, walls) and its success criterion. "
                           "Simplifies the puzzles to small rooms (6x6 or 7x7, one or two boxes) from our own "
                           "reverse-play generator, each checked by an exact breadth-first solver whose shortest plan "
                           "is the warm-start demonstration. Text grid, a few moves per turn; a shaping switch adds "
                           "the fraction of boxes on targets (at the end or per turn). Deadlocks are not detected."),
    Implementation("sokoban-grpo-guided", "GRPO on Sokoban guided by an external planner", "grpo", "sokoban",
                   "envs/plansearch.py",
                   "Sokoban where every observation carries the next moves of a value-guided best-first search "
                   "from the current state; the policy learns when to follow the planner.",
                   env_options={"levels": (2, 3), "hint_moves": 4}, nodes=("planning-external-guide",),
                   changes="The planner is weighted A* over (player, boxes) ordered by a value function: a fixed, "
                           "admissible heuristic (each box's distance to its nearest target), so its plans are "
                           "optimal; a learned value head can replace it (any callable): value_search.py trains one "
                           "on the LM's hidden state and compares the two searches with the policy at equal model "
                           "calls, while these hints keep the heuristic. The LLM stays the actor: it sees the "
                           "planner's suggestion as text and writes the moves itself. The warm-start demonstrations "
                           "do not show the hint line."),
    Implementation("household-grpo", "GRPO household agent (ALFWorld-style text world)", "grpo", "household",
                   "envs/household.py",
                   "A text household: rooms, containers and objects; the agent navigates, opens, takes, cleans "
                   "and puts with one command per turn, rewarded when the goal holds.",
                   nodes=("embodied", "env-general-purpose", "other-text-game"),
                   changes="Keeps ALFWorld's shape: a household described in text, goals such as 'put a clean mug "
                           "in the cabinet', one command per turn (go to, open, take, clean, put), success reward, "
                           "and the optional list of admissible commands. Simplifies it to our own small simulator "
                           "with seeded layouts (4-5 rooms, a dozen objects), a handful of verbs and task types, and "
                           "rooms as places (no receptacle-level navigation); a scripted solver proves every goal "
                           "reachable and writes the demonstrations."),
    Implementation("household-navigation-grpo", "GRPO household agent, navigation tasks", "grpo", "household",
                   "envs/household.py",
                   "Navigation-only household tasks: find an object somewhere in the house.",
                   env_options={"tasks": ("find",)}, nodes=("embodied-navigation",),
                   changes="Only the 'find X' goals: the agent walks between connected rooms (and opens containers) "
                           "until the object is in view; no manipulation."),
    Implementation("household-manipulation-grpo", "GRPO household agent, manipulation tasks", "grpo", "household",
                   "envs/household.py",
                   "Manipulation household tasks: pick and place, and clean then place.",
                   env_options={"tasks": ("place", "clean_place")}, nodes=("embodied-manipulation",),
                   changes="Only the manipulation goals: take an object (from a possibly closed container), clean it "
                           "at a sink when asked, and put it in or on the named receptacle."),

    # -- code, SQL and web (issue 21) ----------------------------------------------------------------
    Implementation("code-grpo", "Code generation with hidden unit tests (GRPO)", "grpo", "code", "envs/code.py",
                   "A policy that writes a small Python function from a spec; the reward is the fraction of hidden "
                   "unit tests its code passes in a sandboxed process.",
                   nodes=("code", "code-generation", "env-coding-benchmarks"),
                   changes="Keeps the HumanEval/MBPP-style loop that code RL (e.g. CodeRL, PPOCoder, RLEF) trains "
                           "on: a natural-language spec with examples, generated code executed against unit tests "
                           "the model never sees, and a test-based reward (fraction passed, or pass/fail with "
                           "all_pass_only). Simplifies: twelve procedurally generated function families in three "
                           "levels (parameters seeded per problem) instead of human-written problems, single-file "
                           "standard-library code, and return values compared after a JSON round trip. Code runs "
                           "only in the sandbox (bubblewrap namespaces here), never in the trainer."),
    Implementation("code-refine-grpo", "Code refinement with a test-running tool (GRPO)", "grpo", "code-refine",
                   "envs/code.py",
                   "A multi-turn coder that runs drafts on the visible examples with a <run> tool, reads the "
                   "failures and resubmits; rewarded by the hidden tests.",
                   nodes=("code-refinement",),
                   changes="Keeps the execution-feedback loop of refinement methods (RLEF, self-debugging): the "
                           "agent runs its draft, gets concrete failures (call, returned value, expected value, "
                           "or the exception) and revises before the final submission, which is scored on hidden "
                           "tests. Simplifies: feedback comes only from the two visible examples, a fixed budget "
                           "of runs, and the same small generated function families as the code env; there is no "
                           "repository, no compiler and no critic model."),
    Implementation("webshop-grpo", "WebShop-style shopping agent (GRPO)", "grpo", "webshop", "envs/webshop.py",
                   "A multi-turn agent that searches a simulated shop, opens products, picks color and size and "
                   "buys; rewarded by how many of the instruction's attributes the purchase matches.",
                   nodes=("gui-rl-interactive", "env-gui"),
                   changes="Keeps the interactive web-agent loop of WebShop-style GUI RL: an instruction with "
                           "attributes and a budget, a site with search, result lists, product pages with options "
                           "and a buy button, numbered elements to act on, distractor products that miss one "
                           "attribute, and an attribute-match reward (category, color, size, price each a quarter). "
                           "Simplifies: text pages instead of HTML or screenshots, a generated catalog of 12-20 "
                           "products per task instead of a million scraped ones, keyword search, and exactly one "
                           "product that fits."),
    Implementation("web-step-grpo", "One GUI action on a shop page (GRPO)", "grpo", "web-step", "envs/webshop.py",
                   "Static GUI action prediction: given the instruction, the actions so far and the current page, "
                   "predict the expert's next action; reward 1 when it matches.",
                   nodes=("gui-rl-static",),
                   changes="Keeps the static setting of GUI-R1 / UI-R1-style RL: one screen, an instruction and the "
                           "history, one action scored by a rule against the ground-truth action (here the element "
                           "number, or for a search any query whose results contain the target). Simplifies: the "
                           "screen is the webshop env's text page (no pixels, no coordinates), the states come from "
                           "expert trajectories of generated shopping tasks, and there are two action types."),
    Implementation("sql-grpo", "Text-to-SQL agent with database tools (GRPO)", "grpo", "sql", "envs/sql.py",
                   "An agent that lists tables, describes them and runs read-only queries on a generated SQLite "
                   "database, rewarded by execution match of its final query with the gold query.",
                   nodes=("other-table",),
                   changes="Keeps what Spider/BIRD-style text-to-SQL RL measures: a natural-language question over a "
                           "real relational database, a gold query, and execution match (same result set, ordered "
                           "only when the gold query orders) as the reward, plus the agentic part (inspect the schema "
                           "and try queries before answering). Simplifies: two small generated schemas (shop, school) "
                           "with tens of rows instead of hundreds of real databases, templated questions in three "
                           "levels (filter/count, aggregation/ordering, joins), and no value linking or dirty data. "
                           "Every query runs read-only (mode=ro, query_only, an authorizer, a time and row limit)."),

    # -- issue 22: self-improvement ------------------------------------------------------------------
    Implementation(
        "self-refine-grpo", "Retry after verifier feedback (GRPO, Reflexion style)", "grpo", "self-correct",
        "envs/selfcorrect.py",
        "Two attempts at a calculator word problem: a wrong first answer gets a verifier's 'incorrect' (and "
        "whether the true answer is larger or smaller), then a second attempt; rewarded by the second attempt.",
        env_options={"feedback": "external", "hint": "direction"},
        nodes=("self-improvement", "self-improvement-verbal"),
        changes="Keeps the loop of verbal self-improvement methods (Reflexion, Self-Refine, and the RL methods that "
                "train on it): attempt, feedback in words, revised attempt in the same context, scored by a "
                "verifier. The feedback here is external: a verifier says 'incorrect' and, with hint=direction, "
                "whether the answer should be larger or smaller; a correct first attempt ends the episode. GRPO "
                "trains on the episodes, rewarded by the second attempt. Simplifies: one retry, arithmetic word "
                "problems answered without a tool, a templated verifier message instead of a model-written "
                "reflection, and no memory of reflections across episodes. The feedback=self option gives the "
                "intrinsic variant; python -m reference_impls.self_correction measures both modes (attempt 1 vs "
                "attempt 2 accuracy and the flips).",
        paper="Reflexion: Language Agents with Verbal Reinforcement Learning (Shinn et al.; arXiv 2303.11366); "
              "Self-Refine (Madaan et al.; arXiv 2303.17651)"),
    Implementation(
        "self-correct-score", "Intrinsic self-correction with SCoRe's reward (GRPO)", "grpo", "self-correct",
        "envs/selfcorrect.py",
        "Two attempts with no external signal in between: the agent is asked to check its own answer; the "
        "reward credits both attempts plus a bonus for turning a wrong answer right (minus for the reverse).",
        env_options={"feedback": "self", "credit_first": True, "flip_bonus": 1.0},
        nodes=("self-improvement", "self-improvement-internalizing"),
        changes="Keeps what SCoRe trains: intrinsic self-correction with the model's own on-policy attempts, the "
                "second attempt conditioned on the first and a fixed self-check request (the environment never "
                "says whether attempt 1 was right), a reward on both attempts (Stage II) and the progress bonus "
                "alpha*(r2 - r1) that pays for wrong->right flips and charges right->wrong ones. Simplifies: one "
                "GRPO stage instead of SCoRe's two (no Stage I that keeps attempt 1 close to the base model while "
                "training attempt 2), one episode reward for both turns instead of per-turn rewards, alpha = 1 "
                "(not tuned, not the paper's value), REINFORCE replaced by GRPO's clipped surrogate, and "
                "arithmetic word problems instead of MATH / HumanEval.",
        paper="Training Language Models to Self-Correct via Reinforcement Learning (Kumar et al.; arXiv 2409.12917)",
        equation=r"R=r(y_1,y^*)+r(y_2,y^*)+\alpha\big(r(y_2,y^*)-r(y_1,y^*)\big),\quad "
                 r"\max_\theta\ \mathbb{E}\big[R\big]-\beta\,D_{KL}(\pi_\theta\,\|\,\pi_{ref})"),
    Implementation(
        "selfplay-absolute-zero", "Absolute-Zero self-play: propose and solve arithmetic", "absolute-zero",
        "selfplay-arith", "absolute_zero.py",
        "One policy proposes arithmetic problems, a verifier checks and computes them, the same policy solves "
        "each several times; the proposer is rewarded for problems solved sometimes but not always.",
        nodes=("self-improvement", "self-improvement-iterative-self-training"),
        changes="Keeps Absolute Zero's loop: no human problems in the RL pool, a proposer role and a solver role "
                "played by one policy, a verifier that rejects malformed proposals (format-aware penalties) and "
                "computes the gold answer, the learnability reward 1 - mean solve rate for problems that are "
                "neither always nor never solved (0 otherwise), the solver rewarded by exact match, both roles in "
                "one update with one baseline per role (task-relative advantages). Simplifies: one task type "
                "(evaluate an expression with + - * on bounded integers) instead of deduction/abduction/induction "
                "over Python programs, a parser instead of a code executor, seeded reference examples instead of "
                "a buffer of past proposals, and GRPO's clipped surrogate instead of REINFORCE++.",
        paper="Absolute Zero: Reinforced Self-play Reasoning with Zero Data (Zhao et al.; arXiv 2505.03335)",
        equation=r"r_{propose}=\begin{cases}0 & \bar r_{solve}\in\{0,1\}\\ 1-\bar r_{solve} & \text{otherwise}"
                 r"\end{cases},\quad \bar r_{solve}=\tfrac1N\sum_{n=1}^{N} r_{solve}^{(n)},\quad "
                 r"A=\frac{r-\mu_{role}}{\sigma_{role}}"),
    # -- issue 19: ASPO --------------------------------------------------------------------------------
    Implementation(
        "calculator-aspo", "ASPO tool agent (calculator, earlier tool calls)", "aspo", "calculator",
        "grpo_variants/aspo.py",
        "GRPO whose correct answers that call the calculator get a clipped advantage bonus for calling it earlier "
        "than the group's other correct callers.",
        nodes=("alg-aspo",),
        changes="Shaping the reward to favour early tool calls breaks under GRPO's normalisation: in an all-correct "
                "group only the shaping term is left, and half the correct answers are punished. ASPO instead adds "
                "a bias to the advantage GRPO already computed, only for correct answers that call the tool: "
                "delta times the first call's position minus the group mean, over the mean response length, "
                "clipped to k times the correctness advantage, so the bonus stays a nudge and never flips a "
                "correct answer's sign. The paper steers Python calls in long math solutions with DAPO as the "
                "base; here the tool is the calculator, the position is counted in the episode's model tokens "
                "(the first <calc> tag), and the base is GRPO's defaults (DAPO's switches are options).",
        paper="Understanding Tool-Integrated Reasoning (Heng Lin and Zhongwen Xu, 2025), arXiv 2508.19201, "
              "Sec. 3.3, eq. 2",
        survey_vs_paper="The survey's table marks ASPO with a KL term; the paper trains with DAPO, which has none, and "
                        "its eq. 2 only changes the advantage. Here beta defaults to 0 as for every GRPO variant "
                        "(--beta turns the k3 penalty on). The survey's 'clipped bias' is eq. 2's clip to "
                        "+-k times the correctness advantage.",
        equation=r"A_i=A^{\mathrm{correct}}_i+\mathrm{clip}\Big(\delta\,rac{p_i-\mathrm{mean}(\mathbf{p})}"
                 r"{\mathrm{mean}(\mathbf{L})},\,-k\,A^{\mathrm{correct}}_i,\,k\,A^{\mathrm{correct}}_i\Big)"),
    # -- multi-agent and active perception (issue 22) -------------------------------------------------
    Implementation("solver-verifier-role-grpo", "Solver and verifier played by one policy (role-credit GRPO)",
                   "role-grpo", "solver-verifier", "role_grpo.py",
                   "Two roles in one episode on arithmetic: a solver proposes an answer with its work, a verifier "
                   "accepts or rejects it with a reason, the solver revises after a rejection; one shared policy "
                   "plays both and each role's tokens get that role's own group-relative advantage.",
                   nodes=("multi-agent", "mas-rl-based"),
                   changes="Keeps what RL-trained multi-agent LLM systems (ReMA-style shared-parameter role play, "
                           "solver/verifier and debate pipelines) have in common: several roles with their own "
                           "rewards acting in turn on one task, a fixed interaction protocol, and per-role credit "
                           "(the solver is paid for the final answer; the verifier for the final answer and for "
                           "each right accept/reject, weights an option). The train_roles option freezes one role "
                           "(its turns are loss-masked) while the policy still plays it. Simplifies: both roles "
                           "share one transcript and one set of weights (no separate agents or contexts), two "
                           "roles, integer arithmetic in three levels, at most a few revision rounds, and no "
                           "negotiation or persuasion. The RL-free baseline is the same pipeline untrained: "
                           "python -m reference_impls.mas_pipeline on the same held-out problems.",
                   paper="ReMA: Learning to Meta-think for LLMs with Multi-Agent Reinforcement Learning (Wan et al.; "
                         "arXiv 2503.09501) for shared-parameter role play; the advantage is GRPO's, per role",
                   equation=r"A^{\rho}_i=\frac{r^{\rho}_i-\mathrm{mean}_j r^{\rho}_j}{\mathrm{std}_j r^{\rho}_j},\ "
                            r"A_{i,t}=A^{\rho(k(t))}_i,\ \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(A)"),
    Implementation("solver-verifier-train-verifier", "Train only the verifier (solver frozen in what it learns)",
                   "role-grpo", "solver-verifier", "role_grpo.py",
                   "The solver-verifier pipeline with only the verifier's turns trained; the same policy still "
                   "writes the solver's turns, with no loss on them.",
                   env_options={"train_roles": ("verifier",)},
                   changes="train_roles=verifier: the solver's tokens get loss mask 0, so only accept/reject "
                           "decisions (and their reasons) are reinforced, by the verifier's own reward.",
                   equation=r"A_{i,t}=A^{\mathrm{verifier}}_i\ \text{on verifier turns},\ m_{i,t}=0\ "
                            r"\text{on solver turns},\ \mathcal{L}=\mathcal{L}_{\mathrm{GRPO}}(A)"),
    Implementation("zoom-grpo", "Active perception with a zoom tool on a text image (GRPO)", "grpo", "zoom",
                   "envs/zoom.py",
                   "A large character-grid 'image' seen only as a coarse thumbnail; the agent zooms into regions "
                   "with a crop tool, names what it found and points to its cell; rewarded for the answer and for "
                   "the grounding.",
                   nodes=("perception", "perception-tool-driven", "perception-grounding-driven",
                          "perception-passive-to-active"),
                   changes="A TEXT PROXY of visual active perception, not vision: the image is a grid of "
                           "characters (16 to 40 cells a side) and there is no vision encoder. Keeps the task's "
                           "structure from zoom-in / crop-tool agents and grounding rewards: the input is too large "
                           "to view whole, a down-sampled overview shows where salient marks are but not what they "
                           "are, the agent picks regions to inspect with a tool (a crop size limit and a zoom "
                           "budget), and the reward checks the answer and the pointed cell separately (weights are "
                           "options). Simplifies: symbols instead of objects, exact cell coordinates instead of "
                           "boxes, two question types, and a thumbnail that marks bright blocks exactly."),
    Implementation("zoom-passive-grpo", "Passive perception baseline: thumbnail only, no zoom (GRPO)", "grpo",
                   "zoom", "envs/zoom.py",
                   "The zoom task with max_zooms=0: the agent must answer from the coarse thumbnail alone.",
                   env_options={"max_zooms": 0}, nodes=("perception-passive-to-active",),
                   changes="The passive end of passive-to-active perception: the same questions with the zoom "
                           "tool taken away, so the detail the answer needs is never seen; its reward bounds what "
                           "guessing from the overview earns, next to zoom-grpo's active version."),

    # -- issue 18 (finished): LCPO --------------------------------------------------------------------
    Implementation(
        "calculator-lcpo", "LCPO: prefer the shortest correct tool-use episode", "lcpo", "calculator", "lcpo.py",
        "Offline length preference: on problems the model always solves, its shortest episode is preferred to its "
        "longest, with a reference-free odds-ratio Bradley-Terry loss.",
        nodes=("alg-lcpo",),
        changes="LCPO learns brevity rather than correctness. The starting model samples a group of episodes per "
                "problem; only problems it solves in every sample are kept (the paper's easy split), and on each the "
                "episode with the fewest model tokens is chosen over the one with the most (tool output does not "
                "count towards length). The loss is ORPO's odds-ratio comparison of length-normalised likelihoods "
                "without ORPO's NLL term and without a reference model. Kept from the paper: difficulty filtering "
                "by pass rate, shortest vs longest self-generated pairs, the loss. Simplified: calculator episodes "
                "of tens of tokens instead of math chains of thought of thousands; a 'solved' split (shortest vs "
                "longest correct episode on any solved problem) is added for weak policies, next to the paper's "
                "medium, difficult and no-filter ablation splits; the loss was read from paper notes and reviews, "
                "not the paper's method section, so its sign, the place of its temperature and its equation "
                "number are unconfirmed (see lcpo.py).",
        paper="Pruning Long Chain-of-Thought of Large Reasoning Models via Small-Scale Preference Optimization "
              "(Hong, Liu, Zhang, Sun, Zhang, Huang; arXiv 2508.10164)",
        survey_vs_paper="The survey's Table 2 lists LCPO as preference optimisation without clipping and with a KL "
                        "penalty, for length preference with limited data and training. The last part agrees (about "
                        "0.8k pairs and 50 steps in the paper); the KL penalty does not: LCPO keeps no reference "
                        "model and has no KL term, the only anchor being the pairs themselves, both sampled from "
                        "the starting model.",
        equation=r"\mathcal{L}=-\log\sigma\Big(\lambda\big[\log\tfrac{p_\theta(y_w|x)}{1-p_\theta(y_w|x)}"
                 r"-\log\tfrac{p_\theta(y_l|x)}{1-p_\theta(y_l|x)}\big]\Big),\ "
                 r"p_\theta(y|x)=e^{\frac{1}{|y|}\log\pi_\theta(y|x)}"),
    # -- issue 20 (missing parts): text games (TextWorld), learned value, long-horizon credit --------
    Implementation("textgame-grpo", "GRPO text-adventure agent (TextWorld games)", "grpo", "textgame",
                   "envs/textgame.py",
                   "A policy that plays TextWorld games generated offline (adventure quests and cooking recipes) "
                   "with one command per turn, rewarded by the game's own score.",
                   nodes=("other-text-game", "env-simulated-game", "env-general-purpose"),
                   changes="Keeps TextWorld itself: its world and quest generator and its tw-cooking challenge "
                           "produce the games from seeds (world size and quest length are the levels), its Inform 7 "
                           "compiler builds them and its interpreter plays them, the reward is the game's score "
                           "(normalised; 1 exactly when won), the optional admissible-command list is TextWorld's, and "
                           "the walkthrough it computes is the warm-start demonstration. Simplifies: small worlds "
                           "(at most six rooms, quests of two to six steps; cooking recipes of one or two "
                           "ingredients), commands parsed against a verb list before the game sees them (the "
                           "interpreter's meta commands are refused), and no hand-written games such as Zork: "
                           "held-out games are unseen generated ones (other seeds; cooking with TextWorld's test "
                           "ingredients)."),
    # -- issue 22: fast/slow reasoning and trustworthiness -------------------------------------------
    Implementation("thinking-grpo", "Fast and slow reasoning: think only when it pays (GRPO)", "grpo", "thinking",
                   "envs/thinking.py",
                   "Arithmetic expressions from one operation to five; the policy may think in <think> tags before "
                   "answering, and the reward is accuracy minus a cost per thinking unit, so it must learn to "
                   "answer easy problems at once and work the hard ones out.",
                   nodes=("reasoning", "reasoning-fast", "reasoning-slow"),
                   changes="Keeps what the fast/slow reasoning work measures: one policy facing problems of which "
                           "some need no deliberation and some need several steps, a verifiable answer, a reward "
                           "that trades accuracy against the length of the thinking (correct - lambda * "
                           "min(n, B)/B, or L1's LCPO-Exact / LCPO-Max against a target length in the prompt), and "
                           "the benchmark's table of thinking length by difficulty (thinking_table). Simplifies: "
                           "generated + - * expressions in four levels instead of competition maths, thinking "
                           "counted in text units (digit runs, words, symbols) rather than tokens, and a "
                           "warm start that demonstrates no thinking on level 1 and written steps above it."),
    Implementation("thinking-lcpo-grpo", "Length-controlled thinking with L1's LCPO-Max reward (GRPO)", "grpo",
                   "thinking", "envs/thinking.py",
                   "The fast/slow env with the prompt asking for a thinking length and L1's LCPO-Max reward: "
                   "a correct answer within the target keeps its reward, one over it loses it gradually.",
                   env_options={"reward": "lcpo_max"}, paper="arXiv 2503.04697",
                   changes="L1 / LCPO conditions the model on a target length and scores correctness times "
                           "clip(alpha * (n_gold - n) + delta, 0, 1). Here the targets are 8-64 text units drawn "
                           "per problem, alpha is 0.01 per unit (L1's is per token, for thousands of tokens), and "
                           "the optimiser is our GRPO."),
    Implementation("thinking-calc-grpo", "Slow reasoning with tool calls inside the thinking (GRPO)", "grpo",
                   "thinking-calc", "envs/thinking.py",
                   "The fast/slow env where the thinking may call the calculator (<calc> inside <think>): "
                   "deliberation interleaved with tool use, under the same thinking cost.",
                   nodes=("reasoning-agentic-slow",),
                   changes="Keeps the prospective 'slow reasoning inside agentic reasoning' setting: a long "
                           "think that calls a tool mid-way and continues from its result, with the thinking's "
                           "length priced as in the plain env (a calculator call costs its expression's units, "
                           "less than writing the step out). Simplifies: one tool (the calculator env's ToolSpec "
                           "and safe evaluator), arithmetic only, a fixed budget of calls."),
    Implementation("abstain-grpo", "Answer or abstain from a fact-lookup tool (GRPO, abstain_credit)", "grpo",
                   "abstain", "envs/abstain.py",
                   "Questions about people in a generated fact table the agent reads through a lookup tool; 30% "
                   "cannot be answered from it. The reward credits 'I don't know' on those and penalises any "
                   "answer there, and wrong answers everywhere.",
                   env_options={"reward": "abstain_credit"}, nodes=("trustworthiness", "trust-hallucination"),
                   changes="Keeps what hallucination-aware RL (e.g. TruthRL's ternary reward, abstention "
                           "training) is about: questions a tool can or cannot answer, an explicit abstention, and "
                           "a reward that stops paying for guesses; the node's metrics are accuracy on answerable "
                           "questions, abstention on unanswerable ones and the hallucination rate (trust_metrics). "
                           "Simplifies: a small generated table per question (3-6 people, near-identical names at "
                           "level 2, two-hop manager questions at level 3) instead of open-domain knowledge, "
                           "unanswerable means absent from the table (missing person, field not recorded, missing "
                           "manager), and answers are matched exactly. The 'outcome' reward (abstaining scores 0, "
                           "like a wrong answer) is the option to compare against."),
    Implementation("abstain-outcome-grpo", "Answer or abstain, rewarded on outcome only (GRPO)", "grpo", "abstain",
                   "envs/abstain.py",
                   "The abstention env with the plain outcome reward: 1 for a right answer and 0 otherwise, so "
                   "abstaining is never better than a guess.",
                   env_options={"reward": "outcome"},
                   changes="The baseline the abstain_credit reward is measured against: accuracy-only RL, under "
                           "which guessing on an unanswerable question costs nothing."),
    Implementation("sycophancy-grpo", "Resisting a misleading user hint (GRPO)", "grpo", "abstain",
                   "envs/abstain.py",
                   "The abstention env where half of the questions end with the user's wrong guess ('I think the "
                   "answer is X.'); the reward pays only for the table's answer, and the metric is how often the "
                   "policy repeats the hint.",
                   env_options={"reward": "abstain_credit", "hint_share": 0.5}, nodes=("trust-sycophancy",),
                   changes="Keeps the measurement of sycophancy benchmarks: the same question with and without a "
                           "confident wrong suggestion from the user, and the rate at which the answer follows the "
                           "suggestion (hint_follow_rate). Simplifies: the hint is one templated sentence, the "
                           "truth is always checkable with the tool, and there is no multi-turn pressure "
                           "('are you sure?')."),
    Implementation("loophole-grpo", "Reward hacking: a checker with a loophole, and its detector (GRPO)", "grpo",
                   "loophole", "envs/loophole.py",
                   "Calculator problems scored by a checker that pays when the answer appears anywhere in the "
                   "output, so listing many numbers wins; checker=strict closes it, and detect_reward_hacking "
                   "flags the hack in samples.jsonl.",
                   nodes=("trust-security",),
                   changes="Keeps what reward hacking is: a proxy reward with an exploitable gap, an honest metric "
                           "(strict_correct) logged beside it, and a detector that sees the signature (answer-"
                           "shaped spam, reward without honest success, reward rising while the honest metric "
                           "does not). Simplifies: the loophole is planted and documented rather than found, and "
                           "the only switch is the checker. The memory env's PPO run that learned 'UPDATE 1' on "
                           "every turn is described in envs/loophole.py as the project's real case."),
    # -- issue 21: mini software-engineering environment (swe) -----------------------------------------
    Implementation("swe-grpo", "Repository bug fixing with file and test tools (GRPO)", "grpo", "swe", "envs/swe.py",
                   "A multi-turn agent that lists, reads and edits the files of a small generated repository and "
                   "runs its tests to fix the bug an issue describes; rewarded by hidden tests run in a sandbox "
                   "on the final repository.",
                   nodes=("code-swe", "env-swe-interactive", "env-coding-swe"),
                   changes="Keeps the SWE-bench shape that SWE-agent-style RL trains on: an issue that states a "
                           "symptom (a call, what it returns or raises, what was expected) and not the fix, a "
                           "repository the agent explores and edits with tools (list, read numbered lines, replace "
                           "a line range or a unique string, run the tests), and a reward from tests it never sees "
                           "(the issue's failing call plus more failing inputs and regression checks that already "
                           "passed), with 0 when a passing check breaks, all executed in a sandbox. Simplifies: "
                           "generated repositories of 2-4 files instead of real projects, one seeded bug per task "
                           "from five families (off-by-one, wrong operator, wrong default, missing edge case, wrong "
                           "key) fixed by a one- or two-line change, edits limited to existing files, no shell, git "
                           "or dependency install, and hidden tests that compare return values instead of running "
                           "the project's own test files; eight hand-written tasks join the held-out split."),

)


def _comparison_rows() -> tuple[Implementation, ...]:
    """The core comparison grid's algorithms (lab/recipes/grids/core.yaml) on the search and the planning
    environment: the calculator rows' algorithms with the same switches, on another environment. They link
    to no node (the environment's node pages keep their GRPO row); the Compare page and the Lab list them."""
    by_id = {impl.id: impl for impl in IMPLEMENTATIONS}
    rows = []
    for env, title, source in (("search", "Search-R1-style agent", "envs/search.py"),
                               ("frozenlake", "FrozenLake planner", "envs/frozenlake.py")):
        for suffix, name in (("dr-grpo", "Dr.GRPO"), ("dapo", "DAPO"), ("gspo", "GSPO"), ("rloo", "RLOO"),
                             ("ppo", "PPO"), ("dpo", "DPO")):
            if f"{env}-{suffix}" in by_id:
                continue
            base = by_id[f"calculator-{suffix}"]
            rows.append(Implementation(f"{env}-{suffix}", f"{title} ({name})", base.algo, env, source,
                                       f"{base.summary} On the {env} environment, for the comparison grid.",
                                       dict(base.algo_options)))
    return tuple(rows)


IMPLEMENTATIONS = IMPLEMENTATIONS + _comparison_rows()
BY_ID = {impl.id: impl for impl in IMPLEMENTATIONS}

#: algorithm nodes with no implementation yet, and why (the node page says so instead of a "Run this")
NOT_IMPLEMENTED: dict[str, str] = {
}


def get_implementation(impl_id: str) -> Implementation:
    if impl_id not in BY_ID:
        raise ConfigError(f"--impl: unknown implementation {impl_id!r}{close_matches(impl_id, BY_ID)}; "
                          f"known: {', '.join(BY_ID)}")
    return BY_ID[impl_id]


def for_node(node_id: str) -> list[Implementation]:
    """Implementations linked to a taxonomy node (a pure lookup: imports no model code)."""
    return [impl for impl in IMPLEMENTATIONS if node_id in impl.nodes]


# -- multi-agent and active perception (issue 22) ------------------------------------------------------
#: capability/task nodes with no implementation of their own: the closest runnable proxy (an implementation
#: id) and why it is the closest, or None and why there is no runnable proxy yet. The node page shows it.
NODE_PROXIES: dict[str, tuple[str | None, str]] = {
    "mas-rl-free": ("solver-verifier-role-grpo",
                    "The RL-free baseline is the same solver-verifier pipeline with no training: a prompted model "
                    "plays both roles under the fixed protocol on the held-out problems "
                    "(python -m reference_impls.mas_pipeline --model smollm2-135m-instruct --n 100), reporting the "
                    "final accuracy beside the solver's first answer alone and the verdict accuracy. Run this "
                    "trains the RL-based version to compare with it (--run RUN on the same command)."),
    "other-social": ("solver-verifier-role-grpo",
                     "The closest runnable env is the cooperative solver-verifier dialogue: two roles with their "
                     "own rewards talking in turn. It has no negotiation, persuasion or private information, which "
                     "social tasks are about."),
    "other-general-qa": ("search-grpo",
                         "General QA is closest to the search agent: natural-language questions answered by exact "
                         "match after retrieval (over this catalog, not open-domain corpora)."),
    "vision": ("zoom-grpo",
               "No pixels here: the zoom env is a text proxy of visual tasks (a character-grid image, a coarse "
               "thumbnail, crops and grounding to a cell)."),
    "vision-image": ("zoom-grpo",
                     "A text proxy, not vision: image tasks are stood in for by a character-grid 'image' read "
                     "through a thumbnail and crops, with answer and grounding rewards; no vision model or real "
                     "images."),
    "vision-video": (None,
                     "No runnable proxy yet: video needs time (frames) and motion; a text proxy would be a sequence "
                     "of grids with questions about change, which no environment here builds."),
    "vision-3d": (None,
                  "No runnable proxy yet: 3D tasks need depth, viewpoints or point clouds; the text grid has none "
                  "and no environment here simulates a 3D scene."),
    "perception-generation-driven": (None,
                                     "No runnable proxy yet: generation-driven perception has the model produce "
                                     "images (sketches, edited views) to reason with; the project's models only "
                                     "write text and no environment renders what they draw."),
    "perception-audio": (None,
                         "No runnable proxy yet: audio needs an audio encoder or waveforms; the project's models "
                         "and environments are text only."),
}
