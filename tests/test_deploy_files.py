"""docker-compose.yml and Dockerfile cannot be run here (no Docker engine); keep them consistent."""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_compose_has_the_distributed_services():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"api", "worker", "redis", "postgres", "flower"} <= set(services)
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert env["FIGSEARCH_BROKER_URL"].startswith("redis://")
        assert env["FIGSEARCH_DATABASE_URL"].startswith("postgresql")
        assert "?" in env["FIGSEARCH_ADMIN_TOKEN"]  # required from the environment, no default secret
        assert any(v.endswith(":/data") for v in services[name]["volumes"])
    assert services["worker"]["command"][:3] == ["celery", "-A", "workers"]


def test_dockerfile_installs_the_project_and_serves():
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install" in text and "figsearch" in text and "EXPOSE 8000" in text
    assert "ARG BASE" in text and "ARG FAISS" in text  # CUDA image by build argument
