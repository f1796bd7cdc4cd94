"""Runnable, trainable reference implementations of agentic RL algorithms for LLMs.

Layout (nanoGPT-style model/train split, CleanRL-style one file per algorithm):

- ``models.py``     load a policy (SmolLM2-135M-Instruct from a local GGUF, or a tiny random Llama)
- ``envs/``         the Env protocol and the calculator tool-use environment
- ``rollout.py``    batched multi-turn generation with loss masks (shared by every algorithm)
- ``common.py``     per-token log-probs, entropy, masked means (shared by every algorithm)
- ``grpo.py``       GRPO and its variants (Dr.GRPO, DAPO, GSPO): config dataclass + one-screen loss
- ``rloo.py``       RLOO leave-one-out baseline in the same style
- ``sft.py``        supervised warm start on synthetic tool-use transcripts
- ``train.py``      the RL training loop and CLI (checkpoints, resume, signals, DDP)
- ``measure/``      greedy held-out accuracy (``measure/evaluate.py``) and the other measurement CLIs
- ``callbacks.py``  minGPT-style training callbacks (JSONL, TensorBoard, progress bar)
"""
