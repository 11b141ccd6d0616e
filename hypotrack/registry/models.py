"""SQLAlchemy 2 models of the registry: state, history, test runs and notes.

Definitions live in the YAML files; the registry holds what happened to them.
A hypothesis without a row here is simply pending.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# Alembic needs stable constraint names to alter SQLite tables in batch mode.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class HypothesisState(Base):
    __tablename__ = "hypothesis_state"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    history: Mapped[list["StatusChange"]] = relationship(back_populates="hypothesis", order_by="StatusChange.id")


class StatusChange(Base):
    __tablename__ = "status_change"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    hypothesis_id: Mapped[str] = mapped_column(ForeignKey("hypothesis_state.id", ondelete="CASCADE"), index=True)
    from_status: Mapped[str] = mapped_column(String(16))
    to_status: Mapped[str] = mapped_column(String(16))
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    reason: Mapped[str] = mapped_column(Text, default="")
    evidence: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    actor: Mapped[str] = mapped_column(String(128), default="")
    test_run_id: Mapped[str | None] = mapped_column(ForeignKey("test_run.id", ondelete="SET NULL"), nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    hypothesis: Mapped[HypothesisState] = relationship(back_populates="history")


class TestRun(Base):
    """One `hypotrack run`: its arms x seeds, where it ran, and how it ended."""

    __tablename__ = "test_run"
    __table_args__ = (Index("ix_test_run_state_host", "state", "host"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    hypothesis_id: Mapped[str] = mapped_column(String(32), index=True)
    experiment: Mapped[str] = mapped_column(String(256))
    arms: Mapped[list] = mapped_column(JSON)
    seeds: Mapped[list] = mapped_column(JSON)
    flags: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    config_hash: Mapped[str] = mapped_column(String(64))
    mlflow_parent_run_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    mlflow_run_ids: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # "arm/seed" -> run id
    tracking_uri: Mapped[str | None] = mapped_column(Text, nullable=True)
    pid: Mapped[int] = mapped_column(Integer)
    pid_start: Mapped[str | None] = mapped_column(String(32), nullable=True)  # guards against pid reuse
    host: Mapped[str] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(16), default="running")  # running/finished/failed/killed
    previous_status: Mapped[str] = mapped_column(String(16), default="pending")
    verdict: Mapped[str | None] = mapped_column(String(16), nullable=True)
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    mlflow_closed: Mapped[int] = mapped_column(Integer, default=0)  # 1 once its MLflow runs were ended


class Note(Base):
    __tablename__ = "note"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    hypothesis_id: Mapped[str] = mapped_column(String(32), index=True)
    text: Mapped[str] = mapped_column(Text)
    author: Mapped[str] = mapped_column(String(128), default="")
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
