"""Shared fixtures: a generated sample collection, real corpus papers, fresh databases."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import app  # noqa: F401  sets the OpenMP wait policy before any test module imports PyTorch

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
PG_ADMIN_URL = os.environ.get("FIGSEARCH_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("FIGSEARCH_TEST_REDIS", "redis://127.0.0.1:6379")

# A handful of real papers for tests (relative to shared/corpus/recsys); kept small on purpose.
REAL_PAPERS = [
    "02_Rank/CTR_Prediction/2017 (Huawei) [DeepFM] A Factorization-Machine based Neural Network for CTR Prediction.pdf",
    "02_Rank/Multi_Task/2018 (Google) (KDD) [MMoE] Modeling Task Relationships in Multi-task Learning with Multi-gate Mixture-of-Experts.pdf",
]


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not (CORPUS / "recsys").is_dir():
        pytest.skip("../shared/corpus not present")
    return CORPUS


@pytest.fixture(scope="session")
def real_papers(corpus_dir) -> list[Path]:
    manifest = corpus_dir / "recsys" / "MANIFEST.tsv"
    rows = [l.split("\t")[0] for l in manifest.read_text().splitlines() if l and not l.startswith("#")]
    picked = [corpus_dir / "recsys" / p for p in REAL_PAPERS if p in rows]
    if len(picked) < 2:  # layout changed: fall back to the first born-digital papers listed
        picked = [corpus_dir / "recsys" / p for p in rows[4:6]]
    return picked


@pytest.fixture(scope="session")
def demo_pdfs(tmp_path_factory) -> list[Path]:
    from app.demo.generate import generate_collection

    out = tmp_path_factory.mktemp("demo-pdfs")
    return generate_collection(out, n_papers=6, seed=1)


def cli_run(args: list[str], env_extra: dict | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess:
    """`figsearch ARGS` in embedded mode without the automatic index refresh (FIGSEARCH_ settings of
    the test process dropped, `env_extra` added); with `check`, fails the test on a non-zero exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIGSEARCH_")}
    env["FIGSEARCH_AUTO_INDEX"] = "false"
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=timeout)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="session")
def demo_ingested_one(demo_pdfs, tmp_path_factory) -> Path:
    """A data dir holding the first generated paper, from `figsearch ingest` (no index). Shared:
    tests that write copy it first (copy_data_dir)."""
    data = tmp_path_factory.mktemp("demo-one") / "data"
    cli_run(["ingest", str(demo_pdfs[0]), "--data-dir", str(data)])
    return data


@pytest.fixture(scope="session")
def demo_ingested(demo_pdfs, tmp_path_factory) -> Path:
    """A data dir holding the generated collection, from `figsearch ingest` (no index). Shared:
    tests that write copy it first (copy_data_dir)."""
    data = tmp_path_factory.mktemp("demo-ingested") / "data"
    cli_run(["ingest", str(demo_pdfs[0].parent), "--data-dir", str(data)])
    return data


@pytest.fixture(scope="session")
def demo_indexed(demo_ingested, tmp_path_factory) -> tuple[Path, str]:
    """A copy of demo_ingested after `figsearch index`, and what that command printed. Shared:
    tests that write copy it first (copy_data_dir)."""
    data = copy_data_dir(demo_ingested, tmp_path_factory.mktemp("demo-indexed"))
    return data, cli_run(["index", "--data-dir", str(data)]).stdout


def copy_data_dir(data: Path, parent: Path) -> Path:
    """A private copy (parent/data) of a shared data dir, for a test that writes to it."""
    return Path(shutil.copytree(data, parent / "data"))


@pytest.fixture()
def settings(tmp_path):
    from app.settings import Settings

    return Settings(data_dir=tmp_path / "data", broker_url="", database_url="")


@pytest.fixture()
def pg_url():
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    if not _port_open("127.0.0.1", 5432):
        pytest.fail("PostgreSQL is not running on 127.0.0.1:5432 (.ci/services.sh starts it)")
    from sqlalchemy import create_engine, text

    name = f"figsearch_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    yield url
    from app.db.session import get_engine

    get_engine(url).dispose()
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def redis_db():
    """A Redis database (1-15) of this test process alone: claimed in database 0 for the session,
    so neither the other pytest-xdist process nor another test run on this machine flushes it."""
    if not _port_open("127.0.0.1", 6379):
        pytest.fail("Redis is not running on 127.0.0.1:6379 (.ci/services.sh starts it)")
    import redis

    claims, token = redis.Redis.from_url(f"{REDIS_URL}/0"), uuid.uuid4().hex
    for db in range(1, 16):
        if claims.set(f"figsearch-test-db:{db}", token, nx=True, ex=4 * 3600):
            break
    else:
        pytest.fail("every Redis database 1-15 is claimed by other test runs (keys figsearch-test-db:* in database 0)")
    yield db
    if claims.get(f"figsearch-test-db:{db}") == token.encode():
        claims.delete(f"figsearch-test-db:{db}")


@pytest.fixture()
def redis_url(redis_db):
    url = f"{REDIS_URL}/{redis_db}"
    import redis

    redis.Redis.from_url(url).flushdb()
    yield url
    redis.Redis.from_url(url).flushdb()


def copy_into(paths: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for p in paths:
        target = folder / p.name
        shutil.copyfile(p, target)
        out.append(target)
    return out


@pytest.fixture()
def fast_settings(tmp_path):
    """Embedded settings without the automatic (MiniLM) index refresh, for ingestion-only tests."""
    from app.settings import Settings

    return Settings(data_dir=tmp_path / "data", broker_url="", database_url="", auto_index=False)
