"""Where the investigation stands, as records: what `status`, `show`, `next`, `log` and `report` answer.

The CLI prints these records (a table, or with `--json` their `as_json()`), the MCP server answers
with them, and a notebook calls them on a registry and a project of its own:

    from hypotrack.definitions import Project
    from hypotrack.investigation import Hypotheses, show_record
    from hypotrack.registry import open_registry

    shown = show_record(open_registry("sqlite:///hypotrack.db"), Hypotheses.load(Project.locate(".")), "h06")
    shown.as_json()["status"]

An unknown hypothesis id raises UnknownHypothesis (a HypotrackError) in the words the CLI prints: "no
hypothesis 'h99' in DIR (known: ...)". Reads only, and imports no torch, mlflow or trl; only `show_record`
reads the full definitions (pydantic), the others the cached summaries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.definitions.project import Project
from hypotrack.definitions.summary import HypothesisSummary, load_summaries
from hypotrack.errors import HypotrackError
from hypotrack.registry.engine import Registry
from hypotrack.registry.queries import Overview, Row, history, latest_triage, notes, overview, test_runs
from hypotrack.report import NextStep, StatusRow, next_step, render_report, status_rows, test_run_json

if TYPE_CHECKING:
    from hypotrack.definitions.models import Hypothesis


class UnknownHypothesis(HypotrackError):
    """An id that names no hypothesis of the project."""


@dataclass(frozen=True)
class Hypotheses:
    """A project's hypotheses as the records read them: their validated summaries, and where the project is."""

    project: Project
    summaries: dict[str, HypothesisSummary]

    @classmethod
    def load(cls, project: Project) -> Hypotheses:
        """The summaries from the cache when no file changed, else validated (SpecError lists every problem)."""
        return cls(project, load_summaries(project.root))

    def check(self, hypothesis_id: str) -> None:
        """UnknownHypothesis unless the project has this hypothesis."""
        if hypothesis_id not in self.summaries:
            raise UnknownHypothesis(f"no hypothesis {hypothesis_id!r} in {self.project.hypotheses_dir} "
                                    f"(known: {', '.join(sorted(self.summaries)) or 'none'})")


def record_json(record: Any) -> str:
    """A record as `--json` prints it and an MCP tool answers with it."""
    return json.dumps(record.as_json(), indent=2, default=str)


@dataclass(frozen=True)
class StatusRecord:
    """Every hypothesis's status row, and the latest triage (its ranking, without its readings)."""

    rows: list[StatusRow]
    triage: Row | None
    ranked: dict[str, dict]  # hypothesis id -> its entry in the triage's ranking

    def as_json(self) -> list[dict[str, Any]]:
        return [{**row.as_json(), "triage": self.ranked.get(row.id)} for row in self.rows]


def status_record(registry: Registry, hypotheses: Hypotheses) -> StatusRecord:
    summaries = hypotheses.summaries
    rows = status_rows(summaries, overview(registry, list(summaries)))
    triage = latest_triage(registry)
    return StatusRecord(rows, triage, {entry["hypothesis"]: entry for entry in triage.ranking} if triage else {})


@dataclass(frozen=True)
class HypothesisRecord:
    """One hypothesis: its definition and file, its current status, history, notes, test runs and triage reading."""

    definition: Hypothesis
    file: Path
    status: str
    confidence: float | None
    history: list[Row]  # status changes, oldest first
    notes: list[Row]  # oldest first
    runs: list[Row]  # test runs, newest first
    triage: dict | None  # its place and readings in the latest triage; None when that did not rank it

    def as_json(self) -> dict[str, Any]:
        return {
            "definition": self.definition.model_dump(mode="json"), "status": self.status,
            "confidence": self.confidence, "file": str(self.file),
            "history": [{"from": c.from_status, "to": c.to_status, "confidence": c.confidence, "reason": c.reason,
                         "evidence": c.evidence, "who": c.actor, "at": c.at.isoformat(), "test_run": c.test_run_id}
                        for c in self.history],
            "notes": [{"text": n.text, "who": n.author, "at": n.at.isoformat()} for n in self.notes],
            "runs": [test_run_json(r) for r in self.runs],
            "triage": self.triage,
        }


def show_record(registry: Registry, hypotheses: Hypotheses, hypothesis_id: str) -> HypothesisRecord:
    from hypotrack.definitions.loader import load_library

    hypotheses.check(hypothesis_id)
    library = load_library(hypotheses.project)
    library.raise_if_problems()
    current = overview(registry, [hypothesis_id])[hypothesis_id]
    return HypothesisRecord(library.hypotheses[hypothesis_id], library.hypothesis_files[hypothesis_id],
                            current.status, current.confidence, history(registry, hypothesis_id),
                            notes(registry, hypothesis_id), test_runs(registry, hypothesis_id),
                            triage_entry(latest_triage(registry, with_report=True), hypothesis_id))


def triage_entry(triage: Row | None, hypothesis_id: str) -> dict | None:
    """The hypothesis's place and readings in a triage (read with its report), or None when it was not ranked."""
    if triage is None:
        return None
    report = triage.report or {}
    entry = next((e for e in report.get("ranking", []) if e["hypothesis"] == hypothesis_id), None)
    if entry is None:
        return None
    return {"triage": triage.id, "source": triage.source, "at": triage.at.isoformat(), "threshold": triage.threshold,
            "expected": report.get("expected", []), **entry}


@dataclass(frozen=True)
class NextRecord:
    """Which hypothesis to test next and why, and the triage the choice started from."""

    step: NextStep
    triage: Row | None

    def as_json(self) -> dict[str, Any]:
        step = self.step
        return {"next": step.hypothesis.id if step.hypothesis else None, "reason": step.reason,
                "command": step.command, "blocked": step.blocked,
                "confirm": [{"hypothesis": c.hypothesis, "more_seeds": c.more_seeds, "command": c.command,
                             "reason": c.reason} for c in step.confirm],
                "triage": {"id": self.triage.id, "source": self.triage.source} if self.triage else None}


def next_record(registry: Registry, hypotheses: Hypotheses) -> NextRecord:
    summaries = hypotheses.summaries
    return _next(registry, summaries, overview(registry, list(summaries)))


def _next(registry: Registry, summaries: dict[str, HypothesisSummary], overviews: dict[str, Overview]) -> NextRecord:
    triage = latest_triage(registry)
    statuses = {hyp_id: ov.status for hyp_id, ov in overviews.items()}
    return NextRecord(next_step(summaries, statuses, triage, overviews), triage)


@dataclass(frozen=True)
class LogRecord:
    """Test runs, newest first."""

    runs: list[Row]

    def as_json(self) -> list[dict[str, Any]]:
        return [test_run_json(r) for r in self.runs]


def log_record(registry: Registry, hypothesis_id: str | None = None, limit: int = 50,
               hypotheses: Hypotheses | None = None) -> LogRecord:
    """The newest `limit` test runs, of one hypothesis when given (checked against `hypotheses` when given)."""
    if limit < 1:
        raise HypotrackError(f"the log's limit must be 1 or more (got {limit})")
    if hypothesis_id and hypotheses is not None:
        hypotheses.check(hypothesis_id)
    return LogRecord(test_runs(registry, hypothesis_id, limit))


def report_markdown(registry: Registry, hypotheses: Hypotheses) -> str:
    """The markdown report: status summary, next action, the experiments log."""
    summaries = hypotheses.summaries
    overviews = overview(registry, list(summaries))
    step = _next(registry, summaries, overviews).step
    return render_report(status_rows(summaries, overviews), test_runs(registry), step)


@dataclass(frozen=True)
class ValidationRecord:
    """What `hypotrack validate` checked: every file read cleanly (a problem raises SpecError, file:line each)."""

    hypotheses: int
    experiments: int
    metrics: list[str]  # the metric names criteria may use, when asked for

    def text(self) -> str:
        return "\n".join([f"ok: {self.hypotheses} hypotheses, {self.experiments} experiments",
                          *(f"  {name}" for name in self.metrics)])


def validation_record(project_root: Path | None, paths: list[Path] | None = None,
                      list_metrics: bool = False) -> ValidationRecord:
    """Check the project's hypothesis and experiment files (or ``paths``); SpecError with every problem."""
    from hypotrack.definitions import Project, SpecError, load_library

    library = load_library(Project.locate(project_root), paths or None)
    if library.problems:
        raise SpecError(library.problems)
    metrics: list[str] = []
    if list_metrics:
        from hypotrack.definitions.metrics import known_metric_patterns

        metrics = sorted(known_metric_patterns())
    return ValidationRecord(len(library.hypotheses), len(library.experiments), metrics)
