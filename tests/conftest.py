"""Shared fixtures: a throw-away project copy, a registry file, and the real CLI as a subprocess.

Other test modules may append fixtures here; keep these generic.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHIPPED_HYPOTHESES = REPO_ROOT / "hypotheses"
SHIPPED_EXPERIMENTS = REPO_ROOT / "experiments"
SEED_IDS = ("h01", "h02", "h03", "h04", "h05", "h06")


def in_ci() -> bool:
    """CI sets CI=true; there every real component is installed, so a test that skips proves nothing."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every marker declared in pyproject.toml is one CI step of its own: a test that carries two would run twice."""
    steps = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    doubled = {item.nodeid: sorted(found) for item in items
               if len(found := {mark.name for mark in item.iter_markers()} & steps) > 1}
    if doubled:
        raise pytest.UsageError(f"tests marked for two CI steps (each would run in both): {doubled}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # a pytest hook wrapper
    """Under CI=true a skipped test fails, naming what it would have skipped for (an expected failure stays one)."""
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"under CI=true no test may skip; this one would have: {_skip_reason(report)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # a pytest hook wrapper
    """The same for a whole module skipped while it is collected (pytest.importorskip at its top)."""
    outcome = yield
    report = outcome.get_result()
    if in_ci() and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"under CI=true no test module may skip; this one would have: {_skip_reason(report)}"


def copy_project(dest: Path, only: tuple[str, ...] | None = None) -> Path:
    """Copy the shipped hypotheses/ and experiments/ into ``dest`` (optionally only some hypothesis ids)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SHIPPED_EXPERIMENTS, dest / "experiments")
    (dest / "hypotheses").mkdir()
    for path in sorted(SHIPPED_HYPOTHESES.glob("*.yaml")):
        if only is None or path.name.split("_", 1)[0] in only:
            shutil.copy2(path, dest / "hypotheses" / path.name)
    return dest


def dump_sqlite(path: Path) -> dict[str, list[tuple]] | None:
    """Every table's rows (sorted), or None when the file does not exist: compare before/after."""
    path = Path(path)
    if not path.exists():
        return None
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table' order by name")]
        return {t: sorted(con.execute(f'select * from "{t}"').fetchall(), key=repr) for t in tables}
    finally:
        con.close()


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "editable"


def use_frozen_fixtures(project: Path) -> Path:
    """Swap in frozen copies of h01, h06 and toy_arith, whose lines the error tests edit."""
    for name in ("h01_advantage_scaling_instability.yaml", "h06_lora_weight_sync.yaml"):
        shutil.copy(FIXTURES / name, project / "hypotheses" / name)
    shutil.copy(FIXTURES / "toy_arith.yaml", project / "experiments" / "toy_arith.yaml")
    return project


@pytest.fixture
def shipped_project_dir(tmp_path: Path) -> Path:
    """A writable copy of the shipped project, exactly as shipped."""
    return copy_project(tmp_path / "shipped")


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """A writable copy of the shipped project with frozen h01/h06/toy_arith for tests that edit them."""
    return use_frozen_fixtures(copy_project(tmp_path / "project"))


@pytest.fixture
def seed_project_dir(tmp_path: Path) -> Path:
    """A writable copy holding only the six seed hypotheses h01-h06 (and every experiment)."""
    return copy_project(tmp_path / "seed_project", SEED_IDS)


@pytest.fixture
def registry_path(tmp_path: Path) -> Path:
    """Where this test's registry lives (not created until something opens it)."""
    return tmp_path / "registry.db"


@pytest.fixture
def registry_url(registry_path: Path) -> str:
    return f"sqlite:///{registry_path}"


@pytest.fixture
def cli_env(tmp_path: Path, project_dir: Path, registry_path: Path) -> dict[str, str]:
    """Environment for a CLI subprocess: this test's project and registry, nothing from the user's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTRACK_", "MLFLOW_"))}
    env.update(HYPOTRACK_PROJECT=str(project_dir), HYPOTRACK_DB=str(registry_path),
               HYPOTRACK_CACHE=str(tmp_path / "cache"),
               MLFLOW_TRACKING_URI=f"file:{tmp_path / 'mlruns'}", PYTHONDONTWRITEBYTECODE="1",
               COLUMNS="200", NO_COLOR="1")
    env.pop("PYTHONSTARTUP", None)
    return env


@pytest.fixture
def run_cli(cli_env: dict[str, str], tmp_path: Path):
    """Run ``python -m hypotrack.cli ARGS...`` for real; returns the CompletedProcess (text mode)."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hypotrack.cli", *map(str, args)], capture_output=True,
                              text=True, env=env or cli_env, cwd=cwd or tmp_path, timeout=timeout)

    return run


def record_two_tests(registry) -> tuple[str, str]:
    """Record a finished test of h03 that validates it, then a failed test of h01; their ids, in that order."""
    from hypotrack.registry import store

    tested = store.start_test_run(registry, "h03", experiment="toy_arith", arms=["control", "treatment"],
                                  seeds=[0, 1], config_hash="abc")
    store.finish_test_run(registry, tested.id, state="finished", verdict="validated", confidence=0.7,
                          summary="kl explodes in control")
    failed = store.start_test_run(registry, "h01", experiment="toy_arith", arms=["control"], seeds=[0],
                                  config_hash="def")
    store.finish_test_run(registry, failed.id, state="failed", error="boom")
    return tested.id, failed.id


@pytest.fixture
def registry_dump():
    """``registry_dump(path)``: every table's rows, for before/after comparisons."""
    return dump_sqlite


def _toy_cache_path(tmp_path_factory) -> Path:
    shared = os.environ.get("HYPOTRACK_TEST_TOY_CACHE")
    return Path(shared) if shared else tmp_path_factory.getbasetemp() / "toy-cache"


@pytest.fixture(scope="session", autouse=True)
def _tests_never_build_in_the_users_cache(tmp_path_factory) -> None:
    """A test that builds a toy model in its own process (to hand a user's script the model's folder) builds it in
    the session's toy cache, the one its hypotrack runs read, never in the user's ~/.cache/hypotrack."""
    os.environ["HYPOTRACK_CACHE"] = str(_toy_cache_path(tmp_path_factory))


@pytest.fixture(scope="session")
def toy_cache(tmp_path_factory) -> Path:
    """One toy-lab warm start per test session, in a private cache (never the user's); CI's steps share one
    (HYPOTRACK_TEST_TOY_CACHE, set by .ci/run), since each would otherwise build the same models again."""
    cache = _toy_cache_path(tmp_path_factory)
    env = {**os.environ, "HYPOTRACK_CACHE": str(cache)}
    subprocess.run([sys.executable, "-c", "from hypotrack.toy.lab import ensure_model; ensure_model('arith')"],
                   env=env, check=True, timeout=600)
    return cache


@pytest.fixture(scope="module")
def wide_cache(toy_cache: Path) -> Path:
    """The session's toy cache with the toy models vLLM serves warm-started in it (toy.lab.SERVED_BY_VLLM; CI builds
    them beforehand, in the background)."""
    env = {**os.environ, "HYPOTRACK_CACHE": str(toy_cache)}
    subprocess.run([sys.executable, "-c", "from hypotrack.toy.lab import SERVED_BY_VLLM, ensure_model; "
                    "[ensure_model(name) for name in SERVED_BY_VLLM]"], env=env, check=True, timeout=900)
    return toy_cache


# ------------------------------------------------------------------ PostgreSQL (a team's shared registry)


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server per test session on 127.0.0.1 (tests/pg_server.py); skips where none can start."""
    from pg_server import PostgresServer, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(f"PostgreSQL registry tests: {reason}")
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A fresh, empty database on the session's PostgreSQL server, as a SQLAlchemy URL."""
    return postgres_server.create_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_registry_url(request, registry_path: Path) -> str:
    """The registry URL once per backend: a SQLite file, then a PostgreSQL database.

    A module runs its registry tests on both by overriding `registry_url` with this fixture.
    """
    if request.param == "sqlite":
        return f"sqlite:///{registry_path}"
    return request.getfixturevalue("postgres_url")


# ------------------------------------------------------------------ launchers (python vs accelerate vs Ray)


@pytest.fixture(scope="session")
def python_launcher_run(tmp_path_factory, toy_cache: Path):
    """The reference run the accelerate and Ray launcher tests compare with, trained once per session."""
    from team_support import run_with

    return run_with(tmp_path_factory.mktemp("python-launcher"), toy_cache, "--launcher", "python")
