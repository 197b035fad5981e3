"""nginx in front of app servers, configured by the block docs/deployment.md gives to copy: a tested block.

The block is taken from the guide as written; only the addresses, the port and the files change for a test
(the app servers' ports, a free port on 127.0.0.1, a password file and a log in a temporary folder).
Skips when Debian's nginx is not installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from support.servers import ROOT, free_port, stop_process

GUIDE = ROOT / "docs" / "deployment.md"
UPSTREAMS = ("127.0.0.1:8501", "127.0.0.1:8502")


def guide_block() -> str:
    """The nginx block of docs/deployment.md, as a person would copy it."""
    found = re.search(r"```nginx\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert found, "docs/deployment.md has no ```nginx block"
    return found.group(1)


@dataclass
class Proxy:
    """A started nginx: its URL, its access log (user, request, status, upstream), and how to stop it."""

    proc: subprocess.Popen
    url: str
    log: Path
    folder: Path

    def upstream_of(self, cookie: str) -> str:
        """The app server a browser with this sticky cookie is sent to (read from the access log)."""
        before = len(self.log.read_text().splitlines()) if self.log.exists() else 0
        httpx.get(f"{self.url}/_stcore/health", cookies={"agentcore_replica": cookie}, auth=("probe", "probe"))
        for _ in range(50):
            lines = self.log.read_text().splitlines()[before:]
            if lines:
                return lines[-1].rsplit("upstream=", 1)[1]
            time.sleep(0.05)
        raise RuntimeError("nginx logged no request")

    def stop(self) -> None:
        stop_process(self.proc)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_nginx(upstreams: list[str], users: list[str]) -> Proxy:
    """nginx on a free port of 127.0.0.1 over `upstreams` (host:port), each of `users` signing in with their name as
    password (and `probe`); its files in a folder of its own, removed when it stops."""
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        pytest.skip("nginx is not installed (Debian: apt-get install nginx; .ci/run does)")
    # nginx's workers run as an unprivileged user and read the password file: a folder of its own in /tmp, open to
    # them, not one inside pytest's private temporary folder
    workdir = Path(tempfile.mkdtemp(prefix="agentcore-nginx-"))
    os.chmod(workdir, 0o755)
    passwords = workdir / "htpasswd"
    passwords.write_text("".join(f"{u}:{{PLAIN}}{u}\n" for u in [*users, "probe"]))
    port, log = free_port(), workdir / "access.log"
    block = guide_block()
    for copied, test in zip(UPSTREAMS, upstreams, strict=True):
        block = block.replace(f"server {copied};", f"server {test};")
    block = block.replace("listen 80;", f"listen 127.0.0.1:{port};")
    block = block.replace("/etc/nginx/agentcore.htpasswd", str(passwords))
    block = block.replace("/var/log/nginx/agentcore.log", str(log))
    temp = "".join(
        f"{kind}_temp_path {workdir / kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf = workdir / "nginx.conf"
    conf.write_text(
        f"daemon off;\npid {workdir / 'nginx.pid'};\nerror_log {workdir / 'error.log'} warn;\n"
        f"events {{ worker_connections 1024; }}\n"
        f"http {{\n{temp}access_log off;\n{block}\n}}\n"
    )
    handle = (workdir / "nginx.out").open("wb")
    proc = subprocess.Popen(
        [binary, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "error.log")],
        stdout=handle,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    proxy = Proxy(proc, f"http://127.0.0.1:{port}", log, workdir)
    for _ in range(100):
        if proc.poll() is not None:
            errors = (workdir / "error.log").read_text(errors="replace") if (workdir / "error.log").exists() else ""
            raise RuntimeError(f"nginx exited with {proc.returncode}: {errors[-2000:]}")
        try:
            httpx.get(proxy.url, timeout=1)
            return proxy
        except httpx.HTTPError:
            time.sleep(0.1)
    proxy.stop()
    raise RuntimeError("nginx did not start listening")
