"""Memory-R1-style memory agent (issue 7): synthetic dialogues, memory bank, Answer Agent, managers.

- ``dialogue.py``  procedurally generated multi-session dialogues with the ground-truth memory state and
                   questions (single, updated, multi-hop, temporal); seeded, levels 1-3, held-out split
- ``bank.py``      memory bank (ADD / UPDATE / DELETE / NOOP), the operation parser, BM25 retrieval
- ``answer.py``    the frozen, prompted Answer Agent (select, then answer) and EM / F1
- ``managers.py``  manager prompt, no-memory / add-only / rule / LM managers, whole-dialogue evaluation

The RL environment is ``reference_impls/envs/memory.py``; results in ``docs/results_memory.md``.
"""
