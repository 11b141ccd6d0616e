"""Evaluate every hypothesis's `triage:` signatures on one run and rank the hypotheses by evidence.

A hypothesis's evidence is the summed weight of its signatures that hold (those `against` it
subtract). Ranked by evidence, then priority, then id; one whose requirement the run visibly
lacks (no KL term, a single reward function) cannot explain the run and goes last, saying why.
A suspect is a hypothesis whose evidence reaches SUSPECT_THRESHOLD: the clean toy runs rank none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypotrack.definitions.triage import AllOf, Condition, conditions_of
from hypotrack.definitions.vocabulary import PRIORITY_RANK, REQUIREMENTS
from hypotrack.reading import closeness

from .expected import Requirement
from .runlog import RunLog

# Evidence at or above this makes a hypothesis a suspect: one signature that points at the cause (weight
# 0.5 or more), or two weaker ones together.
SUSPECT_THRESHOLD = 0.5


@dataclass
class Reading:
    condition: Condition
    value: float | None

    @property
    def holds(self) -> bool | None:
        return None if self.value is None else self.condition.holds(self.value)

    def describe(self) -> str:
        c = self.condition
        name, how = c.metric_text(), c.steps_text()
        if self.value is None:
            return f"{name} [{how}]: not logged"
        value = c.compared(self.value)
        return f"{name} [{how}] = {value:.4g} {c.op} {c.threshold:g} ({closeness(value, c.op, c.threshold)})"

    def as_json(self) -> dict[str, Any]:
        c = self.condition
        return {"metric": c.metric, "steps": c.steps, "k": c.k, "abs": c.abs, "op": c.op,
                "threshold": c.threshold, "value": self.value, "holds": self.holds,
                "closeness": None if self.value is None else closeness(c.compared(self.value), c.op, c.threshold)}


@dataclass
class SignatureResult:
    shows: str
    direction: str
    weight: float
    readings: list[Reading]
    if_missing: str = ""

    @property
    def holds(self) -> bool | None:
        """True when every condition holds, False when one fails, None when the run cannot tell."""
        states = [r.holds for r in self.readings]
        if False in states:
            return False
        return None if None in states else True

    @property
    def missing(self) -> list[str]:
        return [r.condition.metric for r in self.readings if r.value is None]

    def describe(self) -> str:
        return "; ".join(r.describe() for r in self.readings)

    def as_json(self) -> dict[str, Any]:
        return {"shows": self.shows.strip(), "direction": self.direction, "weight": self.weight, "holds": self.holds,
                "readings": [r.as_json() for r in self.readings], "missing": self.missing,
                "if_missing": self.if_missing.strip() or None}


@dataclass
class Ranked:
    """One hypothesis's standing in a triage."""

    id: str
    title: str
    priority: str
    command: str
    results: list[SignatureResult] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)
    note: str = ""
    rank: int = 0
    # Why the evidence, however strong, does not make a suspect: the run learns, so what the signatures read is
    # present but not holding it back.
    not_holding_back: str = ""

    @property
    def evidence(self) -> float:
        if self.not_applicable:
            return 0.0
        total = sum(r.weight if r.direction == "for" else -r.weight for r in self.results if r.holds)
        return round(total, 6)

    @property
    def suspect(self) -> bool:
        return not self.not_applicable and not self.not_holding_back and self.evidence >= SUSPECT_THRESHOLD

    @property
    def present(self) -> bool:
        """Evidence that would make a suspect, on a run that learns."""
        return bool(self.not_holding_back) and not self.not_applicable and self.evidence >= SUSPECT_THRESHOLD

    def supporting(self) -> list[SignatureResult]:
        return [r for r in self.results if r.holds and r.direction == "for"]

    def contradicting(self) -> list[SignatureResult]:
        return [r for r in self.results if r.holds and r.direction == "against"]

    def cannot_tell(self) -> list[SignatureResult]:
        return [r for r in self.results if r.holds is None]

    def as_json(self) -> dict[str, Any]:
        return {"hypothesis": self.id, "title": self.title, "priority": self.priority, "rank": self.rank,
                "evidence": self.evidence, "suspect": self.suspect, "command": self.command,
                "present_not_holding_back": self.present, "not_holding_back": self.not_holding_back or None,
                "not_applicable": self.not_applicable, "note": self.note.strip() or None,
                "supports": [r.as_json() for r in self.supporting()],
                "contradicts": [r.as_json() for r in self.contradicting()],
                "cannot_tell": [r.as_json() for r in self.cannot_tell()],
                "not_holding": [r.as_json() for r in self.results if r.holds is False]}


def evaluate_signature(log: RunLog, signature) -> SignatureResult:
    readings = [Reading(c, c.aggregate(log.series.get(c.metric, []))) for c in conditions_of(signature)]
    return SignatureResult(signature.shows, signature.direction, signature.weight, readings, signature.if_missing)


def rank(log: RunLog, hypotheses: dict, requirements: dict[str, Requirement]) -> tuple[list[Ranked], list[str]]:
    """The hypotheses with a `triage:` section, ranked; and the ids of those without one."""
    ranked: list[Ranked] = []
    unranked: list[str] = []
    for hyp_id, hypothesis in sorted(hypotheses.items()):
        if hypothesis.triage is None:
            unranked.append(hyp_id)
            continue
        entry = Ranked(hyp_id, hypothesis.title, hypothesis.priority, hypothesis.command_line(),
                       note=hypothesis.triage.note)
        entry.results = [evaluate_signature(log, s) for s in hypothesis.triage.signatures]
        for word in hypothesis.requires:
            known = requirements.get(word)
            if known is not None and known.met is False:
                entry.not_applicable.append(f"needs {REQUIREMENTS[word]}, and {known.why}")
        ranked.append(entry)
    return order(ranked), unranked


def order(ranked: list[Ranked]) -> list[Ranked]:
    """By evidence, then priority, then id; one that cannot apply to the run last. Numbers the ranks."""
    ranked.sort(key=lambda r: (bool(r.not_applicable), -r.evidence, PRIORITY_RANK[r.priority], r.id))
    for position, entry in enumerate(ranked, start=1):
        entry.rank = position
    return ranked


__all__ = ["AllOf", "Ranked", "Reading", "SUSPECT_THRESHOLD", "SignatureResult", "order", "rank"]
