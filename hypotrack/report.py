"""Where the investigation stands: status rows, the next step of the roadmap, the markdown report.

Library functions over the registry and the hypothesis summaries (torch-, mlflow- and
pydantic-free): the CLI renders them as tables and JSON, `report` as markdown, so the
two agree on what each column means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hypotrack.definitions.summary import HypothesisSummary
from hypotrack.definitions.vocabulary import PRIORITY_RANK, RESOLVED_STATUSES
from hypotrack.registry.queries import Overview
from hypotrack.text import clip, markdown_cell

STATUS_ICONS = {
    "pending": "⏳", "testing": "🧪", "validated": "✅", "partial": "◐", "invalidated": "❌", "inconclusive": "🤔",
    "not_applicable": "⊘",
}


def status_label(status: str) -> str:
    """A status as people read it: not_applicable is "not applicable"."""
    return status.replace("_", " ")


def confidence_label(value: float | None) -> str:
    """The verdict's confidence (the chance one more seed reads the same way) in words: 3 of 3 seeds is high."""
    if value is None:
        return "-"
    word = "high" if value >= 0.8 else "medium" if value >= 0.6 else "low"
    return f"{word} ({value:.2f})"


def effect_label(effect: dict[str, Any] | None) -> str:
    """A test run's treatment effect in a table cell: mean [interval] and what it means."""
    if not effect or effect.get("mean") is None:
        return "-" if not effect else "not tested"
    if effect.get("verdict") == "not_measurable":
        return "not measurable"
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
    evidence: str  # the whole latest evidence (show, JSON)
    headline: str  # the same in one line (the status table, the report)
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


def latest_headline(ov: Overview, hypothesis: HypothesisSummary) -> str:
    """The latest evidence in one line: the verdict's headline when a test wrote it, else the text cut short."""
    text = latest_evidence(ov, hypothesis)
    run, change = ov.last_run, ov.last_change
    if (run is not None and change is not None and change.test_run_id == run.id and run.headline
            and text == change.reason):
        return run.headline
    return clip(" ".join(text.split()))


def status_rows(hypotheses: dict[str, HypothesisSummary], overviews: dict[str, Overview]) -> list[StatusRow]:
    rows = []
    for hyp_id in sorted(hypotheses):
        hyp, ov = hypotheses[hyp_id], overviews[hyp_id]
        run = ov.last_run
        last = f"{_when(run.started_at)} {run.state}" if run else "-"
        rows.append(StatusRow(hyp_id, hyp.title, hyp.priority, ov.status, ov.confidence,
                              latest_evidence(ov, hyp), latest_headline(ov, hyp), last, run.id if run else None,
                              ov.run_count))
    return rows


@dataclass
class Confirmation:
    """A hypothesis validated on its signature alone, and the seeds that would decide its fix's effect."""

    hypothesis: str
    more_seeds: int
    reason: str

    @property
    def command(self) -> str:
        return f"hypotrack run {self.hypothesis} --more-seeds {self.more_seeds}"


def confirmations(overviews: dict[str, Overview]) -> list[Confirmation]:
    """Validated verdicts whose treatment effect is not yet decided, by the seeds they still need."""
    out = []
    for hyp_id, ov in sorted(overviews.items()):
        run = ov.last_run
        effect = (run.effect or {}) if run is not None else {}
        if ov.status != "validated" or run is None or run.verdict != "validated" or effect.get("verdict") != "undetermined":
            continue
        have = len(effect.get("per_seed") or {})
        needed = effect.get("seeds_needed")
        more = max(needed - have, 1) if needed else 2
        out.append(Confirmation(hyp_id, more, f"{hyp_id} is validated on its signature alone; the fix's effect is "
                                f"undecided on {have} seeds (treatment better on {effect.get('better', 0)}/{have})"
                                + (f"; about {needed} seeds would decide it" if needed else "")))
    return sorted(out, key=lambda c: (c.more_seeds, c.hypothesis))


@dataclass
class NextStep:
    hypothesis: HypothesisSummary | None
    reason: str
    blocked: list[str]
    confirm: list[Confirmation] = field(default_factory=list)  # signature-only verdicts more seeds would confirm
    command: str | None = None  # when it is not the hypothesis's own command (a confirmation)

    def __post_init__(self) -> None:
        if self.command is None and self.hypothesis is not None:
            self.command = self.hypothesis.command


def next_step(hypotheses: dict[str, HypothesisSummary], statuses: dict[str, str], triage=None,
              overviews: dict[str, Overview] | None = None) -> NextStep:
    """The roadmap rule: highest priority pending/inconclusive hypothesis whose prerequisites are resolved.

    With a triage (the newest `hypotrack triage`, its ranking best first), its suspects come first: the
    unresolved one with the most evidence, priority breaking ties, whatever its prerequisites (the
    run's own logs outrank the roadmap's order). Not-applicable hypotheses are skipped. With the
    overviews, a hypothesis validated on its signature alone is proposed for `--more-seeds K` (first
    when nothing else is ready, else beside the next step).
    """
    step = _next_step(hypotheses, statuses, triage)
    step.confirm = [c for c in confirmations(overviews or {}) if c.hypothesis in hypotheses]
    if step.hypothesis is None and step.confirm:
        first = step.confirm[0]
        return NextStep(hypotheses[first.hypothesis], f"{first.reason}. {step.reason}.", step.blocked, step.confirm,
                        first.command)
    return step


def _next_step(hypotheses: dict[str, HypothesisSummary], statuses: dict[str, str], triage=None) -> NextStep:
    ready, blocked = [], []
    for hyp_id in sorted(hypotheses):
        hyp = hypotheses[hyp_id]
        status = statuses.get(hyp_id, "pending")
        if status not in ("pending", "inconclusive"):
            continue
        waiting = [p for p in hyp.prerequisites if statuses.get(p, "pending") not in RESOLVED_STATUSES]
        if waiting:
            line = f"{hyp_id} waits for " + ", ".join(f"{p} ({statuses.get(p, 'pending')})" for p in waiting)
            blocked.append(f"{line}: {hyp.order_note}" if hyp.order_note else line)
        else:
            ready.append(hyp)
    suspect = _top_suspect(hypotheses, statuses, triage)
    if suspect is not None:
        return NextStep(suspect.hypothesis, suspect.reason, blocked)
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


def _top_suspect(hypotheses: dict[str, HypothesisSummary], statuses: dict[str, str], triage) -> NextStep | None:
    """The unresolved suspect of the triage with the most evidence (priority, then id, breaking ties)."""
    if triage is None:
        return None
    open_ = [entry for entry in triage.ranking if entry.get("suspect") and entry["hypothesis"] in hypotheses
             and statuses.get(entry["hypothesis"], "pending") in ("pending", "inconclusive")]
    if not open_:
        return None
    open_.sort(key=lambda e: (-e["evidence"], PRIORITY_RANK[hypotheses[e["hypothesis"]].priority], e["hypothesis"]))
    best, hyp = open_[0], hypotheses[open_[0]["hypothesis"]]
    status = statuses.get(hyp.id, "pending")
    parts = [f"triage of {triage.source} ({_when(triage.at)}) ranks {hyp.id} first among the unresolved suspects: "
             f"evidence {best['evidence']:.2g} (>= {triage.threshold:g})"]
    if best.get("supports"):
        parts.append(" ".join(best["supports"][0].split()))
    ties = [e["hypothesis"] for e in open_[1:] if e["evidence"] == best["evidence"]]
    others = [f"{e['hypothesis']} ({e['evidence']:.2g})" for e in open_[1:3]]
    if ties:
        parts.append(f"ahead of {', '.join(ties)} (same evidence, {hyp.priority} priority or lower id)")
    elif others:
        parts.append(f"then {', '.join(others)}")
    waiting = [p for p in hyp.prerequisites if statuses.get(p, "pending") not in RESOLVED_STATUSES]
    if waiting:
        parts.append("its prerequisites " + ", ".join(f"{p} ({statuses.get(p, 'pending')})" for p in waiting)
                     + " are not resolved, but the run's own logs point here first")
    return NextStep(hyp, f"{'; '.join(parts)}. It is {status}.", [])


def test_run_json(run) -> dict[str, Any]:
    return {
        "id": run.id, "hypothesis": run.hypothesis_id, "experiment": run.experiment, "arms": run.arms,
        "seeds": run.seeds, "state": run.state, "verdict": run.verdict, "confidence": run.confidence,
        "summary": run.summary, "error": run.error, "started_at": _iso(run.started_at),
        "ended_at": _iso(run.ended_at), "pid": run.pid, "host": run.host, "config_hash": run.config_hash,
        "mlflow_parent_run_id": run.mlflow_parent_run_id, "mlflow_run_ids": run.mlflow_run_ids,
        "flags": run.flags, "effect": run.effect, "headline": run.headline,
    }


def render_report(rows: list[StatusRow], runs: list, next_: NextStep) -> str:
    """Markdown in the shape of a hand-kept debug README: status table, roadmap, experiments log."""
    out = ["# Hypothesis status report", "", "## Current Status Summary", "",
           "| Hypothesis | Priority | Status | Confidence | Notes |",
           "|------------|----------|--------|------------|-------|"]
    for row in rows:
        icon = STATUS_ICONS.get(row.status, "")
        out.append(f"| {row.id.upper()}: {markdown_cell(row.title)} | {row.priority.upper()} | {icon} "
                   f"{status_label(row.status).capitalize()} | {confidence_label(row.confidence)} | "
                   f"{markdown_cell(row.headline)} |")
    out += ["", "## Next Action", ""]
    if next_.hypothesis:
        out.append(f"**{next_.hypothesis.id.upper()}: {next_.hypothesis.title}**: {next_.reason}")
        out += ["", "```bash", next_.command or next_.hypothesis.command, "```"]
    else:
        out.append(next_.reason)
    for confirm in next_.confirm:
        if confirm.command != next_.command:
            out.append(f"\nConfirm the fix: {confirm.reason}: `{confirm.command}`")
    out += ["", "## Experiments Log", "",
            "| Started | Hypothesis | Test run | State | Verdict | Confidence | Effect | Summary |",
            "|---------|------------|----------|-------|---------|------------|--------|---------|"]
    for run in runs:
        summary = markdown_cell(run.headline or run.summary or run.error or "")
        out.append(f"| {_when(run.started_at)} | {run.hypothesis_id.upper()} | {run.id} | {run.state} | "
                   f"{status_label(run.verdict or '-')} | {confidence_label(run.confidence)} | {effect_label(run.effect)} | "
                   f"{summary} |")
    if not runs:
        out.append("| - | - | - | - | - | - | - | no test runs yet |")
    return "\n".join(out) + "\n"
