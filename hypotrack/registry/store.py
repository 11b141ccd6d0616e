"""Registry writes (ORM): short transactions, one concern each.

All status changes go through `set_status`, which writes the history row in the
same transaction, so the current state and its history never disagree.

Concurrent writers: on SQLite every transaction begins IMMEDIATE, so writers queue
on the database lock. On PostgreSQL (read committed) a writer locks the rows it
reads before it changes them (`FOR NO KEY UPDATE`, which still lets the foreign-key
checks of other inserts through), so two marks of one hypothesis chain in order.
Whatever the server still refuses under contention (a deadlock, a serialization
failure, two writers creating the same hypothesis row) is retried with the whole
transaction, a few times with jitter, and never reaches the user.
"""

from __future__ import annotations

import getpass
import os
import random
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from ..definitions.vocabulary import RUN_STATES, STATUSES
from .engine import Registry, RegistryError, reason, sqlite_path
from .models import HypothesisState, Note, RecordedTest, StatusChange, utcnow
from .processes import hostname, process_start

# SQLSTATEs that mean "run the transaction again": serialization_failure, deadlock_detected,
# unique_violation (two writers inserting the same hypothesis row; the retry finds it).
RETRY_SQLSTATES = {"40001", "40P01", "23505"}
ATTEMPTS = 8
T = TypeVar("T")
# Lock what a transaction reads and then changes; NO KEY so foreign-key checks of inserts are not blocked.
ROW_LOCK = {"key_share": True}


class UnknownStatus(ValueError):
    pass


def _sqlstate(exc: DBAPIError) -> str | None:
    orig = exc.orig
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)  # psycopg 3, psycopg2


def _transaction(registry: Registry, body: Callable[[Any], T]) -> T:
    """Run ``body(session)`` in one transaction, again from the start when the server asks for a retry."""
    for attempt in range(ATTEMPTS):
        try:
            with registry.session() as session, session.begin():
                return body(session)
        except DBAPIError as exc:
            if _sqlstate(exc) not in RETRY_SQLSTATES or attempt == ATTEMPTS - 1:
                raise RegistryError(f"the registry {registry.shown_url} refused the change: {reason(exc)}"
                                    f"{_hint(registry, exc)}") from None
            time.sleep(random.uniform(0, 0.01 * 2 ** attempt))
    raise AssertionError("unreachable")


def _hint(registry: Registry, exc: DBAPIError) -> str:
    path = sqlite_path(registry.url)
    if path is not None and "readonly" in str(exc.orig).replace("-", "").replace(" ", ""):
        return (f". SQLite writes both {path.name} and a journal beside it: make the file and its folder "
                f"{path.parent} writable for this user, or point --db / HYPOTRACK_DB at a registry you can write")
    return ""


def actor() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        user = os.environ.get("USER", "unknown")
    return f"{user}@{hostname()}"


def _state(session, hypothesis_id: str) -> HypothesisState:
    state = session.get(HypothesisState, hypothesis_id, with_for_update=ROW_LOCK)
    if state is None:
        state = HypothesisState(id=hypothesis_id, status="pending", confidence=None, updated_at=utcnow())
        session.add(state)
        session.flush()
    return state


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
    who = who or actor()

    def write(session) -> StatusChange:
        state = _state(session, hypothesis_id)
        change = StatusChange(
            hypothesis_id=hypothesis_id, from_status=state.status, to_status=status, confidence=confidence,
            reason=reason, evidence=evidence, actor=who, test_run_id=test_run_id, at=utcnow(),
        )
        state.status, state.confidence, state.updated_at = status, confidence, change.at
        session.add(change)
        return change

    return _transaction(registry, write)


def add_note(registry: Registry, hypothesis_id: str, text: str, who: str | None = None) -> Note:
    def write(session) -> Note:
        note = Note(hypothesis_id=hypothesis_id, text=text, author=who or actor(), at=utcnow())
        session.add(note)
        return note

    return _transaction(registry, write)


def start_test_run(
    registry: Registry, hypothesis_id: str, *, experiment: str, arms: list[str], seeds: list[int],
    config_hash: str, flags: dict[str, Any] | None = None, tracking_uri: str | None = None,
) -> RecordedTest:
    """Record the run and move the hypothesis to `testing`, remembering where it was."""
    pid = os.getpid()

    def write(session) -> RecordedTest:
        state = _state(session, hypothesis_id)
        run = RecordedTest(
            id=uuid.uuid4().hex[:12], hypothesis_id=hypothesis_id, experiment=experiment, arms=arms, seeds=seeds,
            flags=flags, config_hash=config_hash, tracking_uri=tracking_uri, pid=pid, pid_start=process_start(pid),
            host=hostname(), state="running", previous_status=_status_before_testing(session, state),
            started_at=utcnow(),
        )
        session.add(run)
        session.flush()
        change = StatusChange(hypothesis_id=hypothesis_id, from_status=state.status, to_status="testing",
                              confidence=state.confidence, reason=f"test run {run.id} started", actor=actor(),
                              test_run_id=run.id, at=run.started_at)
        state.status, state.updated_at = "testing", run.started_at
        session.add(change)
        return run

    return _transaction(registry, write)


def _status_before_testing(session, state) -> str:
    """Where the hypothesis was before any test of it started.

    A second test started while another runs finds it `testing`; remembering that would leave it
    `testing` for good once both are interrupted, so it inherits the status the tests interrupted.
    """
    if state.status != "testing":
        return state.status
    before = session.scalar(
        select(StatusChange.from_status)
        .where(StatusChange.hypothesis_id == state.id, StatusChange.to_status == "testing",
               StatusChange.from_status != "testing")
        .order_by(StatusChange.at.desc(), StatusChange.id.desc()).limit(1))
    return before or "pending"


def attach_mlflow(registry: Registry, test_run_id: str, parent_run_id: str | None = None,
                  run_ids: dict[str, str] | None = None) -> None:
    def write(session) -> None:
        run = session.get(RecordedTest, test_run_id, with_for_update=ROW_LOCK)
        if parent_run_id:
            run.mlflow_parent_run_id = parent_run_id
        if run_ids:
            run.mlflow_run_ids = {**(run.mlflow_run_ids or {}), **run_ids}

    _transaction(registry, write)


def finish_test_run(
    registry: Registry, test_run_id: str, *, state: str, verdict: str | None = None,
    confidence: float | None = None, summary: str | None = None, evidence: dict[str, Any] | None = None,
    error: str | None = None, mlflow_closed: bool = True, effect: dict[str, Any] | None = None,
    headline: str | None = None, pool_key: str | None = None, series: dict[str, Any] | None = None,
) -> None:
    """End a test run; the hypothesis gets the verdict, or its previous status back when there is none.

    pool_key and series (what the verdict read) let a later test of the same arms pool these seeds.
    """
    if state not in RUN_STATES or state == "running":
        raise ValueError(f"cannot finish a test run as {state!r}")

    def write(session) -> None:
        run = session.get(RecordedTest, test_run_id, with_for_update=ROW_LOCK)
        if run is None or run.state != "running":
            return  # already reconciled by someone else
        run.state, run.ended_at = state, utcnow()
        run.verdict, run.confidence, run.summary, run.error = verdict, confidence, summary, error
        run.effect, run.headline, run.pool_key, run.series = effect, headline, pool_key, series
        run.mlflow_closed = int(mlflow_closed)
        hyp = _state(session, run.hypothesis_id)
        if hyp.status != "testing":
            return  # someone marked it by hand meanwhile: their word stands
        still_running = session.scalar(
            select(func.count()).select_from(RecordedTest)
            .where(RecordedTest.hypothesis_id == run.hypothesis_id, RecordedTest.state == "running", RecordedTest.id != run.id))
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

    _transaction(registry, write)


def mark_mlflow_closed(registry: Registry, test_run_id: str) -> None:
    def write(session) -> None:
        run = session.get(RecordedTest, test_run_id, with_for_update=ROW_LOCK)
        if run is not None:
            run.mlflow_closed = 1

    _transaction(registry, write)


def record_triage(registry: Registry, *, source: str, source_kind: str, threshold: float,
                  ranking: list[dict[str, Any]], report: dict[str, Any] | None = None, who: str | None = None) -> str:
    """Keep one triage's ranking (best first) and its report; returns the triage's id."""
    from . import tables

    triage_id = uuid.uuid4().hex[:12]

    def write(session) -> str:
        session.execute(tables.triage.insert().values(
            id=triage_id, source=source, source_kind=source_kind, threshold=threshold, ranking=ranking,
            report=report, actor=who or actor(), at=utcnow()))
        return triage_id

    return _transaction(registry, write)
