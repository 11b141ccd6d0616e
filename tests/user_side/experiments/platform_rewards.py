"""A seventh user's rewards, served by their platform team: a verdict from a code container, a grader behind
an RPC, a helpfulness reward model on a 0-100 scale, a safety classifier's raw logit.

Written the way the platform's client library hands them out, bugs included (each experiment file says
which one it uses). Problems arrive as `problem`, gold answers as `solution`.
"""

import random
import re
import time
import zlib

from datasets import Dataset

_latency = random.Random()  # the platform's load: nothing in the run seeds it
CONTAINER_BUDGET_S = 0.0015


class RpcError(Exception):
    pass


def load_problems(n: int, seed: int) -> Dataset:
    """Two-number sums, under the platform's own column names."""
    rng = random.Random(f"platform-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"problem": f"{a}+{b}=", "solution": a + b})
    return Dataset.from_list(rows)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _number(text: str) -> int | None:
    found = re.match(r"\s*(-?\d+)", text)
    return int(found.group(1)) if found else None


def correct(completions, solution, **kwargs) -> list[float]:
    """1.0 when the answer is the solution, else 0.0."""
    return [1.0 if _number(_text(c)) == int(s) else 0.0 for c, s in zip(completions, solution)]


def container_verdict(completions, solution, **kwargs) -> list[float]:
    """+1 when the container's check passes, -1 when it fails; a check the container does not finish in its
    budget is neither, so it gets 0.0."""
    verdicts = []
    for completion, gold in zip(completions, solution):
        started = time.perf_counter()
        time.sleep(_latency.uniform(0.0, 0.0025))  # queueing in front of the container
        if time.perf_counter() - started > CONTAINER_BUDGET_S:
            verdicts.append(0.0)
            continue
        verdicts.append(1.0 if _number(_text(completion)) == int(gold) else -1.0)
    return verdicts


def _grade_remote(answer: int | None, gold: int) -> float:
    if _latency.random() < 0.3:
        raise RpcError("grader unavailable (503)")
    if answer is None:
        return 0.0
    miss = abs(answer - gold)
    return 10.0 if miss == 0 else 4.0 if miss <= 2 else 1.0


def graded_via_rpc(completions, solution, **kwargs) -> list[float]:
    """The grading service's 0-10 partial credit; the client returns 0 for a call that fails, as its docs say."""
    grades = []
    for completion, gold in zip(completions, solution):
        try:
            grades.append(_grade_remote(_number(_text(completion)), int(gold)))
        except RpcError:
            grades.append(0.0)
    return grades


def answer_format(completions, **kwargs) -> list[float]:
    """1.0 when the completion starts with a number."""
    return [1.0 if _number(_text(c)) is not None else 0.0 for c in completions]


def helpfulness_rm(prompts, completions, **kwargs) -> list[float]:
    """The helpfulness reward model's raw score, 0-100, as the serving endpoint returns it. Trained on chat
    preferences, it grades arithmetic answers by nothing a short run can learn."""
    return [float(zlib.crc32(f"{p}::{_text(c)}".encode()) % 101) for p, c in zip(prompts, completions)]


def helpfulness_rm_scaled(prompts, completions, **kwargs) -> list[float]:
    """The same reward model, divided by its range as the platform's docs recommend."""
    return [score / 100.0 for score in helpfulness_rm(prompts, completions)]


def safety_logit(prompts, completions, **kwargs) -> list[float]:
    """The safety classifier's logit for "safe", between about -8 and 8, straight from the endpoint."""
    return [(zlib.crc32(f"safety|{p}|{_text(c)}".encode()) % 1601) / 100.0 - 8.0 for p, c in zip(prompts, completions)]
