"""Migrations: head/base/head round trip, models == migrations, HEAD_REVISION == alembic head, `db` commands.

The round trip and the drift check run on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from hypotrack.registry import engine as engine_mod
from hypotrack.registry import open_registry
from hypotrack.registry.models import Base

TABLES = {"hypothesis_state", "status_change", "test_run", "note"}


def script_dir() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(engine_mod.migrations_dir()))
    return ScriptDirectory.from_config(config)


@pytest.fixture
def registry_url(any_registry_url: str) -> str:
    return any_registry_url


def test_head_revision_matches_alembic():
    assert script_dir().get_current_head() == engine_mod.HEAD_REVISION


def test_upgrade_downgrade_upgrade(registry_url):
    registry = open_registry(registry_url, migrate=False)
    assert engine_mod.current_revision(registry.engine) is None
    engine_mod.upgrade(registry.url, registry.engine, "head")
    assert engine_mod.current_revision(registry.engine) == engine_mod.HEAD_REVISION
    assert TABLES <= set(inspect(registry.engine).get_table_names())
    engine_mod.downgrade(registry.url, registry.engine, "base")
    assert engine_mod.current_revision(registry.engine) is None
    assert not TABLES & set(inspect(registry.engine).get_table_names())
    engine_mod.upgrade(registry.url, registry.engine, "head")
    assert engine_mod.current_revision(registry.engine) == engine_mod.HEAD_REVISION
    registry.dispose()


def test_models_match_migrations(registry_url):
    registry = open_registry(registry_url)  # migrates to head
    with registry.engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diffs == []
    registry.dispose()


def test_db_commands(run_cli, registry_path):
    result = run_cli("db", "current")
    assert result.returncode == 0 and "revision none (empty)" in result.stdout, result.stderr
    result = run_cli("db", "upgrade")
    assert result.returncode == 0 and f"at revision {engine_mod.HEAD_REVISION}" in result.stdout, result.stderr
    result = run_cli("db", "current")
    assert f"revision {engine_mod.HEAD_REVISION} (current)" in result.stdout
    refused = run_cli("db", "downgrade", "base")
    assert refused.returncode == 2 and "Add --yes" in refused.stderr, refused.stderr
    result = run_cli("db", "downgrade", "base", "--yes")
    assert result.returncode == 0 and "at revision base" in result.stdout, result.stderr
    assert "behind head" in run_cli("db", "current").stdout
    # any ordinary command migrates on open
    assert run_cli("mark", "h01", "testing").returncode == 0
    assert f"revision {engine_mod.HEAD_REVISION} (current)" in run_cli("db", "current").stdout
