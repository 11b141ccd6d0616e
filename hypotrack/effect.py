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
spans both), `not_measurable` (the outcome could not move: both arms scored one value at every step
of every seed, the floor or the ceiling of the task, or both arms trained identically, so a zero
difference says nothing about the treatment), `not_tested` (the treatment arm was not run, or the
outcome was not logged). Whatever the class, the effect counts the seeds on which the treatment did
better and worse: the direction a small test already shows.

Looking after every seed (`hypotrack run --seeds auto --max-seeds N`) would inflate the false-claim
rate of a fixed 95% interval. The sequential rule spends the 5% over the looks with the O'Brien-Fleming
type spending function of Lan and DeMets, alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) at information
fraction t = n / N (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials", Biometrika
70:659; Jennison & Turnbull 2000, "Group Sequential Methods", ch. 7): little is spent on the first
looks, whose two or three seeds could decide only a huge effect, and most on the later ones (simulated
here, it found a true effect of one standard deviation within 10 seeds half again as often as the
Pocock-type function). The look at n seeds uses the interval
at level alpha(n/N) - alpha((n-1)/N) (the first look, at 2 seeds, also takes the share of n = 1,
where there is no interval). By the union bound the chance that any look claims an effect that is not
there is at most alpha(1) = alpha, however many looks are taken and whichever seeds they fall on;
the paired t statistic's null distribution does not depend on the unknown spread, so the bound holds
for any outcome scale. `sequential_levels` gives the levels; tests/tools/sequential_sim.py checks
the rate on simulated experiments.
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
    better: int = 0  # seeds on which the treatment scored higher than the control
    worse: int = 0  # ... and lower
    level: float = ALPHA  # the two-sided level the interval was drawn at (smaller under the sequential rule)
    verdict: str = "not_tested"  # helps | no_help | undetermined | not_measurable | not_tested
    reason: str = ""

    @property
    def direction(self) -> str:
        """Which way the seeds went, e.g. "treatment better on 2/2 seeds"."""
        n = len(self.per_seed)
        if self.better >= self.worse:
            return f"treatment better on {self.better}/{n} seeds"
        return f"treatment worse on {self.worse}/{n} seeds"

    def short(self) -> str:
        """The effect in a few words, for a one-line headline."""
        if self.verdict == "helps":
            return f"fix helps ({self.mean:+.2g})"
        if self.verdict == "no_help":
            return f"fix does not help ({self.mean:+.2g})"
        if self.verdict == "undetermined":
            return f"fix undecided, {self.better}/{len(self.per_seed)} seeds better"
        if self.verdict == "not_measurable":
            return "effect not measurable"
        return ""  # not tested: the signature is the whole verdict

    def describe(self) -> str:
        if self.verdict == "not_tested":
            return f"effect not tested: {self.reason}"
        if self.verdict == "not_measurable":
            return f"effect not measurable on the {self.description}: {self.reason}"
        n = len(self.per_seed)
        text = f"treatment - control on the {self.description}: {self.mean:+.3g}"
        if self.low is not None:
            text += f" [{self.low:+.3g}, {self.high:+.3g}] ({100 * (1 - self.level):.4g}% interval, {n} seeds"
            if self.detectable is not None:
                text += f", smallest detectable {self.detectable:.3g}"
            text += ")"
        else:
            text += f" ({n} seed, no interval)"
        words = {"helps": "the treatment helps", "no_help": "the treatment does not help",
                 "undetermined": "too noisy to tell"}
        text += f": {words[self.verdict]}"
        if self.verdict == "undetermined":
            text += f" ({self.direction}; {self.reason})"
        return text

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "metric": self.metric, "per_seed": {str(k): v for k, v in self.per_seed.items()},
                "control": {str(k): v for k, v in self.control.items()},
                "treatment": {str(k): v for k, v in self.treatment.items()},
                "mean": self.mean, "low": self.low, "high": self.high, "meaningful": self.meaningful,
                "detectable": self.detectable, "seeds_needed": self.seeds_needed, "better": self.better,
                "worse": self.worse, "level": self.level, "verdict": self.verdict, "reason": self.reason,
                "text": self.describe(), "short": self.short()}

    def metrics(self) -> dict[str, float]:
        """What MLflow's parent run records of it."""
        values = {"effect/mean": self.mean, "effect/low": self.low, "effect/high": self.high,
                  "effect/meaningful": self.meaningful, "effect/detectable": self.detectable}
        return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(v)}


def _outcome(series: Series, arm: str, seed: int, metric: str, outcome: str, k: int) -> float | None:
    points = _steps(series, arm, seed, metric)
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


def sequential_levels(max_seeds: int, alpha: float = ALPHA) -> dict[int, float]:
    """Two-sided level of the look at n seeds, n = 2..max_seeds (see the module docstring)."""
    from scipy.stats import norm

    def spent(fraction: float) -> float:
        return float(2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(fraction)))

    return {n: spent(n / max_seeds) - (spent((n - 1) / max_seeds) if n > 2 else 0.0)
            for n in range(2, max_seeds + 1)}


def _steps(series: Series, arm: str, seed: int, metric: str) -> list[tuple[int, float]]:
    return sorted((s, v) for s, v in series.get(arm, {}).get(seed, {}).get(metric, []) if math.isfinite(v))


def _cannot_move(series: Series, effect: Effect) -> str:
    """Why the outcome could not have moved in these runs, or "" when it could."""
    training = {(arm, seed): [v for _, v in _steps(series, arm, seed, "task_reward")]
                for arm in ("control", "treatment") for seed in effect.per_seed}
    values = [v for vs in training.values() for v in vs] + list(effect.control.values()) + \
        list(effect.treatment.values())
    if all(training.values()) and len(set(values)) == 1:
        return (f"both arms scored {values[0]:g} at every step on every seed: the task sits at the floor or the "
                "ceiling of its reward, so no treatment can show on it; the verdict reads the signature alone")
    if all(len(training[("control", seed)]) > 1 and training[("control", seed)] == training[("treatment", seed)]
           for seed in effect.per_seed):
        return ("both arms trained identically on every seed (the same task reward at every step): the "
                "treatment changed nothing this run measures; the verdict reads the signature alone")
    return ""


def measure(series: Series, seeds: list[int], outcome: str, last_steps: int, meaningful: float,
            max_seeds: int | None = None) -> Effect:
    """The treatment's effect on ``outcome``, paired by seed (see the module docstring).

    max_seeds: the test looks at the effect after every seed up to this many (``--seeds auto``), so the
    interval is drawn at the sequential rule's level for this look instead of at 95%.
    """
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
    effect.better, effect.worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    spread = _spread(series, seeds)
    effect.meaningful = meaningful * (spread if spread else 1.0)
    stuck = _cannot_move(series, effect)
    if stuck:
        effect.verdict, effect.reason = "not_measurable", stuck
        return effect
    if n < 2:
        effect.verdict = "undetermined"
        effect.reason = "one seed gives no interval: run with --seeds 3 or more"
        return effect
    if max_seeds is not None and n <= max_seeds:
        effect.level = sequential_levels(max_seeds)[n]
    sd = statistics.stdev(diffs)
    se = sd / math.sqrt(n)
    # An early look of a long sequence may spend (almost) nothing: its interval is unbounded.
    half = 0.0 if se == 0 else math.inf if effect.level <= 0 else _t(1 - effect.level / 2, n - 1) * se
    effect.low, effect.high = effect.mean - half, effect.mean + half
    effect.detectable = detectable_effect(sd, n)
    if effect.high < effect.meaningful:
        effect.verdict = "no_help"
    elif effect.low > 0:
        effect.verdict = "helps"
    else:
        effect.verdict = "undetermined"
        needed = seeds_to_decide(sd, max(effect.meaningful, abs(effect.mean)), n)
        effect.seeds_needed = needed
        effect.reason = (f"about {needed} seeds would decide it" if needed and needed > n
                         else f"more than {MAX_SEEDS} seeds would be needed" if needed is None
                         else "more steps would decide it")
    return effect
