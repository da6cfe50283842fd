"""Bounded load probes for the hardening bars, against real processes in a temporary data dir.

    python scripts/load_hardening.py metrics  --requests 1000          # invented methods/paths vs /metrics size
    python scripts/load_hardening.py renders  --concurrent 48          # hires renders: server RSS, /healthz latency
    python scripts/load_hardening.py lost-worker --papers 27 CORPUS    # SIGKILL the only worker's main process mid-batch

`metrics` and `renders` serve the demo collection (`figsearch make-demo-collection` + ingest,
embedded mode) with `figsearch serve`; `lost-worker` needs PostgreSQL on 127.0.0.1:5432 and
Redis on 127.0.0.1:6379 and uses DEFAULT settings (no timeout is shortened). Each prints one
JSON line of measurements.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLI = [PY, "-m", "app.cli"]
TOKEN = "probe-" + uuid.uuid4().hex


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env.update({k: str(v) for k, v in extra.items()})
    env["PYTHONPATH"] = str(ROOT)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_data(work: Path) -> Path:
    """The demo collection ingested (embedded mode), once per work dir."""
    data = work / "data"
    if (data / "figsearch.db").exists():
        return data
    pdfs = work / "pdfs"
    env = base_env(FIGSEARCH_DATA_DIR=data, FIGSEARCH_DENSE="false")
    subprocess.run([*CLI, "make-demo-collection", str(pdfs)], cwd=ROOT, env=env, check=True,
                   capture_output=True)
    subprocess.run([*CLI, "ingest", str(pdfs)], cwd=ROOT, env=env, check=True, capture_output=True)
    return data


class Server:
    def __init__(self, data: Path, **extra):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = base_env(FIGSEARCH_DATA_DIR=data, FIGSEARCH_ADMIN_TOKEN=TOKEN, FIGSEARCH_DENSE="false",
                       FIGSEARCH_WARM_ENCODER="false", **extra)
        self.proc = subprocess.Popen([*CLI, "serve", "--port", str(self.port)], cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if httpx.get(self.base + "/readyz", timeout=2).json()["index"]["loaded"]:
                    return
            except Exception:
                pass
            time.sleep(0.5)
        raise SystemExit("server did not become ready")

    def rss_mb(self, tree: bool = False) -> float:
        """The server process's RSS (`figsearch serve`'s python), or with `tree` its render
        processes' too."""
        procs = [psutil.Process(self.proc.pid)]
        procs += procs[0].children(recursive=True)
        total = 0
        for p in procs if tree else procs[:1]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 1e6

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(30)


# ------------------------------------------------------------------ metrics
def probe_metrics(args) -> dict:
    data = demo_data(Path(args.work))
    srv = Server(data)
    try:
        size0 = len(httpx.get(srv.base + "/metrics").content)
        rnd = random.Random(1)
        t0 = time.time()
        with httpx.Client(base_url=srv.base, timeout=30) as c:
            for i in range(args.requests):
                method = "".join(rnd.choices(string.ascii_uppercase, k=args.method_chars))
                path = "/api/v1/" + "/".join("".join(rnd.choices(string.ascii_lowercase, k=12)) for _ in range(3))
                try:
                    c.request(method, path if i % 2 else path.replace("/api/v1", ""))
                except httpx.HTTPError:
                    pass
        size1 = len(httpx.get(srv.base + "/metrics").content)
        return {"probe": "metrics", "requests": args.requests, "method_chars": args.method_chars,
                "seconds": round(time.time() - t0, 1), "metrics_bytes_before": size0, "metrics_bytes_after": size1,
                "server_rss_mb": round(srv.rss_mb())}
    finally:
        srv.stop()


# ------------------------------------------------------------------ renders
def probe_renders(args) -> dict:
    data = demo_data(Path(args.work))
    srv = Server(data)
    try:
        figs = httpx.get(srv.base + "/api/v1/figures?limit=100").json()["items"]
        urls = [f"{srv.base}/api/v1/figures/{f['figure_id']}/hires" for f in figs]
        rss0 = srv.rss_mb()
        peak = {"rss": rss0, "tree": srv.rss_mb(tree=True)}
        stop = threading.Event()

        def watch_memory():
            while not stop.is_set():
                peak["rss"] = max(peak["rss"], srv.rss_mb())
                peak["tree"] = max(peak["tree"], srv.rss_mb(tree=True))
                time.sleep(0.1)

        # /healthz is timed from its own process, so the load generator's threads do not delay it
        baseline = health_latencies(srv.base, args.baseline_seconds)
        timer = subprocess.Popen([PY, __file__, "--work", args.work, "healthz", srv.base, str(args.seconds + 5)],
                                 stdout=subprocess.PIPE, text=True, env=base_env())
        codes: dict[int, int] = {}
        lock = threading.Lock()

        def render(i: int):
            # every client asks for a different figure at scale 8 (the cache does not help) for the duration
            end = time.time() + args.seconds
            k = i
            with httpx.Client(timeout=120) as c:
                while time.time() < end:
                    r = c.get(urls[k % len(urls)], params={"scale": 8 - (k // len(urls)) % 14 * 0.5})
                    with lock:
                        codes[r.status_code] = codes.get(r.status_code, 0) + 1
                    if r.status_code == 429:
                        time.sleep(float(r.headers.get("Retry-After", "1")) * random.random())
                    k += args.concurrent

        w = threading.Thread(target=watch_memory, daemon=True)
        w.start()
        time.sleep(2)  # the timer process is up
        with ThreadPoolExecutor(args.concurrent) as ex:
            list(ex.map(render, range(args.concurrent)))
        stop.set()
        w.join(5)
        health = sorted(json.loads(timer.communicate(timeout=60)[0]))

        def summary(xs):
            xs = sorted(xs)
            return {"checks": len(xs), "ms_p50": round(1000 * xs[len(xs) // 2], 1),
                    "ms_p99": round(1000 * xs[int(len(xs) * .99)], 1), "ms_max": round(1000 * xs[-1], 1),
                    "over_200ms": sum(1 for x in xs if x > 0.2)}

        return {"probe": "renders", "concurrent": args.concurrent, "seconds": args.seconds, "figures": len(urls),
                "answers": codes, "server_rss_mb_before": round(rss0), "server_rss_mb_peak": round(peak["rss"]),
                "server_and_render_processes_rss_mb_peak": round(peak["tree"]),
                "healthz_idle": summary(baseline), "healthz_under_load": summary(health),
                "load_average_1min": os.getloadavg()[0]}
    finally:
        srv.stop()


def health_latencies(base: str, seconds: float) -> list[float]:
    """Seconds each GET /healthz took, one every 50 ms for `seconds` (10 s timeout = inf)."""
    out = []
    end = time.time() + seconds
    with httpx.Client(timeout=10) as c:
        while time.time() < end:
            t = time.perf_counter()
            try:
                c.get(base + "/healthz")
                out.append(time.perf_counter() - t)
            except httpx.HTTPError:
                out.append(float("inf"))
            time.sleep(0.05)
    return out


# ------------------------------------------------------------------ lost worker
def probe_lost_worker(args) -> dict:
    from sqlalchemy import create_engine, func, select, text

    from app.db.schema import JobFile, JobFileStatus, Paper
    from app.db.session import session_scope

    work = Path(args.work)
    batch = work / "batch"
    shutil.rmtree(batch, ignore_errors=True)
    batch.mkdir(parents=True)
    pdfs = sorted(Path(args.corpus).rglob("*.pdf"))[: args.papers]
    for p in pdfs:
        shutil.copyfile(p, batch / f"{p.parent.name}-{p.name}")
    db = f"figsearch_probe_{uuid.uuid4().hex[:8]}"
    admin = create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{db}"'))
    pg = f"postgresql+psycopg://postgres@127.0.0.1:5432/{db}"
    redis_url = "redis://127.0.0.1:6379/15"
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    data = work / "data-lost"
    shutil.rmtree(data, ignore_errors=True)
    env = base_env(FIGSEARCH_DATA_DIR=data, FIGSEARCH_DATABASE_URL=pg, FIGSEARCH_BROKER_URL=redis_url)
    celery = str(Path(PY).with_name("celery"))

    def worker():
        return subprocess.Popen([celery, "-A", "workers", "worker", "-l", "warning", "--concurrency", "2"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    w1 = worker()
    w2 = None
    t0 = time.time()
    cli = subprocess.Popen([*CLI, "ingest", str(batch), "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(args.kill_after)
        with session_scope(pg) as s:
            done_at_kill = s.scalar(select(func.count()).select_from(JobFile).where(JobFile.status.not_in(JobFileStatus.UNFINISHED)))
        os.kill(w1.pid, signal.SIGKILL)  # the main process only, as in the report
        killed = time.time()
        w2 = worker()
        out, err = cli.communicate(timeout=args.timeout)
        finished = time.time()
        with session_scope(pg) as s:
            statuses = dict(s.execute(select(JobFile.status, func.count()).group_by(JobFile.status)).all())
            n, distinct = s.scalar(select(func.count(Paper.id))), s.scalar(select(func.count(func.distinct(Paper.sha256))))
        notes = [l for l in err.splitlines() if "stopped answering" in l]
        return {"probe": "lost-worker", "papers": len(pdfs), "kill_after_s": args.kill_after,
                "files_done_at_kill": done_at_kill, "cli_exit": cli.returncode,
                "seconds_after_kill": round(finished - killed, 1), "seconds_total": round(finished - t0, 1),
                "statuses": statuses, "papers_stored": n, "distinct_papers": distinct,
                "cli_notes": notes, "cli_progress_lines": sum(1 for l in err.splitlines() if l.startswith("ingest: "))}
    finally:
        if cli.poll() is None:
            cli.kill()
        for w in (w1, w2):
            if w is not None and w.poll() is None:
                os.killpg(w.pid, signal.SIGTERM)
                try:
                    w.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(w.pid, signal.SIGKILL)
        for proc in psutil.process_iter(["cmdline"]):  # children orphaned by the SIGKILL of w1's main process
            try:
                if proc.pid != os.getpid() and proc.environ().get("FIGSEARCH_DATA_DIR") == str(data):
                    proc.kill()
            except (psutil.Error, OSError):
                pass
        from app.db.session import get_engine

        get_engine(pg).dispose()
        with admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=tempfile.mkdtemp(prefix="figsearch-load-"))
    sub = ap.add_subparsers(dest="probe", required=True)
    m = sub.add_parser("metrics")
    m.add_argument("--requests", type=int, default=1000)
    m.add_argument("--method-chars", type=int, default=10_000)
    r = sub.add_parser("renders")
    r.add_argument("--concurrent", type=int, default=48)
    r.add_argument("--seconds", type=float, default=30)
    r.add_argument("--baseline-seconds", type=float, default=10)
    hz = sub.add_parser("healthz")  # internal: the renders probe's /healthz timer process
    hz.add_argument("base")
    hz.add_argument("seconds", type=float)
    lw = sub.add_parser("lost-worker")
    lw.add_argument("corpus")
    lw.add_argument("--papers", type=int, default=27)
    lw.add_argument("--kill-after", type=float, default=15)
    lw.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    if args.probe == "healthz":
        print(json.dumps(health_latencies(args.base, args.seconds)))
        return
    out = {"metrics": probe_metrics, "renders": probe_renders, "lost-worker": probe_lost_worker}[args.probe](args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
