"""Exported ONNX models kept on disk between processes, keyed by what was exported.

Exporting the visual backbone to ONNX takes one to three CPU-seconds, and every process that reads
pixels (a CLI command, a server, a worker, an extraction process) did it again. The bytes depend
only on the network's structure, its weights and the exporter, so the first process writes them
here under a key made of those, and the next ones read them (a tenth of a second).

Safe by construction: a file is written aside and renamed into place (a reader never sees half of
one), its name carries the SHA-256 of its bytes, which is checked on every read, and anything that
cannot be read, does not match, or cannot be written is ignored (the caller exports again). The
folder is `FIGSEARCH_CACHE_DIR` (default `$XDG_CACHE_HOME/figsearch`, else `~/.cache/figsearch`),
subfolder `onnx`; the least recently used files beyond `KEEP` are removed.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

from app.settings import Settings

log = logging.getLogger(__name__)

KEEP = 8  # exports kept (one per network, input size and fine-tuned tail in use)
SUFFIX = ".onnx"


def cache_dir() -> Path:
    """The folder of cached exports: the setting, else the user's cache folder."""
    try:
        configured = Settings().cache_dir
    except Exception:  # noqa: BLE001 - another setting invalid: that is reported where it is used
        configured = ""
    if configured:
        root = Path(configured).expanduser()
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "figsearch"
    return root / "onnx"


def _name(key: str, content: bytes) -> str:
    return f"{key}-{hashlib.sha256(content).hexdigest()[:32]}{SUFFIX}"


def load(key: str, folder: Path | None = None) -> bytes | None:
    """The bytes stored under `key`, or None when there are none intact."""
    folder = folder or cache_dir()
    try:
        candidates = sorted(folder.glob(f"{key}-*{SUFFIX}"))
    except OSError:
        return None
    for path in candidates:
        try:
            content = path.read_bytes()
        except OSError:
            continue
        if path.name == _name(key, content):
            try:
                os.utime(path)  # recently used: kept by `_prune`
            except OSError:
                pass
            return content
        log.warning("removing a damaged cached export: %s", path)
        path.unlink(missing_ok=True)
    return None


def save(key: str, content: bytes, folder: Path | None = None) -> Path | None:
    """Store `content` under `key` (atomically); the path, or None when the folder is not writable."""
    folder = folder or cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
            path = folder / _name(key, content)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        log.info("cannot cache an export in %s (%s); it will be exported again", folder, e)
        return None
    _prune(folder)
    return path


def discard(key: str, folder: Path | None = None) -> None:
    """Remove what is stored under `key` (it could not be used)."""
    folder = folder or cache_dir()
    try:
        for path in folder.glob(f"{key}-*{SUFFIX}"):
            path.unlink(missing_ok=True)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    """Remove the least recently used exports beyond KEEP, and files a killed writer left (an hour old)."""
    try:
        files = sorted(folder.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP:]:
            old.unlink(missing_ok=True)
        for tmp in folder.glob(".tmp-*"):
            if time.time() - tmp.stat().st_mtime > 3600:
                tmp.unlink(missing_ok=True)
    except OSError:
        pass
