"""Open the registry database: pragmas, a schema check, migrations under a lock.

`hypotrack status` must stay fast, so the common path (schema already current)
reads one row of ``alembic_version`` and never imports alembic.

SQLite is the default; a team shares one PostgreSQL database (`pip install
"hypotrack[postgres]"`, driver psycopg 3). A plain ``postgresql://`` URL is read as
``postgresql+psycopg://``. Migrations of a SQLite file serialise on a file lock beside
it; those of a PostgreSQL database on an advisory lock in the database itself, so
runners on different machines wait for each other too.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

# The newest revision in hypotrack/migrations/versions; tests/test_migrations.py checks they agree.
HEAD_REVISION = "0004"
DEFAULT_FILE = "hypotrack.db"
BUSY_TIMEOUT_MS = 30_000
# A server that does not answer fails the command after this long instead of hanging it.
CONNECT_TIMEOUT_S = 10
# pg_advisory_xact_lock key of the registry's migrations (any constant; "hypotrack" as digits).
MIGRATION_LOCK_KEY = 4_977_687_282
POSTGRES_EXTRA = 'pip install "hypotrack[postgres]"'


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

    def session(self):
        from sqlalchemy.orm import Session

        return Session(self.engine, expire_on_commit=False)

    def dispose(self) -> None:
        self.engine.dispose()

    @property
    def shown_url(self) -> str:
        """The URL as output prints it: a team database's password hidden."""
        return shown(self.url)


def shown(url: str) -> str:
    """The URL as error messages print it: the password hidden."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def _with_driver(url: str) -> str:
    """Name the PostgreSQL driver in the URL: psycopg 3 (hypotrack's extra), else psycopg2 if that is what is there."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2"):
        return url
    named = scheme.partition("+")[2]
    for driver in [named] if named else ["psycopg", "psycopg2"]:
        if _installed(driver):
            return f"postgresql+{driver}://{rest}"
    install = "pip install psycopg2-binary" if named == "psycopg2" else POSTGRES_EXTRA
    raise RegistryError(f"registry {shown(url)} is a PostgreSQL database and its driver ({named or 'psycopg'}) "
                        f"is not installed in this Python: {install}")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked (sys.modules[name] is None)
        return False


def is_postgresql(url: str) -> bool:
    return make_url(url).get_backend_name() == "postgresql"


def sqlite_path(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or _in_memory(url):
        return None
    database = parsed.database
    if parsed.query.get("uri") in ("true", "1") and database.startswith("file:"):  # sqlite:///file:PATH?uri=true
        database = database[len("file:"):]
    return Path(database)


def _in_memory(url: str) -> bool:
    parsed = make_url(url)
    return parsed.get_backend_name() == "sqlite" and (
        not parsed.database or parsed.database == ":memory:" or parsed.query.get("mode") == "memory")


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


def _refuse_mlflow_database(engine: Engine, url: str) -> None:
    """The same rule on a server: a database MLflow's tracking server uses is not made a registry too."""
    from sqlalchemy import inspect

    if {"runs", "experiments", "metrics"} <= set(inspect(engine).get_table_names()):
        raise RegistryError(f"registry {shown(url)} is an MLflow tracking database; give hypotrack its own database")


def _make_engine(url: str) -> Engine:
    if _in_memory(url):
        raise RegistryError(f"registry URL {shown(url)!r} is an in-memory SQLite database: every status, note and run "
                            "would vanish when the command exits. Give a file (--db hypotrack.db) or a server URL")
    path = sqlite_path(url)
    if path is None and is_postgresql(url):
        return create_engine(url, pool_pre_ping=True, connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
    if path is None:
        return create_engine(url, pool_pre_ping=True)
    if not path.parent.exists():
        raise RegistryError(f"cannot create registry {path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise RegistryError(f"registry {path} is a folder; give a file, for example {path / DEFAULT_FILE}")
    _refuse_mlflow_file(path, url)
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):
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
    def _begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _lock_path(url: str) -> Path:
    path = sqlite_path(url)
    if path is not None:
        return path.with_name(path.name + ".migrate.lock")
    digest = hashlib.sha1(url.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"hypotrack-{digest}.migrate.lock"


def known_revisions() -> list[str]:
    """The schema revisions this hypotrack has migrations for, oldest first (read from the file names: no alembic)."""
    return sorted(path.name.split("_", 1)[0] for path in (migrations_dir() / "versions").glob("[0-9]*_*.py"))


def refuse_unknown_revision(url: str, revision: str | None) -> None:
    """A registry stamped with a revision this hypotrack has no migration for was written by a newer hypotrack:
    nothing here can read or migrate it (alembic would only say it cannot locate the revision)."""
    if revision is None or revision in known_revisions():
        return
    from hypotrack import __version__

    by = "a newer hypotrack than this one" if revision > HEAD_REVISION else "another hypotrack"
    raise RegistryError(f"registry {shown(url)} is at schema revision {revision}, written by {by} "
                        f"(hypotrack {__version__} knows revisions up to {HEAD_REVISION}): upgrade hypotrack to the "
                        "version that wrote it (pip install -U hypotrack) to use this registry; `hypotrack db "
                        "upgrade` and `db downgrade` cannot move it, since this hypotrack has no migration for it")


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        try:
            return conn.execute(text("select version_num from alembic_version")).scalar()
        except DBAPIError:
            return None


@contextlib.contextmanager
def _migrating(url: str, engine: Engine):
    """One migration at a time: an advisory lock inside PostgreSQL (it holds across machines), else a file lock."""
    if is_postgresql(url):
        with engine.begin() as connection:
            connection.execute(text("select pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            yield connection
        return
    from filelock import FileLock

    with FileLock(str(_lock_path(url)), timeout=120), engine.begin() as connection:
        yield connection


def _revision_on(connection) -> str | None:
    """The schema revision, read without a failing statement (which would abort a PostgreSQL transaction)."""
    from sqlalchemy import inspect

    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("select version_num from alembic_version")).scalar()


def _alembic_config(url: str, connection):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def upgrade(url: str, engine: Engine, revision: str = "head") -> None:
    """Run alembic migrations; several processes (or machines) may race here, the lock serialises them."""
    from alembic import command

    with _migrating(url, engine) as connection:
        if revision == "head" and _revision_on(connection) == HEAD_REVISION:
            return  # another process migrated while we waited
        _alembic(command.upgrade, _alembic_config(url, connection), revision, url)


def downgrade(url: str, engine: Engine, revision: str) -> None:
    from alembic import command

    with _migrating(url, engine) as connection:
        _alembic(command.downgrade, _alembic_config(url, connection), revision, url)


def _alembic(step, config, revision: str, url: str) -> None:
    """Run an alembic command; its own errors (an unknown revision, ...) become a RegistryError."""
    from alembic.util import CommandError

    try:
        step(config, revision)
    except CommandError as exc:
        raise RegistryError(f"cannot migrate registry {url} to revision {revision!r}: {exc}") from None


def open_registry(url: str | None = None, migrate: bool = True) -> Registry:
    """Open (and, unless told otherwise, migrate) the registry at ``url``."""
    url = _with_driver(url or default_url())
    try:
        engine = _make_engine(url)
        revision = current_revision(engine)
        refuse_unknown_revision(url, revision)
        if migrate and revision != HEAD_REVISION:
            if revision is None:
                _refuse_mlflow_database(engine, url)
            upgrade(url, engine)
    except RegistryError:
        raise
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        raise RegistryError(f"registry URL {shown(url)!r} is not a valid SQLAlchemy URL ({exc})") from None
    except ImportError as exc:  # a driver SQLAlchemy knows of, absent from this Python
        raise RegistryError(f"registry {shown(url)} needs the database driver {exc.name}, which is not installed "
                            f"in this Python (pip install it)") from None
    except SQLAlchemyError as exc:
        raise RegistryError(f"cannot open registry {shown(url)}: {reason(exc)}") from None
    except OSError as exc:
        raise RegistryError(f"cannot open registry {shown(url)}: {exc}") from None
    return Registry(url=url, engine=engine)


def reason(exc: SQLAlchemyError) -> str:
    """The driver's own words on one line (psycopg spreads a refused connection over two)."""
    text_ = str(getattr(exc, "orig", None) or exc)
    return " ".join(part.strip() for part in text_.splitlines() if part.strip())
