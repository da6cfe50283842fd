"""Processes started together on a fresh database (server, workers, CLI) all migrate it safely."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
MIGRATE = "import sys; from app.db.session import migrate; migrate(sys.argv[1])"


def _migrate_at_once(url: str, processes: int = 4) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-c", MIGRATE, url], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(processes)]
    return [(p.wait(120), p.stderr.read()) for p in procs]


def _head_revisions(url: str) -> list[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return [r[0] for r in c.execute(text("SELECT version_num FROM alembic_version"))]
    finally:
        engine.dispose()


def _expected_head() -> str:
    from alembic.script import ScriptDirectory

    from app.db.session import alembic_config

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def test_concurrent_first_migrations_on_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh' / 'figsearch.db'}"
    for code, err in _migrate_at_once(url):
        assert code == 0, err
    assert _head_revisions(url) == [_expected_head()]


@pytest.mark.postgres
def test_concurrent_first_migrations_on_postgres(pg_url):
    for code, err in _migrate_at_once(pg_url):
        assert code == 0, err
    assert _head_revisions(pg_url) == [_expected_head()]
