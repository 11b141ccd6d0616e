"""Synthetic 2-hop QA in the spirit of MuSiQue.

Each prompt lists short numbered paragraphs: a bridge paragraph "A is in B.", an answer paragraph
"B's capital is C." (C from a closed set of names), and distractor chains of the same shape with other codes, padded with filler
sentences so prompts are long (~200-600 chars) and left-truncation can cut evidence. The row records
where the answer-bearing paragraph lies in the prompt (answer_start/answer_end, character offsets),
so a diagnostics hook can tell whether truncation removed it.
"""
from __future__ import annotations

import random
import re
import string

from .text import completion_text

FILLERS = [
    "It is old.", "Rain is common.", "The river is wide.", "Many birds nest there.",
    "It has a market.", "Roads are long.", "The hills are green.", "It is quiet.",
]
MIN_DISTRACTOR_CHAINS, MAX_DISTRACTOR_CHAINS = 1, 2
MIN_FILLERS, MAX_FILLERS = 1, 2
# Distractor chains end in another relation, so exactly one paragraph states a capital; a tiny model can
# learn to find it in seconds. HARD_FRACTION of rows add a full "capital" distractor chain, so only
# real 2-hop reading gets those right: that keeps headroom above the warm-started baseline.
DISTRACTOR_RELATIONS = ["river", "mayor", "lake"]
HARD_FRACTION = 0.3
# Capitals come from a small closed set of names (persons/places are random codes): a tiny model can
# then learn "name the capital mentioned in the context" in seconds, which copying random codes is not.
# Four names (not eight): a model that only knows the answer format already samples the right one ~1/4
# of the time, so the GRPO baseline never starts at zero; the warm start adds just enough reading to
# land it near 0.5, and GRPO sharpens the reading from there.
CAPITALS = ["Avo", "Bel", "Cor", "Dun"]
_CODE = re.compile(r"^\s*([A-Za-z0-9]+)")


def _codes(rng: random.Random, k: int) -> list[str]:
    """k distinct entity codes like 'kd3': 3 characters keep names tiny for a character model."""
    out: set[str] = set()
    while len(out) < k:
        out.add(rng.choice(string.ascii_lowercase) + rng.choice(string.ascii_lowercase) + rng.choice(string.digits))
    return sorted(sorted(out), key=lambda _: rng.random())  # sort first: set order varies with the hash seed


def _paragraph(rng: random.Random, fact: str, short: bool) -> str:
    extra = [] if short else rng.sample(FILLERS, rng.randint(MIN_FILLERS, MAX_FILLERS))
    return " ".join([fact, *extra])


def make_example(rng: random.Random, short: bool = False) -> dict:
    """short=True drops filler sentences: same skill, ~3x cheaper rows for the supervised warm start."""
    n_chains = 1 + rng.randint(MIN_DISTRACTOR_CHAINS, MAX_DISTRACTOR_CHAINS)
    codes = _codes(rng, 3 * n_chains)
    chains = [codes[3 * i: 3 * i + 3] for i in range(n_chains)]  # chain 0 is the asked one
    paras = []  # (role, text)
    hard = rng.random() < HARD_FRACTION
    capitals = rng.sample(CAPITALS, 2)  # [asked chain's capital, hard distractor's capital]
    for i, (a, b, c) in enumerate(chains):
        kind = "support" if i == 0 else f"distractor{i}"
        rel = "capital" if i == 0 or (hard and i == 1) else rng.choice(DISTRACTOR_RELATIONS)
        if rel == "capital":
            c = capitals[i]
        paras.append((f"{kind}-bridge", _paragraph(rng, f"{a} is in {b}.", short)))
        paras.append((f"{kind}-answer", _paragraph(rng, f"{b}'s {rel} is {c}.", short)))
    rng.shuffle(paras)
    a, _, c = chains[0]
    c = capitals[0]
    prompt, spans = "", {}
    for i, (role, text) in enumerate(paras):
        line = f"[{i + 1}] {text}\n"
        spans[role] = (len(prompt), len(prompt) + len(line) - 1)  # paragraph without its newline
        prompt += line
    prompt += f"Q: capital of the place of {a}?\nA: "
    return {
        "prompt": prompt,
        "answer": c,
        "answer_start": spans["support-answer"][0],
        "answer_end": spans["support-answer"][1],
        "bridge_start": spans["support-bridge"][0],
        "bridge_end": spans["support-bridge"][1],
        "n_paragraphs": len(paras),
        "hard": hard,
    }


def build_dataset(n: int, seed: int, short: bool = False):
    """Deterministic for (n, seed): rows come from a private RNG, never the global one."""
    from datasets import Dataset

    rng = random.Random(f"musique-mini-{seed}")
    return Dataset.from_list([make_example(rng, short) for _ in range(n)])


def parse_answer(completion: str) -> str | None:
    m = _CODE.match(completion)
    return m.group(1) if m else None


def musique_correct(completions, answer, **kwargs) -> list[float]:
    """1.0 when the completion's leading entity code equals the answer, else 0.0."""
    return [1.0 if parse_answer(completion_text(c)) == str(a) else 0.0 for c, a in zip(completions, answer)]


def musique_format(completions, **kwargs) -> list[float]:
    """Cheap shaping: 1.0 when the completion is exactly one entity code."""
    return [1.0 if re.fullmatch(r"\s*[A-Z][a-z]{2}\s*", completion_text(c)) else 0.0 for c in completions]
