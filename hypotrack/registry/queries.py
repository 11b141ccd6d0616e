"""Read-only registry queries in SQLAlchemy Core: no ORM import, so `status` stays fast.

Rows come back as SQLAlchemy Row objects, which read like the ORM objects
(`run.state`, `change.to_status`), so callers do not care which side built them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError

from . import tables
from .engine import Registry, RegistryError, reason

Row = Any  # sqlalchemy.engine.Row
# A LIMIT past what SQLite and PostgreSQL can hold in an integer means "all of them".
MAX_ROWS = 2**31 - 1


@contextmanager
def reading(registry: Registry) -> Iterator[Any]:
    """A connection for reads; a database error becomes a RegistryError naming the registry."""
    try:
        with registry.engine.connect() as conn:
            yield conn
    except DBAPIError as exc:
        raise RegistryError(f"cannot read the registry {registry.shown_url}: {reason(exc)}") from None


def fetch(registry: Registry, query) -> list[Row]:
    with reading(registry) as conn:
        return list(conn.execute(query))


def get_status(registry: Registry, hypothesis_id: str) -> str:
    t = tables.hypothesis_state
    rows = fetch(registry, select(t.c.status).where(t.c.id == hypothesis_id))
    return rows[0].status if rows else "pending"


@dataclass
class Overview:
    """Everything `status` shows for one hypothesis, read in a handful of queries."""

    status: str
    confidence: float | None
    updated_at: datetime | None
    last_change: Row | None
    last_note: Row | None
    last_run: Row | None
    run_count: int


def overview(registry: Registry, ids: list[str]) -> dict[str, Overview]:
    hs, sc, nt, tr = tables.hypothesis_state, tables.status_change, tables.note, tables.test_run
    with reading(registry) as conn:
        states = {r.id: r for r in conn.execute(select(hs).where(hs.c.id.in_(ids)))}
        last_change = select(func.max(sc.c.id)).group_by(sc.c.hypothesis_id)
        changes = {r.hypothesis_id: r for r in conn.execute(select(sc).where(sc.c.id.in_(last_change)))}
        last_note = select(func.max(nt.c.id)).group_by(nt.c.hypothesis_id)
        notes_ = {r.hypothesis_id: r for r in conn.execute(select(nt).where(nt.c.id.in_(last_note)))}
        newest = (select(tr.c.hypothesis_id, func.max(tr.c.started_at).label("latest"), func.count().label("n"))
                  .group_by(tr.c.hypothesis_id).subquery())
        runs, counts = {}, {}
        query = select(tr, newest.c.n).join(
            newest, (tr.c.hypothesis_id == newest.c.hypothesis_id) & (tr.c.started_at == newest.c.latest))
        for row in conn.execute(query):
            runs[row.hypothesis_id], counts[row.hypothesis_id] = row, row.n
    out = {}
    for hyp_id in ids:
        state = states.get(hyp_id)
        out[hyp_id] = Overview(
            status=state.status if state else "pending", confidence=state.confidence if state else None,
            updated_at=state.updated_at if state else None, last_change=changes.get(hyp_id),
            last_note=notes_.get(hyp_id), last_run=runs.get(hyp_id), run_count=counts.get(hyp_id, 0),
        )
    return out


def history(registry: Registry, hypothesis_id: str) -> list[Row]:
    sc = tables.status_change
    return fetch(registry, select(sc).where(sc.c.hypothesis_id == hypothesis_id).order_by(sc.c.id))


def notes(registry: Registry, hypothesis_id: str) -> list[Row]:
    nt = tables.note
    return fetch(registry, select(nt).where(nt.c.hypothesis_id == hypothesis_id).order_by(nt.c.id))


def test_runs(registry: Registry, hypothesis_id: str | None = None, limit: int | None = None) -> list[Row]:
    tr = tables.test_run
    query = select(tr).order_by(tr.c.started_at.desc(), tr.c.id.desc())
    if hypothesis_id:
        query = query.where(tr.c.hypothesis_id == hypothesis_id)
    if limit:
        query = query.limit(min(limit, MAX_ROWS))
    return fetch(registry, query)


def get_test_run(registry: Registry, test_run_id: str) -> Row | None:
    rows = fetch(registry, select(tables.test_run).where(tables.test_run.c.id == test_run_id))
    return rows[0] if rows else None


def runs_needing_mlflow_close(registry: Registry) -> list[Row]:
    tr = tables.test_run
    return fetch(registry, select(tr).where(tr.c.state != "running", tr.c.mlflow_closed == 0))


def latest_triage(registry: Registry, with_report: bool = False) -> Row | None:
    """The newest `hypotrack triage` (its ranking, best first), or None when there was none.

    Its full report (every reading) is read only when asked for: `status` needs the ranking alone.
    """
    t = tables.triage
    columns = [t] if with_report else [c for c in t.c if c.name != "report"]
    rows = fetch(registry, select(*columns).order_by(t.c.at.desc(), t.c.id.desc()).limit(1))
    return rows[0] if rows else None


def pooled_test_runs(registry: Registry, hypothesis_id: str, pool_key: str) -> list[Row]:
    """Finished test runs of this hypothesis on the same arms (apart from the seed), oldest first, with
    the series their verdicts read: the seeds a new test of the same arms adds up with."""
    tr = tables.test_run
    return fetch(registry, select(tr.c.id, tr.c.seeds, tr.c.series, tr.c.started_at)
                 .where(tr.c.hypothesis_id == hypothesis_id, tr.c.pool_key == pool_key, tr.c.state == "finished",
                        tr.c.series.is_not(None))
                 .order_by(tr.c.started_at, tr.c.id))
