"""The metrics triage derives from TRL's keys: the reward functions by role, and a few whole-run readings.

Each is declared, with what it means, in definitions/triage.py DERIVED_METRICS; each function here adds
its series to the run when the keys it needs were logged, and nothing otherwise (the signature
that reads it then says the run cannot tell).
"""

from __future__ import annotations

import math
import statistics

from hypotrack.reading import aggregate_steps

from .keys import ADVANTAGE_STD
from .progress import LEARNING, STILL, STILL_UNSEEN, WORSE, Progress, trend
from .roles import Roles
from .runlog import HAND_WRITTEN, PRIOR_TRAINING, STEPS_ASSUMED, Points, RunLog

# A task reward whose mean is the same number at this many logged steps or more scores every completion alike.
CONSTANT_STEPS = 10
# A reward whose steps' binary_spread has at least this median is read as a 0/1 reward.
BINARY_MEDIAN = 0.9
# Below this std a reward function does not spread its completions at all (float32 noise).
FLAT_STD = 1e-6
# A reward whose per-step estimate of its passing score varies less than this (relative std) is two-valued:
# TRL's std is the sample std (n - 1), which moves the estimate by a few percent at batch sizes of 16-32.
PASS_VALUE_CV = 0.05
# The KL coefficient fitted from loss and kl is kept only when the KL term explains this share of the loss (R^2).
KL_FIT_MIN = 0.5
# Completion lengths that vary less than this (relative std) cannot be told apart from prompt tokens in num_tokens.
COMPLETION_CV_MIN = 0.01
# ties/whole_steps needs this many logged rows of reward_std to be a share worth reading.
MIN_TIED_ROWS = 10
# kl/early_rise reads this many first logged rows.
EARLY_ROWS = 3
# Below this kl a tied step's loss / kl is float32 noise over noise.
KL_EXACT_MIN = 1e-6
# The band of importance weights that barely move a completion's gradient, [0.8, 1.25], as |log weight|.
WEIGHT_BAND_LOG = math.log(1.25)
# The window h17's ratio readings use (growth, k 10): aux_reward/collected_signed is read where they cannot read.
GROWTH_WINDOW = 10


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
    elif log.series.get("reward"):  # one reward, logged whole (verl, OpenRLHF, a custom loop): the task's
        _task_reward_read(log, _by_step(log, "reward"), _by_step(log, "reward_std"))
    _prompt_tokens(log)
    _completion_entropy(log)
    _first_step_kl(log)
    _lowest_kl(log)
    _implied_kl_coefficient(log)
    _undercounted_ties(log)
    _whole_steps_tied(log)
    _ties_between_prompts_only(log)
    _learning_rate_spent(log)
    _summed_weight_off(log)
    if roles.task is not None and not roles.auxiliary:
        _ties_over_independent(log, roles)


def _task_reward(log: RunLog, roles: Roles) -> None:
    _task_reward_read(log, _by_step(log, f"rewards/{roles.task}/mean"), _by_step(log, f"rewards/{roles.task}/std"))


def _task_reward_read(log: RunLog, mean: dict[int, float], std: dict[int, float]) -> None:
    """The task reward's mean and spread, and, where its passing score can be read, its passing share.

    Where no spread is logged (older TRL logs a reward function's mean alone), a mean that is the very same number
    at every one of CONSTANT_STEPS logged steps or more is every completion scoring it: a mean of scores that differ
    moves from step to step. Its spread is 0 at those steps."""
    if not std and len(mean) >= CONSTANT_STEPS and len(set(mean.values())) == 1:
        std = dict.fromkeys(mean, 0.0)
    _put(log, "task_reward/mean", list(mean.items()))
    _put(log, "task_reward/std", list(std.items()))
    scale = _pass_value(mean, std)
    if scale is None:
        return
    _put(log, "task_reward/pass_share", [(s, m / scale) for s, m in mean.items()])
    # As a share of the passing score: 0 < p < 1 for a reward that pays `scale` to some completions, 0 to others.
    share = {s: m / scale for s, m in mean.items()}
    spread = [(s, std[s] / (abs(scale) * math.sqrt(p * (1 - p)))) for s, p in share.items() if s in std and 0 < p < 1]
    if not spread:
        return
    _put(log, "task_reward/binary_spread", spread)
    if statistics.median(v for _, v in spread) < BINARY_MEDIAN:
        return  # a graded reward: tied groups need not score 0 or the pass value, so the bound below does not hold
    tied = _by_step(log, "frac_reward_zero_std")
    # Tied groups are all-0 or all-pass; all-pass groups are at most the passing share, the rest scored 0.
    _put(log, "task_reward/zero_group_share_min",
         [(s, max(0.0, tied[s] - p)) for s, p in share.items() if s in tied])


def _pass_value(mean: dict[int, float], std: dict[int, float]) -> float | None:
    """The score a two-valued task reward pays (1 for a reward in [0, 1]), or None when it is not two-valued.

    A reward that pays c to a share p of the completions and 0 to the rest has mean c p and mean square
    c^2 p, so (std^2 + mean^2) / mean = c at every step, whatever p: a 0/10 grader gives 10 at each step,
    a graded reward gives values that move with the mix of grades.
    """
    if mean and all(0.0 <= m <= 1.0 for m in mean.values()):
        return 1.0
    estimates = [(std[s] ** 2 + m * m) / m for s, m in mean.items() if s in std and abs(m) > FLAT_STD]
    # A step whose completions all scored alike gives its own mean back whatever the reward pays: where no step spreads
    # its completions nothing tells a two-valued reward (a reward of 32 for every completion is no pass of 32).
    if len(estimates) < 3 or all(std.get(s, 0.0) <= FLAT_STD for s in mean):
        return None
    centre = statistics.median(estimates)
    if abs(centre) <= FLAT_STD or statistics.pstdev(estimates) > PASS_VALUE_CV * abs(centre):
        return None
    return centre


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
    scale = [(step, max(stds[step] for stds in aux_std.values() if step in stds) / t) for step, t in task_std.items()
             if t > FLAT_STD and any(step in stds for stds in aux_std.values())]
    _put(log, "aux_reward/scale_ratio", scale)
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
    # TRL's reward_std is the std of the weighted sum over the step's completions (TRL releases that log
    # rewards/<func>/std): Var(R) = wt^2 St^2 + Var(A) + 2 wt Cov(t, A) for the auxiliary part A, which gives the
    # task reward's correlation with A. With one auxiliary function Var(A) = wa^2 Sa^2 exactly; with several it
    # is taken as the sum of theirs, as if they were uncorrelated with each other (the logs cannot say more).
    signed = {f: roles.weights.get(f, 1.0) for f in [roles.task, *roles.auxiliary]}
    total = _by_step(log, "reward_std")
    correlation = []
    wt = signed[roles.task]
    for step, t in task_std.items():
        spreads = [signed[f] * aux_std[f][step] for f in roles.auxiliary if step in aux_std[f]]
        # a task reward weighted 0 is no part of the total: its covariance with the auxiliaries cannot be read
        if len(spreads) != len(roles.auxiliary) or step not in total or t <= FLAT_STD or wt == 0:
            continue
        aux_var = sum(spread * spread for spread in spreads)
        if aux_var <= FLAT_STD**2:
            continue
        covariance = (total[step] ** 2 - (wt * t) ** 2 - aux_var) / (2 * wt)
        correlation.append((step, max(-1.0, min(1.0, covariance / (t * math.sqrt(aux_var))))))
    _put(log, "aux_reward/task_correlation", correlation)
    _signed_collecting(log, means, roles)


def _signed_collecting(log: RunLog, means: dict[str, dict[int, float]], roles: Roles) -> None:
    """aux_reward/collected_signed: whether the auxiliary rewards climb while the task reward falls, read by the run's
    trend test (progress.py: first quarter against last, t and a change that matters) where a ratio of their means
    cannot read it, because the task reward or the auxiliary rewards start at or below 0 (a penalty, a +-1 reward, a
    negative correctness score): 1 where both move so, else 0; absent where the ratios can read them (h17's own
    signature does)."""
    task = sorted(means[roles.task].items())
    aux = sorted(log.series.get("aux_reward/mean", []))
    if len(task) < 2 or len(aux) < 2:
        return
    if all(aggregate_steps(points, "growth", GROWTH_WINDOW) is not None for points in (task, aux)):
        return
    stds = [v for _, v in log.series.get("task_reward/std", [])]
    falls = trend("task_reward/mean", task, statistics.median(stds) if stds else 0.0, 0.0).state == WORSE
    climbs = trend("aux_reward/mean", aux, 0.0, 0.0).state == LEARNING
    _put(log, "aux_reward/collected_signed", [(task[-1][0], float(falls and climbs))])


def constant_auxiliary(log: RunLog, roles: Roles) -> list[str]:
    """The auxiliary reward functions that gave every completion of every logged step the same score."""
    constant = []
    for func in roles.auxiliary:
        stds = [value for _, value in log.series.get(f"rewards/{func}/std", [])]
        if stds and max(stds) <= FLAT_STD:
            constant.append(func)
    return constant


def _run_value(log: RunLog) -> int:
    """The step a whole-run reading is filed under: the last step logged."""
    return max((points[-1][0] for points in log.series.values() if points), default=0)


def _prompt_tokens(log: RunLog) -> None:
    """How much the prompt tokens each step consumed vary, from num_tokens' increments.

    num_tokens counts prompt and completion tokens, so its increments move with the completions' lengths too:
    a run whose completions sit at the length cap, or barely change, consumes a nearly constant number of tokens
    per step whatever its prompts are. The completion part is taken out first: increment = P + N * L, with L the
    step's completions/mean_length and N the completions per step, fitted by least squares; what is left, P, is
    the prompts' part. When L barely moves (COMPLETION_CV_MIN), N cannot be told from P and the run cannot say.

    The variation read is one step's: a row logged every k steps holds the mean of k steps' prompt tokens, whose
    variation is 1/sqrt(k) of one step's (k steps' prompts drawn independently), so it is scaled back by sqrt(k) at
    the logs' typical interval; a run logged every 5 steps varies as little per row as one with 5 times the batch.
    """
    tokens = log.series.get("num_tokens", [])
    lengths = _by_step(log, "completions/mean_length")
    intervals = [(b_step - a_step, b_step, b_value - a_value)
                 for (a_step, a_value), (b_step, b_value) in zip(tokens, tokens[1:])
                 if b_step > a_step and b_value > a_value and b_step in lengths]
    rows = [(consumed / interval, lengths[step]) for interval, step, consumed in intervals]
    if len(rows) < 4:
        return
    increments = [r for r, _ in rows]
    means = [m for _, m in rows]
    mean_length = statistics.fmean(means)
    if mean_length <= 0 or statistics.pstdev(means) / mean_length < COMPLETION_CV_MIN:
        return
    per_step = statistics.linear_regression(means, increments).slope
    prompts = [r - max(per_step, 0.0) * m for r, m in rows]
    centre = statistics.fmean(prompts)
    if centre <= 0:
        return
    steps_per_row = statistics.median(interval for interval, _, _ in intervals)
    _put(log, "prompts/tokens_per_step_cv",
         [(_run_value(log), statistics.pstdev(prompts) / centre * math.sqrt(steps_per_row))])


def _undercounted_ties(log: RunLog) -> None:
    # TRL counts a group as tied when its reward std is within 1e-8 of 0; a weighted sum such as 0.2 for every
    # completion leaves a float32 std of about 1.6e-8, so such groups are not counted. A step where the whole
    # batch scored alike (reward_std 0) must have every group tied: fewer logged shows the count misses ties.
    spread = _by_step(log, "reward_std")
    tied = _by_step(log, "frac_reward_zero_std")
    steps = [s for s in spread if s in tied]
    if steps:
        missed = any(spread[s] <= FLAT_STD and tied[s] < 1.0 for s in steps)
        _put(log, "ties/undercounted", [(_run_value(log), float(missed))])


def _whole_steps_tied(log: RunLog) -> None:
    # Without TRL's count of tied groups, a logged reward_std of 0 still says every group of that step tied (no
    # completion scored apart from the rest of its group, whichever std the script logged): the share of such steps
    # is a lower bound on the share of groups tied at a typical step. So does a loop's advantage std of 0 (a
    # group-relative advantage is 0 for every completion only where every group tied), whatever its reward std says:
    # a loop's reward std may be the whole batch's, which prompts of different difficulty spread.
    # So does an update of exactly nothing, which a loop that logs no std at all still shows: a step whose loss and
    # gradient norm are both exactly 0, in a run whose gradient is above 0 at other steps (it reaches the weights), had
    # no advantage to train on. A KL term or an entropy bonus would leave the loss above 0 there: every group tied.
    if log.series.get("frac_reward_zero_std"):
        return
    tied: dict[int, bool] = {}
    for name in ("reward_std", ADVANTAGE_STD):
        for step, value in log.series.get(name, []):
            tied[step] = tied.get(step, False) or value <= FLAT_STD
    loss, grad = _by_step(log, "loss"), _by_step(log, "grad_norm")
    if any(value > 0 for value in grad.values()):
        for step in grad.keys() & loss.keys():
            tied[step] = tied.get(step, False) or grad[step] == 0 == loss[step]
    if len(tied) >= MIN_TIED_ROWS:
        _put(log, "ties/whole_steps", [(_run_value(log), sum(tied.values()) / len(tied))])


def _ties_between_prompts_only(log: RunLog) -> None:
    # A loop that logs both its advantages' std and its batch's reward std: at a step where the advantages are 0 for
    # every completion (every group tied) while the batch's rewards spread, each prompt's completions scored alike and
    # different prompts scored differently. The share of such steps, among those with both logged.
    advantage, spread = _by_step(log, ADVANTAGE_STD), _by_step(log, "reward_std")
    steps = [step for step in advantage if step in spread]
    if len(steps) >= MIN_TIED_ROWS:
        between = sum(1 for step in steps if advantage[step] <= FLAT_STD < spread[step])
        _put(log, "ties/between_prompts_only", [(_run_value(log), between / len(steps))])


def _learning_rate_spent(log: RunLog) -> None:
    # The rate below LR_SPENT of its peak so far while LR_REMAINING of the run's logged steps remain (hooks/lr_schedule.py
    # reads the same from the optimizer; a run cut short counts its last logged step as its end).
    from hypotrack.thresholds import LR_REMAINING, LR_SPENT

    points = log.series.get("learning_rate", [])
    last = _run_value(log)
    peak, spent = 0.0, []
    for step, rate in points:
        peak = max(peak, rate)
        if peak > 0 and last:
            spent.append((step, float(rate < LR_SPENT * peak and (last - step) / last >= LR_REMAINING)))
    _put(log, "learning_rate/spent_early", spent)


def add_still_reading(log: RunLog, progress: Progress) -> None:
    """policy/still (definitions/triage.py): 1 on a run the progress names still, 0.5 where it reads it so by
    elimination (no kl logged), 0 on any other run that logged a kl to read it from, nothing else."""
    steps = [step for step, _ in log.series.get("task_reward/mean") or log.series.get("reward", [])]
    if steps and progress.verdict == STILL_UNSEEN:
        log.series["policy/still"] = [(steps[-1], 0.5)]
    elif steps and any(value > 0 for _, value in log.series.get("kl", [])):
        log.series["policy/still"] = [(steps[-1], 1.0 if progress.verdict == STILL else 0.0)]


def _ties_over_independent(log: RunLog, roles: Roles) -> None:
    # A 0/1 task reward (the only reward) ties a group of G when all G pass or all fail. Completions drawn at random
    # from the batch tie with probability p^G + (1-p)^G; one prompt's completions tie more often, since prompts
    # differ in difficulty. G comes from the run's params (TRL's MLflow callback logs num_generations).
    try:
        size = int(float(log.params.get("num_generations", "")))
    except ValueError:
        return
    mean = _by_step(log, f"rewards/{roles.task}/mean")
    tied = _by_step(log, "frac_reward_zero_std")
    if size < 2 or not mean or any(not 0.0 <= m <= 1.0 for m in mean.values()):
        return
    _put(log, "ties/excess_over_independent",
         [(s, tied[s] - (p ** size + (1 - p) ** size)) for s, p in mean.items() if s in tied])


def _completion_entropy(log: RunLog) -> None:
    # TRL's entropy is per token: a long completion at 0.1 nats a token still differs from its group's others,
    # a three-token one at 0.1 nats a token mostly does not. What ties a group is the entropy of the whole completion.
    lengths = _by_step(log, "completions/mean_length")
    _put(log, "entropy/per_completion", [(s, e * lengths[s]) for s, e in log.series.get("entropy", []) if s in lengths])


def _first_step_kl(log: RunLog) -> None:
    """The KL at step 1 alone, and how far it rose over the first logged steps: two readings of one series,
    kept apart so that one reading counts for one hypothesis only.

    kl/first_step is the KL before any update (the reference against the starting policy): only a row that
    covers step 1 alone says it. With logging_steps 5 the first row averages steps 1-5, in which the policy
    moved, so a small, growing KL there says nothing about the reference. kl/early_rise is how much the KL
    grew over the first logged steps (their mean over the first row's): a policy that jumps away from where
    it started; a KL already there at step 1, that never grows, does not rise. A policy thrown that far stays
    about that far, so the rise counts only as far as the run's median KL keeps it: an estimator that spikes on a
    few early rows and reads thousandths on the rows between them did not move the policy. kl/thrown is the KL's
    level rather than its rise, the lesser of its mean over the first logged rows and its median: how far from its
    reference the first updates left the policy, and kept it. A longer logging interval keeps the level where it
    loses the rise (kept every other row, a run's first row is step 2, where a rate of 5e-3 already put the KL at
    3 nats), and a KL that only grows to a nat over the run (a generator whose weights stopped syncing) is not
    thrown.

    Only TRL's step-1 KL is read as the reference's: it scores the policy and the reference with one model and
    one kernel there, so a correct reference reads 0. A hand-written loop (runlog.HAND_WRITTEN) often scores one
    side in another engine, precision or batch (a vLLM generator's logprobs), and its first step carries that
    floor (5e-4 in a loop that went on to learn). Nor is it after a supervised stage in the same log
    (runlog.PRIOR_TRAINING): the run starts from that stage's policy, its LoRA reference from the model before it.
    """
    points = log.series.get("kl", [])
    if not points:
        return
    first_step, first = points[0]
    if (first_step <= 1 and log.params.get("logging_steps", "1") in ("1", "1.0") and not log.params.get(STEPS_ASSUMED)
            and not log.params.get(HAND_WRITTEN) and not log.params.get(PRIOR_TRAINING)):
        _put(log, "kl/first_step", [(first_step, first)])
    early = [value for _, value in points[:EARLY_ROWS]]
    if len(early) == EARLY_ROWS:
        typical = statistics.median(value for _, value in points)
        _put(log, "kl/early_rise", [(_run_value(log), min(statistics.fmean(early) - first, typical - first))])
        _put(log, "kl/thrown", [(_run_value(log), min(statistics.fmean(early), typical))])


def _lowest_kl(log: RunLog) -> None:
    """How far below 0 the run's KL reads, where TRL's k3 cannot go at any step: its lowest logged value. A
    hand-written loop's kl is its own estimator, whose sign read_console.py reads (runlog.HAND_WRITTEN): not here."""
    values = [value for _, value in log.series.get("kl", [])]
    if values and not log.params.get(HAND_WRITTEN):
        _put(log, "kl/lowest", [(_run_value(log), min(values))])


def _summed_weight_off(log: RunLog) -> None:
    """Whether a step's vLLM importance weights reach outside [0.8, 1.25] further than one token's gap explains.

    Weighing tokens, a weight is exp(one token's log-ratio), so none reaches beyond exp(+-the largest gap a token
    had, sampling_logp_difference/max). A weight that does is a completion's, exp(the sum of its tokens' log-ratios):
    1 at a step where such a weight is outside the band (a masked one is logged as 0), else 0."""
    low, high = _by_step(log, "sampling/importance_sampling_ratio/min"), _by_step(
        log, "sampling/importance_sampling_ratio/max")
    gap = _by_step(log, "sampling/sampling_logp_difference/max")
    points = []
    for step in sorted(set(low) & set(high) & set(gap)):
        reach = max(math.log(high[step]) if high[step] > 0 else 0.0,
                    -math.log(low[step]) if low[step] > 0 else math.inf)
        points.append((step, float(reach > max(gap[step], WEIGHT_BAND_LOG) + 1e-6)))
    _put(log, "sampling/summed_weight_off", points)


def _implied_kl_coefficient(log: RunLog) -> None:
    """The coefficient the logged kl enters the logged loss with, only where the logs pin it down.

    At a step where every group tied (frac_reward_zero_std 1; where a TRL too old to count ties logs none, a
    reward_std of 0, which no step with one group apart can log), every advantage is 0 and the policy term
    vanishes, so loss / kl is the KL coefficient itself: those steps give it exactly. Elsewhere it is fitted
    (loss on kl through 0), and the fit is kept only when the KL term explains most of the loss (KL_FIT_MIN):
    with token-level losses (dapo, bnpo) the policy term does not average out, and a coefficient fitted on a
    loss that is mostly that term (R^2 of 0.001) is noise, not the run's beta.
    """
    kl = _by_step(log, "kl")
    # A hand-written loop that logs no loss but a policy_loss logs what it backpropagates under that name (TRL's
    # policy_loss is the policy term beside its loss).
    loss = _by_step(log, "loss") or (_by_step(log, "policy_loss") if log.params.get(HAND_WRITTEN) else {})
    pairs = [(kl[s], loss[s]) for s in kl if s in loss]
    scale = sum(k * k for k, _ in pairs)
    if len(pairs) < 3 or scale <= 1e-12:
        return
    tied = {step: share >= 1.0 for step, share in _by_step(log, "frac_reward_zero_std").items()}
    if not tied:
        tied = {step: spread <= FLAT_STD for step, spread in _by_step(log, "reward_std").items()}
    exact = [loss[s] / kl[s] for s in kl if s in loss and tied.get(s, False) and kl[s] > KL_EXACT_MIN]
    if len(exact) >= 2:
        _put(log, "kl/implied_coefficient", [(_run_value(log), statistics.median(exact))])
        _put(log, "kl/loss_fit", [(_run_value(log), 1.0)])
        return
    coefficient = sum(k * v for k, v in pairs) / scale
    power = sum(v * v for _, v in pairs)
    if power <= 1e-12:
        return
    # R^2 through 0: how much of the logged loss the fitted KL term accounts for.
    fit = max(0.0, 1.0 - sum((v - coefficient * k) ** 2 for k, v in pairs) / power)
    _put(log, "kl/loss_fit", [(_run_value(log), fit)])
    if fit >= KL_FIT_MIN:
        _put(log, "kl/implied_coefficient", [(_run_value(log), coefficient)])
