"""Index versions: immutable directories under an index root and a CURRENT pointer file.

A version is written under a temporary name, renamed into place, and only then does CURRENT
point at it (atomic replace), so a running service polling `current_version` never reads a
half-written version."""
from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Callable

CURRENT = "CURRENT"


def current_version(index_root: str | Path) -> str | None:
    """Name of the CURRENT version (one small file read; poll it to detect a new index)."""
    try:
        v = (Path(index_root) / CURRENT).read_text().strip()
    except FileNotFoundError:
        return None
    return v or None


def publish(index_root: str | Path, fill: Callable[[Path], None], keep: int | None = 3) -> str:
    """Write a new version with `fill(directory)`, then point CURRENT at it. Versions beyond the
    newest `keep` are deleted (None = keep all). Returns the version name."""
    root = Path(index_root)
    root.mkdir(parents=True, exist_ok=True)
    version = time.strftime("v%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    tmp = root / f".tmp-{version}"
    fill(tmp)
    os.replace(tmp, root / version)
    ptr = root / f".{CURRENT}.{version}.tmp"
    ptr.write_text(version + "\n")
    with open(ptr) as f:
        os.fsync(f.fileno())
    os.replace(ptr, root / CURRENT)
    if keep is not None:
        olds = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("v") and p.name != version)
        for p in olds[: max(0, len(olds) - (keep - 1))]:
            shutil.rmtree(p, ignore_errors=True)
    return version
