"""Turn what the user names (PDFs, folders, .zip files) into a flat list of input files.

Zip archives are unpacked into the data dir with guards against path traversal and zip bombs;
a refused member becomes an input with an error, so it is reported rather than lost.
"""
from __future__ import annotations

import os
import re
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from app.ingest import failures
from app.settings import Settings


@dataclass
class InputFile:
    name: str  # what the user sees: the path given, or "archive.zip:member.pdf"
    path: str  # where to read it ("" when refused before reading)
    error: str = ""
    skipped: bool = False  # not a PDF (zip member of another type, nested zip): listed, never read
    error_kind: str | None = None  # why it was refused (app/ingest/failures.py), unless skipped


@dataclass
class ByteBudget:
    """Bytes that unpacking may still write (the upload quota), shared by every zip of a job."""
    left: int


EMPTY = "empty file (0 bytes)"


class SourceError(Exception):
    """A path the user named does not exist or cannot be read (a usage error)."""


def _is_pdf_name(name: str) -> bool:
    return name.lower().endswith(".pdf")


def _safe_member_name(name: str) -> str | None:
    """The member's relative path if it stays inside the target dir, else None."""
    if "\x00" in name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return None
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if any(p == ".." for p in parts) or not parts:
        return None
    return "/".join(parts)


def _copy_capped(src, dst: Path, cap: int) -> int:
    """Copy a stream but stop at `cap` bytes: declared sizes in a zip can lie."""
    n = 0
    with open(dst, "wb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                return n
            n += len(chunk)
            if n > cap:
                raise ValueError("member larger than its declared size or the size limit")
            out.write(chunk)


def unpack_zip(zpath: Path, dest: Path, settings: Settings, label: str | None = None,
               quota: ByteBudget | None = None) -> list[InputFile]:
    """The PDF members of a zip, unpacked into `dest`; every other member is listed as skipped
    with its reason (nested zips are not opened)."""
    label = label or zpath.name
    try:
        zf = zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as exc:
        return [InputFile(label, "", f"unreadable zip: {exc}", error_kind=failures.DAMAGED)]
    out: list[InputFile] = []
    max_file = int(settings.max_file_mb * 1024 * 1024)
    budget = int(settings.zip_max_total_mb * 1024 * 1024)
    if quota is not None and quota.left < budget:
        budget, limited_by_quota = max(quota.left, 0), True
    else:
        limited_by_quota = False
    written = 0
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) > settings.zip_max_members:
            return [InputFile(label, "", f"zip has {len(members)} members (limit {settings.zip_max_members})",
                              error_kind=failures.TOO_LARGE)]
        dest.mkdir(parents=True, exist_ok=True)
        for i, m in enumerate(members):
            name = f"{label}:{m.filename}"
            if m.filename.lower().endswith(".zip"):
                out.append(InputFile(name, "", "skipped: zip inside a zip (nested archives are not unpacked)",
                                     skipped=True))
                continue
            if not _is_pdf_name(m.filename):
                out.append(InputFile(name, "", "skipped: not a PDF", skipped=True))
                continue
            safe = _safe_member_name(m.filename)
            if safe is None:
                out.append(InputFile(name, "", "refused: unsafe path in zip (absolute or '..')",
                                     error_kind=failures.UNSAFE))
                continue
            if m.flag_bits & 0x1:
                out.append(InputFile(name, "", "refused: encrypted zip member", error_kind=failures.ENCRYPTED))
                continue
            ratio = m.file_size / max(m.compress_size, 1)
            if m.file_size > max_file or ratio > settings.zip_max_ratio:
                out.append(InputFile(name, "", f"refused: zip bomb guard (size {m.file_size} B, ratio {ratio:.0f}x)",
                                     error_kind=failures.TOO_LARGE))
                continue
            if m.file_size > budget - written:
                why = "upload quota (FIGSEARCH_UPLOAD_QUOTA_MB)" if limited_by_quota else \
                    f"unpacked size limit of the zip ({settings.zip_max_total_mb:g} MB)"
                out.append(InputFile(name, "", f"refused: over the {why}", error_kind=failures.TOO_LARGE))
                continue
            target = dest / f"{i:05d}_{Path(safe).name}"
            try:
                with zf.open(m) as src:
                    written += _copy_capped(src, target, min(max_file, budget - written, m.file_size))
            except Exception as exc:  # bad CRC, lying sizes, truncated archive
                target.unlink(missing_ok=True)
                out.append(InputFile(name, "", f"refused: cannot unpack member: {exc}", error_kind=failures.DAMAGED))
                continue
            out.append(InputFile(name, str(target)))
    if quota is not None:
        quota.left -= written
    return out


def expand_inputs(paths: list[str | Path], settings: Settings, staging: Path,
                  quota: ByteBudget | None = None) -> list[InputFile]:
    """PDF files, folders (recursive, *.pdf and *.zip) and zip files -> input files.

    Raises SourceError for a path that does not exist (a usage error, caught by the CLI).
    """
    files: list[InputFile] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise SourceError(f"no such file or directory: {raw}")
        if p.is_dir():
            for root, dirs, names in os.walk(p):
                dirs.sort()
                for n in sorted(names):
                    full = Path(root) / n
                    if n.lower().endswith(".zip"):
                        files += unpack_zip(full, staging / f"z{len(files):05d}", settings, str(full), quota)
                    elif _is_pdf_name(n):
                        files.append(InputFile(str(full), str(full.resolve())))
        elif p.suffix.lower() == ".zip" and zipfile.is_zipfile(p):
            files += unpack_zip(p, staging / f"z{len(files):05d}", settings, str(p), quota)
        else:
            files.append(InputFile(str(p), str(p.resolve())))
    return [_refused_if_empty(f) for f in files]


def _refused_if_empty(f: InputFile) -> InputFile:
    """An empty file is failed when the job is recorded: never sent to a worker, and never the
    duplicate of another empty file (all have the same hash)."""
    try:
        empty = bool(f.path) and not f.error and os.path.getsize(f.path) == 0
    except OSError:
        return f  # the extraction reports what is wrong with it
    return InputFile(f.name, "", EMPTY, error_kind=failures.NOT_PDF) if empty else f


def copy_to_shared(files: list[InputFile], staging: Path, shared: Path) -> list[InputFile]:
    """Distributed mode: workers read from the data dir (`shared`), so bring outside files into it."""
    staging.mkdir(parents=True, exist_ok=True)
    out = []
    for i, f in enumerate(files):
        if not f.path or Path(f.path).is_relative_to(shared):
            out.append(f)
            continue
        target = staging / f"{i:05d}_{Path(f.path).name}"
        try:
            shutil.copyfile(f.path, target)
            out.append(InputFile(f.name, str(target)))
        except OSError as exc:
            out.append(InputFile(f.name, "", f"cannot read file: {exc}", error_kind=failures.MISSING))
    return out
