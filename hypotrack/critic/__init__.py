"""Critic parity (seed 000): two critic implementations on one backbone, trained side by side.

Light at import (no torch): settings and the metric names (manifest). The heavy parts load on use:
`hypotrack.critic.run.run_critic_parity`, `.backends`, `.data`, `.train`, `.parity`.
"""
from .manifest import CRITIC_METRICS
from .settings import CriticSettings, resolve_controls

__all__ = ["CRITIC_METRICS", "CriticSettings", "resolve_controls"]
