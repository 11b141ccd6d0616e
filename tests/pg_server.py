"""A throw-away PostgreSQL server for the registry tests, started from the machine's own binaries.

`initdb` refuses to run as root, so under root (CI) the server runs as the `postgres` system
user through `setpriv`, which execs in place: the Popen handle is the postmaster itself, and
`--pdeathsig` ends it if the test session dies without cleaning up. Its data folder is a
fresh temporary folder that user owns (pytest's own tmp folders are private to root). It
listens on 127.0.0.1 only, on a free port, with trust authentication: nothing outside this
machine can reach it and nothing in it outlives the session.
"""

from __future__ import annotations

import glob
import importlib.util
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from hypotrack.ports import unclaimed_port

SUPERUSER = "hypotrack"
START_TIMEOUT = 60


def bindir() -> Path | None:
    """The folder holding initdb and postgres: PATH first, then Debian's /usr/lib/postgresql/<major>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(candidates[-1]).parent if candidates else None


def unavailable() -> str | None:
    """Why no server can be started here, or None when one can."""
    if importlib.util.find_spec("psycopg") is None:
        return 'the PostgreSQL driver is not installed (pip install "hypotrack[postgres]")'
    if bindir() is None:
        return "no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` system user to run initdb as"
    return None


class PostgresServer:
    """One postmaster on 127.0.0.1:<port>; `create_database()` hands each test an empty database."""

    def __init__(self) -> None:
        self.bin = bindir()
        self.port = unclaimed_port()
        self.root = Path(tempfile.mkdtemp(prefix="hypotrack-pg-"))
        self.data = self.root / "data"
        self.process: subprocess.Popen | None = None
        self._names = itertools.count()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]

    def start(self) -> "PostgresServer":
        log = self.root / "initdb.log"
        with open(log, "wb") as out:
            code = subprocess.call(
                [*self._as_user, str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                 "--encoding=UTF8", "--no-sync"], stdout=out, stderr=subprocess.STDOUT, cwd=self.root)
        if code != 0:
            raise RuntimeError(f"initdb failed ({code}): {log.read_text(errors='replace')[-2000:]}")
        # fsync off: a test server needs no durability, and the writes tests then measure locking, not the disk.
        self.process = subprocess.Popen(
            [*self._as_user, *(["--pdeathsig", "SIGINT"] if self._as_user else []), str(self.bin / "postgres"),
             "-D", str(self.data), "-h", "127.0.0.1", "-p", str(self.port), "-k", str(self.root),
             "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=open(self.root / "server.log", "wb"), stderr=subprocess.STDOUT, cwd=self.root,  # noqa: SIM115 - the server outlives this call
            start_new_session=True)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.time() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}: {self.log_tail()}")
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError as error:
                if time.time() > deadline:
                    raise RuntimeError(f"postgres did not accept connections in {START_TIMEOUT}s: {self.log_tail()}") \
                        from error
                time.sleep(0.2)

    def log_tail(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "no server log"

    def dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname={database}"

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = f"registry_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(2)  # SIGINT: "fast" shutdown, open sessions are cut
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
