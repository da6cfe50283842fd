"""Admin uploads streamed straight into the job's folder of the data dir's upload area.

Starlette's form parser spools file parts to the system temp dir; this one writes each file part
to data_dir/uploads/<job>/<NNN>/<name> as it arrives, leaves out a part of an unsupported type at
its headers (its bytes are read past, never written; the part is named in the answer and listed in
the job as skipped, as a zip's non-PDF member is), and stops at the byte allowance (request limit or
what is left of the upload quota). A server killed mid-upload leaves a folder no job owns, removed at start-up.
"""
from __future__ import annotations

from pathlib import Path

from fastapi import HTTPException
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser, parse_options_header
from starlette.requests import Request

from app.api.jobs import safe_filename
from app.settings import Settings

_ALIASES = {"application/x-zip-compressed": "application/zip", "application/x-zip": "application/zip",
            "multipart/x-zip": "application/zip", "application/x-pdf": "application/pdf",
            "application/acrobat": "application/pdf"}
_BY_EXTENSION = {".pdf": "application/pdf", ".zip": "application/zip"}

# The OpenAPI description of the multipart body (the route parses it itself).
UPLOAD_REQUEST_BODY = {
    "required": True,
    "content": {"multipart/form-data": {
        "schema": {
            "type": "object", "title": "Upload",
            "properties": {
                "files": {"type": "array", "minItems": 1,
                          "items": {"type": "string", "contentMediaType": "application/octet-stream"},
                          "description": "PDF files and/or zip archives of PDFs."},
                "path": {"type": "string", "minLength": 1, "description": "A folder, PDF or zip on the server "
                                                                          "(needs FIGSEARCH_ALLOW_SERVER_PATHS=true)."},
            },
            "anyOf": [{"required": ["files"]}, {"required": ["path"]}]},
        "encoding": {"files": {"contentType": "application/pdf, application/zip"}}}},
}


def upload_type(filename: str, content_type: str | None) -> str:
    """The declared content type, normalised; browsers send octet-stream for unknown types, so
    then the extension decides."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    ctype = _ALIASES.get(ctype, ctype)
    if ctype in ("", "application/octet-stream", "binary/octet-stream"):
        ctype = _BY_EXTENSION.get(Path(filename or "").suffix.lower(), ctype or "unknown")
    return ctype


class UploadAreaParser(MultiPartParser):
    """Starlette's multipart parser with file parts written to files in `dest`."""

    def __init__(self, request: Request, dest: Path, settings: Settings, allowance: int, quota_limited: bool):
        super().__init__(request.headers, request.stream(), max_files=1000, max_fields=20)
        self.dest, self.settings = dest, settings
        self.allowance, self.quota_limited, self.written = allowance, quota_limited, 0
        self.paths: list[Path] = []
        self.refused: list[tuple[str, str]] = []  # (uploaded name, why) of the parts left out
        self._refusing = False

    def on_headers_finished(self) -> None:
        # a 'files' part is a file even without a filename (RFC 7578 makes it optional)
        _, options = parse_options_header(self._current_part.content_disposition)
        if options.get(b"name") == b"files" and b"filename" not in options:
            self._current_part.content_disposition += b'; filename=""'
        super().on_headers_finished()
        self._refusing = False
        upload = self._current_part.file
        if upload is None:
            return
        ctype = upload_type(upload.filename or "", upload.headers.get("content-type"))
        if ctype not in self.settings.upload_types:
            self.refused.append((upload.filename or f"upload-{len(self.paths) + len(self.refused)}",
                                 f"skipped: unsupported type {ctype!r} (accepted: "
                                 f"{', '.join(self.settings.upload_types)})"))
            self._refusing = True
            return
        i = len(self.paths)
        slot = self.dest / f"{i:03d}"
        slot.mkdir(parents=True, exist_ok=True)
        target = slot / safe_filename(upload.filename or "", f"upload-{i}.pdf")
        upload.file.close()  # the spooled temp file Starlette made: replaced by a file in the upload area
        upload.file = open(target, "w+b")
        self._files_to_close_on_error.append(upload.file)
        self.paths.append(target)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._refusing:  # read past, never written (the request's own size limit still bounds it)
            return
        if self._current_part.file is not None:
            self.written += end - start
            if self.written > self.allowance:
                if self.quota_limited:
                    raise HTTPException(507, "the upload area is full (FIGSEARCH_UPLOAD_QUOTA_MB): wait for "
                                             "running jobs to finish or ask the operator to raise the quota")
                raise HTTPException(413, f"upload too large: over the {self.settings.max_upload_mb:g} MB limit",
                                    headers={"Connection": "close"})
        super().on_part_data(data, start, end)

    def on_part_end(self) -> None:
        if self._refusing:  # not in the form: the caller has it in `refused`
            self._current_part.file.file.close()
            self._refusing = False
            return
        super().on_part_end()


async def read_upload(request: Request, dest: Path, settings: Settings, allowance: int,
                      quota_limited: bool) -> tuple[list[tuple[str, Path]], str, list[tuple[str, str]]]:
    """([(uploaded name, path in the upload area)], server path field, [(uploaded name, why)] of
    the files left out for their type). The caller removes `dest` when anything goes wrong."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    refused: list[tuple[str, str]] = []
    if ctype in ("", "application/x-www-form-urlencoded"):  # no files: at most the server path field
        form: FormData = await request.form(max_fields=20) if ctype else FormData()
    elif ctype == "multipart/form-data":
        parser = UploadAreaParser(request, dest, settings, allowance, quota_limited)
        try:
            form = await parser.parse()
        except MultiPartException as exc:
            raise HTTPException(400, exc.message)
        refused = parser.refused
    else:
        raise HTTPException(415, f"send the files as multipart/form-data (field 'files'), not {ctype!r}")
    files = []
    for value in form.getlist("files"):
        if isinstance(value, UploadFile):
            value.file.close()
            path = Path(value.file.name)
            if value.filename or path.stat().st_size:
                files.append((value.filename or path.name, path))
    for key, value in form.multi_items():
        if isinstance(value, UploadFile) and key != "files":
            value.file.close()
    path_field = form.get("path")
    if isinstance(path_field, str) and not path_field.strip():
        raise HTTPException(422, "path: a server path must not be empty (leave the field out instead)")
    return files, path_field.strip() if isinstance(path_field, str) else "", refused
