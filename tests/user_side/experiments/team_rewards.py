"""A third user's reward functions: a 0-5 answer scorer, partial credit, a judge, a cost-style grade.

Written in TRL's signature the way such functions are written in the wild, bugs included (each
experiment file says which one it uses). The gold answer arrives as `target` or `gold`.
"""

import random
import re

_noise = random.Random(7)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _first_number(completion) -> str:
    match = re.match(r"\s*(-?[0-9]+)", _text(completion))
    return match.group(1) if match else ""


def _gold(kwargs) -> list[str]:
    return [str(x) for x in (kwargs.get("target") or kwargs.get("gold"))]


def answer_ok(completions, **kwargs) -> list[float]:
    """1 for the right number first, 0 otherwise."""
    return [1.0 if _first_number(c) == g else 0.0 for c, g in zip(completions, _gold(kwargs))]


def correctness_rm(completions, **kwargs) -> list[float]:
    """A 0-5 correctness score from a reward model head; its float16 logits add a little noise."""
    return [5.0 * ok + _noise.gauss(0.0, 5e-4) for ok in answer_ok(completions, **kwargs)]


def helpfulness_judge(completions, **kwargs) -> list[float]:
    """A helpfulness judge whose prompt template lost the completion: it scores at random in [0, 1]."""
    return [_noise.random() for _ in completions]


def negated_grade(completions, **kwargs) -> list[float]:
    """Meant as a cost to minimise (0 for right, 5 for wrong) and then negated twice: the right answer gets -5."""
    return [-5.0 * ok for ok in answer_ok(completions, **kwargs)]


def even_style_judge(completions, **kwargs) -> list[float]:
    """A style judge that, it later turned out, prefers answers ending in an even digit."""
    return [1.0 if _first_number(c)[-1:] in ("0", "2", "4", "6", "8") else 0.0 for c in completions]


def plus_minus(completions, **kwargs) -> list[float]:
    """+1 for the right answer, -1 for a wrong one."""
    return [2.0 * ok - 1.0 for ok in answer_ok(completions, **kwargs)]


def partial_credit(completions, **kwargs) -> list[float]:
    """3 for the right sum, 1 when it is off by at most 2, 0 otherwise."""
    out = []
    for completion, gold in zip(completions, _gold(kwargs)):
        answer = _first_number(completion)
        if answer == gold:
            out.append(3.0)
        elif answer and abs(int(answer) - int(gold)) <= 2:
            out.append(1.0)
        else:
            out.append(0.0)
    return out


def capital_match(completions, **kwargs) -> list[float]:
    """1 when the completion starts with the gold capital's name."""
    out = []
    for completion, gold in zip(completions, _gold(kwargs)):
        word = re.match(r"\s*([A-Za-z-]+)", _text(completion))
        out.append(1.0 if word and word.group(1) == gold else 0.0)
    return out
