"""Celery application. `celery -A workers worker` runs it; without a broker URL the tasks
run in-process (task_always_eager), so the embedded mode needs no Redis."""
from __future__ import annotations

from celery import Celery

from app.settings import Settings


def make_celery(settings: Settings | None = None) -> Celery:
    settings = settings or Settings()
    broker = settings.broker_url or "memory://"
    backend = settings.result_backend or (settings.broker_url or "cache+memory://")
    celery = Celery("figsearch", broker=broker, backend=backend, include=["workers.tasks"])
    celery.conf.update(
        task_always_eager=not settings.broker_url,
        task_eager_propagates=True,
        task_acks_late=True,  # a killed worker's task is redelivered, not lost
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_max_tasks_per_child=50,  # bounded memory over thousands of ingests
        worker_max_memory_per_child=settings.worker_memory_mb * 1024 // 2 or None,  # KiB; replaced after the task
        # a pool process loads the extractor before it says it is up (workers/tasks.py): on a busy
        # machine that takes longer than Celery's 4 s, after which the process would be killed
        worker_proc_alive_timeout=120.0,
        # files are sent with their own limits (workers/tasks.send_file); everything else is collection work
        task_soft_time_limit=settings.collection_timeout_s,
        task_time_limit=settings.collection_timeout_s + 30,
        broker_connection_retry_on_startup=True,
        # a task never acknowledged is handed out again after this; longer than the longest task,
        # so a slow file or index build is not delivered twice (dead workers: workers/liveness.py is faster)
        broker_transport_options={"visibility_timeout": settings.visibility_timeout_s},
        worker_cancel_long_running_tasks_on_connection_loss=False,
        result_expires=3600,
        task_serializer="json",
        accept_content=["json"],
    )
    return celery


app = make_celery()
celery = app
