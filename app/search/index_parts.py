"""The parts of an index version and the small file that describes them (`modules.json`).

An index version is a folder of parts, each saving and loading itself in a subfolder: the doc
table (ids, captions), the lexical index, the figure-text vectors, the picture vectors, the paper
index, the type index, the spelling vocabulary, the words printed inside the figures and the
pictures' perceptual hashes (the look index).
`modules.json` lists them: each part's name, class and folder, so a reader knows what the version
holds without guessing from file names, and a part can change its class (a compressed vector index
for a big collection) without the others noticing. Classes are looked up in `PART_CLASSES`, never imported by a name read from disk.

Versions written before parts (no `modules.json`; meta.json `format` 1) keep the doc table and
the type index's arrays at the top level: `read_parts` describes them the same way, so they load
as they are, and their spelling vocabulary is built on first use, as it was then.

A vector part (`vectors`, `visual`) answers `search(vectors, k) -> (ids, cosines)` with ids -1
where fewer than k exist, `vectors_for(ids)` (unit float32 vectors read back), `len()`,
`save(folder)` and `load(folder, gpu=, mmap=)`; `VectorIndex` is the exact/IVF one,
`SegmentedVectors` the one of a version that grew by segments (app.pipeline.indexing).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

from app.search.doc_table import DocTable
from app.search.figure_words import FigureWords
from app.search.lexical import LexicalIndex
from app.search.looks import LookIndex
from app.search.papers import PaperIndex
from app.search.segments import SegmentedIndex
from app.search.spelling import Spelling
from app.search.type_index import TypeIndex
from app.search.vector_segments import SegmentedVectors
from app.search.vectors import VectorIndex

MODULES_FILE = "modules.json"

# the classes an index part may be; a class not listed here is refused at load
PART_CLASSES: dict[str, type] = {cls.__name__: cls for cls in
                                 (DocTable, LexicalIndex, SegmentedIndex, VectorIndex, SegmentedVectors,
                                  PaperIndex, TypeIndex, Spelling, FigureWords, LookIndex)}

# the order parts are written and listed in (a part's folder is its name)
PART_NAMES = ("docs", "lexical", "vectors", "visual", "papers", "types", "spelling", "figure_words", "looks")


def write_parts(version_dir: Path, parts: Mapping[str, object]) -> None:
    """Save every part (None: absent) into its folder and describe them in modules.json."""
    listed = []
    for name in PART_NAMES:
        part = parts.get(name)
        if part is None:
            continue
        if type(part).__name__ not in PART_CLASSES:
            raise ValueError(f"index part {name}: class {type(part).__name__} is not in PART_CLASSES")
        part.save(version_dir / name)
        listed.append({"name": name, "class": type(part).__name__, "path": name})
    (version_dir / MODULES_FILE).write_text(json.dumps({"format": 1, "parts": listed}, indent=1))


def read_parts(version_dir: Path) -> dict[str, tuple[type, Path]]:
    """{part name: (class, folder)} of a version, from its modules.json, or for a version written
    before parts, from its meta.json."""
    mf = version_dir / MODULES_FILE
    if mf.exists():
        entries = json.loads(mf.read_text())["parts"]
    else:
        meta = json.loads((version_dir / "meta.json").read_text())
        entries = [{"name": "docs", "class": "DocTable", "path": "."},
                   {"name": "lexical", "class": "LexicalIndex", "path": "lexical"},
                   {"name": "types", "class": "TypeIndex", "path": "."}]
        entries += [{"name": name, "class": cls, "path": name}
                    for name, cls, flag in (("vectors", "VectorIndex", "has_vectors"),
                                            ("visual", "VectorIndex", "has_visual"),
                                            ("papers", "PaperIndex", "has_papers")) if meta.get(flag)]
    out = {}
    for e in entries:
        cls = PART_CLASSES.get(e["class"])
        if cls is None:
            raise ValueError(f"index version {version_dir.name}: part {e['name']} has the unknown class "
                             f"{e['class']} (written by a newer figsearch?)")
        out[e["name"]] = (cls, version_dir / e["path"])
    return out
