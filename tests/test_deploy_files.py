"""docker-compose.yml and Dockerfile cannot be run here (no Docker engine); keep them consistent."""
from pathlib import Path

import yaml

from tests.script_modules import load_script

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
    """A non-editable install serves the UI, migrates and runs: the wheel holds every file of
    app/ (weights, vocabularies), frontend/ (the web UI) and migrations/, where the code looks for them."""
    import subprocess
    import sys
    import zipfile

    from app.api.main import FRONTEND_DIR
    from app.db.session import MIGRATIONS_DIR

    app_dir = ROOT / "app"
    assert FRONTEND_DIR.parent == app_dir.parent and (FRONTEND_DIR / "__init__.py").exists()  # top-level package
    assert MIGRATIONS_DIR.parent == app_dir.parent and (MIGRATIONS_DIR / "__init__.py").exists()  # top-level package
    # build from a clean copy: a stale build/ or *.egg-info/SOURCES.txt in the tree would mask a
    # file that the package-data patterns miss
    import shutil

    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("app", "workers", "models", "migrations", "frontend"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    out = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = out.glob("figsearch-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for d in (FRONTEND_DIR, MIGRATIONS_DIR, app_dir):  # app/: data files the code reads (weights, vocabularies)
        files = [p for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
        assert files
        missing = [str(p.relative_to(ROOT)) for p in files if str(p.relative_to(ROOT)) not in names]
        assert not missing, missing
    assert "frontend/index.html" in names and "frontend/js/app.js" in names


def _settings_table_script():
    return load_script("settings_table")


def _readme_block(text: str, mod, name: str) -> str:
    start, end = text.index(mod._begin(name)) + len(mod._begin(name)), text.index(mod._end(name))
    return text[start:end].strip()


def test_readme_lists_every_setting():
    """Every Settings field is documented in README (env name, default, description), and the
    table is the one scripts/settings_table.py generates (so defaults cannot drift)."""
    from app.settings import Settings

    mod = _settings_table_script()
    readme = (ROOT / "README.md").read_text()
    block = _readme_block(readme, mod, "settings")
    rows = {line.split("|")[1].strip().strip("`"): line for line in block.splitlines()[2:]}
    for name, field in Settings.model_fields.items():
        env = f"FIGSEARCH_{name.upper()}"
        assert field.description, f"Settings.{name} has no description"
        assert env in rows, f"{env} missing from README (run python scripts/settings_table.py --write)"
    assert len(rows) == len(Settings.model_fields)
    assert block == mod.settings_table(), "README settings table out of date: python scripts/settings_table.py --write"
    assert "| `FIGSEARCH_MAX_PAGES` | integer | `300` |" in block  # a default, as generated


def test_readme_lists_every_command_and_celery_task():
    mod = _settings_table_script()
    readme = (ROOT / "README.md").read_text()
    commands = _readme_block(readme, mod, "commands")
    names = [name for name, _ in mod.command_rows()]
    assert {"ingest", "jobs", "serve", "index", "train-types"} <= set(names)
    for name in names:
        assert f"| `figsearch {name}` |" in commands, f"figsearch {name} missing from README"
    tasks = _readme_block(readme, mod, "tasks")
    task_names = [name for name, _, _ in mod.task_rows()]
    assert {"figsearch.ingest_pdf", "figsearch.ingest_collection", "figsearch.refresh_index"} <= set(task_names)
    for name in task_names:
        assert f"| `{name}` |" in tasks, f"Celery task {name} missing from README"


def test_flower_starts_only_with_a_password():
    """compose runs the credential check before Flower; `user:` (empty password) is refused."""
    import os
    import subprocess
    import sys

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    command = compose["services"]["flower"]["command"]
    assert command[:2] == ["sh", "-c"] and command[2].startswith("python -m workers.flower_auth && exec celery")

    def check(value):
        env = {k: v for k, v in os.environ.items() if k != "FLOWER_BASIC_AUTH"}
        if value is not None:
            env["FLOWER_BASIC_AUTH"] = value
        return subprocess.run([sys.executable, "-m", "workers.flower_auth"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)

    for bad in (None, "", "user:", "user:  ", ":secret", "user", "admin:pw,other:"):
        r = check(bad)
        assert r.returncode == 1 and "Flower is not started" in r.stderr, (bad, r.stderr)
    for good in ("admin:s3cret-pass", "a:x,b:y"):
        assert check(good).returncode == 0, good
