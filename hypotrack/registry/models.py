"""SQLAlchemy 2 ORM models of the registry, mapped onto the Core tables in tables.py.

Definitions live in the YAML files; the registry holds what happened to them.
A hypothesis without a row here is simply pending. Writers use these classes;
read-only commands query the tables directly (queries.py) and never import the ORM.
"""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase, relationship

from . import tables
from .tables import utcnow

__all__ = ["Base", "HypothesisState", "Note", "StatusChange", "RecordedTest", "utcnow"]


class Base(DeclarativeBase):
    metadata = tables.metadata


class HypothesisState(Base):
    __table__ = tables.hypothesis_state
    history = relationship("StatusChange", back_populates="hypothesis", order_by="StatusChange.id")


class StatusChange(Base):
    __table__ = tables.status_change
    hypothesis = relationship(HypothesisState, back_populates="history")


class RecordedTest(Base):
    """One `hypotrack run`: its arms x seeds, where it ran, and how it ended."""

    __table__ = tables.test_run


class Note(Base):
    __table__ = tables.note
