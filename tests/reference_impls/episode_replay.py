"""Replaying scripted model turns through an environment (the environment tests' shared helper)."""
from __future__ import annotations


def play(env, texts):
    """Reset ``env``, then step it with each of ``texts`` until the episode ends; the last step's result (None
    when ``texts`` is empty)."""
    env.reset()
    result = None
    for text in texts:
        result = env.step(text)
        if result.done:
            break
    return result
