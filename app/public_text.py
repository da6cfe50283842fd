"""What users may see of server paths: nothing absolute. One rule for every place that shows a
file name or an error (the API, the web UI through it, the CLI):

- a file uploaded through the API is named as the uploader named it (`paper.pdf`, or
  `bundle.zip:dir/paper.pdf` for a zip member), without the upload folder;
- a file unpacked into a job's staging folder by its name there;
- any other file of the data dir relative to the data dir (`figures/ab/12.png`);
- any other absolute path in an error text by its last component; file names of a job given
  as absolute paths (`figsearch ingest /home/x/papers/...`) relative to the folder holding them all.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath

from app.settings import Settings

_UPLOAD_SLOT = r"/uploads/[^/\s'\"]+/\d+/"  # data_dir/uploads/<job>/<NN>/<uploaded name>
_STAGING = r"/incoming/[^/\s'\"]+/"  # data_dir/incoming/<job>/<member>
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s'\"/:]+/)+([^\s'\"/:]*)")


def _data_roots(settings: Settings) -> list[str]:
    """The data dir as given and as resolved (a symlinked data dir appears both ways), longest first."""
    roots = {str(settings.data_dir.absolute()), str(settings.data_dir.resolve())}
    return sorted(roots, key=len, reverse=True)


def public_text(settings: Settings, text: str) -> str:
    """`text` (an error message, a file name) with no absolute server path left in it."""
    if not text or "/" not in text:
        return text
    for root in _data_roots(settings):
        r = re.escape(root.rstrip("/"))
        text = re.sub(r + "(?:" + _UPLOAD_SLOT + "|" + _STAGING + ")", "", text)
        text = re.sub(r + r"/(?=[^\s'\"])", "", text)  # other files of the data dir: relative to it
    return _ABSOLUTE_PATH.sub(lambda m: m.group(1) or "/", text)


def _split_zip(name: str) -> tuple[str, str]:
    """'/x/bundle.zip:dir/a.pdf' -> ('/x/bundle.zip', ':dir/a.pdf'); other names -> (name, '')."""
    i = name.lower().find(".zip:")
    return (name[:i + 4], name[i + 4:]) if i >= 0 else (name, "")


def public_names(settings: Settings, job_id: str, names: list[str]) -> list[str]:
    """A job's file names as shown to users, never absolute: uploads and staged members as in
    `public_text`, files of the data dir relative to it, other absolute paths (given to
    `figsearch ingest` or the server-side path field) relative to the folder holding all of them
    (so two files of the same name in different folders stay apart)."""
    roots = [PurePosixPath(r) for r in _data_roots(settings)]

    def in_data(p: PurePosixPath) -> bool:
        return any(p.is_relative_to(r) for r in roots)

    outside = [PurePosixPath(_split_zip(n)[0]) for n in names
               if n.startswith("/") and not in_data(PurePosixPath(_split_zip(n)[0]))]
    common = PurePosixPath("/")
    if outside:
        parts = [p.parent.parts for p in outside]
        first = parts[0]
        k = 0
        while k < len(first) and all(len(q) > k and q[k] == first[k] for q in parts):
            k += 1
        common = PurePosixPath(*first[:k]) if k else PurePosixPath("/")
    out = []
    for n in names:
        path, member = _split_zip(n)
        p = PurePosixPath(path)
        if not n.startswith("/") or in_data(p):
            shown = public_text(settings, path)
        else:
            rel = str(p.relative_to(common)) if p != common else p.name
            shown = rel if rel not in ("", ".") else p.name or "file"
        out.append((shown or p.name or "file") + public_text(settings, member))
    return out
