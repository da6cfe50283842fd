"""Engine and session factory per database URL; migrations applied on first use."""
from __future__ import annotations

import fcntl
import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
_migrated: set[str] = set()
_lock = threading.Lock()


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


@lru_cache(maxsize=16)
def get_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


# Any stable number; it names the schema-migration lock among PostgreSQL advisory locks.
_PG_MIGRATION_LOCK = 7_262_735_001


@contextmanager
def _sqlite_file_lock(url: str) -> Iterator[None]:
    """An exclusive lock beside an SQLite file, held until the migration has committed."""
    path = url.split("///", 1)[-1] if url.startswith("sqlite") else ""
    if not path or path == ":memory:":
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.migrate-lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def migrate(url: str) -> None:
    """Bring the database schema to the latest Alembic revision (idempotent, safe across processes)."""
    with _lock:
        if url in _migrated:
            return
        engine = get_engine(url)
        # A server, a worker and a CLI started together on a fresh database would otherwise run
        # the same migration at once, and the loser fails on tables the winner made.
        with _sqlite_file_lock(url), engine.begin() as conn:
            if conn.dialect.name == "postgresql":  # released when this transaction ends
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_MIGRATION_LOCK})
            cfg = alembic_config(url)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")
        _migrated.add(url)


@lru_cache(maxsize=16)
def _factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(url), expire_on_commit=False)


def session_factory(url: str) -> sessionmaker[Session]:
    migrate(url)
    return _factory(url)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    """A transaction: commit on success, roll back on error."""
    session = session_factory(url)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
