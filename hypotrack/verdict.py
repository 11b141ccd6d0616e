"""A verdict answers the user's two questions about a hypothesis, from the metrics of its arms and seeds.

1. The signature: do the diagnostics show this bug's fingerprint? The hypothesis's declarative
   criteria, evaluated over steps and seeds: present (the validated criteria hold), absent (the
   invalidated criteria hold) or undecided. This is the mechanism-level evidence each hypothesis
   was written to read, and what a user with two or three seeds can get.
2. The effect: does the treatment help? Treatment minus control on the outcome, paired by seed,
   with its interval (hypotrack/effect.py). It confirms the fix.

Status, signature first:

    signature present + effect helps                -> validated (confirmed by the effect)
    signature present + effect undetermined         -> validated (signature only): the text says which
                                                       way each seed went and how many seeds would decide
    signature present + effect does not help        -> partial (the bug is there, removing it is not enough)
    signature absent  + effect helps                -> partial (something else is at work)
    signature absent  + no help or undetermined     -> invalidated
    signature undecided                             -> inconclusive, saying what would decide it
    (a deciding reading within its seeds' noise of its threshold leaves the signature undecided)
    a requirement the run lacks                     -> not_applicable (nothing trained, nothing ruled out)

An effect that was not tested (no treatment arm, or checks that are their own test: parity, critic)
or cannot be measured (an outcome stuck at its floor or ceiling) leaves the signature to decide alone,
and the summary says so.

Confidence means one thing: the chance that one more seed would read the same way, by Laplace's rule
of succession, (k + 1) / (n + 2), over the n seeds tested, where k counts the seeds whose own
readings agree with the verdict: every deciding criterion passes on that seed, and, when the effect
took part in the status (confirmed, partial), the seed's treatment difference points the same way.
Two agreeing seeds give 0.75, three 0.80, ten 0.92; it is None where nothing was decided.

A reading decides only where it stands clear of its threshold. Where every seed passes a criterion but the
seeds' mean lies closer to the threshold than sd * sqrt(2 / n) (n >= 2 seeds; the typical gap between this
mean and the mean of n more seeds: two seeds' own spread, sd, at n = 2), a repeat of the test could land on
the other side, and a clause whose every holding reading is that close leaves the signature undecided.
The verdict then names the reading and how many more seeds would decide it: the n at which the margin falls
below the distance, n > 2 (sd / distance)^2, the seed-to-seed spread staying as measured. Seeds that
disagree are left to the criterion's seed rule (all, majority, any, mean), as before.

Every verdict has a one-line headline (at most HEADLINE_WIDTH characters) for tables, and the full
evidence in `summary` for `show` and MLflow. Pure Python plus scipy.stats: the runner hands in the
series it collected from the workers.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from hypotrack.definitions.models import AnyOf, Criterion, Hypothesis
from hypotrack.effect import Effect, Series, measure
from hypotrack.known_failures import explain
from hypotrack.text import HEADLINE_WIDTH, clip


@dataclass
class CriterionResult:
    group: str
    criterion: Criterion
    per_seed: dict[int, float | None]
    value: float | None  # the number compared: mean over seeds (or the seed values' mean for display)
    holds: bool
    missing: str = ""

    def passes_on(self, seed: int) -> bool:
        """Whether this seed's own value passes the criterion."""
        value = self.per_seed.get(seed)
        return value is not None and self.criterion.holds(value)

    def noise(self) -> tuple[float, float] | None:
        """(the seeds' mean's distance from the threshold, the margin that mean must clear); None under two seeds.
        The margin, sd * sqrt(2 / n), is how far the mean of n more seeds typically lands from this one."""
        values = [self.criterion.compared(v) for v in self.per_seed.values() if v is not None]
        if self.value is None or len(values) < 2:
            return None
        return abs(self.value - self.criterion.threshold), statistics.stdev(values) * math.sqrt(2 / len(values))

    def within_noise(self) -> bool:
        """Whether every seed passes and yet the threshold lies within the margin: a repeat of the test could land
        on the other side. Seeds that disagree are counted by the criterion's seed rule instead."""
        noise = self.noise()
        agree = all(v is not None and self.criterion.holds(v) for v in self.per_seed.values())
        return agree and noise is not None and noise[0] < noise[1]

    def seeds_to_decide(self) -> int | None:
        """Seeds in all at which the margin falls below the distance, the spread staying as measured."""
        values = [v for v in self.per_seed.values() if v is not None]
        noise = self.noise()
        if noise is None or noise[0] == 0:
            return None
        sd = noise[1] / math.sqrt(2 / len(values))
        return math.floor(2 * (sd / noise[0]) ** 2) + 1

    def short(self) -> str:
        """The reading in a few words for a headline: metric value op threshold."""
        c = self.criterion
        metric = c.metric.removeprefix("diag/")
        if self.value is None:
            return f"{metric}: no data"
        return f"{'|' + metric + '|' if c.abs else metric} {self.value:.3g} {c.op} {c.threshold:g}"

    def describe(self) -> str:
        c = self.criterion
        if self.value is None:
            hint = f"; {c.if_missing.strip()}" if c.if_missing else ""
            return f"{c.metric} [{c.arm}]: no data ({self.missing}){hint}"
        passing = sum(1 for v in self.per_seed.values() if v is not None and c.holds(v))
        counted = sum(1 for v in self.per_seed.values() if v is not None)
        mark = "holds" if self.holds else "fails"
        return (f"{c.metric_text()} [{c.arm}, {c.steps_text()}]"
                f" = {self.value:+.4g} {c.op} {c.threshold:g}: {mark} ({passing}/{counted} seeds, {c.seeds})")

    def as_json(self) -> dict[str, Any]:
        c = self.criterion
        return {"group": self.group, "metric": c.metric, "arm": c.arm, "steps": c.steps, "k": c.k, "seeds": c.seeds,
                "abs": c.abs, "op": c.op, "threshold": c.threshold, "per_seed": {str(k): v for k, v in self.per_seed.items()},
                "value": self.value, "holds": self.holds, "why": c.why,
                "missing": self.missing or None}


@dataclass
class Verdict:
    status: str  # validated | partial | invalidated | inconclusive | not_applicable
    confidence: float | None
    summary: str
    results: list[CriterionResult] = field(default_factory=list)
    failed_runs: dict[str, str] = field(default_factory=dict)
    signature: str = "undecided"  # present | absent | undecided | overlap
    effect: Effect | None = None
    not_applicable: list[str] = field(default_factory=list)  # unmet requirements of the hypothesis
    headline: str = ""  # one line: the status, the deciding reading, the effect in a few words
    # What the status rests on: "signature" | "signature + effect" | "" (nothing decided)
    basis: str = ""
    seeds: list[int] = field(default_factory=list)
    pooled_from: list[str] = field(default_factory=list)  # earlier test runs whose seeds this verdict used

    @property
    def signature_only(self) -> bool:
        """Validated on the signature while the effect is not yet decided: more seeds would confirm it."""
        return self.status == "validated" and self.effect is not None and self.effect.verdict == "undetermined"

    def evidence(self, run_ids: dict[str, str] | None = None) -> dict[str, Any]:
        return {"status": self.status, "confidence": self.confidence, "basis": self.basis,
                "headline": self.headline, "summary": self.summary, "signature": self.signature,
                "effect": self.effect.as_json() if self.effect else None, "seeds": self.seeds,
                "pooled_from": self.pooled_from, "not_applicable": self.not_applicable,
                "criteria": [r.as_json() for r in self.results], "failed_runs": self.failed_runs,
                "run_ids": run_ids or {}}


def _seed_value(series: Series, c: Criterion, seed: int) -> tuple[float | None, str]:
    def arm_value(arm: str) -> tuple[float | None, str]:
        points = series.get(arm, {}).get(seed, {}).get(c.metric)
        if not points:
            return None, f"{c.metric} not logged in {arm} seed {seed}"
        return c.aggregate(points), ""

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
        return CriterionResult(group, c, per_seed, None, False, "; ".join(missing[:2]))
    passing = [v for v in present if c.holds(v)]
    mean_value = statistics.fmean(c.compared(v) for v in present)
    if c.seeds == "all":
        holds = len(passing) == len(seeds)
    elif c.seeds == "majority":
        holds = len(passing) > len(seeds) / 2
    elif c.seeds == "any":
        holds = bool(passing)
    else:  # mean
        holds = c.holds(mean_value)  # with abs, the absolute values' mean (abs leaves it as it is)
    return CriterionResult(group, c, per_seed, mean_value, holds, "; ".join(missing[:2]))


def _clause(group: str, clause: Criterion | AnyOf, series: Series, seeds: list[int]) -> tuple[bool, list[CriterionResult]]:
    """(holds, results); an any-of clause holds when one of its members does."""
    if isinstance(clause, AnyOf):
        results = [evaluate_criterion(group, c, series, seeds) for c in clause.any]
        return any(r.holds for r in results), results
    result = evaluate_criterion(group, clause, series, seeds)
    return result.holds, [result]


@dataclass
class Signature:
    reading: str  # present | absent | undecided | overlap
    text: str  # what decided it, or what failed
    results: list[CriterionResult]
    agreeing: list[int] = field(default_factory=list)  # seeds on which every deciding clause passes
    deciding: list[CriterionResult] = field(default_factory=list)  # the criteria that decided the reading
    near: list[CriterionResult] = field(default_factory=list)  # readings that held within their seeds' noise


def signature(hypothesis: Hypothesis, series: Series, seeds: list[int]) -> Signature:
    """Present when every validated clause holds, absent when every invalidated clause does."""
    results: list[CriterionResult] = []
    clauses: dict[str, list[tuple[bool, list[CriterionResult]]]] = {}
    for group in ("validated", "invalidated"):
        clauses[group] = []
        for clause in getattr(hypothesis.criteria, group):
            holds, clause_results = _clause(group, clause, series, seeds)
            results += clause_results
            clauses[group].append((holds, clause_results))
    held = {group: bool(found) and all(h for h, _ in found) for group, found in clauses.items()}
    if held["validated"] and held["invalidated"]:
        return Signature("overlap", "both the validated and the invalidated criteria hold (the criteria overlap; "
                         "tighten them)", results)
    for group, reading in (("validated", "present"), ("invalidated", "absent")):
        if held[group]:
            near = []
            for _, clause_results in clauses[group]:
                holding = [r for r in clause_results if r.holds]
                if all(r.within_noise() for r in holding):
                    near.append(holding[0])
            if near:  # a clause held only by readings the seeds cannot place on either side of their thresholds
                return Signature("undecided", "; ".join(f"{r.describe()}, within its seeds' noise of the threshold"
                                                        for r in near), results, deciding=near[:1], near=near)
            deciding = [r for _, rs in clauses[group] for r in rs if r.holds]
            agreeing = [seed for seed in seeds
                        if all(any(r.passes_on(seed) for r in rs) for _, rs in clauses[group])]
            return Signature(reading, "; ".join(r.describe() for r in deciding), results, agreeing, deciding)
    failing = [r for r in results if not r.holds]
    return Signature("undecided", "; ".join(r.describe() for r in failing[:3]), results, deciding=failing[:1])


def _known(failed_runs: dict[str, str], hypothesis_id: str) -> str:
    """What the failed runs' errors say, where an error is a known cause's (hypotrack/known_failures.py)."""
    known = {k.hypothesis: k for k in filter(None, map(explain, failed_runs.values()))}
    return "".join(f"; the error is the cause this hypothesis names: {k.means}" if k.hypothesis == hypothesis_id else
                   f"; the error is {k.hypothesis}'s cause: {k.means} (`hypotrack run {k.hypothesis}` tests it)"
                   for k in known.values())


def decide(hypothesis: Hypothesis, series: Series, seeds: list[int],
           failed_runs: dict[str, str] | None = None, trainer: str = "grpo", max_seeds: int | None = None) -> Verdict:
    """The two-part verdict (see the module docstring); ``trainer`` is the experiment's (grpo measures an effect).

    max_seeds: the effect is looked at after every seed up to this many (`--seeds auto`): its interval
    follows the sequential rule of hypotrack/effect.py.
    """
    failed_runs = failed_runs or {}
    sig = signature(hypothesis, series, seeds)
    if failed_runs:
        failed = ", ".join(f"{k}: {v}" for k, v in sorted(failed_runs.items()))
        summary = f"inconclusive: failed runs ({failed}){_known(failed_runs, hypothesis.id)}"
        return _finish(Verdict("inconclusive", None, summary, sig.results,
                               failed_runs, sig.reading, seeds=list(seeds)),
                       f"{len(failed_runs)} arm run(s) failed")
    if sig.reading == "overlap":
        return _finish(Verdict("inconclusive", None, f"inconclusive: {sig.text}", sig.results, signature=sig.reading,
                               seeds=list(seeds)), "the criteria overlap")
    spec = hypothesis.effect
    effect = None
    if trainer == "grpo" and spec.outcome != "none":
        effect = measure(series, seeds, spec.outcome, spec.last_steps, spec.meaningful, max_seeds=max_seeds)
    status, summary, effect_decides = _combine(hypothesis.id, sig, effect)
    verdict = Verdict(status, None, summary, sig.results, signature=sig.reading, effect=effect, seeds=list(seeds))
    if status != "inconclusive":
        agreeing = [seed for seed in sig.agreeing if not effect_decides or _effect_agrees(effect, seed)]
        verdict.confidence = round((len(agreeing) + 1) / (len(seeds) + 2), 3)
        verdict.basis = "signature + effect" if effect_decides else "signature"
    reading = "; ".join(r.short() for r in sig.deciding[:1])
    more = f" (+{len(sig.deciding) - 1})" if len(sig.deciding) > 1 else ""
    return _finish(verdict, reading, more)


def _effect_agrees(effect: Effect, seed: int) -> bool:
    """Whether this seed's treatment difference points the way the effect was decided."""
    diff = effect.per_seed.get(seed)
    if diff is None:
        return False
    return diff > 0 if effect.verdict == "helps" else diff < (effect.meaningful or 0.0)


def not_applicable(reasons: list[str]) -> Verdict:
    """The verdict on a run that lacks what the hypothesis needs (its `requires:`): nothing to train, nothing ruled out."""
    return _finish(Verdict("not_applicable", None, "not applicable to this run: " + "; ".join(reasons),
                           signature="undecided", not_applicable=list(reasons)), "; ".join(reasons))


def pooled(verdict: Verdict, test_ids: list[str]) -> Verdict:
    """Name the earlier test runs whose seeds the verdict was decided over."""
    verdict.pooled_from = list(test_ids)
    if test_ids:
        verdict.summary += f" (seeds {', '.join(map(str, verdict.seeds))} pooled with test run(s) {', '.join(test_ids)})"
    return verdict


STATUS_WORDS = {"validated": "validated", "partial": "partial", "invalidated": "invalidated",
                "inconclusive": "inconclusive", "not_applicable": "not applicable"}


def _finish(verdict: Verdict, reading: str, more_criteria: str = "") -> Verdict:
    """Write the verdict's one-line headline: status word, the deciding reading, the effect in a few words.

    more_criteria ("(+2)": other criteria that decided it too) is added only where it fits.
    """
    word = STATUS_WORDS[verdict.status]
    if verdict.signature_only:
        word = "validated (signature only)"
    effect = verdict.effect.short() if verdict.effect is not None else ""
    for shown in (reading + more_criteria, reading):
        headline = f"{word}: {'; '.join(p for p in (shown, effect) if p)}" if shown or effect else word
        if len(headline) <= HEADLINE_WIDTH:
            break
    verdict.headline = clip(headline)
    return verdict


def _combine(hypothesis_id: str, sig: Signature, effect: Effect | None) -> tuple[str, str, bool]:
    """(status, summary, whether the effect took part in the status) from the signature and the effect."""
    reading, text = sig.reading, sig.text
    if effect is None or effect.verdict in ("not_tested", "not_measurable"):
        note = f"; {effect.describe()}" if effect is not None else ""
        if reading == "present":
            return "validated", f"validated: signature present: {text}{note}", False
        if reading == "absent":
            return "invalidated", f"invalidated: signature absent: {text}{note}", False
        return ("inconclusive", f"inconclusive: signature undecided: {text}{note}; "
                f"{_what_decides(sig, hypothesis_id)}", False)
    said = effect.describe()
    if reading == "present":
        if effect.verdict == "helps":
            return "validated", f"validated: signature present: {text}; and {said}: the fix is confirmed", True
        if effect.verdict == "no_help":
            return "partial", f"partial: the signature is present ({text}), but {said}", True
        more = _more_seeds(hypothesis_id, effect)
        return ("validated", f"validated on the signature alone: {text}; the effect is not yet decided: "
                f"{said}{more}", False)
    if reading == "absent":
        if effect.verdict == "helps":
            return ("partial", f"partial: {said}, but this bug's signature is absent ({text}): "
                    "something else is at work", True)
        return "invalidated", f"invalidated: signature absent: {text}; {said}", False
    return ("inconclusive", f"inconclusive: signature undecided: {text}; {_what_decides(sig, hypothesis_id)}; "
            f"{said}", False)


def _more_seeds(hypothesis_id: str, effect: Effect) -> str:
    n = len(effect.per_seed)
    if effect.seeds_needed and effect.seeds_needed > n:
        return f"; `hypotrack run {hypothesis_id} --more-seeds {effect.seeds_needed - n}` would confirm or refute the fix"
    return f"; `hypotrack run {hypothesis_id} --seeds auto` adds seeds until the effect is decided"


def _what_decides(sig: Signature, hypothesis_id: str) -> str:
    if sig.near:
        reading = sig.near[0]
        total = reading.seeds_to_decide()
        seeds = sum(v is not None for v in reading.per_seed.values())
        if total is None:
            return "the reading sits on its threshold: more steps or seeds would decide it"
        return (f"`hypotrack run {hypothesis_id} --more-seeds {max(total - seeds, 1)}` would decide it (at the spread "
                "these seeds show)")
    if any(r.value is None for r in sig.results):
        return "the missing metrics above would decide it"
    split = [r for r in sig.results if 0 < sum(r.passes_on(s) for s in r.per_seed) < len(r.per_seed)]
    if split:
        return "the seeds disagree: more seeds would decide it"
    return "the readings fall between the validated and the invalidated thresholds: more steps would decide it"
