"""What `hypotrack.watch`'s live gates found, weighed with the signatures read off the run's log.

A gate is a measurement, not a pattern: it checked an identity a healthy run holds (the reference is the
starting policy, a gradient reaches the trained weights, each weight with a gradient moves, sampling and
scoring agree, the generator has the trained adapters) in the run itself. So a gate that failed gives its
hypothesis `FAILED_WEIGHT` of evidence, more than a log's signatures add up to on these runs, which puts
it first; a gate that checked and held counts `HELD_WEIGHT` against its hypothesis, as a signature written
against it does. A hypothesis without signatures of its own enters the ranking through its gate.
"""

from __future__ import annotations

from typing import Any

from .evaluate import Ranked, SignatureResult, order

FAILED_WEIGHT = 2.0
HELD_WEIGHT = 1.0


def weigh_gates(ranking: list[Ranked], hypotheses: dict[str, Any], failed: list[tuple[str, str, int, str]],
                held: list[tuple[str, str]]) -> list[Ranked]:
    """The ranking with each gate's finding: ``failed`` as (gate, hypothesis, step, message), ``held`` as (gate,
    hypothesis) for the gates that checked and found nothing."""
    entries = {entry.id: entry for entry in ranking}
    for gate, hypothesis_id, step, message in failed:
        entry = entries.get(hypothesis_id) or _entry(hypothesis_id, hypotheses, ranking)
        if entry is not None:
            entry.results.append(SignatureResult(f"the live {gate} gate failed at step {step}: {message}", "for",
                                                 FAILED_WEIGHT, []))
    for gate, hypothesis_id in held:
        entry = entries.get(hypothesis_id)
        if entry is not None:
            entry.results.append(SignatureResult(f"the live {gate} gate checked the run in its first steps and "
                                                 "found nothing", "against", HELD_WEIGHT, []))
    return order(ranking)


def _entry(hypothesis_id: str, hypotheses: dict[str, Any], ranking: list[Ranked]) -> Ranked | None:
    hypothesis = hypotheses.get(hypothesis_id)
    if hypothesis is None:
        return None
    entry = Ranked(hypothesis_id, hypothesis.title, hypothesis.priority, hypothesis.command_line())
    ranking.append(entry)
    return entry
