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


def test_dockerfile_copies_existing_paths():
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), line


def test_wheel_ships_the_web_ui_and_migrations(tmp_path):
    """A non-editable install serves the UI and migrates: the wheel holds every file of
    app/frontend and migrations/, where app/api/main.py and app/db/session.py look for them."""
    import subprocess
    import sys
    import zipfile

    from app.api.main import FRONTEND_DIR
    from app.db.session import MIGRATIONS_DIR

    app_dir = ROOT / "app"
    assert FRONTEND_DIR.is_relative_to(app_dir)  # inside the package, not next to it
    assert MIGRATIONS_DIR.parent == app_dir.parent and (MIGRATIONS_DIR / "__init__.py").exists()  # top-level package
    # build from a clean copy: a stale build/ or *.egg-info/SOURCES.txt in the tree would mask a
    # file that the package-data patterns miss
    import shutil

    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("app", "workers", "models", "migrations"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    out = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = out.glob("figsearch-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for d in (FRONTEND_DIR, MIGRATIONS_DIR):
        files = [p for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        assert files
        missing = [str(p.relative_to(ROOT)) for p in files if str(p.relative_to(ROOT)) not in names]
        assert not missing, missing
    assert "app/frontend/index.html" in names and "app/frontend/js/app.js" in names
