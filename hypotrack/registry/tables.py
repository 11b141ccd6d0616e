"""The registry schema as SQLAlchemy Core tables: the single source for the ORM models,
the read-only queries and the alembic migrations.

Read-only commands query these tables with Core and never import the ORM, which
keeps `hypotrack status` fast.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, Column, DateTime, Float, ForeignKey, Index, Integer, MetaData, String, Table, Text
from sqlalchemy.types import TypeDecorator

from hypotrack.text import printable

# Alembic needs stable constraint names to alter SQLite tables in batch mode.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class UserText(TypeDecorator):
    """Free text people write (notes, reasons, names): stored and read without control characters.

    Cleaning on the way out too covers rows an older hypotrack, or a colleague's script, wrote.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return printable(value) if isinstance(value, str) else value

    def process_result_value(self, value, dialect):
        return printable(value) if isinstance(value, str) else value


class UserName(UserText):
    """A person's name (who marked, who wrote a note), cleaned the same way."""

    impl = String
    cache_ok = True



hypothesis_state = Table(
    "hypothesis_state", metadata,
    Column("id", String(32), primary_key=True),
    Column("status", String(16), nullable=False, default="pending"),
    Column("confidence", Float, nullable=True),
    Column("updated_at", DateTime(timezone=True), nullable=False, default=utcnow),
)

test_run = Table(
    "test_run", metadata,
    Column("id", String(32), primary_key=True),
    Column("hypothesis_id", String(32), nullable=False, index=True),
    Column("experiment", String(256), nullable=False),
    Column("arms", JSON, nullable=False),
    Column("seeds", JSON, nullable=False),
    Column("flags", JSON, nullable=True),
    Column("config_hash", String(64), nullable=False),
    Column("mlflow_parent_run_id", String(64), nullable=True),
    Column("mlflow_run_ids", JSON, nullable=True),  # "arm/seed" -> run id
    Column("tracking_uri", Text, nullable=True),
    Column("pid", Integer, nullable=False),
    Column("pid_start", String(32), nullable=True),  # guards against pid reuse
    Column("host", String(255), nullable=False),
    Column("state", String(16), nullable=False, default="running"),  # running / finished / failed / killed
    Column("previous_status", String(16), nullable=False, default="pending"),
    Column("verdict", String(16), nullable=True),
    Column("confidence", Float, nullable=True),
    Column("summary", UserText, nullable=True),
    Column("error", UserText, nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False, default=utcnow),
    Column("ended_at", DateTime(timezone=True), nullable=True),
    Column("mlflow_closed", Integer, nullable=False, default=0),  # 1 once its MLflow runs were ended
    Column("effect", JSON, nullable=True),  # the treatment effect: per-seed differences, interval, class
    Column("headline", UserText, nullable=True),  # the verdict in one line, for tables
    # The arms apart from the seed (run/planning/plan.py pool_key): tests with the same key pool their seeds.
    Column("pool_key", String(64), nullable=True, index=True),
    # What the verdict read, arm -> seed -> metric -> [[step, value]], so a later test can pool these seeds.
    Column("series", JSON, nullable=True),
    Index("ix_test_run_state_host", "state", "host"),
)

status_change = Table(
    "status_change", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("hypothesis_id", String(32), ForeignKey("hypothesis_state.id", ondelete="CASCADE"), nullable=False,
           index=True),
    Column("from_status", String(16), nullable=False),
    Column("to_status", String(16), nullable=False),
    Column("confidence", Float, nullable=True),
    Column("reason", UserText, nullable=False, default=""),
    Column("evidence", JSON, nullable=True),
    Column("actor", UserName(128), nullable=False, default=""),
    Column("test_run_id", String(32), ForeignKey("test_run.id", ondelete="SET NULL"), nullable=True),
    Column("at", DateTime(timezone=True), nullable=False, default=utcnow),
)

note = Table(
    "note", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("hypothesis_id", String(32), nullable=False, index=True),
    Column("text", UserText, nullable=False),
    Column("author", UserName(128), nullable=False, default=""),
    Column("at", DateTime(timezone=True), nullable=False, default=utcnow),
)

# One `hypotrack triage` of a run the user already had: where its logs came from and how it ranked the
# hypotheses. `next`, `status` and `show` read the newest one.
triage = Table(
    "triage", metadata,
    Column("id", String(32), primary_key=True),
    Column("source", UserText, nullable=False),  # the run id / folder / file as the user gave it, and where it was read
    Column("source_kind", String(32), nullable=False),  # mlflow | trainer_state | csv
    Column("threshold", Float, nullable=False),  # the evidence a suspect reaches
    Column("ranking", JSON, nullable=False),  # [{hypothesis, rank, evidence, suspect, applies, supports}], best first
    Column("report", JSON, nullable=True),  # the whole report: readings, expected behaviour, assumptions
    Column("actor", UserName(128), nullable=False, default=""),
    Column("at", DateTime(timezone=True), nullable=False, default=utcnow, index=True),
)
