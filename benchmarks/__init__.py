"""Measurement scripts (timings, learning curves, evaluations) whose results the docs record.

Each module runs as ``python -m benchmarks.NAME`` or ``python benchmarks/NAME.py``; they import each
other as ``benchmarks.stages`` etc. Timing goals live here, never in unit tests.
"""
