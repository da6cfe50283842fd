"""Measure the hardening bars against a real `figsearch serve` process (and, with --distributed,
a real Celery worker on Redis + PostgreSQL). Everything runs in a temporary data dir.

    .venv/bin/python scripts/probe_hardening.py                   # HTTP probes + schemathesis
    .venv/bin/python scripts/probe_hardening.py --distributed     # + the poison-file batch

Prints one line per probe:
  * chunked 1 GB bodies without a token (admin upload, image search): answer, MB the client got
    to send, peak MB stored (data dir upload area + system temp dir, sampled every 20 ms);
  * the same upload with the token: answer and peak MB stored (bounded by the upload limit);
  * N concurrent image bombs (a 420 KB PNG declaring 12000 x 12000 RGB pixels) against a
    collection with a trained image model: answers, slowest latency, peak server RSS; also N
    concurrent images at the pixel budget (decoded for real);
  * 300 connections that never finish their headers: how many the server still holds after the
    header timeout;
  * schemathesis (every check, real PNG/JPEG for image parts: scripts/schemathesis_hooks.py) on
    the served OpenAPI schema;
  * --distributed: a batch with a file whose worker is SIGKILLed each time it takes the file:
    time until `figsearch ingest` returns, and that file's status and reason.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from app.pipeline.ingest_jobs import dir_bytes  # noqa: E402
from tests.badfiles import kill_worker_per_delivery, png_bomb  # noqa: E402

TOKEN = "probe-" + uuid.uuid4().hex
PY = sys.executable
FIGSEARCH = [PY, "-m", "app.cli"]


def env_for(data: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update(FIGSEARCH_DATA_DIR=str(data), FIGSEARCH_DENSE="false", FIGSEARCH_WARM_ENCODER="false",
               OMP_NUM_THREADS="1", **{k: str(v) for k, v in extra.items()})
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Sampler:
    """Peak of a measure sampled in a thread while a probe runs."""

    def __init__(self, fn, every: float = 0.02):
        self.fn, self.every, self.peak, self._stop = fn, every, 0.0, threading.Event()
        self.base = fn()

    def __enter__(self):
        def loop():
            while not self._stop.is_set():
                self.peak = max(self.peak, self.fn())
                time.sleep(self.every)
        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.fn())


def prepare_collection(data: Path) -> None:
    """A generated collection, ingested, indexed, with a small trained image model (so image
    queries decode images: the path the bombs attack)."""
    env = env_for(data)
    pdfs = data.parent / "generated-pdfs"
    subprocess.run(FIGSEARCH + ["make-demo-collection", str(pdfs), "--n", "8"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    subprocess.run(FIGSEARCH + ["ingest", str(pdfs), "--data-dir", str(data)], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    r = subprocess.run(FIGSEARCH + ["train", "--data-dir", str(data), "--epochs", "1", "--steps-per-epoch", "3",
                                    "--device", "cpu"], cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print("warning: training the image model failed; image probes hit the 501 path\n" + r.stderr[-2000:])


def server_tmp(data: Path) -> Path:
    """The server's own temp dir (TMPDIR), so what it spools there is measured alone."""
    return data.parent / "server-tmp"


def start_server(data: Path, port: int, **extra) -> subprocess.Popen:
    server_tmp(data).mkdir(exist_ok=True)
    p = subprocess.Popen(FIGSEARCH + ["serve", "--data-dir", str(data), "--port", str(port)], cwd=ROOT,
                         env=env_for(data, FIGSEARCH_ADMIN_TOKEN=TOKEN, TMPDIR=server_tmp(data), **extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return p
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit("server did not start")


def chunked_post(port: int, path: str, total: int, headers: dict[str, str]) -> tuple[str, int]:
    """Stream a multipart body of `total` bytes with Transfer-Encoding: chunked over a raw socket,
    stopping when the server answers or closes. Returns (status line, bytes sent)."""
    boundary = "probeBOUNDARY"
    field = "files" if "collections" in path else "image"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"big.pdf\"\r\n"
            f"Content-Type: application/pdf\r\n\r\n").encode()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
               + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
    block = b"0" * (1 << 20)
    sent, answer = 0, b""
    s.setblocking(False)
    try:
        pieces = [head] + [block] * (total // len(block))
        for piece in pieces:
            frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            view = memoryview(frame)
            while view:
                try:
                    answer += s.recv(65536)
                    if answer:
                        raise StopIteration
                except BlockingIOError:
                    pass
                try:
                    n = s.send(view)
                    view = view[n:]
                    sent += n
                except BlockingIOError:
                    time.sleep(0.001)
        s.setblocking(True)
        s.sendall(f"--{boundary}--\r\n".encode())
        s.sendall(b"0\r\n\r\n")
        s.settimeout(30)
        answer += s.recv(65536)
    except StopIteration:
        pass
    except (BrokenPipeError, ConnectionResetError):
        try:
            s.setblocking(True)
            s.settimeout(2)
            answer += s.recv(65536)
        except OSError:
            pass
    finally:
        s.close()
    return (answer.split(b"\r\n", 1)[0].decode(errors="replace") or "(connection closed)"), sent


def probe_bodies(port: int, data: Path) -> None:
    tmp = server_tmp(data)
    area = lambda: dir_bytes(data / "uploads", data / "incoming")  # noqa: E731
    temp = lambda: dir_bytes(tmp)  # noqa: E731
    gb = 1 << 30
    for path, headers, label in (("/api/v1/admin/collections", {}, "admin upload, no token"),
                                 ("/api/v1/admin/collections", {"Authorization": "Bearer wrong-" + "x" * 30},
                                  "admin upload, wrong token"),
                                 ("/api/v1/search/by-image", {}, "image search (public)"),
                                 ("/api/v1/admin/collections", {"Authorization": f"Bearer {TOKEN}"},
                                  "admin upload, with token")):
        with Sampler(area) as a, Sampler(temp, every=0.05) as t:
            t0 = time.time()
            status, sent = chunked_post(port, path, gb, headers)
            dt = time.time() - t0
        print(f"chunked 1 GB body, {label}: {status!r} after {sent / 1e6:.1f} MB sent in {dt:.1f} s; "
              f"peak stored: upload area {max(a.peak - a.base, 0) / 1e6:.2f} MB, server temp dir "
              f"{max(t.peak - t.base, 0) / 1e6:.2f} MB; left after: {max(area() - a.base, 0) / 1e6:.2f} MB")


def probe_images(port: int, pid: int, n: int) -> None:
    bomb = png_bomb(12_000, 12_000, colour=True)
    from PIL import Image
    import io

    buf = io.BytesIO()
    Image.new("RGB", (5000, 5000), "white").save(buf, "PNG")  # 25 megapixels: at the budget, decoded
    at_budget = buf.getvalue()
    url = f"http://127.0.0.1:{port}/api/v1/search/by-image"
    for label, payload in ((f"{len(bomb) / 1e3:.0f} KB PNG declaring 144 megapixels", bomb),
                           (f"{len(at_budget) / 1e3:.0f} KB PNG of 25 megapixels (the budget)", at_budget)):
        def one(_):
            t0 = time.time()
            r = httpx.post(url, files={"image": ("q.png", payload, "image/png")}, timeout=60)
            return r.status_code, time.time() - t0

        base = rss_mb(pid)
        with Sampler(lambda: rss_mb(pid), every=0.01) as s, ThreadPoolExecutor(n) as ex:
            results = list(ex.map(one, range(n)))
        codes = sorted({c for c, _ in results})
        print(f"{n} concurrent image queries, {label}: answers {codes}, slowest {max(t for _, t in results):.2f} s, "
              f"server RSS {base:.0f} MB before, peak {s.peak:.0f} MB")


def probe_slow_headers(port: int, n: int = 300, timeout_s: float = 10.0) -> None:
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            socks.append(s)
        except OSError:
            break
    time.sleep(timeout_s + 2)
    held = 0
    for s in socks:
        s.setblocking(False)
        try:
            held += s.recv(1) != b""
        except BlockingIOError:
            held += 1
        except OSError:
            pass
        s.close()
    ok = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code
    print(f"{len(socks)} connections with unfinished headers: {held} still held {timeout_s + 2:.0f} s later; "
          f"/healthz answers {ok}")


def probe_schemathesis(port: int, examples: int) -> None:
    exe = str(Path(PY).with_name("schemathesis"))
    cmd = [exe, "run", f"http://127.0.0.1:{port}/api/v1/openapi.json", "--checks", "all",
           "-H", f"Authorization: Bearer {TOKEN}", "-n", str(examples), "--no-color"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "scripts.schemathesis_hooks", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    log = Path(tempfile.gettempdir()) / "figsearch-schemathesis.log"
    log.write_text(r.stdout + r.stderr)
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    shown = [l for l in lines if l.startswith(("___", "- ST", "[", "Error", "    Invalid", "    Expected"))]
    print(f"schemathesis ({' '.join(cmd[1:3])} --checks all -n {examples}): exit {r.returncode} (full output: {log})")
    for line in shown[:40] + lines[-8:]:
        print("   " + line)


def probe_poison(args) -> None:
    from sqlalchemy import create_engine, text

    name = f"figsearch_probe_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.pg, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    db = args.pg.rsplit("/", 1)[0] + "/" + name
    import redis

    redis.Redis.from_url(args.redis).flushdb()
    work = Path(tempfile.mkdtemp(prefix="figsearch-poison-"))
    batch = work / "batch"
    from app.demo.generate import generate_collection

    generate_collection(batch, n_papers=args.files - 1, seed=3)
    shutil.copyfile(args.poison, batch / "poison.pdf")
    env = env_for(work / "data", FIGSEARCH_BROKER_URL=args.redis, FIGSEARCH_DATABASE_URL=db,
                  FIGSEARCH_AUTO_INDEX="false")
    worker = subprocess.Popen([str(Path(PY).with_name("celery")), "-A", "workers", "worker", "-l", "warning",
                               "--concurrency", "1", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    time.sleep(3)
    t0 = time.time()
    cli = subprocess.Popen(FIGSEARCH + ["ingest", str(batch), "--json"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        kills = kill_worker_per_delivery(cli, worker.pid, db, "poison.pdf", timeout=600)
        out = cli.communicate(timeout=60)[0]
        elapsed = time.time() - t0
    finally:
        if cli.poll() is None:
            cli.kill()
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
        from app.db.session import get_engine

        get_engine(db).dispose()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        shutil.rmtree(work, ignore_errors=True)
    summary = json.loads(out.strip().splitlines()[-1])
    print(f"distributed batch of {args.files} files with a worker-killing file ({kills} worker deaths): "
          f"`figsearch ingest` returned after {elapsed:.1f} s; ok {summary['ok']}, failed {summary['failed']}: "
          + "; ".join(f"{f['file'].rsplit('/', 1)[-1]}: {f['error']}" for f in summary["failures"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bombs", type=int, default=8)
    ap.add_argument("--examples", type=int, default=20, help="schemathesis examples per operation")
    ap.add_argument("--skip-schemathesis", action="store_true")
    ap.add_argument("--only-schemathesis", action="store_true", help="skip the load probes")
    ap.add_argument("--distributed", action="store_true")
    ap.add_argument("--files", type=int, default=8, help="files in the poison batch (one is the poison)")
    ap.add_argument("--poison", type=Path, default=None, help="PDF used as the worker-killing file "
                                                              "(default: the first PDF of ../shared/corpus/recsys)")
    ap.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="figsearch-probe-")) / "data"
    try:
        t0 = time.time()
        prepare_collection(data)
        print(f"collection prepared in {time.time() - t0:.0f} s: {data}")
        port = free_port()
        server = start_server(data, port)
        try:
            if not args.only_schemathesis:
                probe_bodies(port, data)
                probe_images(port, server.pid, args.bombs)
                probe_slow_headers(port)
            if not args.skip_schemathesis:
                probe_schemathesis(port, args.examples)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(30)
    finally:
        shutil.rmtree(data.parent, ignore_errors=True)
    if args.distributed:
        if args.poison is None:
            args.poison = next((ROOT.parent / "shared" / "corpus" / "recsys").rglob("*.pdf"))
        probe_poison(args)


if __name__ == "__main__":
    main()
