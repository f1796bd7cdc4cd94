"""Algorithms built around an agentic setting: self-play task proposal, per-role credit in multi-agent play."""
