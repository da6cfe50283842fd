"""Which worker holds which file, and whether that worker still answers (Redis keys).

A task whose worker dies outright is only redelivered by Redis after the broker's visibility
timeout, which must be longer than the longest task (an OCR-heavy file may run for many minutes).
So a lost worker is noticed here instead, in seconds:

- every worker's main process keeps a heartbeat key `figsearch:alive:<host>:<pid>` (refreshed
  every HEARTBEAT_EVERY_S, expiring HEARTBEAT_TTL_S after the last refresh, so a SIGKILLed
  worker's key vanishes on its own);
- a task that takes a job file records it in the hash `figsearch:held` (holder = its worker's
  main process, the job, the file name, the task's data-dir config and time limit) and removes
  it when done;
- every live worker, every REAP_EVERY_S, re-sends the task of each held file whose holder has
  no heartbeat any more (one worker wins each file: HDEL is atomic), if the file is still
  pending. The original message, when Redis restores it later, finds the file done (tasks are
  idempotent).

A pool child that dies under a live main process is Celery's business (the task is requeued at
once, `task_reject_on_worker_lost`); only whole lost workers (main process gone) are re-sent
here, so a file that kills pool children still counts one delivery per death.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)

HEARTBEAT_EVERY_S = 5.0
HEARTBEAT_TTL_S = 30  # a main process starved for this long on a loaded machine still counts as alive
REAP_EVERY_S = 5.0
ALIVE = "figsearch:alive:"
HELD = "figsearch:held"

_main_pid: int | None = None  # the worker's main process (set before the pool forks)


def set_main_process() -> None:
    global _main_pid
    _main_pid = os.getpid()


def holder_id() -> str | None:
    """This worker's id (host:main pid); None outside a worker (eager tasks)."""
    return f"{socket.gethostname()}:{_main_pid}" if _main_pid is not None else None


_clients: dict[str, object] = {}


def client(broker_url: str):
    """A Redis client on the broker (one per URL and process), or None for other brokers (no
    liveness there)."""
    if not broker_url.startswith(("redis://", "rediss://", "unix://")):
        return None
    if broker_url not in _clients:
        import redis

        _clients[broker_url] = redis.Redis.from_url(broker_url, socket_timeout=5, socket_connect_timeout=5)
    return _clients[broker_url]


def alive(r, holder: str) -> bool:
    return bool(r.exists(ALIVE + holder))


def hold(r, job_file_id: int, entry: dict) -> None:
    if r is not None and entry.get("holder"):
        r.hset(HELD, str(job_file_id), json.dumps({**entry, "since": time.time()}))


def release(r, job_file_id: int, holder: str | None) -> None:
    """Forget the file's holder, unless another worker has taken it since."""
    if r is None:
        return
    raw = r.hget(HELD, str(job_file_id))
    if raw is not None and json.loads(raw).get("holder") == holder:
        r.hdel(HELD, str(job_file_id))


def forget(r, job_file_id: int) -> None:
    """The file is finished: whoever held it, it needs no re-send."""
    if r is not None:
        r.hdel(HELD, str(job_file_id))


def held_files(r, job_id: str | None = None) -> dict[int, dict]:
    out = {}
    for k, v in (r.hgetall(HELD) if r is not None else {}).items():
        entry = json.loads(v)
        if job_id is None or entry.get("job_id") == job_id:
            out[int(k)] = entry
    return out


def lost_files(r, job_id: str) -> list[dict]:
    """Held files of the job whose worker stopped answering (not yet handed to another)."""
    return [{"job_file_id": k, **e} for k, e in sorted(held_files(r, job_id).items())
            if not alive(r, e["holder"])]


def reap(r, resend: Callable[[int, dict], bool]) -> int:
    """Re-send the files held by dead workers; `resend(job_file_id, entry)` sends the task and
    says whether the file still needed it. Returns how many were re-sent."""
    n = 0
    for jf_id, entry in held_files(r).items():
        if alive(r, entry["holder"]) or not r.hdel(HELD, str(jf_id)):
            continue  # alive, or another worker took this file first
        try:
            if resend(jf_id, entry):
                n += 1
                log.warning("worker %s stopped answering while it held %s (job %s); task sent again",
                            entry["holder"], entry.get("name"), entry.get("job_id"))
        except Exception:
            log.exception("could not re-send job file %s", jf_id)
            r.hset(HELD, str(jf_id), json.dumps(entry))  # try again at the next round
    return n


class Heartbeat:
    """The main process's heartbeat and reaper thread."""

    def __init__(self, broker_url: str, resend: Callable[[int, dict], bool]):
        self.broker_url, self.resend = broker_url, resend
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if client(self.broker_url) is None or holder_id() is None:
            return
        self._thread = threading.Thread(target=self._run, name="figsearch-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        r = client(self.broker_url)
        me = holder_id()
        next_reap = 0.0
        while not self._stop.is_set():
            try:
                r.set(ALIVE + me, str(time.time()), ex=HEARTBEAT_TTL_S)
                if time.monotonic() >= next_reap:
                    next_reap = time.monotonic() + REAP_EVERY_S
                    reap(r, self.resend)
            except Exception:  # broker down: Celery reconnects; so do we at the next beat
                log.warning("heartbeat: broker unavailable", exc_info=True)
            self._stop.wait(HEARTBEAT_EVERY_S)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            try:
                client(self.broker_url).delete(ALIVE + holder_id())
            except Exception:
                pass
