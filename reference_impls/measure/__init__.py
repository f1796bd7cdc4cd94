"""The measurement commands: what is measured on a policy (a model name or a run's latest checkpoint) after or
beside training. Each module is a library (its functions take a loaded model) and a command line,
``python -m reference_impls.measure.<module>``; the command lines share one ``main`` (``cli.py``).

- ``evaluate.py``         greedy held-out accuracy (the measure every other one builds on)
- ``report.py``           an environment's registered report on held-out problems; the reward-hacking detector
- ``self_correction.py``  first vs second attempt, external vs self feedback
- ``mas_pipeline.py``     the RL-free multi-agent baseline (prompted roles as a fixed pipeline)
- ``value_search.py``     a learned value head guiding best-first search, against the policy at equal calls
  (the value itself, its states, targets and fit: ``value_head.py``, a library with no command of its own)

This package sits above the trainer's layers (rollout, envs, models): nothing below it imports it.
"""
