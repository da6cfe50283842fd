"""Versioned folders on disk (search index versions, trained models): which version to serve, and
whether its files are intact.

A root holds version folders (`v<time>-<random>`) and a CURRENT pointer. Each published version
directory carries `manifest.json`, written last before the directory is
renamed into place: every file's size and SHA-256, and each array's shape and dtype. A version
is served only if its files match its manifest, so a truncated file or an array corrupted at the
same size is never served as "ready" with wrong results; the newest intact version is served
instead (degraded), or none. An empty or dangling CURRENT pointer is repaired from the newest
intact version. Builds write into `.tmp-<version>` while holding an exclusive lock on
`.tmp-<version>.lock`; a temp folder whose lock is free belongs to a dead build and is removed
at the next build or start. Versions written before manifests existed are served unchecked if they
hold a metadata file.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from app.pdfs import file_sha256

log = logging.getLogger(__name__)

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
TMP_PREFIX = ".tmp-"
# version names: v (or m, trained models published before the model store) + time + random suffix
VERSION_NAME = re.compile(r"^[vm]\d{8}T\d{6}-[0-9a-f]{6}$")
# what marks a version written before manifests as complete: the index's and the models' metadata
LEGACY_MARKERS = ("meta.json", "train.json")


class VersionCorrupt(Exception):
    """A version's files do not match its manifest (or it has none of the files it needs)."""


def _label(version_dir: Path) -> str:
    """'index version v...', 'figure-types version v...': the root's name says what it holds."""
    return f"{version_dir.parent.name} version {version_dir.name}"


def _array_header(path: Path) -> dict:
    with open(path, "rb") as f:
        major, _minor = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        shape, _fortran, dtype = read(f)
    return {"shape": list(shape), "dtype": dtype.str}


def _linked_entries(version_dir: Path | None) -> dict[tuple[int, int], dict]:
    """The manifest entries of a version's files by (device, inode): a file hard-linked into a
    newer version is the same file, so its recorded checksum holds there too."""
    try:
        files = json.loads((version_dir / MANIFEST).read_text())["files"]
    except (TypeError, OSError, ValueError, KeyError):
        return {}
    out = {}
    for rel, entry in files.items():
        try:
            st = (version_dir / rel).stat()
        except OSError:
            continue
        if st.st_nlink > 1 and st.st_size == entry.get("bytes"):
            out[(st.st_dev, st.st_ino)] = entry
    return out


def write_manifest(version_dir: Path, previous: Path | None = None) -> None:
    """Record every file of the version (size, SHA-256, and for arrays shape and dtype). Files
    hard-linked from the `previous` version take its entries instead of being read again."""
    known = _linked_entries(previous)
    files = {}
    for p in sorted(version_dir.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            st = p.stat()
            entry = known.get((st.st_dev, st.st_ino))
            if entry is None or entry["bytes"] != st.st_size:
                entry = {"bytes": st.st_size, "sha256": file_sha256(p)}
                if p.suffix == ".npy":
                    entry.update(_array_header(p))
            files[p.relative_to(version_dir).as_posix()] = entry
    tmp = version_dir / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps({"format": 1, "files": files}))
    os.replace(tmp, version_dir / MANIFEST)


def check_version(version_dir: Path) -> None:
    """Raise VersionCorrupt naming the first file that does not match the manifest. A version
    removed while it is checked (an older one pruned by a concurrent publish) is not intact either."""
    version_dir = Path(version_dir)
    try:
        _check_files(version_dir, _label(version_dir))
    except FileNotFoundError as exc:
        raise VersionCorrupt(f"{_label(version_dir)} was removed while it was checked ({exc.filename})") from None


def _check_files(version_dir: Path, name: str) -> None:
    if not version_dir.is_dir():
        raise VersionCorrupt(f"{name} does not exist")
    mf = version_dir / MANIFEST
    if not mf.exists():
        if not any((version_dir / m).exists() for m in LEGACY_MARKERS):
            raise VersionCorrupt(f"{name} has neither a manifest nor {' nor '.join(LEGACY_MARKERS)}")
        return  # written before manifests: served unchecked
    try:
        files = json.loads(mf.read_text())["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise VersionCorrupt(f"{name}: unreadable manifest ({exc})") from None
    for rel, want in files.items():
        p = version_dir / rel
        if not p.is_file():
            raise VersionCorrupt(f"{name}: {rel} is missing")
        size = p.stat().st_size
        if size != want["bytes"]:
            raise VersionCorrupt(f"{name}: {rel} has {size} bytes, the manifest says {want['bytes']}")
        if "shape" in want:
            try:
                got = _array_header(p)
            except Exception as exc:  # noqa: BLE001 - any unreadable header is corruption
                raise VersionCorrupt(f"{name}: {rel} is not a readable array ({exc})") from None
            if got != {"shape": want["shape"], "dtype": want["dtype"]}:
                raise VersionCorrupt(f"{name}: {rel} is {got}, the manifest says "
                                   f"shape {want['shape']} dtype {want['dtype']}")
        if file_sha256(p) != want["sha256"]:
            raise VersionCorrupt(f"{name}: {rel} does not match its checksum")


def versions(root: Path) -> list[str]:
    """Published version names, newest first (by the time their folder was finished, then name)."""
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        if VERSION_NAME.match(p.name):
            try:
                if p.is_dir():
                    found.append((p.stat().st_mtime_ns, p.name))
            except FileNotFoundError:  # removed since it was listed
                continue
    return [name for _t, name in sorted(found, reverse=True)]


def read_current(root: Path) -> str | None:
    """What CURRENT names (None: no CURRENT file, or an empty one)."""
    try:
        return (root / CURRENT).read_text().strip() or None
    except FileNotFoundError:
        return None


def point_current(root: Path, version: str) -> None:
    """Atomically make `version` the CURRENT one."""
    ptr = root / f".{CURRENT}.{version}.{os.getpid()}.tmp"
    ptr.write_text(version + "\n")
    with open(ptr) as f:
        os.fsync(f.fileno())
    os.replace(ptr, root / CURRENT)


@dataclass
class Choice:
    version: str | None  # what to serve (None: nothing intact)
    problem: str | None = None  # why it is not what CURRENT names (degraded), or why nothing is served
    published: bool = False  # a version was published here (CURRENT or a version exists)


def choose(root: Path, skip: set[str] = frozenset(), repair: bool = True,
           check: Callable[[Path], None] = check_version) -> Choice:
    """The version to serve: CURRENT's if intact, else the newest intact one (versions in `skip`
    are known bad). An empty or dangling CURRENT is repaired to point at that version. `check`
    raises VersionCorrupt for a version that must not be served."""
    root = Path(root)
    named = read_current(root)
    published = (root / CURRENT).exists() or bool(versions(root))
    problem = None
    if named is not None and named not in skip:
        try:
            check(root / named)
            return Choice(named, None, True)
        except VersionCorrupt as exc:
            problem = str(exc)
    elif named is not None:
        problem = f"{_label(root / named)} failed its check"
    elif (root / CURRENT).exists():
        problem = f"the CURRENT pointer of {root.name} is empty"
    for v in versions(root):
        if v == named or v in skip:
            continue
        try:
            check(root / v)
        except VersionCorrupt as exc:
            log.warning("skipping %s", exc)
            continue
        dangling = named is None or not (root / named).is_dir()
        if repair and dangling:
            point_current(root, v)
            log.warning("%s; CURRENT repaired to %s", problem or f"no CURRENT pointer in {root.name}", v)
            return Choice(v, None, True)
        return Choice(v, problem, True)
    return Choice(None, problem or (f"no intact version in {root.name}" if published else None), published)


# ------------------------------------------------------------------ builds
class BuildLock:
    """Held by a build while it writes `.tmp-<version>`; the OS frees it when the build dies."""

    def __init__(self, root: Path, version: str):
        self.path = root / f"{TMP_PREFIX}{version}.lock"
        self._fd: int | None = None

    def __enter__(self) -> "BuildLock":
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None


@contextmanager
def work_dir(root: Path):
    """A scratch folder under `root` for a build's intermediate files (on the index's file system,
    so they can be hard-linked into the version), held under a build lock and removed afterwards
    (or by the next build when this one dies)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    name = f"work-{secrets.token_hex(4)}"
    path = root / f"{TMP_PREFIX}{name}"
    with BuildLock(root, name):
        path.mkdir()
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


def remove_dead_builds(root: Path, min_age_s: float = 60.0) -> int:
    """Remove temp folders (and pointer temp files) of builds that died; returns how many. A
    temp folder whose lock is held belongs to a running build and stays."""
    root = Path(root)
    if not root.is_dir():
        return 0
    removed = 0
    for p in root.iterdir():
        if p.name.startswith(TMP_PREFIX) and p.is_dir():
            lock = root / f"{p.name}.lock"
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue  # a live build
            try:
                shutil.rmtree(p, ignore_errors=True)
                lock.unlink(missing_ok=True)
                removed += 1
                log.warning("removed %s, left by a build that died", p.name)
            finally:
                os.close(fd)
        elif p.name.startswith(f".{CURRENT}.") and p.name.endswith(".tmp") and time.time() - p.stat().st_mtime > min_age_s:
            p.unlink(missing_ok=True)
        elif p.name.startswith(TMP_PREFIX) and p.name.endswith(".lock") and not (root / p.name[:-5]).exists():
            fd = os.open(p, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                p.unlink(missing_ok=True)
            except OSError:
                pass
            finally:
                os.close(fd)
    return removed


def link_tree(src: Path, dst: Path) -> None:
    """Give folder `dst` the files of `src` as hard links (copies across file systems): how a new
    version reuses an older version's immutable files. Each version holds its own links, so
    deleting the older one leaves the newer intact."""
    for f in Path(src).rglob("*"):
        target = Path(dst) / f.relative_to(src)
        if f.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(f, target)
        except OSError:  # another file system
            shutil.copyfile(f, target)


def current_version(root: str | Path) -> str | None:
    """Name of the CURRENT version (one small file read; poll it to detect a new version)."""
    return read_current(Path(root))


def publish(root: str | Path, fill: Callable[[Path], None], keep: int | None = 3) -> str:
    """Write a new version with `fill(directory)` under a build lock, record its manifest, rename
    it into place, then point CURRENT at it. Versions beyond the newest `keep` are deleted (None =
    keep all). Returns the version name."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    remove_dead_builds(root)
    version = time.strftime("v%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
    tmp = root / f"{TMP_PREFIX}{version}"
    with BuildLock(root, version):
        try:
            fill(tmp)
            previous = read_current(root)
            write_manifest(tmp, None if previous is None else root / previous)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # nothing half-written stays behind
            raise
        os.replace(tmp, root / version)
    point_current(root, version)
    if keep is not None:
        olds = sorted(p for p in root.iterdir() if p.is_dir() and VERSION_NAME.match(p.name) and p.name != version)
        for p in olds[: max(0, len(olds) - (keep - 1))]:
            shutil.rmtree(p, ignore_errors=True)
    return version
