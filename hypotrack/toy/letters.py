"""Letters: prompt "please write k:", a completion of about LENGTH lowercase letters, rewarded for its share of the letter asked.

The toy lab's other tasks answer in 3-6 tokens, each one the model is nearly sure of. Some failures only show on
completions that are long and uncertain: TRL's sequence-level importance weight under vLLM sums the trainer's and
the generator's per-token log-ratios over a completion, so a gap of 0.01 nats per token, too small to matter on a
token, moves the weight of a 100-token completion out of any reasonable band (trl#5814). The warm start teaches
letters drawn at random (ASKED_SHARE of them the letter asked, the rest uniform), so each token carries about
three nats of entropy and the completion ends after LENGTH of them: GRPO has a reward to raise (the share of the
letter asked), and every completion is long.
"""
from __future__ import annotations

import random
import string

from .text import completion_text

LENGTH = 96  # letters in a warm-start completion, and what the reward divides by
ASKED_SHARE = 0.3  # the letter asked, in the warm start's completions (the other 25 share the rest)
ALPHABET = string.ascii_lowercase
# How a prompt asks, in words of different lengths: a dataset's prompts vary in length, as real ones do (prompts of one
# length are what a prompt budget that cuts every prompt leaves, which triage reads as h04's sign).
ASKING = ("write {}:", "now write {}:", "please write {}:", "write many {}:", "write letters, mostly {}:")


def make_example(rng: random.Random) -> dict:
    letter, asking = rng.choice(ALPHABET), rng.choice(ASKING)
    others = [c for c in ALPHABET if c != letter]
    text = "".join(letter if rng.random() < ASKED_SHARE else rng.choice(others) for _ in range(LENGTH))
    return {"prompt": asking.format(letter), "answer": letter, "completion": text}


def build_dataset(n: int, seed: int):
    """Deterministic for (n, seed): rows come from a private RNG, never the global one. ``answer`` is the letter
    asked (what the reward reads); ``completion`` a warm-start target for it."""
    from datasets import Dataset

    rng = random.Random(f"letters-{seed}")
    return Dataset.from_list([make_example(rng) for _ in range(n)])


def letters_share(completions, answer, **kwargs) -> list[float]:
    """The share of the completion's first LENGTH characters that are the letter asked (a shorter completion
    counts the missing ones as misses, so stopping early never pays)."""
    return [completion_text(c)[:LENGTH].count(a) / LENGTH for c, a in zip(completions, answer)]
