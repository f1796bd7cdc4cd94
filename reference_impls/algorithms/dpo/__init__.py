"""Offline preference optimisation: DPO and its variants, on pairs built from the policy's own rollouts."""
