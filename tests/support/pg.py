"""A throwaway PostgreSQL cluster for the store's tests: Debian's `postgresql` binaries, a temporary folder,
127.0.0.1 on a free port, stopped and removed at the end of the session.

Each test gets its own database in it. Without the binaries or psycopg the tests that ask for it skip and say which.
"""

from __future__ import annotations

import glob
import importlib.util
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.servers import free_port


def _bin_dir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    # Debian keeps the server binaries off PATH, one folder per major version
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


class Cluster:
    """A started cluster: a URL per database, and how to stop it."""

    def __init__(self, folder: Path, bin_dir: Path, port: int) -> None:
        self.folder, self.bin_dir, self.port = folder, bin_dir, port
        self.data = folder / "data"
        self._names = itertools.count(1)
        # initdb and the server refuse to run as root: run them as the postgres account then
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *cmd: str) -> None:
        done = subprocess.run([*self._as, *cmd], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = (self.folder / "server.log").read_text(errors="replace")[-2000:] if cmd[0].endswith("pg_ctl") else ""
            raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr or done.stdout}{log}")

    def start(self) -> None:
        if self._as:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run(str(self.bin_dir / "initdb"), "-D", str(self.data), "-U", "agentcore", "--auth=trust", "-E", "UTF8")
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "server.log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://agentcore@127.0.0.1:{self.port}/{database}"

    def password_role(self, user: str, password: str) -> None:
        """A role that must give `password` over TCP (scram-sha-256), where every other role is trusted."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone() is None:
                conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD '{password}'")
            hba = self.data / "pg_hba.conf"
            line = f"host all {user} 127.0.0.1/32 scram-sha-256\n"
            if line not in hba.read_text():
                hba.write_text(line + hba.read_text())  # the first matching line wins: before the trust lines
            conn.execute("SELECT pg_reload_conf()")
        url = f"postgresql://{user}@127.0.0.1:{self.port}/postgres"
        for _ in range(100):  # the server reloads its rules after the call returns
            try:
                psycopg.connect(url, connect_timeout=5).close()
            except psycopg.OperationalError:
                return
            time.sleep(0.05)
        raise RuntimeError(f"the server still lets {user} in without a password")

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"t{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """The session's PostgreSQL cluster; skips the test with the reason when it cannot be had."""
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("psycopg is not installed (pip install 'agentcore[postgres]', part of `make test`)")
    bin_dir = _bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        pytest.skip("PostgreSQL is not installed (Debian: apt-get install postgresql; .ci/run does)")
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="agentcore-pg-")), bin_dir, free_port())
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        # a database a test makes hundreds of folders to remove (6 s at the end of a run of the whole suite, which
        # both workers waited on): removed by a process of its own, which the run does not wait for
        subprocess.Popen(
            ["rm", "-rf", "--", str(cluster.folder)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """The URL of an empty database of its own for one test."""
    return pg_cluster.new_database()
