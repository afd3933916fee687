"""Benchmark and verification harness for short-range GPU MD force strategies.

Kept import-light: submodules (scenarios, verify, bench, ...) are imported where used.
"""
