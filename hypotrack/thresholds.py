"""Thresholds a hook and triage share, so a live diagnostic and a read log mean the same by one number.

Plain constants, no imports: the hooks (with torch) and triage (without) both read them.
"""

from __future__ import annotations

# h22: a learning rate below this share of its peak trains about nothing...
LR_SPENT = 0.05
# ...and counts as spent early while this share of the run's steps remains.
LR_REMAINING = 0.25

# h19: when this share or more of the trainable weights (by element count) got no gradient at a step whose
# groups had reward variance, the backward pass is cut off (a few untouched tensors are normal).
NO_GRAD_SHARE = 0.5

# h25: when this share or more of the trainable weights (by element count) that got a gradient did not change at an
# optimizer step, the optimizer does not hold them (a weight it holds moves at its first step with a gradient).
UNMOVED_SHARE = 0.5
