"""The run first: is it learning, flat or getting worse on its task reward?

Read before any hypothesis is weighed, because a hypothesis explains a run that fails: on a run whose task
reward climbs, a reading that matches a signature is present but not holding the run back.

The trend compares the task reward's logged mean over the last quarter of the logged steps with its mean
over the first quarter (the reward itself where no reward function is logged by name), three steps each or more,
never the same step in both: two each where only MIN_STEPS (five) are logged, and fewer give no trend. A run that climbs,
stalls or collapses part-way is read by where it ends against where it started, which a straight line
through a collapse misreads. The change's uncertainty comes from the step-to-step noise (the spread of
successive differences, robust to a trend or a single jump), widened for the noise's autocorrelation r
within the windows (logged rewards are autocorrelated: each step's policy is the last one's moved a
little, and a logging interval averages several steps) by sqrt((1 + r) / (1 - r)), the usual AR(1)
correction. A change counts only when the run's halves move the same way, the second half's mean beyond the
first's by HALVES_T of its standard error (a reward that swings between batches of easier and harder prompts, its
quarters 0.39, 0.49, 0.39, 0.49, is not read by where its last quarter fell), and when it is both clear
(|t| >= CLEAR_T) and large enough to matter: at
least MIN_SHARE of the task reward's spread between completions (its typical within-step std), and at least
MIN_PASS_SHARE of its passing score where the logs give one (two points of an accuracy: a sparse reward's
0.02 -> 0.005 is not a run getting worse). Where no spread is logged, a score that stays between 0 and its
passing score p (an accuracy, a pass rate) is read at the widest spread its mean m allows, a pass/fail score's
p sqrt(u (1 - u)) at u = m / p: no score in that range spreads wider, so the change that counts is never smaller
than its spread would make it (six points of an accuracy near 0.9 count, three near 0.19 do not). Any other
score without a spread is read against its level.

Where the logs also hold a held-out score (heldout.py: the task measured on prompts the policy does not train
on) with at least MIN_EVALUATIONS evaluations, it is read the same way over its evaluations and decides, as the runs'
own authors judge them: it is the task itself, and a training reward can climb while the run stays level or gets
worse on unseen prompts (its training prompts memorised, a reward that pays for something else) or stay level
while it improves on them. The training reward's reading is named beside it. A held-out change that is clear but
smaller than counts on its own (a few evaluations, each on a small set, spread wide) is read as a change where the
training reward moves clearly the same way: two readings of the task agree, and one of them is large enough.

A flat run is read further: one whose task reward averages CEILING_SHARE of its passing score or more in its first
and its last quarter is already near its ceiling (little left to learn on its prompts, so what the signatures read
is present but not holding it back); one whose policy barely moves though its groups carry advantages has updates
too small to move it (h26's reading). Where no kl is logged to show how far the policy moved, a flat run whose groups
carry advantages and whose gradients flow (a grad norm above 0, an entropy that stays level where logged) is read the
same way by elimination, and said so: its updates have a direction and a gradient, yet the reward does not move,
which an update too small for the model explains and nothing in such logs argues against. A logged learning rate of
STILL_LR_MAX or more argues against it: that is the top of the rates GRPO recipes use (1e-6 to 1e-5 for full
fine-tuning, up to 2e-4 for LoRA adapters), where a level reward has other causes.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from .heldout import HeldOut
from .keys import ADVANTAGE_STD
from .runlog import RunLog

# The change over its (autocorrelation-widened) standard error: 1.96, the two-sided 95% interval the report prints,
# so a change is clear exactly where that interval leaves 0 out.
CLEAR_T = 1.96
HALVES_T = 1.0  # and the halves' change, the same way, over its own
MIN_SHARE = 0.1  # the smallest change that counts, as a share of the reward's spread (or level)
MIN_PASS_SHARE = 0.02  # and, for a reward with a passing score (an accuracy), two points of it
MIN_STEPS = 5  # fewer logged steps than this give no trend worth a word
# An evaluation is a pass over a small held-out set, each noisier than a logged step's batch: a held-out trend that
# decides the reading needs more of them.
MIN_EVALUATIONS = 6
LEARNING, FLAT, WORSE, UNKNOWN = "learning", "flat", "getting worse", "unknown"
# A flat run whose policy barely moves though its groups carry advantages (h26's signature reads it, policy/still):
# at most this share of groups tied on average (most carry an advantage), a logged kl to the reference at most
# STILL_KL_MAX nats per token over the last STILL_WINDOW logged steps, and (where logged) an entropy that changed by
# at most STILL_ENTROPY_CHANGE of where it started.
STILL = "updates too small to move the policy"
STILL_UNSEEN = "updates likely too small to move the policy"  # the same reading, with no kl logged to confirm it
# A flat run whose task reward averages at least CEILING_SHARE of its passing score (an accuracy's 1) in its first
# quarter and its last: at most a sixth of the most it can score is left, so a level reward there is a run with
# little left to learn on its training prompts, not one held back.
CEILING = "already near its ceiling"
CEILING_SHARE = 0.85
STILL_TIED_MAX = 0.5
# Where no tied share or reward std is logged, a loop's printed advantage std: group-normalised advantages are 0 in a
# tied group and spread with a std of about 1 (sqrt((G-1)/G) to 1) in the others, so a batch std of X leaves at most
# 1 - X^2 of the groups tied; STILL_ADV_STD_MIN makes that at most STILL_TIED_MAX. Above 1 the advantages are not
# normalised by their group's std, and the std says nothing of the share.
STILL_ADV_STD_MIN = math.sqrt(1 - STILL_TIED_MAX)
STILL_KL_MAX = 0.01
STILL_ENTROPY_CHANGE = 0.1
STILL_WINDOW = 10
STILL_LR_MAX = 1e-4


@dataclass
class Progress:
    state: str
    metric: str = ""
    steps: int = 0
    first_step: int = 0
    last_step: int = 0
    start: float = 0.0  # the mean over the first and the last quarter of the logged steps
    end: float = 0.0
    change: float = 0.0  # end - start
    change_low: float = 0.0  # its 95% interval
    change_high: float = 0.0
    t: float = 0.0
    smallest_change: float = 0.0  # what MIN_SHARE makes of the reward's scale
    why: str = ""
    # On a flat run: what the logs say of why (updates too small to move the policy, which h26 also ranks)
    verdict: str = ""
    verdict_why: str = ""
    heldout: bool = False  # read on the held-out score's evaluations, not on the training reward
    also: str = ""  # the other reading (training or held-out), where the logs hold both

    def short(self) -> str:
        """The reading in a clause, for the other reading's sentence."""
        verb = {LEARNING: "learning", FLAT: "flat", WORSE: "getting worse"}.get(self.state, "unknown")
        where = f"held-out {self.metric}" if self.heldout else f"its training reward {self.metric}"
        rows = "evaluations" if self.heldout else "logged steps"
        return f"on {where} it is {verb} ({self.start:.4g} -> {self.end:.4g} over {self.steps} {rows})"

    def sentence(self) -> str:
        if self.state == UNKNOWN:
            return f"whether the run learns is unknown: {self.why}"
        verb = {LEARNING: "is learning", FLAT: "is flat", WORSE: "is getting worse"}[self.state]
        what = (f"held-out {self.metric}: {self.start:.4g} -> {self.end:.4g} (first and last quarter of its "
                f"{self.steps} evaluations, steps" if self.heldout else
                f"{self.metric}: {self.start:.4g} -> {self.end:.4g} (first and last quarter of steps")
        return (f"the run {verb} on {what} {self.first_step}-{self.last_step}; change {self.change:+.3g}, 95% interval "
                f"{self.change_low:+.3g} to {self.change_high:+.3g}; a change counts from {self.smallest_change:.3g})"
                f"{self.why}" + (f"; {self.also}" if self.also else "")
                + (f". {self.verdict[0].upper()}{self.verdict[1:]}: {self.verdict_why}" if self.verdict else ""))

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "metric": self.metric, "steps": self.steps, "first_step": self.first_step,
                "last_step": self.last_step, "start": self.start, "end": self.end, "change": self.change,
                "change_95": [self.change_low, self.change_high], "t": self.t,
                "smallest_change": self.smallest_change, "verdict": self.verdict or None,
                "verdict_why": self.verdict_why or None, "heldout": self.heldout, "also": self.also or None,
                "sentence": self.sentence()}


def run_progress(log: RunLog, diverged: tuple[str, int] | None = None, heldout: HeldOut | None = None) -> Progress:
    """The task reward's trend on a run whose derived metrics are in (triage/derived.py's task_reward/*), with the
    held-out score's where the logs hold one; a run that ``diverged`` (a metric became NaN or infinite and stayed
    so) is getting worse, whatever its reward did before."""
    metric = "task_reward/mean" if log.series.get("task_reward/mean") else "reward"
    progress = trend(metric, log.series.get(metric, []), _spread(log, metric), _pass_value(log))
    if diverged is not None and progress.state != UNKNOWN:
        progress.state = WORSE
        progress.why = f"; it diverged at step {diverged[1]}: {diverged[0]}"
        return progress
    if diverged is None and progress.state == FLAT:
        still, seen = _policy_still(log)
        for verdict, why in ((CEILING, _near_ceiling(progress, _pass_value(log))),
                             (STILL if seen else STILL_UNSEEN, still)):
            if why:
                progress.verdict, progress.verdict_why = verdict, why
                break
    if heldout is None or diverged is not None:
        return progress
    held = trend(heldout.metric, heldout.points, heldout.spread, heldout.pass_value, MIN_EVALUATIONS)
    held.heldout = True
    if held.state == UNKNOWN:
        return progress
    held.also = progress.short() if progress.state != UNKNOWN else ""
    if held.state == FLAT and _same_way(held, progress):
        held.state = progress.state
        held.why = (f"; below that on its own, but clear (t {held.t:+.1f}) and the way the training reward moves "
                    "clearly")
    if held.state == FLAT == progress.state:  # what the training logs say of why it is flat still holds
        held.verdict, held.verdict_why = progress.verdict, progress.verdict_why
    return held


def _same_way(held: Progress, training: Progress) -> bool:
    """A held-out change that is clear (|t| >= CLEAR_T) in the direction the training reward clearly moves."""
    way = {LEARNING: 1, WORSE: -1}.get(training.state, 0)
    return way != 0 and way * held.t >= CLEAR_T


def trend(metric: str, points: list[tuple[int, float]], spread: float, pass_value: float,
          fewest: int = MIN_STEPS) -> Progress:
    """Where ``points`` end against where they started, and whether the change counts (the module's statistics)."""
    if len(points) < fewest:
        return Progress(UNKNOWN, metric, len(points), why=f"{len(points)} logged step(s) of {metric}; a trend needs "
                                                          f"at least {fewest}")
    values = [value for _, value in points]
    k = min(max(3, len(values) // 4), len(values) // 2)  # two windows that never overlap
    first, last = values[:k], values[-k:]
    start, end = statistics.fmean(first), statistics.fmean(last)
    change = end - start
    noise = _step_noise(values) * _autocorrelation_factor(first, last)
    stderr = noise * math.sqrt(2 / k)
    scale = spread or _widest_spread(values, pass_value) or max(abs(statistics.fmean(values)), statistics.pstdev(values))
    smallest = max(MIN_SHARE * scale, MIN_PASS_SHARE * pass_value)
    t = _over(change, stderr)
    halves_t = _halves_t(values, noise)
    if t >= CLEAR_T and change >= smallest and halves_t >= HALVES_T:
        state = LEARNING
    elif t <= -CLEAR_T and change <= -smallest and halves_t <= -HALVES_T:
        state = WORSE
    else:
        state = FLAT
    half = CLEAR_T * stderr
    return Progress(state, metric, len(points), points[0][0], points[-1][0], start, end, change, change - half,
                    change + half, t, smallest)


def _halves_t(values: list[float], noise: float) -> float:
    """The second half's mean against the first half's, over its standard error."""
    halves = len(values) // 2
    change = statistics.fmean(values[-halves:]) - statistics.fmean(values[:halves])
    return _over(change, noise * math.sqrt(2 / halves))


def _over(change: float, stderr: float) -> float:
    """A change over its standard error; a change with no noise at all is infinitely clear, its way."""
    return change / stderr if stderr > 0 else (math.inf if change > 0 else -math.inf if change < 0 else 0.0)


def _widest_spread(values: list[float], pass_value: float) -> float:
    """For a score between 0 and its passing score whose spread between completions is not logged, the widest spread
    its mean allows, a pass/fail score's (pass_value * sqrt(u (1 - u)) at a mean of u passing scores); 0 where the
    score has no passing score or leaves that range."""
    if pass_value <= 0 or not all(0 <= value <= pass_value for value in values):
        return 0.0
    passing = statistics.fmean(values) / pass_value
    return pass_value * math.sqrt(passing * (1 - passing))


def _window(values: list[float]) -> int:
    """STILL_WINDOW logged steps, or a quarter of a shorter run's."""
    return max(1, min(STILL_WINDOW, len(values) // 4))


def _policy_still(log: RunLog) -> tuple[str, bool]:
    """Why a flat run's updates look too small to move the policy, or '' when the logs do not say so: groups have
    reward variance to learn from, yet the policy stays at its reference (kl) and keeps its entropy; and whether a
    logged kl saw it (else it is read by elimination: no kl, a gradient that flows, a level entropy where logged)."""
    tied = [v for _, v in log.series.get("frac_reward_zero_std", [])]
    stds = [v for _, v in log.series.get("task_reward/std", log.series.get("reward_std", []))]
    if tied:
        if statistics.fmean(tied) > STILL_TIED_MAX:
            return "", False
        signal = f"{statistics.fmean(tied):.0%} of groups tied on average, so most carry an advantage"
    elif stds and statistics.median(stds) > 0:
        signal = f"the reward varies within a step (median std {statistics.median(stds):.3g})"
    elif STILL_ADV_STD_MIN <= (spread := _median(log, ADVANTAGE_STD)) <= 1.0:
        signal = (f"the advantages' std over a batch is {spread:.3g} (median): group-normalised advantages are 0 only in "
                  f"tied groups, so at most {1 - spread ** 2:.0%} of groups tied and most carry an advantage")
    else:
        return "", False
    moved: list[str] = []
    entropy = [v for _, v in log.series.get("entropy", [])]
    if len(entropy) >= 4 and statistics.fmean(entropy[:_window(entropy)]) > 0:
        first, last = statistics.fmean(entropy[:_window(entropy)]), statistics.fmean(entropy[-_window(entropy):])
        if abs(last / first - 1) > STILL_ENTROPY_CHANGE:
            return "", False
        moved.append(f"entropy {first:.3g} -> {last:.3g}")
    # The kl to the reference is the reading of how far the policy moved; without it (no KL term, or one logged as
    # 0) a level entropy says little: a policy can move far, 0.2-0.5 nats per token on its own samples in the toy
    # lab's healthy runs, and keep its entropy.
    kl = [v for _, v in log.series.get("kl", [])]
    if kl and max(kl) > 0:
        last = statistics.fmean(kl[-_window(kl):])
        if last > STILL_KL_MAX:
            return "", False
        return (f"{signal}, yet the policy barely moves ({'; '.join([f'kl {last:.2g} over the last steps', *moved])}): "
                "each update is too small to change what it samples (a learning rate or gradient clipping too small "
                "for the model, or too few steps)"), True
    grad = _median(log, "grad_norm")
    rates = [v for _, v in log.series.get("learning_rate", [])]
    if not grad > 0 or (rates and max(rates) >= STILL_LR_MAX):  # nan: no finite grad norm logged
        return "", False
    flows = f"the gradient flows (median grad norm {grad:.3g}"
    if rates:
        moved.insert(0, f"learning rate at most {max(rates):.2g}")
    return (f"{signal} and {flows}{''.join('; ' + said for said in moved)}), yet the reward does not move: no kl is logged "
            "to show how far the policy moved, and an update too small for the model (a learning rate, LoRA rank or "
            "step budget too small) is what explains such a run; log a small KL term (beta > 0) to confirm it"), False


def _median(log: RunLog, metric: str) -> float:
    """The metric's median over its finite logged values, nan where it has none."""
    values = [v for _, v in log.series.get(metric, []) if math.isfinite(v)]
    return statistics.median(values) if values else math.nan


def _near_ceiling(progress: Progress, pass_value: float) -> str:
    """Why a flat run has little left to learn, or '' when its task reward is not near its passing score."""
    if pass_value <= 0 or min(progress.start, progress.end) < CEILING_SHARE * pass_value:
        return ""
    return (f"its task reward averages {progress.start:.3g} and {progress.end:.3g} of a passing score of "
            f"{pass_value:.3g} in its first and last quarter: at {CEILING_SHARE:.0%} of the most it can score or more, "
            "a level reward has little left to learn on these prompts, and what the logs show is not holding the run "
            "back")


def _pass_value(log: RunLog) -> float:
    """The task reward's passing score where derived.py could read it (1 for a reward in [0, 1]), else 0."""
    means = dict(log.series.get("task_reward/mean", []))
    shares = [(means[s], share) for s, share in log.series.get("task_reward/pass_share", []) if s in means and share > 0]
    return abs(shares[0][0] / shares[0][1]) if shares else 0.0


def _spread(log: RunLog, metric: str) -> float:
    """The typical within-step spread of the reward between completions (its logged std's median)."""
    name = "task_reward/std" if metric == "task_reward/mean" else "reward_std"
    stds = [v for _, v in log.series.get(name, [])]
    return statistics.median(stds) if stds else 0.0


def _step_noise(values: list[float]) -> float:
    """The noise of one logged value: successive differences hold twice its variance, whatever the trend. Their
    plain std and their median absolute deviation are both read, and the larger kept: a reward that takes few
    values (most groups tied) has a MAD near 0 while it still jumps, and the cautious reading is the wider one."""
    diffs = [b - a for a, b in zip(values, values[1:])]
    centre = statistics.median(diffs)
    mad = statistics.median(abs(d - centre) for d in diffs)
    return max(1.4826 * mad, statistics.pstdev(diffs)) / math.sqrt(2)


def _autocorrelation_factor(*windows: list[float]) -> float:
    """sqrt((1 + r) / (1 - r)) for the lag-1 autocorrelation r of the values around their window's mean."""
    pairs, power = 0.0, 0.0
    for window in windows:
        centre = statistics.fmean(window)
        deviations = [v - centre for v in window]
        power += math.fsum(d * d for d in deviations)
        pairs += math.fsum(a * b for a, b in zip(deviations, deviations[1:]))
    if power <= 0:
        return 1.0
    r = min(max(pairs / power, 0.0), 0.9)  # negative autocorrelation narrows nothing; past 0.9 the correction explodes
    return math.sqrt((1 + r) / (1 - r))
