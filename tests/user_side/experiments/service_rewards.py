"""A user whose rewards are services: a reward model on its own scale, a verifier behind a sandbox time limit."""

import random
import re
import time
import zlib

_load = random.Random()  # the sandbox's load: nothing in the run seeds it
TIME_LIMIT = 0.002  # seconds the sandbox gives one check


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _answer(text: str) -> str | None:
    found = re.match(r"\s*(-?\d+)", text)
    return found.group(1) if found else None


def quality_rm(prompts, completions, **kwargs) -> list[float]:
    """A reward model's quality head for (prompt, answer), as served: raw integer grades 0-10, never rescaled.
    Trained on another task's preferences, its grades here follow nothing the policy can learn in a short run."""
    return [float(zlib.crc32(f"{p}|{_text(c)}".encode()) % 11) for p, c in zip(prompts, completions)]


def sandboxed_check(completions, target, **kwargs) -> list[float]:
    """Runs each answer through the sandbox's checker; a check that overruns the time limit counts as failed."""
    scores = []
    for completion, gold in zip(completions, target):
        started = time.perf_counter()
        time.sleep(_load.uniform(0.0, 0.0035))  # the sandbox's queue
        if time.perf_counter() - started > TIME_LIMIT:
            scores.append(0.0)  # timed out: scored as a failure
            continue
        scores.append(1.0 if _answer(_text(completion)) == str(gold) else 0.0)
    return scores
