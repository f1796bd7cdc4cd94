"""The algorithms, one file each, by family (the survey's algorithm taxonomy):

- ``grpo/``       GRPO (with DAPO, Dr.GRPO and GSPO as switches of ``grpo.py``) and the variants that change
                  one piece of it: an advantage, the surrogate, or which prompts a step draws
- ``reinforce/``  REINFORCE with a leave-one-out baseline (RLOO)
- ``ppo/``        PPO with a critic and its variants
- ``dpo/``        offline preference optimisation (DPO and its variants)
- ``agentic/``    algorithms built around an agentic setting: self-play task proposal, multi-role credit

Each module declares its algorithm (a subclass of ``reference_impls.algorithm.Algorithm`` with a ``name``)
and its runnable rows (``IMPLEMENTATIONS``); ``reference_impls.registry`` collects both.
"""

#: family folders in the order the registry lists them
FAMILIES = ("grpo", "reinforce", "ppo", "dpo", "agentic")
