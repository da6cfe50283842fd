"""The one store of trained artifacts: versioned folders with a CURRENT pointer and a meta.json.

Every trained artifact (figure-type head, central-figure model, learned figure embeddings,
scanned-page encoder, ranking configuration) is a folder `<root>/<name>/<version>/` published
like an index version (app/model_store/versions.py: written aside, manifest of sizes and SHA-256,
renamed into place, CURRENT swapped atomically). Its `meta.json` says what it is, which data
trained it (the SHA-256 of the papers' PDFs where papers were used), its metrics, the code that
made it and the command to make it again, so a result can always be traced to its inputs.

Where an artifact is looked up, in order: the data dir (`DATA_DIR/models/<name>`), then the
defaults shipped inside the package (`app/model_store/shipped/<name>`, same layout), so a
collection can override a shipped model by training its own. A version whose files do not match
its manifest, or that holds a pickle, is skipped for the newest intact one. The ranking
configuration is the exception to the place, not to the format: it is fitted for one search index
version, so it lives inside that version (`DATA_DIR/index/<version>/ranking/`).
"""
from __future__ import annotations

import functools
import json
import logging
import os
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from app.model_store import versions
from app.model_store.safe_io import UnsafeArtifact, refuse_pickles

log = logging.getLogger(__name__)

META = "meta.json"
MODELS = "models"
SHIPPED = Path(__file__).with_name("shipped")
INDEX = "index"  # DATA_DIR/index: search index versions (app/search)
RANKING = "ranking"  # the ranking configuration's folder inside an index version

# What each artifact is, for `figsearch models` (also when none is trained yet).
KNOWN: dict[str, str] = {
    "figure-types": "figure-type head and picture projection over the pretrained backbone's features, "
                    "with the backbone's fine-tuned last blocks when trained so (figsearch train-types)",
    "central": "central-figure content model: a tuned MiniLM bi-encoder (figsearch train-central)",
    "central-weights": "weights of the combined central-figure score (figsearch eval-central --save-weights)",
    "fused": "learned figure embeddings, the default model (figsearch train)",
    "scan-topics": "OCR-free scanned-page encoder and its text space (figsearch train-scan-topics)",
    RANKING: "ranking of related figures and text search, fitted for an index version (figsearch fit)",
}


@dataclass(frozen=True)
class Artifact:
    name: str
    version: str | None  # None: a folder outside the versioned layout (older saves, an explicit path)
    path: Path
    source: str  # "data dir", "shipped", "index", or "path"
    meta: dict = field(default_factory=dict, compare=False)
    problem: str | None = None  # why this is not the version CURRENT names (served degraded)


# ------------------------------------------------------------------ meta.json
@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """`git describe` of the checkout the code runs from, else the installed package's version."""
    repo = Path(__file__).resolve().parents[2]
    if (repo / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(repo), "describe", "--always", "--dirty", "--tags"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return f"git {out.stdout.strip()}"
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        from importlib.metadata import version

        return f"figsearch {version('figsearch')}"
    except Exception:  # noqa: BLE001 - not installed: say so rather than fail a training
        return "unknown"


def _invocation() -> str:
    """The command line this process runs, with the CLI named `figsearch` however it was started."""
    program = sys.argv[0] if sys.argv else ""
    cli = Path(program).name == "figsearch" or Path(program).parts[-3:] == ("app", "cli", "__main__.py")
    return shlex.join(["figsearch" if cli else program, *sys.argv[1:]])


def make_meta(kind: str, what: str, *, command: str | None = None, papers: Iterable[str] | None = None,
              data: dict | None = None, metrics: dict | None = None, **extra) -> dict:
    """The fields every meta.json has: kind, what, training data (paper SHA-256s and/or a
    description), metrics, code version, creation time and the command that made it."""
    shas = sorted({p.lower() for p in papers if p}) if papers is not None else None
    training = dict(data or {})
    if shas is not None:
        training.update(n_papers=len(shas), papers=shas)
    return {"kind": kind, "what": what, "training_data": training, "metrics": metrics or {},
            "code_version": code_version(), "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": command or _invocation(), **extra}


def write_meta(folder: Path, meta: dict) -> None:
    folder = Path(folder)
    tmp = folder / f".{META}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, folder / META)


def read_meta(folder: Path) -> dict:
    try:
        return json.loads((Path(folder) / META).read_text())
    except (FileNotFoundError, ValueError):
        return {}


# ------------------------------------------------------------------ lookup
def models_root(data_dir: Path) -> Path:
    return Path(data_dir) / MODELS


_verified: dict[str, tuple] = {}
_verified_lock = threading.Lock()


def _stamp(folder: Path) -> tuple:
    return tuple(sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()))


def check(folder: Path) -> None:
    """Raise VersionCorrupt if a version's files do not match its manifest or one is a pickle.
    A folder checked before is checked again only when one of its files changed."""
    folder = Path(folder)
    if not folder.is_dir():
        raise versions.VersionCorrupt(f"{folder.parent.name} version {folder.name} does not exist")
    stamp = _stamp(folder)
    with _verified_lock:
        if _verified.get(str(folder)) == stamp:
            return
    versions.check_version(folder)
    refuse_pickles(folder)
    with _verified_lock:
        _verified[str(folder)] = stamp


def _resolve_root(name: str, root: Path, source: str) -> Artifact | None:
    choice = versions.choose(root, check=check)
    if choice.version is not None:
        path = root / choice.version
        return Artifact(name, choice.version, path, source, read_meta(path), choice.problem)
    if choice.problem:
        log.error("%s: %s", root, choice.problem)
        return None
    if (root / META).is_file():  # saved in place before the store existed
        refuse_pickles(root)
        return Artifact(name, None, root, source, read_meta(root))
    return None


def resolve(name: str, data_dir: Path | None = None, shipped: bool = True) -> Artifact | None:
    """The artifact to use: the data dir's CURRENT (intact) version, else the shipped default,
    else None."""
    if data_dir is not None:
        found = _resolve_root(name, models_root(data_dir) / name, "data dir")
        if found is not None:
            return found
    if shipped:
        return _resolve_root(name, SHIPPED / name, "shipped")
    return None


def at_path(name: str, path: Path) -> Artifact:
    """An artifact at an explicit folder: a store root (its CURRENT version), a version folder, or
    a folder saved in place."""
    path = Path(path)
    if (path / versions.CURRENT).exists() or versions.versions(path):
        found = _resolve_root(name, path, "path")
        if found is None:
            raise FileNotFoundError(f"no intact {name} version under {path}")
        return found
    if not (path / META).is_file():
        raise FileNotFoundError(f"no {name} in {path} (no {META})")
    if (path / versions.MANIFEST).exists():
        check(path)
    else:
        refuse_pickles(path)
    return Artifact(name, path.name if versions.VERSION_NAME.match(path.name) else None, path, "path",
                    read_meta(path))


def publish(name: str, fill: Callable[[Path], None], meta: dict, data_dir: Path | None = None,
            root: Path | None = None, keep: int | None = 3) -> Artifact:
    """Publish a new version of `name` under DATA_DIR/models (or the store root `root`): `fill`
    writes the files into a fresh folder, then meta.json gets `meta` (over any meta.json `fill`
    wrote), pickles are refused, and the version is published with its manifest. Returns it."""
    if (data_dir is None) == (root is None):
        raise ValueError("give a data dir or a store root")
    base = Path(root) if root is not None else models_root(data_dir)
    target = base / name

    def fill_all(tmp: Path) -> None:
        tmp.mkdir(parents=True)
        fill(tmp)
        write_meta(tmp, {**read_meta(tmp), **meta})
        refuse_pickles(tmp)

    version = versions.publish(target, fill_all, keep)
    path = target / version
    return Artifact(name, version, path, "data dir" if data_dir is not None else "path", read_meta(path))


def ranking_artifact(data_dir: Path) -> Artifact | None:
    """The ranking configuration of the CURRENT index version (not re-verified here: the index's
    own loading checks its manifest). None when no index exists."""
    index = Path(data_dir) / INDEX
    version = versions.read_current(index)
    if version is None or not (index / version).is_dir():
        return None
    path = index / version / RANKING
    if not path.is_dir():  # an index written before the model store: the config without its meta.json
        return Artifact(RANKING, version, index / version, "index", {}, f"no {RANKING}/{META} in this index "
                        "version (written before the model store); `figsearch index` or `figsearch fit` adds one")
    return Artifact(RANKING, version, path, "index", read_meta(path))


def list_artifacts(data_dir: Path | None) -> list[dict]:
    """One row per artifact, known or found: what is in use, from where, and its meta.json."""
    names = list(KNOWN)
    for base in ([models_root(data_dir)] if data_dir is not None else []) + [SHIPPED]:
        if base.is_dir():
            names += sorted(p.name for p in base.iterdir() if p.is_dir() and p.name not in names
                            and not p.name.startswith("."))
    rows = []
    for name in names:
        try:
            art = ranking_artifact(data_dir) if name == RANKING and data_dir is not None else \
                (None if name == RANKING else resolve(name, data_dir))
            error = None
        except (OSError, UnsafeArtifact) as exc:
            art, error = None, str(exc)
        meta = art.meta if art is not None else {}
        rows.append({"name": name, "kind": meta.get("kind"), "what": meta.get("what") or KNOWN.get(name, ""),
                     "version": art.version if art else None, "source": art.source if art else None,
                     "path": str(art.path) if art else None, "created_at": meta.get("created_at"),
                     "training_data": meta.get("training_data"), "metrics": meta.get("metrics"),
                     "code_version": meta.get("code_version"), "command": meta.get("command"),
                     "problem": error or (art.problem if art else None)})
    return rows
