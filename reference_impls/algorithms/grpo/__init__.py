"""GRPO and the variants that change one piece of it: each file is one paper, mostly a small subclass
that overrides ``GRPO.advantages`` (what each sample or token is credited with), ``GRPO.loss_fn`` (the
surrogate), or the trainer hooks ``draw`` / ``collect`` / ``state_dict`` (which prompts a step rolls out, and how)."""
