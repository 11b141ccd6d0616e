"""Parity checks: reference GRPO loss vs TRL, logprob parity across contexts, bitwise determinism.

Importing this package is cheap (no torch); import the submodules for the checks themselves.
"""
from .manifest import PARITY_METRICS
from .settings import ParitySettings

__all__ = ["PARITY_METRICS", "ParitySettings"]
