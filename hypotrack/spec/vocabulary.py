"""The closed sets of words hypotrack and TRL agree on, declared once.

Plain tuples, no imports: the registry, the spec models, the CLI's choices, the
GRPO maths and the hooks all read them from here.
"""

from __future__ import annotations

# A hypothesis's status in the registry.
STATUSES: tuple[str, ...] = ("pending", "testing", "validated", "partial", "invalidated", "inconclusive")
RESOLVED_STATUSES = frozenset({"validated", "invalidated", "partial"})
PRIORITIES: tuple[str, ...] = ("high", "medium", "low")
PRIORITY_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
# A test run's state.
RUN_STATES: tuple[str, ...] = ("running", "finished", "failed", "killed")
ARMS: tuple[str, ...] = ("control", "treatment")

# GRPOConfig.scale_rewards and .loss_type values of trl 1.16 (its help text and _compute_loss).
SCALE_REWARDS: tuple[str, ...] = ("group", "batch", "none")
LOSS_TYPES: tuple[str, ...] = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo", "cispo", "sapo", "vespo")
# The ones hypotrack.grpo_math reproduces (and `hypotrack parity loss` checks): all but vespo.
REFERENCE_LOSS_TYPES: tuple[str, ...] = tuple(t for t in LOSS_TYPES if t != "vespo")

TRAINERS: tuple[str, ...] = ("grpo", "critic", "parity")
