"""Runnable, trainable reference implementations of agentic RL algorithms for LLMs.

Layout (nanoGPT-style model/train split, CleanRL-style one file per algorithm), bottom to top:

- ``options.py``     typed option fields: the CLI flags, the Lab's form and validation come from them
- ``models.py``      load a policy (SmolLM2-135M-Instruct from a local GGUF, or a tiny random Llama)
- ``envs/``          the Env protocol, ``EnvSpec`` and one module per environment (each declares ``ENV_SPECS``)
- ``engine.py``, ``rollout.py``   batched multi-turn generation with tool calls and loss masks
  (``generate_engine.py``: the reference engine on ``model.generate``, imported only when used)
- ``common.py``      per-token log-probs, entropy, masked means; ``policy_gradient.py`` the shared clipped update
- ``algorithm.py``   the one interface every algorithm implements, and the Context the trainer hands it
- ``algorithms/``    the algorithms by family (``grpo/``, ``reinforce/``, ``ppo/``, ``dpo/``, ``agentic/``): one
                     file each, declaring its ``Algorithm`` subclass and its runnable rows
- ``implementations.py``  what a runnable row is, and node facts (proxies); imports no model code
- ``registry.py``    every algorithm and row, collected from the modules that declare them
- ``sft.py``         supervised warm start on the environments' demonstrations
- ``train.py``       the RL training loop and CLI (checkpoints, resume, signals, DDP); ``rundir.py`` its folder
- ``callbacks.py``   minGPT-style training callbacks (JSONL, TensorBoard, progress bar)
- ``measure/``       the measurement CLIs over trained policies (held-out evaluation, reports, value search,
                     self-correction, the multi-agent pipeline), on one shared ``measure/cli.py`` main
- ``trl_bridge.py`` / ``export.py`` (TRL), ``sandbox.py`` (running code the code envs ask for; its
  isolation layers' command lines in ``sandbox_layers.py``), ``stats.py``
"""
