"""The metrics triage derives from TRL's keys: the reward functions by role, and a few whole-run readings.

Each is declared, with what it means, in spec/triage.py DERIVED_METRICS; each function here adds
its series to the run when the keys it needs were logged, and nothing otherwise (the signature
that reads it then says the run cannot tell).
"""

from __future__ import annotations

import math
import statistics

from .roles import Roles
from .runlog import Points, RunLog

# A reward whose steps' binary_spread has at least this median is read as a 0/1 reward.
BINARY_MEDIAN = 0.9
# Below this std a reward function does not spread its completions at all (float32 noise).
FLAT_STD = 1e-6


def _by_step(log: RunLog, name: str) -> dict[int, float]:
    return dict(log.series.get(name, []))


def _put(log: RunLog, name: str, points: Points) -> None:
    if points:
        log.series[name] = sorted(points)


def add_derived(log: RunLog, roles: Roles) -> None:
    """Add every derived metric the run's keys allow."""
    if roles.task is not None:
        _task_reward(log, roles)
        _auxiliary(log, roles)
    _prompt_tokens(log)
    _implied_kl_coefficient(log)


def _task_reward(log: RunLog, roles: Roles) -> None:
    mean = _by_step(log, f"rewards/{roles.task}/mean")
    std = _by_step(log, f"rewards/{roles.task}/std")
    _put(log, "task_reward/mean", list(mean.items()))
    _put(log, "task_reward/std", list(std.items()))
    in_unit = mean and all(0.0 <= m <= 1.0 for m in mean.values())
    spread = [(s, std[s] / math.sqrt(m * (1 - m))) for s, m in mean.items() if s in std and 0.0 < m < 1.0]
    if not in_unit or not spread:
        return
    _put(log, "task_reward/binary_spread", spread)
    if statistics.median(v for _, v in spread) < BINARY_MEDIAN:
        return  # a graded reward: tied groups need not score 0 or 1, so the bound below does not hold
    tied = _by_step(log, "frac_reward_zero_std")
    # Tied groups are all-0 or all-1; all-1 groups are at most the task reward's mean, the rest scored 0.
    _put(log, "task_reward/zero_group_share_min",
         [(s, max(0.0, tied[s] - m)) for s, m in mean.items() if s in tied])


def _auxiliary(log: RunLog, roles: Roles) -> None:
    if not roles.auxiliary:
        return
    weight = {f: abs(roles.weights.get(f, 1.0)) for f in [roles.task, *roles.auxiliary]}
    task_std = _by_step(log, f"rewards/{roles.task}/std")
    aux_std = {f: _by_step(log, f"rewards/{f}/std") for f in roles.auxiliary}
    ratio = []
    for step, t in task_std.items():
        spreads = [weight[f] * stds[step] for f, stds in aux_std.items() if step in stds]
        if spreads and weight[roles.task] * t > FLAT_STD:
            ratio.append((step, max(spreads) / (weight[roles.task] * t)))
    _put(log, "aux_reward/spread_ratio", ratio)
    means = {f: _by_step(log, f"rewards/{f}/mean") for f in [roles.task, *roles.auxiliary]}
    share = []
    for step, task_mean in means[roles.task].items():
        paid = [weight[f] * abs(means[f][step]) for f in roles.auxiliary if step in means[f]]
        total = weight[roles.task] * abs(task_mean) + sum(paid)
        if paid and total > FLAT_STD:
            share.append((step, sum(paid) / total))
    _put(log, "aux_reward/share", share)
    _put(log, "aux_reward/mean", [(step, sum(roles.weights.get(f, 1.0) * means[f][step] for f in roles.auxiliary))
                                  for step in means[roles.task] if all(step in means[f] for f in roles.auxiliary)])
    if len(roles.auxiliary) != 1:
        return  # with several auxiliary functions the combined std mixes their covariances
    # TRL's reward_std is the std of the weighted sum over the step's completions (TRL releases that log
    # rewards/<func>/std): Var(R) = wt^2 St^2 + wa^2 Sa^2 + 2 wt wa Cov, which gives the correlation.
    (aux,) = roles.auxiliary
    signed = {f: roles.weights.get(f, 1.0) for f in (roles.task, aux)}
    total = _by_step(log, "reward_std")
    correlation = []
    for step, t in task_std.items():
        a = aux_std[aux].get(step)
        if a is None or step not in total or t <= FLAT_STD or a <= FLAT_STD:
            continue
        wt, wa = signed[roles.task], signed[aux]
        covariance = (total[step] ** 2 - (wt * t) ** 2 - (wa * a) ** 2) / (2 * wt * wa)
        correlation.append((step, max(-1.0, min(1.0, covariance / (t * a)))))
    _put(log, "aux_reward/task_correlation", correlation)


def _run_value(log: RunLog) -> int:
    """The step a whole-run reading is filed under: the last step logged."""
    return max((points[-1][0] for points in log.series.values() if points), default=0)


def _prompt_tokens(log: RunLog) -> None:
    points = log.series.get("num_tokens", [])
    rates = [(b_value - a_value) / (b_step - a_step)
             for (a_step, a_value), (b_step, b_value) in zip(points, points[1:]) if b_step > a_step]
    rates = [r for r in rates if r > 0]
    if len(rates) < 3:
        return
    _put(log, "prompts/tokens_per_step_cv", [(_run_value(log), statistics.pstdev(rates) / statistics.fmean(rates))])


def _implied_kl_coefficient(log: RunLog) -> None:
    kl = _by_step(log, "kl")
    loss = _by_step(log, "loss")
    pairs = [(kl[s], loss[s]) for s in kl if s in loss]
    scale = sum(k * k for k, _ in pairs)
    if len(pairs) < 3 or scale <= 1e-12:
        return
    _put(log, "kl/implied_coefficient", [(_run_value(log), sum(k * l for k, l in pairs) / scale)])
