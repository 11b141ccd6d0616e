"""`triage(source, hypotheses)`: read a run's logs, name the metrics, weigh every hypothesis, rank them.

What a notebook calls; `hypotrack triage` renders the result and records its ranking in the registry.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .derived import add_derived, add_still_reading, constant_auxiliary
from .evaluate import SUSPECT_THRESHOLD, Ranked, rank
from .expected import Requirement, expected_readings, requirements
from .heldout import heldout_score
from .keys import canonical, is_training_metric, reward_functions
from .progress import CEILING, LEARNING, Progress, run_progress
from .roles import Roles, assign_roles
from .runlog import RunLog, bad_stretches
from .sources import pick_run, read_runs


@dataclass
class TriageReport:
    source: str
    kind: str
    steps: int
    reward_functions: list[str]
    assumed: list[str]
    ranking: list[Ranked]
    task_reward: str | None = None  # the reward function read as the task's (named, or inferred as `assumed` says)
    unranked: list[str] = field(default_factory=list)  # hypotheses without a triage: section
    expected: list[str] = field(default_factory=list)
    requirements: dict[str, Requirement] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    threshold: float = SUSPECT_THRESHOLD
    # What the log itself says before any hypothesis is weighed: values that became infinite or NaN (the run
    # diverged), steps logged twice, too few steps to rank on.
    findings: list[str] = field(default_factory=list)
    # The run first: learning, flat or getting worse on its task reward, before any hypothesis.
    progress: Progress = field(default_factory=lambda: Progress("unknown", why="not read"))
    run: str = ""  # the run's name, where the source holds several

    def suspects(self) -> list[Ranked]:
        return [entry for entry in self.ranking if entry.suspect]

    def rank_of(self, hypothesis_id: str) -> int | None:
        return next((entry.rank for entry in self.ranking if entry.id == hypothesis_id), None)

    def ranking_record(self) -> list[dict[str, Any]]:
        """What the registry keeps of the ranking (and `next` reads): one row per ranked hypothesis."""
        return [{"hypothesis": e.id, "rank": e.rank, "evidence": e.evidence, "suspect": e.suspect,
                 "applies": not e.not_applicable,
                 "supports": [r.shows.strip() for r in e.supporting()]} for e in self.ranking]

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "kind": self.kind, "run": self.run or None, "steps": self.steps,
            "threshold": self.threshold, "progress": self.progress.as_json(), "findings": self.findings,
            "reward_functions": self.reward_functions, "task_reward": self.task_reward, "assumed": self.assumed,
            "expected": self.expected,
            "requirements": {word: {"met": r.met, "why": r.why} for word, r in self.requirements.items()},
            "renamed_keys": self.renamed, "ignored_keys": self.ignored,
            "suspects": [e.id for e in self.suspects()],
            "present_not_holding_back": [e.id for e in self.ranking if e.present],
            "ranking": [e.as_json() for e in self.ranking], "without_triage": self.unranked,
        }


MIN_RANK_STEPS = 2  # the fewest logged steps triage ranks on
MAX_OTHER_CHOICES = 4  # other task reward choices weighed, to say where the suspects would differ
# Values no working update gives (nats per token; gradient norm), and the typical value (the median of the steps
# after) past which a run that logged them did not come back to working updates: it has blown up.
BLOWN_UP = {"kl": 1e4, "grad_norm": 1e10}
WORKING_MEDIAN = {"kl": 1.0, "grad_norm": 1e3}


def triage_log(log: RunLog, hypotheses: dict, task_reward: str | None = None) -> TriageReport:
    """Rank ``hypotheses`` (id -> Hypothesis) on an already-read run."""
    named = canonical(log)
    run = named.log
    findings = log.findings(is_training_metric) + _spikes(run)
    functions = reward_functions(run)
    roles = assign_roles(run, functions, task_reward)
    underived = RunLog(source=run.source, kind=run.kind, series=dict(run.series), params=dict(run.params))
    progress = _read_run(log, run, roles)
    for func in constant_auxiliary(run, roles):
        # Group scaling subtracts each group's mean, so a reward that is the same for every completion adds
        # nothing to any advantage: neither noise (h05) nor something to collect (h17), whatever its weight.
        findings.append(f"the auxiliary reward {func} gave every completion of every step the same score: it moves "
                        "no advantage, whatever its weight (it only shifts the logged reward)")
    needs = requirements(run, functions)
    steps = run.steps()
    if steps == 0 and progress.heldout:
        findings.append(f"no training metric logged, only the evaluation passes' {progress.metric}: the "
                        "hypotheses are weighed on what training logs (its reward, kl, grad norm, group ties); "
                        "triage the run's training log beside it for a ranking")
        ranking, unranked = [], []
    elif steps < MIN_RANK_STEPS:
        # A signature reads a typical step or a trend: one logged step has neither, and weighing it would
        # name a suspect on a single sample.
        findings.append(f"cannot rank on {steps} logged step{'' if steps == 1 else 's'}: triage needs at least "
                        f"{MIN_RANK_STEPS} (its signatures read a typical step or a trend); triage a longer run, "
                        "or log every step (logging_steps=1)")
        ranking, unranked = [], []
    else:
        ranking, unranked = rank(run, hypotheses, needs)
        if task_reward is None and roles.task is not None:
            roles.assumed += _other_task_choices(underived, functions, roles.task, hypotheses, needs, ranking)
    if progress.state == LEARNING or progress.verdict == CEILING:
        for entry in ranking:
            entry.not_holding_back = ("the run learns on its task reward" if progress.state == LEARNING else
                                      "the run's task reward is already near its ceiling")
    return TriageReport(source=log.source, kind=log.kind, steps=steps, reward_functions=functions,
                        assumed=roles.assumed, task_reward=roles.task, ranking=ranking, unranked=unranked,
                        expected=expected_readings(run), requirements=needs, renamed=named.renamed,
                        ignored=named.ignored, findings=findings, progress=progress, run=log.run)


def _read_run(log: RunLog, run: RunLog, roles: Roles) -> Progress:
    """The derived metrics and the run's progress, read before any hypothesis: h26's signature reads the progress
    (policy/still), and ``log`` (the run as read, before its names were made canonical) says where it diverged and
    holds its evaluation passes (the held-out score)."""
    add_derived(run, roles)
    progress = run_progress(run, _diverged(log, run), heldout_score(log, roles.task))
    add_still_reading(run, progress)
    return progress


def _diverged(log: RunLog, run: RunLog) -> tuple[str, int] | None:
    """(what happened, the step) where training diverged: a training metric that became NaN or infinite and stayed
    so, or a KL or gradient norm past any value a working update gives (finite, but the policy is wrecked)."""
    stuck = log.diverged_at(is_training_metric)
    blown = [(step, f"{name} reached {dict(points)[step]:.3g}, a value no working update gives, and did not come back")
             for name, limit in BLOWN_UP.items() if (points := run.series.get(name, []))
             and (step := _blown_at(points, limit, WORKING_MEDIAN[name])) is not None]
    if blown and (stuck is None or min(blown)[0] < stuck[1]):
        return min(blown)[1], min(blown)[0]
    return (f"{stuck[0]} became NaN or infinite and stayed so", stuck[1]) if stuck else None


def _blown_at(points: list[tuple[int, float]], limit: float, working: float) -> int | None:
    """The step a metric blew up at: the first stretch of values at ``limit`` or past it that lasts as long as the
    values below it after it (the rule a NaN's divergence follows, runlog.bad_stretches), or after which the metric's
    median stays at ``working`` or more (the policy a wrecking update left behind). A spike the metric comes back
    from, to values a working update gives, is one bad batch (a token whose logprob underflowed), not a divergence."""
    for steps, sane_after in bad_stretches([(step, value < limit) for step, value in points]):
        after = [value for step, value in points if step > steps[-1] and value < limit]
        if len(steps) >= sane_after or statistics.median(after) >= working:
            return steps[0]
    return None


def _spikes(run: RunLog) -> list[str]:
    """The blown-up values a run came back from, said as what they are."""
    said = []
    for name, limit in BLOWN_UP.items():
        points = run.series.get(name, [])
        spikes = [(step, value) for step, value in points if value >= limit]
        if spikes and _blown_at(points, limit, WORKING_MEDIAN[name]) is None:
            steps = ", ".join(f"{step} ({value:.3g})" for step, value in spikes[:5]) + (" ..." if len(spikes) > 5 else "")
            what = ("isolated spikes (a batch's extreme value)" if len(spikes) > 1 else
                    "an isolated spike (one batch's extreme value)")
            said.append(f"{name} reached {limit:g} or more at step{'s' if len(spikes) > 1 else ''} {steps} and came back "
                        f"to values a working update gives (a median below {WORKING_MEDIAN[name]:g}) at the logged steps "
                        f"after: {what}, not a divergence")
    return said


def _other_task_choices(log: RunLog, functions: list[str], chosen: str, hypotheses: dict, needs: dict,
                        ranking: list[Ranked]) -> list[str]:
    """Where the suspects would differ had another function been the task reward (the choice is a guess)."""
    said = []
    suspects = [e.id for e in ranking if e.suspect]
    for other in [f for f in functions if f != chosen][:MAX_OTHER_CHOICES]:
        copy = RunLog(source=log.source, kind=log.kind, series=dict(log.series), params=dict(log.params))
        other_roles = assign_roles(copy, functions, other)
        _read_run(log, copy, other_roles)
        theirs = [e.id for e in rank(copy, hypotheses, needs)[0] if e.suspect]
        if theirs != suspects:
            said.append(f"with {other} as the task reward the suspects would be {', '.join(theirs) or 'none'} instead of "
                        f"{', '.join(suspects) or 'none'} (--task-reward {other})")
    return said


def triage(source: str, hypotheses: dict, task_reward: str | None = None,
           tracking_uri: str | None = None, run: str | None = None) -> TriageReport:
    """Read ``source`` (an MLflow run id or runs:/ URI, a training output folder, a trainer_state.json,
    TensorBoard event files, a console log, JSON records or a CSV) and rank ``hypotheses`` on it; ``run`` names
    one run of a source that holds several."""
    return triage_log(pick_run(read_runs(source, tracking_uri), source, run), hypotheses, task_reward)


def triage_runs(source: str, hypotheses: dict, task_reward: str | None = None,
                tracking_uri: str | None = None) -> list[TriageReport]:
    """One report per run ``source`` holds (a W&B export or a TensorBoard folder may hold several)."""
    return [triage_log(log, hypotheses, task_reward) for log in read_runs(source, tracking_uri)]
