"""GRPO-family variants that change one piece of GRPO (``grpo.GRPO``): each file is one paper, a small
subclass that overrides ``GRPO.advantages`` (what each sample or token is credited with), ``GRPO.loss_fn``
(the surrogate), or the trainer hooks ``draw`` / ``state_dict`` (which prompts a step rolls out)."""
