"""One metric reading, as a hypothesis's criteria and triage's signatures both write it.

A reading takes one metric of a run, makes its logged steps one number (`steps`, with the window
`k`), optionally takes its absolute value (`abs`) and compares it with a threshold (`op`,
`threshold`). A criterion (models.Criterion) adds the arm and how the seeds combine; a triage
condition (triage.Condition) checks the metric is one triage reads. A criterion narrows what it
accepts (no growth, `op` defaults to >=) with the same declarations (`reading_steps`,
`reading_window`, `Operator`), so each key's type, description and rule are written once.
hypotrack/reading.py computes the aggregations and the comparison.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hypotrack.reading import OPERATORS, STEP_AGGREGATIONS, WINDOWED, aggregate_steps, compare

from .unread import read_only_when

# What each aggregation makes of the logged steps (hypotrack/reading.py says how), for `steps`' description.
_MEANINGS = {
    "mean_last": "the last k steps", "mean_first": "the first k steps",
    "slope": "per step, by least squares, in the metric's units",
    "slope_t": "that slope over its standard error: unitless, above about 3 the series really climbs, below "
               "about -3 it really falls",
    "growth": "the mean of the last k steps over the mean of the first k; the windows grow to a tenth of a long "
              "run's steps and shrink to half a short run's",
}


def reading_steps(names: tuple[str, ...]) -> Any:
    """The type of a reading's `steps` that accepts these aggregations."""
    each = [f"{name} ({_MEANINGS[name]})" if name in _MEANINGS else name for name in names]
    return Annotated[Literal[names], Field(  # type: ignore[valid-type]
        description=f"How the logged steps become one number: {', '.join(each[:-1])} or {each[-1]}.")]


def reading_window(names: tuple[str, ...]) -> Any:
    """The type of a reading's `k`, read only with those of these aggregations that take a window."""
    windowed = tuple(name for name in WINDOWED if name in names)
    return Annotated[int, Field(ge=1, description=f"Window for {' / '.join(windowed)}, in logged steps.",
                                json_schema_extra=read_only_when(steps=windowed))]


Operator = Annotated[Literal[tuple(OPERATORS)],  # type: ignore[valid-type]
                     Field(description="How the number compares with the threshold.")]


class MetricReading(BaseModel):
    """One metric of a run, its logged steps aggregated into one number and compared with a threshold."""

    # As the hypotheses' models: a typo in a key and a NaN threshold are load errors.
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)

    metric: str = Field(description="The metric, by the name the run logs it under.")
    steps: reading_steps(STEP_AGGREGATIONS) = "mean"  # type: ignore[valid-type]
    k: reading_window(STEP_AGGREGATIONS) = 10  # type: ignore[valid-type]
    abs: bool = Field(False, description="Compare the absolute value.")
    op: Operator
    threshold: float = Field(description="The number the aggregated value is compared with.")

    def aggregate(self, points: list[tuple[int, float]]) -> float | None:
        """The reading's number from the metric's (step, value) points; None where none is finite."""
        return aggregate_steps(points, self.steps, self.k)

    def compared(self, value: float) -> float:
        """The number the threshold is compared with: the value, or its absolute value with abs."""
        return abs(value) if self.abs else value

    def holds(self, value: float) -> bool:
        """Whether the value compares with the threshold as `op` says."""
        return compare(self.compared(value), self.op, self.threshold)

    def steps_text(self) -> str:
        """The aggregation as shown with a reading: mean_last(10), slope_t."""
        return f"{self.steps}({self.k})" if self.steps in WINDOWED else self.steps

    def metric_text(self) -> str:
        """The metric's name, between bars where its absolute value is compared."""
        return f"|{self.metric}|" if self.abs else self.metric
