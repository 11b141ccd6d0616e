"""Does the treatment help? Treatment minus control on an outcome, paired by seed, with its interval.

Each seed trains both arms from the same seed, so the seed's own difference (treatment minus
control on the outcome) cancels what the seed does to both. Over the seeds, the mean difference
gets a Student t interval (scipy.stats, 95%), the smallest effect these seeds can detect (80%
power, two-sided 5%), and the number of seeds that would decide the question when these do not.

The outcome is, by the hypothesis's `effect.outcome`: the task reward (by role, whatever the user's
function is called) averaged over the last `last_steps` training steps, or the held-out evaluation
after training (greedy or sampled decoding). Whether an effect matters is judged against
`meaningful` times the spread of the task reward (its per-completion std in the control arm), so
the same setting means the same for a 0/1 verifier and for a reward model with any range.

Classes: `helps` (the interval is above 0 and reaches the meaningful size), `no_help` (the interval
is below the meaningful size: no effect, a negligible one, or harm), `undetermined` (the interval
spans both), `not_tested` (the treatment arm was not run, or the outcome was not logged).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

# arm -> seed -> metric -> [(step, value)]
Series = dict[str, dict[int, dict[str, list[tuple[int, float]]]]]

OUTCOME_METRICS = {
    "task_reward": "task_reward",
    "eval_greedy": "eval/task_reward/greedy",
    "eval_sampled": "eval/task_reward/sampled",
}
OUTCOME_WORDS = {
    "task_reward": "task reward over the last {k} steps",
    "eval_greedy": "held-out task reward after training (greedy)",
    "eval_sampled": "held-out task reward after training (sampled)",
}
ALPHA, POWER, MAX_SEEDS = 0.05, 0.8, 64


@dataclass
class Effect:
    outcome: str
    metric: str
    description: str  # the outcome in words
    per_seed: dict[int, float] = field(default_factory=dict)  # treatment minus control
    control: dict[int, float] = field(default_factory=dict)  # the outcome per seed in each arm
    treatment: dict[int, float] = field(default_factory=dict)
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    meaningful: float | None = None  # the smallest improvement worth having, in outcome units
    detectable: float | None = None  # the smallest effect these seeds can detect
    seeds_needed: int | None = None  # seeds that would decide it (when undetermined)
    confidence: float | None = None  # probability mass of the interval on the decided side
    verdict: str = "not_tested"  # helps | no_help | undetermined | not_tested
    reason: str = ""

    def describe(self) -> str:
        if self.verdict == "not_tested":
            return f"effect not tested: {self.reason}"
        n = len(self.per_seed)
        text = f"treatment - control on the {self.description}: {self.mean:+.3g}"
        if self.low is not None:
            text += f" [{self.low:+.3g}, {self.high:+.3g}] (95% interval, {n} seeds"
            if self.detectable is not None:
                text += f", smallest detectable {self.detectable:.3g}"
            text += ")"
        else:
            text += f" ({n} seed, no interval)"
        words = {"helps": "the treatment helps", "no_help": "the treatment does not help",
                 "undetermined": "too noisy to tell"}
        text += f": {words[self.verdict]}"
        if self.verdict == "undetermined":
            text += f" ({self.reason})"
        return text

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "metric": self.metric, "per_seed": {str(k): v for k, v in self.per_seed.items()},
                "control": {str(k): v for k, v in self.control.items()},
                "treatment": {str(k): v for k, v in self.treatment.items()},
                "mean": self.mean, "low": self.low, "high": self.high, "meaningful": self.meaningful,
                "detectable": self.detectable, "seeds_needed": self.seeds_needed, "confidence": self.confidence,
                "verdict": self.verdict, "reason": self.reason, "text": self.describe()}

    def metrics(self) -> dict[str, float]:
        """What MLflow's parent run records of it."""
        values = {"effect/mean": self.mean, "effect/low": self.low, "effect/high": self.high,
                  "effect/meaningful": self.meaningful, "effect/detectable": self.detectable}
        return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


def _outcome(series: Series, arm: str, seed: int, metric: str, outcome: str, k: int) -> float | None:
    points = sorted((s, v) for s, v in series.get(arm, {}).get(seed, {}).get(metric, []) if math.isfinite(v))
    if not points:
        return None
    if outcome == "task_reward":
        values = [v for s, v in points if s > 0][-k:] or [points[-1][1]]  # training steps start at 1
        return statistics.fmean(values)
    return points[-1][1]  # the evaluation after training is logged at the last step


def _spread(series: Series, seeds: list[int]) -> float | None:
    """The task reward's per-completion std in the control arm, averaged over steps and seeds."""
    values = [v for seed in seeds for _, v in series.get("control", {}).get(seed, {}).get("task_reward_std", [])
              if math.isfinite(v)]
    return statistics.fmean(values) if values else None


def _t(q: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(q, df))


def detectable_effect(sd: float, n: int) -> float:
    """Smallest true effect a paired t-test on n seeds finds with 80% power at two-sided 5%."""
    return (_t(1 - ALPHA / 2, n - 1) + _t(POWER, n - 1)) * sd / math.sqrt(n)


def seeds_to_decide(sd: float, target: float, n: int) -> int | None:
    """Fewest seeds whose detectable effect is at most ``target``; None beyond MAX_SEEDS."""
    if sd == 0:
        return n
    for m in range(max(n, 2), MAX_SEEDS + 1):
        if detectable_effect(sd, m) <= target:
            return m
    return None


def measure(series: Series, seeds: list[int], outcome: str, last_steps: int, meaningful: float) -> Effect:
    """The treatment's effect on ``outcome``, paired by seed (see the module docstring)."""
    from scipy.stats import t

    metric = OUTCOME_METRICS[outcome]
    effect = Effect(outcome, metric, OUTCOME_WORDS[outcome].format(k=last_steps))
    if "treatment" not in series:
        effect.reason = "the treatment arm was not run; the verdict reads the signature alone"
        return effect
    for seed in seeds:
        treated = _outcome(series, "treatment", seed, metric, outcome, last_steps)
        control = _outcome(series, "control", seed, metric, outcome, last_steps)
        if treated is not None and control is not None:
            effect.per_seed[seed] = treated - control
            effect.control[seed], effect.treatment[seed] = control, treated
    if not effect.per_seed:
        effect.reason = f"{metric} was not logged in both arms; the verdict reads the signature alone"
        return effect
    diffs = list(effect.per_seed.values())
    n = len(diffs)
    effect.mean = statistics.fmean(diffs)
    spread = _spread(series, seeds)
    effect.meaningful = meaningful * (spread if spread else 1.0)
    if n < 2:
        effect.verdict = "undetermined"
        effect.reason = "one seed gives no interval: run with --seeds 3 or more"
        return effect
    sd = statistics.stdev(diffs)
    se = sd / math.sqrt(n)
    half = _t(1 - ALPHA / 2, n - 1) * se
    effect.low, effect.high = effect.mean - half, effect.mean + half
    effect.detectable = detectable_effect(sd, n)
    if effect.high < effect.meaningful:
        effect.verdict = "no_help"
        effect.confidence = 1.0 if se == 0 else float(t.cdf((effect.meaningful - effect.mean) / se, n - 1))
    elif effect.low > 0:
        effect.verdict = "helps"
        effect.confidence = 1.0 if se == 0 else float(t.cdf(effect.mean / se, n - 1))
    else:
        effect.verdict = "undetermined"
        needed = seeds_to_decide(sd, max(effect.meaningful, abs(effect.mean)), n)
        effect.seeds_needed = needed
        effect.reason = (f"about {needed} seeds would decide it" if needed and needed > n
                         else f"more than {MAX_SEEDS} seeds would be needed" if needed is None
                         else "more steps would decide it")
    return effect
