"""Open the registry database: pragmas, a schema check, migrations under a file lock.

`hypotrack status` must stay fast, so the common path (schema already current)
reads one row of ``alembic_version`` and never imports alembic.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

# The newest revision in hypotrack/migrations/versions; tests/test_migrations.py checks they agree.
HEAD_REVISION = "0001"
DEFAULT_FILE = "hypotrack.db"
BUSY_TIMEOUT_MS = 30_000


class RegistryError(Exception):
    """The registry cannot be opened or used; the message says why and what to do."""


def migrations_dir() -> Path:
    """The alembic scripts ship inside the package, so an installed hypotrack can migrate its registry."""
    return Path(__file__).resolve().parents[1] / "migrations"


def default_url() -> str:
    env = os.environ.get("HYPOTRACK_DB")
    if env:
        return env if "://" in env else f"sqlite:///{Path(env).resolve()}"
    return f"sqlite:///{(Path.cwd() / DEFAULT_FILE).resolve()}"


@dataclass
class Registry:
    url: str
    engine: Engine

    def session(self):  # noqa: ANN201 - an ORM Session; the ORM is imported only by writers
        from sqlalchemy.orm import Session

        return Session(self.engine, expire_on_commit=False)

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _refuse_mlflow_file(path: Path, url: str) -> None:
    """MLflow's own SQLite store must never double as the registry."""
    if path.name == "mlflow.db":
        raise RegistryError(f"registry URL {url} points at MLflow's database file; give hypotrack its own file")
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            tables = {row[0] for row in con.execute("select name from sqlite_master where type='table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise RegistryError(f"registry file {path} is not a SQLite database ({exc})") from None
    if {"runs", "experiments", "metrics"} <= tables:
        raise RegistryError(f"registry file {path} is an MLflow tracking database; give hypotrack its own file")


def _make_engine(url: str) -> Engine:
    path = _sqlite_path(url)
    if path is None:
        return create_engine(url, pool_pre_ping=True)
    if not path.parent.exists():
        raise RegistryError(f"cannot create registry {path}: folder {path.parent} does not exist")
    _refuse_mlflow_file(path, url)
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):  # noqa: ANN001
        # Take control of transactions so every one starts with BEGIN IMMEDIATE: a
        # deferred transaction that later upgrades to a write lock fails with
        # "database is locked" without waiting for busy_timeout.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection):  # noqa: ANN001
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _lock_path(url: str) -> Path:
    path = _sqlite_path(url)
    if path is not None:
        return path.with_name(path.name + ".migrate.lock")
    digest = hashlib.sha1(url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"hypotrack-{digest}.migrate.lock"


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        try:
            return conn.execute(text("select version_num from alembic_version")).scalar()
        except DBAPIError:
            return None


def upgrade(url: str, engine: Engine, revision: str = "head") -> None:
    """Run alembic migrations; several processes may race here, the lock serialises them."""
    from filelock import FileLock

    from alembic import command
    from alembic.config import Config

    with FileLock(str(_lock_path(url)), timeout=120):
        if revision == "head" and current_revision(engine) == HEAD_REVISION:
            return  # another process migrated while we waited
        config = Config()
        config.set_main_option("script_location", str(migrations_dir()))
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            _alembic(command.upgrade, config, revision, url)


def downgrade(url: str, engine: Engine, revision: str) -> None:
    from filelock import FileLock

    from alembic import command
    from alembic.config import Config

    with FileLock(str(_lock_path(url)), timeout=120):
        config = Config()
        config.set_main_option("script_location", str(migrations_dir()))
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            _alembic(command.downgrade, config, revision, url)


def _alembic(step, config, revision: str, url: str) -> None:  # noqa: ANN001
    """Run an alembic command; its own errors (an unknown revision, ...) become a RegistryError."""
    from alembic.util import CommandError

    try:
        step(config, revision)
    except CommandError as exc:
        raise RegistryError(f"cannot migrate registry {url} to revision {revision!r}: {exc}") from None


def open_registry(url: str | None = None, migrate: bool = True) -> Registry:
    """Open (and, unless told otherwise, migrate) the registry at ``url``."""
    url = url or default_url()
    try:
        engine = _make_engine(url)
        revision = current_revision(engine)
        if migrate and revision != HEAD_REVISION:
            upgrade(url, engine)
    except RegistryError:
        raise
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        raise RegistryError(f"registry URL {url!r} is not a valid SQLAlchemy URL ({exc})") from None
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise RegistryError(f"cannot open registry {url}: {reason}") from None
    except OSError as exc:
        raise RegistryError(f"cannot open registry {url}: {exc}") from None
    return Registry(url=url, engine=engine)
