"""What a run already says where its user declared nothing: each inference, with the sentence that states it.

The reference column. TRL calls every reward function with each dataset column (all but the prompt) as a
keyword argument. So a task reward that takes a column as an argument of its own, as in
``def exact(completions, answer, **kwargs)``, names the column that holds each row's answer. Rules:

- A required argument that is a dataset column counts over one with a default.
- TRL's own arguments are never candidates: prompts, completions, completion_ids, trainer_state, log_extra,
  log_metric and environments.
- Where two or more columns remain, the one named as answers are (answer, solution, ground_truth, ...) is
  taken, if exactly one is.
- Otherwise nothing is inferred, and the criteria still say how to declare the column.

A declaration the user wrote always wins: nothing is inferred over it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# The keyword arguments TRL passes to every reward function beside the dataset's columns (trl 1.16).
TRL_ARGUMENTS = frozenset({"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric",
                           "environments"})
# Column names that hold answers, for a reward that takes several columns.
ANSWER_NAMES = ("answer", "answers", "solution", "ground_truth", "reference", "target", "gold", "label",
                "expected_answer", "final_answer")


@dataclass(frozen=True)
class Inference:
    """One declaration filled in from the run itself."""

    declaration: str  # where the user would declare it, e.g. data.reference_column
    what: str  # what it is, e.g. "reference answers"
    value: str
    how: str  # how the run implies it

    @property
    def sentence(self) -> str:
        return f"{self.what}: column `{self.value}`, {self.how}; override with {self.declaration}"


def reference_column(task_reward: Callable[..., Any], columns: Iterable[str]) -> Inference | None:
    """The dataset column the task reward reads its answers from, where its signature names one."""
    try:
        parameters = inspect.signature(task_reward).parameters  # follows __wrapped__ to the user's function
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return None
    present = set(columns) - {"prompt"}
    named = [p for p in parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in TRL_ARGUMENTS
             and p.name in present]
    required = [p.name for p in named if p.default is p.empty]
    candidates = required or [p.name for p in named]
    name = _name(task_reward)
    if len(candidates) == 1:
        return Inference("data.reference_column", "reference answers", candidates[0],
                         f"the task reward {name}'s own argument")
    answers = [c for c in candidates if c.lower() in ANSWER_NAMES]
    if len(answers) == 1:
        return Inference("data.reference_column", "reference answers", answers[0],
                         f"the task reward {name}'s argument named as answers are (it also takes "
                         f"{', '.join(c for c in candidates if c != answers[0])})")
    return None


def _name(func: Any) -> str:
    return f"`{getattr(func, '__name__', type(func).__name__)}`"
