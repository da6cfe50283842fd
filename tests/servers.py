"""A real uvicorn server in its own process for browser tests, waited on until its index (and,
when asked, its query encoder) is ready, and stopped afterwards."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A port free now, for servers that cannot inherit a socket (redis-server); another process
    may take it before the server binds it, so API servers get `listening_socket` instead."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_socket() -> socket.socket:
    """A loopback socket on a free port, already listening, for a server process to inherit: the
    port is held from the moment it is chosen, so two test processes are never given the same."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def start_api_process(sock: socket.socket, env: dict, **popen) -> subprocess.Popen:
    """The API (`uvicorn app.api.main:create_app`) serving on the inherited `sock`."""
    return subprocess.Popen([sys.executable, "-m", "uvicorn", "app.api.main:create_app", "--factory",
                             "--fd", str(sock.fileno()), "--log-level", "warning"],
                            cwd=ROOT, env=env, pass_fds=(sock.fileno(),), **popen)


def base_url(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextmanager
def running_server(data: Path, log_dir: Path, env: dict[str, str | None] | None = None,
                   wait_encoder: bool = False, timeout_s: float = 90) -> Iterator[str]:
    """Serve `data` in embedded mode; yields the base URL. `env` adds variables (None removes
    one). The server's log is `log_dir/server.log`; its tail is in the error if it never starts."""
    full = {**os.environ, "FIGSEARCH_DATA_DIR": str(data), "FIGSEARCH_BROKER_URL": "", "FIGSEARCH_DATABASE_URL": ""}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    sock = listening_socket()
    log_path = Path(log_dir) / "server.log"
    log = open(log_path, "wb")
    proc = start_api_process(sock, full, stdout=log, stderr=subprocess.STDOUT)
    base = base_url(sock)
    try:
        deadline = time.time() + timeout_s
        while True:
            try:
                r = httpx.get(f"{base}/readyz", timeout=2).json()
                if r["index"]["loaded"] and (not wait_encoder or r["encoder"] == "ready"):
                    break
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("server did not become ready:\n" + log_path.read_text()[-3000:])
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        sock.close()
