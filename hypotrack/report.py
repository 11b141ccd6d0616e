"""Where the investigation stands: status rows, the next step of the roadmap, the markdown report.

Library functions over the registry and the hypothesis summaries (torch-, mlflow- and
pydantic-free): the CLI renders them as tables and JSON, `report` as markdown, so the
two agree on what each column means.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hypotrack.registry.queries import Overview
from hypotrack.spec.summary import HypothesisSummary
from hypotrack.spec.vocabulary import PRIORITY_RANK, RESOLVED_STATUSES

STATUS_ICONS = {
    "pending": "⏳", "testing": "🧪", "validated": "✅", "partial": "◐", "invalidated": "❌", "inconclusive": "🤔",
}


def confidence_label(value: float | None) -> str:
    if value is None:
        return "-"
    word = "high" if value >= 0.75 else "medium" if value >= 0.5 else "low"
    return f"{word} ({value:.2f})"


def effect_label(effect: dict[str, Any] | None) -> str:
    """A test run's treatment effect in a table cell: mean [interval] and what it means."""
    if not effect or effect.get("mean") is None:
        return "-" if not effect else "not tested"
    words = {"helps": "helps", "no_help": "no help", "undetermined": "undetermined"}.get(effect.get("verdict"), "")
    interval = f" [{effect['low']:+.3g}, {effect['high']:+.3g}]" if effect.get("low") is not None else ""
    return f"{effect['mean']:+.3g}{interval} {words}".strip()


def _when(value: datetime | None) -> str:
    if value is None:
        return "-"
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


@dataclass
class StatusRow:
    id: str
    title: str
    priority: str
    status: str
    confidence: float | None
    evidence: str
    last_run: str
    last_run_id: str | None
    runs: int

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def latest_evidence(ov: Overview, hypothesis: HypothesisSummary) -> str:
    """The newest of: a verdict's summary, a status change reason, a note; else the order note."""
    candidates = []
    if ov.last_change is not None and ov.last_change.to_status != "testing":
        candidates.append((ov.last_change.at, ov.last_change.reason))
    if ov.last_note is not None:
        candidates.append((ov.last_note.at, ov.last_note.text))
    if candidates:
        return max(candidates, key=lambda item: item[0].replace(tzinfo=None))[1]
    return hypothesis.order_note or hypothesis.statement


def status_rows(hypotheses: dict[str, HypothesisSummary], overviews: dict[str, Overview]) -> list[StatusRow]:
    rows = []
    for hyp_id in sorted(hypotheses):
        hyp, ov = hypotheses[hyp_id], overviews[hyp_id]
        run = ov.last_run
        last = f"{_when(run.started_at)} {run.state}" if run else "-"
        rows.append(StatusRow(hyp_id, hyp.title, hyp.priority, ov.status, ov.confidence,
                              latest_evidence(ov, hyp), last, run.id if run else None, ov.run_count))
    return rows


@dataclass
class NextStep:
    hypothesis: HypothesisSummary | None
    reason: str
    blocked: list[str]


def next_step(hypotheses: dict[str, HypothesisSummary], statuses: dict[str, str]) -> NextStep:
    """The roadmap rule: highest priority pending/inconclusive hypothesis whose prerequisites are resolved."""
    ready, blocked = [], []
    for hyp_id in sorted(hypotheses):
        hyp = hypotheses[hyp_id]
        status = statuses.get(hyp_id, "pending")
        if status not in ("pending", "inconclusive"):
            continue
        waiting = [p for p in hyp.prerequisites if statuses.get(p, "pending") not in RESOLVED_STATUSES]
        if waiting:
            blocked.append(f"{hyp_id} waits for " + ", ".join(f"{p} ({statuses.get(p, 'pending')})" for p in waiting))
        else:
            ready.append(hyp)
    if not ready:
        testing = [h for h, s in statuses.items() if s == "testing" and h in hypotheses]
        reason = "nothing is ready to test"
        if testing:
            reason += f"; still testing: {', '.join(sorted(testing))}"
        return NextStep(None, reason, blocked)
    ready.sort(key=lambda h: (PRIORITY_RANK[h.priority], h.id))
    best = ready[0]
    status = statuses.get(best.id, "pending")
    parts = [f"{best.id} is {best.priority} priority and {status}"]
    if best.prerequisites:
        parts.append("its prerequisites " + ", ".join(
            f"{p} ({statuses.get(p, 'pending')})" for p in best.prerequisites) + " are resolved")
    else:
        parts.append("it has no prerequisites")
    others = [h.id for h in ready[1:] if h.priority == best.priority]
    if others:
        parts.append(f"ahead of {', '.join(others)} (same priority, lower id)")
    reason = "; ".join(parts) + "."
    if best.order_note:
        reason += f" {best.order_note}"
    return NextStep(best, reason, blocked)


def test_run_json(run) -> dict[str, Any]:  # noqa: ANN001
    return {
        "id": run.id, "hypothesis": run.hypothesis_id, "experiment": run.experiment, "arms": run.arms,
        "seeds": run.seeds, "state": run.state, "verdict": run.verdict, "confidence": run.confidence,
        "summary": run.summary, "error": run.error, "started_at": _iso(run.started_at),
        "ended_at": _iso(run.ended_at), "pid": run.pid, "host": run.host, "config_hash": run.config_hash,
        "mlflow_parent_run_id": run.mlflow_parent_run_id, "mlflow_run_ids": run.mlflow_run_ids,
        "flags": run.flags, "effect": run.effect,
    }


def render_report(rows: list[StatusRow], runs: list, next_: NextStep) -> str:
    """Markdown in the shape of a hand-kept debug README: status table, roadmap, experiments log."""
    out = ["# Hypothesis status report", "", "## Current Status Summary", "",
           "| Hypothesis | Priority | Status | Confidence | Notes |",
           "|------------|----------|--------|------------|-------|"]
    for row in rows:
        icon = STATUS_ICONS.get(row.status, "")
        note = row.evidence.replace("|", "\\|").replace("\n", " ")
        out.append(f"| {row.id.upper()}: {row.title} | {row.priority.upper()} | {icon} {row.status.capitalize()} | "
                   f"{confidence_label(row.confidence)} | {note} |")
    out += ["", "## Next Action", ""]
    if next_.hypothesis:
        out.append(f"**{next_.hypothesis.id.upper()}: {next_.hypothesis.title}**: {next_.reason}")
        out += ["", "```bash", next_.hypothesis.command, "```"]
    else:
        out.append(next_.reason)
    out += ["", "## Experiments Log", "",
            "| Started | Hypothesis | Test run | State | Verdict | Confidence | Effect | Summary |",
            "|---------|------------|----------|-------|---------|------------|--------|---------|"]
    for run in runs:
        summary = (run.summary or run.error or "").replace("|", "\\|").replace("\n", " ")
        out.append(f"| {_when(run.started_at)} | {run.hypothesis_id.upper()} | {run.id} | {run.state} | "
                   f"{run.verdict or '-'} | {confidence_label(run.confidence)} | {effect_label(run.effect)} | {summary} |")
    if not runs:
        out.append("| - | - | - | - | - | - | - | no test runs yet |")
    return "\n".join(out) + "\n"
