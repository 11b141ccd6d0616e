"""Which logged reward function is the task's, which are auxiliary, and how much each weighs.

A run handed to triage may come without an experiment file, so the roles are read from the logs:
every `rewards/<func>/mean` TRL logged is a reward function; the task reward is the one the user
names (`--task-reward`), else the one the names and the logs point at (task_candidates): a name that
says correctness (accuracy, correct, answer, solved, ...) and no shaping word (format, length, penalty,
xml, ...), never a penalty that is at most 0 by design nor a function that scores every completion alike (unless
its name says correctness and no other's does, or every function that pays has a shaping name while its own says
no shaping: then it is the task's reward never paying);
then the heaviest of those left, then of equal weights the one that scores furthest below its own best step on
average (a format is soon met, or never: a check of the answer is what a run climbs), then the first listed. The
weights come from the run's params (`reward_weights`, which TRL's MLflow callback logs), else from the logs
themselves: TRL's `reward` is the weighted sum of the functions' means at every step, so least squares recovers the
weights (a function that scores 0 at every step keeps TRL's default, 1: no fit can tell its weight).
Every assumption is said in words, for the report.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from hypotrack.errors import HypotrackError

from .keys import CORRECTNESS_WORDS, SHAPING_WORDS, name_says
from .runlog import RunLog

# The weighted sum must reproduce TRL's reward this closely (float32 means) for inferred weights to be used.
FIT_TOLERANCE = 1e-3


@dataclass
class Roles:
    task: str | None
    auxiliary: list[str] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    assumed: list[str] = field(default_factory=list)


def assign_roles(log: RunLog, functions: list[str], task_reward: str | None) -> Roles:
    if not functions:
        if log.series.get("reward"):
            return Roles(None, assumed=["no reward function logged by name (rewards/<func>/mean): the logged reward "
                                        "is read as the task reward"])
        return Roles(None, assumed=["no rewards/<func>/mean logged: the reward functions' roles are unknown"])
    weights, said = _weights(log, functions)
    if task_reward is not None:
        task, how = _named_function(task_reward, functions), "named by --task-reward"
    else:
        task, how = default_task(log, functions, weights)
    roles = Roles(task, [f for f in functions if f != task], weights)
    roles.assumed += [f"task reward: {task} ({how})", said]
    return roles


def _named_function(named: str, functions: list[str]) -> str:
    """The reward function --task-reward names: by its name, or by the key its logs carry (`rewards/accuracy/mean`,
    `train/rewards/accuracy`, as a user copies it from a log or a W&B panel), in any case."""
    key = named.strip()
    for prefix in ("train/", "rewards/"):
        key = key.removeprefix(prefix)
    for suffix in ("/mean", "/std"):
        key = key.removesuffix(suffix)
    found = [function for function in functions if function in (named, key)]
    found = found or [function for function in functions if function.lower() == key.lower()]
    if len(found) != 1:
        raise HypotrackError(f"--task-reward {named!r} is not a reward function this run logged "
                             f"(logged: {', '.join(functions)})")
    return found[0]


def default_task(log: RunLog, functions: list[str], weights: dict[str, float]) -> tuple[str, str]:
    """The function the names and the logs say measures the task (task_candidates), the heaviest of several.

    trainer_state.json and MLflow list metric keys alphabetically, so the order TRL logged the functions in is
    lost, and a weight says how much a reward shapes, not whether it is the task: a format reward weighted 3x
    is still a format reward.
    """
    hint = "; name another with --task-reward NAME"
    if len(functions) == 1:
        return functions[0], "the only reward function logged"
    candidates, why = task_candidates(log, functions)
    ranked = sorted(candidates, key=lambda f: -abs(weights[f]))
    if len(ranked) == 1:
        return ranked[0], f"{why}{hint}"
    if abs(weights[ranked[0]]) > abs(weights[ranked[1]]):
        return ranked[0], f"{why}, and the largest weight among them{hint}"
    heaviest = [f for f in ranked if abs(weights[f]) == abs(weights[ranked[0]])]
    shares = {f: share for f in heaviest if (share := _share_of_best(log, f)) is not None}
    if len(shares) > 1 and len(set(shares.values())) > 1:
        hardest = min(shares, key=lambda f: shares[f])
        return hardest, (f"{why}, and of them the one that scores furthest below its own best ({shares[hardest]:.0%} "
                         f"of it on average, as a check of the answer does while a format is soon met){hint}")
    return ranked[0], f"{why}, the first of them listed{hint}"


def _share_of_best(log: RunLog, func: str) -> float | None:
    """A function's mean over the logged steps as a share of its best step's mean, where that is above 0 (one that
    never pays may be a check of the answer never met or a format never met: nothing tells which)."""
    means = _logged(log, func, "mean")
    return sum(means) / len(means) / max(means) if means and max(means) > 0 else None


def _logged(log: RunLog, func: str, statistic: str) -> list[float]:
    """A reward function's logged mean or std at each step, in order."""
    return [v for _, v in log.series.get(f"rewards/{func}/{statistic}", [])]


def task_candidates(log: RunLog, functions: list[str]) -> tuple[list[str], str]:
    """The functions that may measure the task, and why: a penalty at most 0 by design, or a function that gives
    every completion the same score, is auxiliary; among the rest, names that say correctness come first."""
    means = {f: _logged(log, f, "mean") for f in functions}
    stds = {f: _logged(log, f, "std") for f in functions}
    penalties = [f for f in functions if means[f] and max(means[f]) <= 0 < -min(means[f])]
    constant = [f for f in functions if stds[f] and max(stds[f]) <= 1e-9 and f not in penalties]
    left = [f for f in functions if f not in penalties and f not in constant] or list(functions)
    def says_correctness(func: str) -> bool:
        return name_says(func, CORRECTNESS_WORDS) and not name_says(func, SHAPING_WORDS)

    named = [f for f in left if says_correctness(f)]
    never = [f for f in functions if says_correctness(f) and f not in left]
    if not named and never:
        # A check of the answer that is at most 0 at every step, or scores every completion alike, is no penalty
        # by design: it is the task's reward never paying (a parser that never matches scores every answer -1).
        return never, "its name says it scores correctness, though it never pays above 0 or tells no completion apart"
    set_aside = []
    if penalties:
        set_aside.append(f"{', '.join(penalties)} at most 0 at every step (a penalty)")
    if constant:
        set_aside.append(f"{', '.join(constant)} the same for every completion")
    aside = f" ({'; '.join(set_aside)}: auxiliary)" if set_aside and left != functions else ""
    if named:
        return named, f"its name says it scores correctness{aside}"
    shaping = [f for f in left if name_says(f, SHAPING_WORDS)]
    rest = [f for f in left if f not in shaping]
    if rest and shaping:
        return rest, f"the reward function whose name says no shaping ({', '.join(shaping)} shape the answer){aside}"
    # Every function that pays shapes the answer by its name: a format is never the task. A function set aside (at most
    # 0 at every step, or the same for every completion) whose name says no shaping is the task's, never paying: a
    # tool call or a verdict scored at its floor for every completion, as when no completion gets as far as making one.
    unpaid = [f for f in functions if f not in left and not name_says(f, SHAPING_WORDS)]
    if not rest and unpaid and left != functions:
        return unpaid, (f"the reward function whose name says no shaping, though it never pays above 0 or tells no "
                        f"completion apart ({', '.join(shaping)} shape the answer)")
    return left, f"no name says which one scores correctness{aside}"


def _weights(log: RunLog, functions: list[str]) -> tuple[dict[str, float], str]:
    """The weights TRL combined the functions with: fitted to its logged reward, else the run's reward_weights
    matched to the functions by that fit (sources list keys alphabetically, not in TRL's order), else 1."""
    declared = _declared_weights(log.params.get("reward_weights"), len(functions))
    fitted = _inferred_weights(log, functions)
    if fitted is not None:
        if declared is not None and sorted(declared) == sorted(round(w, 4) for w in fitted.values()):
            return fitted, f"reward weights {_words(fitted)} (the run's reward_weights, matched by TRL's logged reward)"
        return fitted, f"reward weights {_words(fitted)} (inferred: TRL's reward is their weighted sum at every step)"
    if declared is not None:
        weights = _best_match(log, functions, declared)
        return weights, f"reward weights {_words(weights)} (the run's reward_weights)"
    weights = dict.fromkeys(functions, 1.0)
    return weights, f"reward weights {_words(weights)} (assumed, TRL's default: the logs do not pin them down)"


def _best_match(log: RunLog, functions: list[str], declared: list[float]) -> dict[str, float]:
    """The assignment of the declared weights to the functions that best reproduces TRL's logged reward."""
    from itertools import permutations

    reward = dict(log.series.get("reward", []))
    means = {f: dict(log.series.get(f"rewards/{f}/mean", [])) for f in functions}

    def error(weights: tuple[float, ...]) -> float:
        return sum(abs(total - sum(w * means[f].get(step, 0.0) for f, w in zip(functions, weights)))
                   for step, total in reward.items())

    candidates = list(dict.fromkeys(permutations(declared))) if len(functions) <= 6 else [tuple(declared)]
    return dict(zip(functions, min(candidates, key=error)))


def _words(weights: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.3g}" for name, value in weights.items())


def _declared_weights(raw: str | None, count: int) -> list[float] | None:
    if not raw or raw in ("None", "null"):
        return None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, (list, tuple)) and len(value) == count and all(isinstance(v, (int, float)) for v in value):
        return [float(v) for v in value]
    return None


def _inferred_weights(log: RunLog, functions: list[str]) -> dict[str, float] | None:
    """Least squares of TRL's reward on the functions' means, through 0; None when the logs do not pin the
    weights down (too few steps, a function that moves with another) or the fit is not exact."""
    reward = dict(log.series.get("reward", []))
    means = [dict(log.series.get(f"rewards/{f}/mean", [])) for f in functions]
    steps = [s for s in reward if all(s in m for m in means)]
    if len(steps) < len(functions) + 1:
        return None
    rows = [[m[s] for m in means] for s in steps]
    target = [reward[s] for s in steps]
    n = len(functions)
    # Normal equations: a handful of unknowns, so plain Python beats importing numpy on `triage`'s clock.
    gram = [[sum(row[i] * row[j] for row in rows) for j in range(n)] for i in range(n)]
    moment = [sum(row[i] * t for row, t in zip(rows, target)) for i in range(n)]
    tolerance = FIT_TOLERANCE * (1 + max(abs(t) for t in target))
    solution = _solve(gram, moment)
    if solution is None:
        # The functions move together (a combined reward logged beside the parts it adds up): one that is TRL's reward
        # at every step by itself pins the weights, and the rest are metrics logged at weight 0.
        # A function that scores 0 at every step adds nothing whatever its weight: it keeps TRL's default, 1.
        whole = [i for i in range(n) if max(abs(row[i] - t) for row, t in zip(rows, target)) <= tolerance]
        if len(whole) != 1:
            return None
        solution = [float(i == whole[0] or not any(row[i] for row in rows)) for i in range(n)]
    error = max(abs(sum(w * x for w, x in zip(solution, row)) - t) for row, t in zip(rows, target))
    if error > tolerance:
        return None
    return {f: float(round(w, 4)) + 0.0 for f, w in zip(functions, solution)}  # + 0.0: no "-0" in the report


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None for a singular (or nearly singular) system."""
    n = len(vector)
    a = [row[:] + [value] for row, value in zip(matrix, vector)]
    scale = max((abs(a[i][i]) for i in range(n)), default=0.0)
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) <= 1e-9 * max(scale, 1e-300):
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            a[r] = [x - factor * y for x, y in zip(a[r], a[col])]
    out = [0.0] * n
    for i in reversed(range(n)):
        out[i] = (a[i][n] - sum(a[i][j] * out[j] for j in range(i + 1, n))) / a[i][i]
    return out
