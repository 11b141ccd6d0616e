"""Triage accuracy on the toy lab's planted faults: is the planted hypothesis ranked first from plain logs?

The self-test trains the control arm of each (fault, hypothesis) cell with diagnostics hooks, which
only observe; the arm's series holds TRL's own keys beside hypotrack's. Keeping only what a plain TRL
run logs (keys.canonical_name drops diag/*, eval/*, hypotrack's own keys) gives exactly the logs a
user would have, and triage ranks the hypotheses on them.

For each fault row: the rank of the hypothesis the fault imitates (first? top 3?) on the fault's
own experiment's run; for the clean row: no hypothesis may reach the suspect threshold, on any of
the clean runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .api import triage_log
from .keys import DIAGNOSTICS_PREFIX, canonical_name
from .runlog import Points, RunLog


def is_plain_trl_key(name: str) -> bool:
    """Whether a plain TRL run logs this key: a training metric triage reads, not one of hypotrack's hooks."""
    canonical = canonical_name(name)
    return canonical is not None and not canonical.startswith(DIAGNOSTICS_PREFIX)


def plain_trl_log(series: dict[str, Points], label: str) -> RunLog:
    """What a plain TRL run would have logged of an arm's series (the hooks' diag/* keys left out)."""
    log = RunLog(source=label, kind="series")
    for name, points in series.items():
        if is_plain_trl_key(name):
            for step, value in points:
                log.add(name, step, value)
    return log.sort()


@dataclass
class RowTriage:
    row: str
    run: str  # which run was triaged (experiment, seed)
    expected: str | None
    rank: int | None
    evidence: float | None
    top: list[tuple[str, float]]
    suspects: list[str]

    def as_json(self) -> dict[str, Any]:
        return {"row": self.row, "run": self.run, "expected": self.expected, "rank": self.rank,
                "evidence": self.evidence, "top": [{"hypothesis": h, "evidence": e} for h, e in self.top],
                "suspects": self.suspects}


@dataclass
class TriageAccuracy:
    rows: list[RowTriage] = field(default_factory=list)
    threshold: float = 0.0

    def faults(self) -> list[RowTriage]:
        return [r for r in self.rows if r.expected is not None]

    def first(self) -> int:
        return sum(r.rank == 1 for r in self.faults())

    def top3(self) -> int:
        return sum(r.rank is not None and r.rank <= 3 for r in self.faults())

    def clean_suspects(self) -> list[str]:
        return sorted({h for r in self.rows if r.expected is None for h in r.suspects})

    def summary(self) -> str:
        total = len(self.faults())
        clean = self.clean_suspects()
        return (f"Triage from plain TRL logs: planted hypothesis first for {self.first()}/{total} faults, in the top 3 "
                f"for {self.top3()}/{total}; clean runs: "
                + (f"suspects {', '.join(clean)} at evidence >= {self.threshold:g}" if clean
                   else f"no suspect at evidence >= {self.threshold:g}") + ".")

    def cell(self, row: str) -> str:
        """A row's triage in the self-test's matrix: its hypothesis's rank, or a clean run's suspects."""
        entries = [r for r in self.rows if r.row == row]
        if not entries:
            return "-"
        if entries[0].expected is None:
            suspects = sorted({h for r in entries for h in r.suspects})
            return f"suspects {', '.join(suspects)}" if suspects else "no suspect"
        return ", ".join(f"#{r.rank} ({r.evidence:+.2g})" if r.rank else "not ranked" for r in entries)

    def as_json(self) -> dict[str, Any]:
        return {"first": self.first(), "top3": self.top3(), "faults": len(self.faults()), "threshold": self.threshold,
                "clean_suspects": self.clean_suspects(), "rows": [r.as_json() for r in self.rows]}


def triage_accuracy(runs: dict[str, list[tuple[str, dict[str, Points], str | None]]], expected: dict[str, str],
                    hypotheses: dict) -> TriageAccuracy:
    """``runs``: row -> [(run label, arm series, its task reward function's name)]; ``expected``: row -> the
    hypothesis its fault imitates (rows without one are clean). Every run is triaged on its plain TRL keys,
    told which function is the task reward as a user would say it with --task-reward."""
    from .evaluate import SUSPECT_THRESHOLD

    result = TriageAccuracy(threshold=SUSPECT_THRESHOLD)
    for row, labelled in runs.items():
        want = expected.get(row)
        for label, series, task_reward in labelled:
            report = triage_log(plain_trl_log(series, label), hypotheses, task_reward)
            entry = next((e for e in report.ranking if e.id == want), None)
            result.rows.append(RowTriage(
                row=row, run=label, expected=want, rank=entry.rank if entry else None,
                evidence=entry.evidence if entry else None,
                top=[(e.id, e.evidence) for e in report.ranking[:3]], suspects=[e.id for e in report.suspects()]))
    return result


def selftest_runs(rows, cells: dict, series_of) -> dict[str, list[tuple[str, dict[str, Points], str | None]]]:
    """The self-test's control arms to triage: for a fault row, its own hypothesis's runs (else the row's first
    trained run); for a clean row, every distinct one. ``series_of(spec)`` is the series the arm logged."""
    out: dict[str, list[tuple[str, dict[str, Points], str | None]]] = {}
    for row in rows:
        specs = [spec for (name, hyp), cell in cells.items() if name == row.name for spec in cell
                 if spec.arm == "control"]
        if row.expected is not None:
            own = [spec for spec in cells.get((row.name, row.expected), []) if spec.arm == "control"]
            specs = own or specs[:1]
        seen: set[str] = set()
        for spec in specs:
            label = f"{spec.experiment_name} seed {spec.seed}"
            series = series_of(spec)
            if label not in seen and series:
                seen.add(label)
                out.setdefault(row.name, []).append((label, series, task_reward_name(spec)))
    return out


def task_reward_name(spec) -> str | None:
    """The name TRL logs the arm's task reward function under (rewards/<name>/mean)."""
    rewards = list(getattr(spec, "rewards", None) or [])
    index = getattr(spec, "task_reward_index", 0) or 0
    return rewards[index].rsplit(":", 1)[-1] if index < len(rewards) else None
