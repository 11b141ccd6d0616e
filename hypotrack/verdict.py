"""A verdict answers the user's two questions about a hypothesis, from the metrics of its arms and seeds.

1. The signature: do the diagnostics show this bug's fingerprint? The hypothesis's declarative
   criteria, evaluated over steps and seeds: present (the validated criteria hold), absent (the
   invalidated criteria hold) or undecided.
2. The effect: does the treatment help? Treatment minus control on the outcome, paired by seed,
   with its interval (hypotrack/effect.py).

Status: signature and effect -> validated; one without the other -> partial, saying which; no
signature -> invalidated; a signature whose effect these seeds cannot tell, or an undecided
signature -> inconclusive, saying what would decide it. Without a treatment arm (or for checks
that are their own test: parity, critic) the signature decides alone, and the summary says so.
Pure Python plus scipy.stats: the runner hands in the series it collected from the workers.
"""

from __future__ import annotations

import math
import operator
import statistics
from dataclasses import dataclass, field
from typing import Any

from hypotrack.effect import Effect, Series, measure
from hypotrack.spec.models import AnyOf, Criterion, Hypothesis

OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
       "==": operator.eq, "!=": operator.ne}


@dataclass
class CriterionResult:
    group: str
    criterion: Criterion
    per_seed: dict[int, float | None]
    value: float | None  # the number compared: mean over seeds (or the seed values' mean for display)
    holds: bool
    agreement: float  # share of seeds whose own value passes
    strength: float  # 0..1 from the margin to the threshold relative to the spread
    missing: str = ""

    def describe(self) -> str:
        c = self.criterion
        if self.value is None:
            hint = f"; {c.if_missing.strip()}" if c.if_missing else ""
            return f"{c.metric} [{c.arm}]: no data ({self.missing}){hint}"
        name = f"|{c.metric}|" if c.abs else c.metric
        passing = sum(1 for v in self.per_seed.values() if v is not None and _compare(c, v))
        counted = sum(1 for v in self.per_seed.values() if v is not None)
        mark = "holds" if self.holds else "fails"
        return (f"{name} [{c.arm}, {c.steps}{'(' + str(c.k) + ')' if c.steps in ('mean_last', 'mean_first') else ''}]"
                f" = {self.value:+.4g} {c.op} {c.threshold:g}: {mark} ({passing}/{counted} seeds, {c.seeds})")

    def as_json(self) -> dict[str, Any]:
        c = self.criterion
        return {"group": self.group, "metric": c.metric, "arm": c.arm, "steps": c.steps, "k": c.k, "seeds": c.seeds,
                "abs": c.abs, "op": c.op, "threshold": c.threshold, "per_seed": {str(k): v for k, v in self.per_seed.items()},
                "value": self.value, "holds": self.holds, "agreement": self.agreement, "why": c.why,
                "missing": self.missing or None}


@dataclass
class Verdict:
    status: str  # validated | partial | invalidated | inconclusive
    confidence: float | None
    summary: str
    results: list[CriterionResult] = field(default_factory=list)
    failed_runs: dict[str, str] = field(default_factory=dict)
    signature: str = "undecided"  # present | absent | undecided | overlap
    effect: Effect | None = None
    not_applicable: list[str] = field(default_factory=list)  # unmet requirements of the hypothesis

    def evidence(self, run_ids: dict[str, str] | None = None) -> dict[str, Any]:
        return {"status": self.status, "confidence": self.confidence, "summary": self.summary,
                "signature": self.signature, "effect": self.effect.as_json() if self.effect else None,
                "not_applicable": self.not_applicable,
                "criteria": [r.as_json() for r in self.results], "failed_runs": self.failed_runs,
                "run_ids": run_ids or {}}


def aggregate_steps(points: list[tuple[int, float]], how: str, k: int) -> float | None:
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
    if how in ("slope", "slope_t"):
        if len(values) < 2:
            return None
        from scipy.stats import linregress

        xs = [s for s, _ in values]
        if len(set(xs)) < 2:
            return None
        fit = linregress(xs, ys)
        if how == "slope":
            return float(fit.slope)
        # slope_t: the slope in standard errors of its own fit, so "the series climbs" means the same
        # whatever the metric's units and noise (a 0-1 reward or a 0-10 judge score, 8 steps or 800).
        if len(set(xs)) < 3:
            return None  # two points fit exactly: no noise estimate
        if fit.slope == 0:
            return 0.0  # a flat series (scipy leaves its stderr undefined)
        if fit.stderr == 0:
            return math.copysign(math.inf, fit.slope)  # an exact line: no noise at all
        return float(fit.slope / fit.stderr)
    raise ValueError(f"unknown step aggregation {how!r}")


def _compare(c: Criterion, value: float) -> bool:
    return bool(OPS[c.op](abs(value) if c.abs else value, c.threshold))


def _seed_value(series: Series, c: Criterion, seed: int) -> tuple[float | None, str]:
    def arm_value(arm: str) -> tuple[float | None, str]:
        points = series.get(arm, {}).get(seed, {}).get(c.metric)
        if not points:
            return None, f"{c.metric} not logged in {arm} seed {seed}"
        return aggregate_steps(points, c.steps, c.k), ""

    if c.arm == "delta":
        treated, why_t = arm_value("treatment")
        control, why_c = arm_value("control")
        if treated is None or control is None:
            return None, why_t or why_c
        return treated - control, ""
    return arm_value(c.arm)


def evaluate_criterion(group: str, c: Criterion, series: Series, seeds: list[int]) -> CriterionResult:
    per_seed: dict[int, float | None] = {}
    missing = []
    for seed in seeds:
        value, why = _seed_value(series, c, seed)
        per_seed[seed] = value
        if why:
            missing.append(why)
    present = [v for v in per_seed.values() if v is not None]
    if not present:
        return CriterionResult(group, c, per_seed, None, False, 0.0, 0.0, "; ".join(missing[:2]))
    passing = [v for v in present if _compare(c, v)]
    mean_value = statistics.fmean(abs(v) for v in present) if c.abs else statistics.fmean(present)
    if c.seeds == "all":
        holds = len(passing) == len(seeds)
    elif c.seeds == "majority":
        holds = len(passing) > len(seeds) / 2
    elif c.seeds == "any":
        holds = bool(passing)
    else:  # mean
        holds = bool(OPS[c.op](mean_value, c.threshold))
    # Agreement: seeds on the side of the outcome, by the rule of succession ((k+1)/(n+2)), so
    # one seed can never make a verdict certain and more agreeing seeds make it surer.
    agreeing = len(passing) if holds else len(present) - len(passing)
    agreement = (agreeing + 1) / (len(seeds) + 2)
    # Effect strength: distance to the threshold in units of the seed-to-seed spread (or of a
    # thousandth of the threshold when the seeds agree exactly), squashed to 0..1.
    spread = statistics.stdev(present) if len(present) > 1 else 0.0
    scale = max(spread, abs(c.threshold) * 1e-3, 1e-9)
    if mean_value == c.threshold and spread == 0.0 and c.op in (">=", "<=", "=="):
        strength = 1.0  # exactly on an inclusive bound in every seed (e.g. passed = 1 >= 1): no ambiguity
    else:
        strength = 1.0 - math.exp(-abs(mean_value - c.threshold) / scale)
    return CriterionResult(group, c, per_seed, mean_value, holds, agreement, strength, "; ".join(missing[:2]))


def _clause(group: str, clause: Criterion | AnyOf, series: Series, seeds: list[int]) -> tuple[bool, float, list[CriterionResult]]:
    """(holds, confidence of the clause, results)."""
    if isinstance(clause, AnyOf):
        results = [evaluate_criterion(group, c, series, seeds) for c in clause.any]
        held = [r for r in results if r.holds]
        best = max(held or results, key=lambda r: r.agreement * (0.5 + 0.5 * r.strength))
        return bool(held), best.agreement * (0.5 + 0.5 * best.strength), results
    result = evaluate_criterion(group, clause, series, seeds)
    return result.holds, result.agreement * (0.5 + 0.5 * result.strength), [result]


def signature(hypothesis: Hypothesis, series: Series, seeds: list[int]) -> tuple[str, float | None, str, list[CriterionResult]]:
    """(present | absent | undecided | overlap, confidence, what decided it, the criterion results).

    Present when every validated clause holds, absent when every invalidated clause does. Confidence is
    the weakest deciding clause's seed agreement times its effect strength: one shaky criterion makes
    the whole reading shaky.
    """
    results: list[CriterionResult] = []
    outcome: dict[str, tuple[bool, float]] = {}
    for group in ("validated", "invalidated"):
        clauses = getattr(hypothesis.criteria, group)
        if not clauses:
            outcome[group] = (False, 0.0)
            continue
        holds_all, confidences = True, []
        for clause in clauses:
            holds, confidence, clause_results = _clause(group, clause, series, seeds)
            results += clause_results
            holds_all &= holds
            confidences.append(confidence)
        outcome[group] = (holds_all, min(confidences))
    if outcome["validated"][0] and outcome["invalidated"][0]:
        return "overlap", None, ("both the validated and the invalidated criteria hold (the criteria overlap; "
                                 "tighten them)"), results
    for group, reading in (("validated", "present"), ("invalidated", "absent")):
        holds, confidence = outcome[group]
        if holds:
            text = "; ".join(r.describe() for r in results if r.group == group and r.holds)
            return reading, round(confidence, 3), text, results
    return "undecided", None, "; ".join([r.describe() for r in results if not r.holds][:3]), results


def decide(hypothesis: Hypothesis, series: Series, seeds: list[int],
           failed_runs: dict[str, str] | None = None, trainer: str = "grpo") -> Verdict:
    """The two-part verdict (see the module docstring); ``trainer`` is the experiment's (grpo measures an effect)."""
    failed_runs = failed_runs or {}
    reading, sig_confidence, sig_text, results = signature(hypothesis, series, seeds)
    if failed_runs:
        failed = ", ".join(f"{k}: {v}" for k, v in sorted(failed_runs.items()))
        return Verdict("inconclusive", None, f"inconclusive: failed runs ({failed})", results, failed_runs, reading)
    if reading == "overlap":
        return Verdict("inconclusive", None, f"inconclusive: {sig_text}", results, signature=reading)
    spec = hypothesis.effect
    effect = None
    if trainer == "grpo" and spec.outcome != "none":
        effect = measure(series, seeds, spec.outcome, spec.last_steps, spec.meaningful)
    status, confidence, summary = _combine(reading, sig_confidence, sig_text, effect)
    return Verdict(status, confidence, summary, results, signature=reading, effect=effect)


def not_applicable(reasons: list[str]) -> Verdict:
    """The verdict on a run that lacks what the hypothesis needs (its `requires:`): nothing to train."""
    return Verdict("invalidated", 1.0, "invalidated: not applicable to this run: " + "; ".join(reasons),
                   signature="absent", not_applicable=list(reasons))


def _combine(reading: str, sig_confidence: float | None, sig_text: str, effect: Effect | None):
    """(status, confidence, summary) from the signature and the effect."""
    if effect is None or effect.verdict == "not_tested":
        note = f"; {effect.describe()}" if effect is not None else ""
        if reading == "present":
            return "validated", sig_confidence, f"validated: signature present: {sig_text}{note}"
        if reading == "absent":
            return "invalidated", sig_confidence, f"invalidated: signature absent: {sig_text}{note}"
        return "inconclusive", None, f"inconclusive: signature undecided: {sig_text}{note}"
    said = effect.describe()
    if reading == "present":
        if effect.verdict == "helps":
            return ("validated", _weakest(sig_confidence, effect.confidence),
                    f"validated: signature present: {sig_text}; and {said}")
        if effect.verdict == "no_help":
            return ("partial", _weakest(sig_confidence, effect.confidence),
                    f"partial: the signature is present ({sig_text}), but {said}")
        return "inconclusive", None, f"inconclusive: the signature is present ({sig_text}), but {said}"
    if reading == "absent":
        if effect.verdict == "helps":
            return ("partial", _weakest(sig_confidence, effect.confidence),
                    f"partial: {said}, but this bug's signature is absent ({sig_text}): something else is at work")
        return "invalidated", sig_confidence, f"invalidated: signature absent: {sig_text}; {said}"
    return "inconclusive", None, f"inconclusive: signature undecided: {sig_text}; {said}"


def _weakest(*confidences: float | None) -> float | None:
    present = [c for c in confidences if c is not None]
    return round(min(present), 3) if present else None
