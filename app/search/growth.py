"""Growing an index version by segments instead of rebuilding it.

A build after new (or removed, or re-ingested) papers keeps the previous version's rows: the
lexical postings and the vectors of the figures that did not change are reused as they are
(hard links), the new and changed figures are appended as one small segment of each (lexical
through `SegmentedIndex`, figure-text and picture vectors through `SegmentedVectors`), and the
rows of removed or changed figures become deleted rows (tombstones). What changed is told by
each row's fingerprint (`fingerprints`). Statistics of the lexical index leave out deleted rows
and vector searches skip them, so a grown version ranks as a full rebuild of the same figures
does; a merge rewrites the segments as one, without the deleted rows (renumbering the rows).

Parts that describe the whole collection (type index, paper views, spelling) are not row
segments: the build makes them again for the grown rows (app.pipeline.indexing).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from app.search.doc_table import Captions, DocTable, FigureDoc
from app.search.lexical import LexicalIndex
from app.search.segments import SegmentedIndex
from app.search.text import analyze
from app.search.vector_segments import SegmentedVectors
from app.search.vectors import VectorIndex


def fingerprints(docs: Sequence[FigureDoc], crops: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per figure of what its row indexes: text, caption, kind, crop path and the
    words inside it."""
    out = np.empty(len(docs), np.int64)
    for i, (d, crop) in enumerate(zip(docs, crops)):
        h = hashlib.blake2b(digest_size=8)
        for field in (d.text, d.caption, d.kind, crop or ""):
            h.update(field.encode("utf-8", "replace") + b"\x00")
        if d.words:  # a figure without words keeps the fingerprint it had before words were indexed
            h.update(d.words.encode("utf-8", "replace") + b"\x00")
        out[i] = np.frombuffer(h.digest(), dtype=np.int64)[0]
    return out


@dataclass
class Changes:
    """What a build adds to and removes from the previous version's rows."""

    deleted_rows: np.ndarray  # previous rows whose figure is gone or changed
    added: np.ndarray         # positions (in the new collection's docs) of new or changed figures

    @property
    def size(self) -> int:
        return len(self.deleted_rows) + len(self.added)


def changes(previous: DocTable, figure_ids: np.ndarray, prints: np.ndarray) -> Changes | None:
    """The rows to delete and the figures to add; None when the previous version has no
    fingerprints (written before they existed: it can only be rebuilt)."""
    if previous.fingerprints is None:
        return None
    figure_ids = np.asarray(figure_ids, dtype=np.int64)
    live = previous.live_rows
    before = dict(zip(previous.figure_ids[live].tolist(), zip(live.tolist(), previous.fingerprints[live].tolist())))
    now = dict(zip(figure_ids.tolist(), np.asarray(prints).tolist()))
    deleted = [row for fid, (row, fp) in before.items() if now.get(fid) != fp]
    added = [i for i, (fid, fp) in enumerate(zip(figure_ids.tolist(), np.asarray(prints).tolist()))
             if before.get(fid, (None, None))[1] != fp]
    return Changes(np.asarray(sorted(deleted), np.int64), np.asarray(added, np.int64))


def segmented_lexical(lexical, work: Path) -> SegmentedIndex | None:
    """A writable copy under `work` of a version's lexical part: a SegmentedIndex's segments
    hard-linked, or a BM25 LexicalIndex's rows taken over as the first segment; None for an
    index that segments cannot score (tf.idf)."""
    if isinstance(lexical, SegmentedIndex):
        lexical.save(work)
        return SegmentedIndex.open(work)
    if not isinstance(lexical, LexicalIndex) or lexical.method != "bm25":
        return None
    out = SegmentedIndex(lexical.k1, lexical.b, lexical.epsilon, path=work)
    out.add_counts(lexical.row_ptr, lexical.row_terms, lexical.row_tf, np.rint(lexical.doc_len), lexical.vocab)
    return out


def segmented_vectors(part, home: Path) -> SegmentedVectors | None:
    if part is None:
        return None
    return SegmentedVectors.of(part, None if isinstance(part, SegmentedVectors) else home)


@dataclass
class Grown:
    """The row parts of a grown version (see the module docstring)."""

    docs: DocTable
    lexical: SegmentedIndex
    vectors: SegmentedVectors | VectorIndex | None
    visual: SegmentedVectors | VectorIndex | None


def grow(docs: DocTable, lexical: SegmentedIndex, vectors: SegmentedVectors | None, visual: SegmentedVectors | None,
         new_docs: Sequence[FigureDoc], new_prints: np.ndarray, deleted_rows: np.ndarray,
         new_vectors: np.ndarray | None, new_visual: np.ndarray | None,
         vector_kind: str = "auto", gpu: str = "auto") -> Grown:
    """Append `new_docs` as one segment of each row part and delete `deleted_rows`."""
    if len(new_docs):
        lexical.add_documents([analyze(d.lexical_text) for d in new_docs])
        for part, vecs in ((vectors, new_vectors), (visual, new_visual)):
            if part is not None:
                part.add(vecs, kind=vector_kind, gpu=gpu)
    lexical.delete(deleted_rows)
    for part in (vectors, visual):
        if part is not None:
            part.delete(deleted_rows)
    deleted = np.r_[docs.deleted, np.zeros(len(new_docs), bool)]
    deleted[deleted_rows] = True
    prints = np.r_[docs.fingerprints, np.asarray(new_prints, np.int64)]
    added = Captions.from_strings([d.caption for d in new_docs])
    captions = Captions(np.concatenate([np.asarray(docs.captions.blob), added.blob]),
                        np.r_[docs.captions.offsets, docs.captions.offsets[-1] + added.offsets[1:]])
    table = DocTable(np.r_[docs.figure_ids, [d.figure_id for d in new_docs]].astype(np.int64),
                     np.r_[docs.paper_ids, [d.paper_id for d in new_docs]].astype(np.int64),
                     captions, deleted=deleted, fingerprints=prints)
    return Grown(table, lexical, vectors, visual)


def merge(grown: Grown, vector_kind: str = "auto", gpu: str = "auto") -> Grown:
    """All segments rewritten as one, deleted rows dropped and the others renumbered."""
    kept = grown.lexical.merge()
    d = grown.docs
    table = DocTable(d.figure_ids[kept], d.paper_ids[kept], [d.captions[int(r)] for r in kept],
                     fingerprints=None if d.fingerprints is None else d.fingerprints[kept])

    def one(part):
        return part.merged(kept, vector_kind, gpu) if isinstance(part, SegmentedVectors) else part

    return Grown(table, grown.lexical, one(grown.vectors), one(grown.visual))
