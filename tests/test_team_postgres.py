"""A team's registry on PostgreSQL: what a user sees when the driver or the server is missing, and plain URLs.

The store, migration and reconcile tests themselves run on PostgreSQL through the
`any_registry_url` parametrisation (tests/test_registry_store.py, tests/test_migrations.py,
tests/test_cli_commands.py).
"""

from __future__ import annotations

import subprocess
import sys

from hypotrack.ports import unclaimed_port
from hypotrack.registry import open_registry, queries, store

# The CLI with psycopg made unimportable, as in an install without the [postgres] extra.
WITHOUT_PSYCOPG = "import sys; sys.modules['psycopg'] = None; from hypotrack.cli import main; main()"


def hypotrack(*args: str, code: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "hypotrack.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60)


def one_paragraph_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    message = result.stderr.strip()
    assert message.startswith("Error: ") and "\n" not in message, message
    return message


def test_missing_driver_says_which_extra_to_install():
    message = one_paragraph_error(
        hypotrack("--db", "postgresql://team:s3cret@db.internal/hypotrack", "db", "current", code=WITHOUT_PSYCOPG))
    assert "PostgreSQL database" in message and 'pip install "hypotrack[postgres]"' in message
    assert "s3cret" not in message and "team:***@db.internal" in message


def test_unreachable_server_is_one_paragraph_without_the_password():
    port = unclaimed_port()  # nothing listens there
    message = one_paragraph_error(
        hypotrack("--db", f"postgresql://team:s3cret@127.0.0.1:{port}/hypotrack", "db", "current"))
    assert f"cannot open registry postgresql+psycopg://team:***@127.0.0.1:{port}/hypotrack" in message
    assert "Connection refused" in message and "s3cret" not in message


def test_plain_postgresql_url_opens_with_psycopg(postgres_url):
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    registry = open_registry(plain)
    assert registry.url.startswith("postgresql+psycopg://")
    store.set_status(registry, "h01", "partial", reason="first look", confidence=0.4)
    assert queries.get_status(registry, "h01") == "partial"
    registry.dispose()


def test_db_commands_hide_the_password(postgres_url):
    with_password = postgres_url.replace("://hypotrack@", "://hypotrack:s3cret@")  # the test server trusts any
    result = hypotrack("--db", with_password, "db", "upgrade")
    assert result.returncode == 0, result.stderr
    assert "hypotrack:***@127.0.0.1" in result.stdout and "s3cret" not in result.stdout + result.stderr
