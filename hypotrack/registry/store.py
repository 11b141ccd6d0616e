"""Registry operations: short transactions, one concern each.

All status changes go through `set_status`, which writes the history row in the
same transaction, so the current state and its history never disagree.
"""

from __future__ import annotations

import getpass
import os
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from .engine import Registry
from .models import HypothesisState, Note, StatusChange, TestRun, utcnow
from .processes import hostname, is_alive, process_start

STATUSES = ("pending", "testing", "validated", "partial", "invalidated", "inconclusive")
RUN_STATES = ("running", "finished", "failed", "killed")


class UnknownStatus(ValueError):
    pass


def actor() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        user = os.environ.get("USER", "unknown")
    return f"{user}@{hostname()}"


def _state(session, hypothesis_id: str) -> HypothesisState:
    state = session.get(HypothesisState, hypothesis_id)
    if state is None:
        state = HypothesisState(id=hypothesis_id, status="pending", confidence=None, updated_at=utcnow())
        session.add(state)
        session.flush()
    return state


def get_status(registry: Registry, hypothesis_id: str) -> str:
    with registry.session() as session:
        state = session.get(HypothesisState, hypothesis_id)
        return state.status if state else "pending"


def set_status(
    registry: Registry,
    hypothesis_id: str,
    status: str,
    *,
    reason: str = "",
    confidence: float | None = None,
    evidence: dict[str, Any] | None = None,
    test_run_id: str | None = None,
    who: str | None = None,
) -> StatusChange:
    if status not in STATUSES:
        raise UnknownStatus(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
    with registry.session() as session, session.begin():
        state = _state(session, hypothesis_id)
        change = StatusChange(
            hypothesis_id=hypothesis_id, from_status=state.status, to_status=status, confidence=confidence,
            reason=reason, evidence=evidence, actor=who or actor(), test_run_id=test_run_id, at=utcnow(),
        )
        state.status, state.confidence, state.updated_at = status, confidence, change.at
        session.add(change)
    return change


def add_note(registry: Registry, hypothesis_id: str, text: str, who: str | None = None) -> Note:
    with registry.session() as session, session.begin():
        note = Note(hypothesis_id=hypothesis_id, text=text, author=who or actor(), at=utcnow())
        session.add(note)
    return note


@dataclass
class Overview:
    """Everything `status` shows for one hypothesis, read in a handful of queries."""

    status: str
    confidence: float | None
    updated_at: datetime | None
    last_change: StatusChange | None
    last_note: Note | None
    last_run: TestRun | None
    run_count: int


def overview(registry: Registry, ids: list[str]) -> dict[str, Overview]:
    with registry.session() as session:
        states = {s.id: s for s in session.scalars(select(HypothesisState).where(HypothesisState.id.in_(ids)))}
        last_change_ids = select(func.max(StatusChange.id)).group_by(StatusChange.hypothesis_id)
        changes = {c.hypothesis_id: c for c in session.scalars(select(StatusChange).where(StatusChange.id.in_(last_change_ids)))}
        last_note_ids = select(func.max(Note.id)).group_by(Note.hypothesis_id)
        notes = {n.hypothesis_id: n for n in session.scalars(select(Note).where(Note.id.in_(last_note_ids)))}
        # newest run per hypothesis: max started_at, then id
        newest = (
            select(TestRun.hypothesis_id, func.max(TestRun.started_at).label("latest"), func.count().label("n"))
            .group_by(TestRun.hypothesis_id).subquery()
        )
        runs: dict[str, TestRun] = {}
        counts: dict[str, int] = {}
        rows = session.execute(
            select(TestRun, newest.c.n).join(
                newest, (TestRun.hypothesis_id == newest.c.hypothesis_id) & (TestRun.started_at == newest.c.latest))
        )
        for run, count in rows:
            runs[run.hypothesis_id] = run
            counts[run.hypothesis_id] = count
    out = {}
    for hyp_id in ids:
        state = states.get(hyp_id)
        out[hyp_id] = Overview(
            status=state.status if state else "pending",
            confidence=state.confidence if state else None,
            updated_at=state.updated_at if state else None,
            last_change=changes.get(hyp_id), last_note=notes.get(hyp_id), last_run=runs.get(hyp_id),
            run_count=counts.get(hyp_id, 0),
        )
    return out


def history(registry: Registry, hypothesis_id: str) -> list[StatusChange]:
    with registry.session() as session:
        return list(session.scalars(select(StatusChange).where(StatusChange.hypothesis_id == hypothesis_id)
                                    .order_by(StatusChange.id)))


def notes(registry: Registry, hypothesis_id: str) -> list[Note]:
    with registry.session() as session:
        return list(session.scalars(select(Note).where(Note.hypothesis_id == hypothesis_id).order_by(Note.id)))


def test_runs(registry: Registry, hypothesis_id: str | None = None, limit: int | None = None) -> list[TestRun]:
    with registry.session() as session:
        query = select(TestRun).order_by(TestRun.started_at.desc(), TestRun.id.desc())
        if hypothesis_id:
            query = query.where(TestRun.hypothesis_id == hypothesis_id)
        if limit:
            query = query.limit(limit)
        return list(session.scalars(query))


def get_test_run(registry: Registry, test_run_id: str) -> TestRun | None:
    with registry.session() as session:
        return session.get(TestRun, test_run_id)


def start_test_run(
    registry: Registry, hypothesis_id: str, *, experiment: str, arms: list[str], seeds: list[int],
    config_hash: str, flags: dict[str, Any] | None = None, tracking_uri: str | None = None,
) -> TestRun:
    """Record the run and move the hypothesis to `testing`, remembering where it was."""
    pid = os.getpid()
    with registry.session() as session, session.begin():
        state = _state(session, hypothesis_id)
        run = TestRun(
            id=uuid.uuid4().hex[:12], hypothesis_id=hypothesis_id, experiment=experiment, arms=arms, seeds=seeds,
            flags=flags, config_hash=config_hash, tracking_uri=tracking_uri, pid=pid, pid_start=process_start(pid),
            host=hostname(), state="running", previous_status=state.status, started_at=utcnow(),
        )
        session.add(run)
        session.flush()
        change = StatusChange(hypothesis_id=hypothesis_id, from_status=state.status, to_status="testing",
                              confidence=state.confidence, reason=f"test run {run.id} started", actor=actor(),
                              test_run_id=run.id, at=run.started_at)
        state.status, state.updated_at = "testing", run.started_at
        session.add(change)
    return run


def attach_mlflow(registry: Registry, test_run_id: str, parent_run_id: str | None = None,
                  run_ids: dict[str, str] | None = None) -> None:
    with registry.session() as session, session.begin():
        run = session.get(TestRun, test_run_id)
        if parent_run_id:
            run.mlflow_parent_run_id = parent_run_id
        if run_ids:
            run.mlflow_run_ids = {**(run.mlflow_run_ids or {}), **run_ids}


def finish_test_run(
    registry: Registry, test_run_id: str, *, state: str, verdict: str | None = None,
    confidence: float | None = None, summary: str | None = None, evidence: dict[str, Any] | None = None,
    error: str | None = None, mlflow_closed: bool = True,
) -> None:
    """End a test run; the hypothesis gets the verdict, or its previous status back when there is none."""
    if state not in RUN_STATES or state == "running":
        raise ValueError(f"cannot finish a test run as {state!r}")
    with registry.session() as session, session.begin():
        run = session.get(TestRun, test_run_id)
        if run is None or run.state != "running":
            return  # already reconciled by someone else
        run.state, run.ended_at = state, utcnow()
        run.verdict, run.confidence, run.summary, run.error = verdict, confidence, summary, error
        run.mlflow_closed = int(mlflow_closed)
        hyp = _state(session, run.hypothesis_id)
        if hyp.status != "testing":
            return  # someone marked it by hand meanwhile: their word stands
        still_running = session.scalar(
            select(func.count()).select_from(TestRun)
            .where(TestRun.hypothesis_id == run.hypothesis_id, TestRun.state == "running", TestRun.id != run.id))
        if verdict:
            to_status, to_conf = verdict, confidence
            reason = f"test run {run.id}: {summary or verdict}"
        elif still_running:
            return  # another test of the same hypothesis still runs: it stays testing
        else:
            to_status, to_conf = run.previous_status, hyp.confidence
            reason = f"test run {run.id} {state}" + (f": {error}" if error else "") + f"; back to {to_status}"
        session.add(StatusChange(hypothesis_id=run.hypothesis_id, from_status="testing", to_status=to_status,
                                 confidence=to_conf, reason=reason, evidence=evidence, actor=actor(),
                                 test_run_id=run.id, at=run.ended_at))
        hyp.status, hyp.confidence, hyp.updated_at = to_status, to_conf, run.ended_at


def reconcile(registry: Registry) -> list[TestRun]:
    """Mark test runs of dead processes on this host as killed; returns them.

    Called by every command: a SIGKILLed runner leaves a `running` row whose pid
    is gone, and the hypothesis would otherwise stay `testing` forever.
    """
    host = hostname()
    with registry.session() as session:
        candidates = list(session.scalars(select(TestRun).where(TestRun.state == "running", TestRun.host == host)))
    dead = [run for run in candidates if not is_alive(run.pid, run.pid_start)]
    for run in dead:
        finish_test_run(registry, run.id, state="killed",
                        error=f"runner process {run.pid} ended without finishing (killed or crashed)",
                        mlflow_closed=False)
    return dead


def runs_needing_mlflow_close(registry: Registry) -> list[TestRun]:
    with registry.session() as session:
        return list(session.scalars(select(TestRun).where(TestRun.state != "running", TestRun.mlflow_closed == 0)))


def mark_mlflow_closed(registry: Registry, test_run_id: str) -> None:
    with registry.session() as session, session.begin():
        run = session.get(TestRun, test_run_id)
        if run is not None:
            run.mlflow_closed = 1
