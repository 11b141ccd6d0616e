"""Errors that name their cause: an arm that fails with one of these messages points to the hypothesis that
explains it, so the crash reads as evidence for that hypothesis and not only as a failed run.

Plain data and `re`, nothing heavy: the verdict (pure) and the CLI read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownFailure:
    pattern: str  # a regular expression, searched in the arm's error text
    hypothesis: str  # the hypothesis whose cause the error is
    means: str  # what the error says about the run, in the user's terms


KNOWN_FAILURES: tuple[KnownFailure, ...] = (
    # torch's backward on a loss with no grad_fn: trl#2671, the crash the silent form of h19 comes from
    KnownFailure(r"element 0 of tensors does not require grad", "h19",
                 "the loss reaches no trainable weight: layers checkpointed over inputs that do not require grad "
                 "(a PEFT model without enable_input_require_grads, frozen embeddings under reentrant "
                 "checkpointing), or no weight left trainable"),
)


def explain(error: str) -> KnownFailure | None:
    """The known failure an error message shows, or None."""
    return next((known for known in KNOWN_FAILURES if re.search(known.pattern, error)), None)
