"""What a metric reading computes: one metric's logged steps made one number, and that number compared.

A hypothesis's criteria (hypotrack/verdict.py) and triage's signatures (hypotrack/triage/evaluate.py)
both read a metric this way; hypotrack/definitions/reading.py declares the reading they write.

The step aggregations, over the metric's finite values in step order (None where there are none):

    mean         the arithmetic mean of every logged step
    mean_last    the mean of the last k steps (of all of them on a run shorter than k)
    mean_first   the mean of the first k steps
    last, first  the value at the last / first step
    max, min     the largest / smallest value
    slope        the least-squares slope of the value on the step number: per step, in the metric's units
                 (None under two distinct steps)
    slope_t      that slope over its standard error, as scipy.stats.linregress gives both: unitless, so
                 "the series climbs" means the same whatever the metric's scale and noise (None under
                 three distinct steps, where two points fit exactly; 0 for a flat series; +-inf for an
                 exact line)
    growth       the mean of the last k steps over the mean of the first k: how far the run moved from its
                 own start (None under two steps, or where the first mean is not above 0). The windows
                 are k steps or GROWTH_SHARE of the steps, whichever is more, and at most half: ten rows
                 of a run that logs 2400 are too small a sample to be its start (an entropy that sits near
                 0.035 and spikes to 1 on single steps reads 1.33 on its first and last ten rows, and 0.13
                 on every other row of the same run), while a tenth of it still ends where the run ends

The comparison is Python's operator on the number (its absolute value where the reading says abs)
and the threshold, a number within a millionth of the threshold (relative) read as the threshold itself.
Pure Python: no scipy, whose import would be most of `hypotrack triage`'s time.
"""

from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Callable

# Every aggregation a reading may name, in the order the docstring explains them.
STEP_AGGREGATIONS = ("mean", "mean_last", "mean_first", "last", "first", "max", "min", "slope", "slope_t", "growth")
# The aggregations that read a window of k steps.
WINDOWED = ("mean_last", "mean_first", "growth")
GROWTH_SHARE = 0.1  # growth's windows are at least this share of a long run's steps
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne}


# A reading this close to its threshold (relative) is at it: the mean of three steps that each logged 0.7 is
# 0.6999999999999998 in floating point, and a value that passed through float32 is off by up to 6e-8 of itself, so
# without this, rounding decides a reading at its threshold. A threshold of 0 is still compared exactly.
AT_THRESHOLD = 1e-6


def compare(value: float, op: str, threshold: float) -> bool:
    """Whether ``value op threshold`` holds, a value within AT_THRESHOLD of the threshold read as equal to it."""
    if value != threshold and math.isclose(value, threshold, rel_tol=AT_THRESHOLD):
        value = threshold
    return bool(OPERATORS[op](value, threshold))


def closeness(value: float, op: str, threshold: float) -> str:
    """How far a reading sits from its threshold, in words: relative to the threshold, or absolute where it is 0.
    A reading of one run has no seeds to measure its noise by: this says how much room it leaves."""
    gap = abs(value - threshold)
    size = f"{gap / abs(threshold):.0%}" if threshold else f"{gap:.3g}"
    return f"{size} {'past' if compare(value, op, threshold) else 'short of'} its threshold"


def aggregate_steps(points: list[tuple[int, float]], how: str, k: int) -> float | None:
    """One number from a metric's (step, value) points by the aggregation ``how`` (the module docstring)."""
    values = [(s, v) for s, v in sorted(points) if v is not None and math.isfinite(v)]
    if not values:
        return None
    ys = [v for _, v in values]
    if how == "mean":
        return statistics.fmean(ys)
    if how == "mean_last":
        return statistics.fmean(ys[-k:])
    if how == "mean_first":
        return statistics.fmean(ys[:k])
    if how == "last":
        return ys[-1]
    if how == "first":
        return ys[0]
    if how == "max":
        return max(ys)
    if how == "min":
        return min(ys)
    if how == "growth":
        if len(ys) < 2:
            return None
        k = min(max(k, int(len(ys) * GROWTH_SHARE)), len(ys) // 2)
        first, last = statistics.fmean(ys[:k]), statistics.fmean(ys[-k:])
        return last / first if first > 0 else None
    if how in ("slope", "slope_t"):
        return _slope(values, t=how == "slope_t")
    raise ValueError(f"unknown step aggregation {how!r}")


def _slope(values: list[tuple[int, float]], t: bool) -> float | None:
    xs, ys = [s for s, _ in values], [v for _, v in values]
    if len(set(xs)) < 2:
        return None
    slope, stderr = line_fit(xs, ys)
    if not t:
        return slope
    if len(set(xs)) < 3:
        return None  # two points fit exactly: no noise estimate
    if slope == 0:
        return 0.0  # a flat series
    if stderr == 0:
        return math.copysign(math.inf, slope)  # an exact line: no noise at all
    return slope / stderr


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """The least-squares slope of ys on xs and its standard error, as scipy.stats.linregress gives them
    (stderr = sqrt(residual sum of squares / (n - 2) / sum of squared x deviations); 0 for two points).

    Computed here because importing scipy.stats takes 0.8 s, most of `hypotrack triage`'s budget, and a
    slope is all triage needs of it."""
    slope = statistics.linear_regression(xs, ys).slope
    n = len(xs)
    if n < 3:
        return slope, 0.0
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    sxx = math.fsum((x - x_mean) ** 2 for x in xs)
    residual = math.fsum((y - y_mean - slope * (x - x_mean)) ** 2 for x, y in zip(xs, ys))
    return slope, math.sqrt(residual / (n - 2) / sxx)
