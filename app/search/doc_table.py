"""The doc table: which figure, of which paper, with which caption, each index row is.

Rows 0..n-1 are the index's internal numbers (the lexical and vector parts are keyed by them);
figure ids are the public keys. Captions are kept as one UTF-8 blob plus offsets (about a byte a
character instead of ~60 bytes a str object), memory-mapped on demand.

An index version that grew by segments (app.pipeline.indexing) keeps the rows of figures that
were removed or changed as deleted rows (tombstones) until a merge: a deleted row is no figure,
so no lookup finds it, and its figure id may come back in a later row. Each row may carry a
fingerprint of what was indexed for it (text, caption, kind, crop), which tells the next
version's build which figures changed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class FigureDoc:
    """One figure (or table) as the index sees it. `text` = figure_text(caption, mention
    contexts), plus the cell text for a table; `words` = the words printed inside a figure (axis
    titles, legends), matched by the lexical index only: they are labels, not prose, so the
    figure-text embedding stays that of its caption and mentions."""

    figure_id: int
    paper_id: int
    caption: str
    text: str
    kind: str = "figure"
    words: str = ""

    @property
    def lexical_text(self) -> str:
        """What the lexical index reads."""
        return f"{self.text}\n{self.words}" if self.words else self.text


class Captions:
    """Captions as one UTF-8 blob + offsets, readable by row."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob, self.offsets = blob, offsets

    @classmethod
    def from_strings(cls, captions: Sequence[str]) -> "Captions":
        enc = [(c or "").encode("utf-8") for c in captions]
        offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in enc], out=offsets[1:])
        blob = np.frombuffer(b"".join(enc), dtype=np.uint8) if enc else np.zeros(0, np.uint8)
        return cls(blob, offsets)

    def __getitem__(self, row: int) -> str:
        s, e = int(self.offsets[row]), int(self.offsets[row + 1])
        return bytes(self.blob[s:e]).decode("utf-8")

    def __len__(self) -> int:
        return len(self.offsets) - 1


class DocTable:
    """Figure ids, paper ids and captions by row, with the lookups from ids to rows."""

    def __init__(self, figure_ids, paper_ids, captions, deleted=None, fingerprints=None):
        self.figure_ids = np.asarray(figure_ids, dtype=np.int64)
        self.paper_ids = np.asarray(paper_ids, dtype=np.int64)
        n = len(self.figure_ids)
        if len(self.paper_ids) != n:
            raise ValueError("one paper id per figure id expected")
        self.captions = captions if isinstance(captions, Captions) else Captions.from_strings(captions)
        if len(self.captions) != n:
            raise ValueError("one caption per figure id expected")
        self.deleted = np.zeros(n, bool) if deleted is None else np.asarray(deleted, dtype=bool)
        self.fingerprints = None if fingerprints is None else np.asarray(fingerprints, dtype=np.int64)
        if len(self.deleted) != n or (self.fingerprints is not None and len(self.fingerprints) != n):
            raise ValueError("one deleted flag and one fingerprint per row expected")
        live = np.flatnonzero(~self.deleted)
        by_fid = live[np.argsort(self.figure_ids[live], kind="stable")]
        self._sorted_fids, self._fid_order = self.figure_ids[by_fid], by_fid
        if n and (np.diff(self._sorted_fids) == 0).any():
            raise ValueError("duplicate figure ids")
        by_paper = live[np.argsort(self.paper_ids[live], kind="stable")]
        self._paper_sorted, self._rows_by_paper = self.paper_ids[by_paper], by_paper

    @classmethod
    def build(cls, docs: Sequence[FigureDoc], fingerprints=None) -> "DocTable":
        return cls([d.figure_id for d in docs], [d.paper_id for d in docs], [d.caption for d in docs],
                   fingerprints=fingerprints)

    def __len__(self) -> int:
        return len(self.figure_ids)

    @property
    def live_rows(self) -> np.ndarray:
        """The rows that are figures (not deleted), in row order."""
        return np.flatnonzero(~self.deleted)

    def row_of(self, figure_id: int) -> int:
        i = int(np.searchsorted(self._sorted_fids, figure_id))
        if i >= len(self._sorted_fids) or self._sorted_fids[i] != figure_id:
            raise KeyError(f"figure {figure_id} is not in the index")
        return int(self._fid_order[i])

    def __contains__(self, figure_id: int) -> bool:
        try:
            self.row_of(figure_id)
            return True
        except KeyError:
            return False

    def rows_of_paper(self, paper_id: int) -> np.ndarray:
        lo = int(np.searchsorted(self._paper_sorted, paper_id, side="left"))
        hi = int(np.searchsorted(self._paper_sorted, paper_id, side="right"))
        return self._rows_by_paper[lo:hi]

    def rows_of_papers(self, paper_ids: Sequence[int]) -> np.ndarray:
        parts = [self.rows_of_paper(int(p)) for p in paper_ids]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    # --------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "figure_ids.npy", self.figure_ids)
        np.save(d / "paper_ids.npy", self.paper_ids)
        np.save(d / "captions_blob.npy", self.captions.blob)
        np.save(d / "captions_offsets.npy", self.captions.offsets)
        for name, arr in (("deleted", self.deleted if self.deleted.any() else None),
                          ("fingerprints", self.fingerprints)):
            if arr is not None:
                np.save(d / f"{name}.npy", arr)

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "DocTable":
        d = Path(d)
        captions = Captions(np.load(d / "captions_blob.npy", mmap_mode="r" if mmap else None),
                            np.load(d / "captions_offsets.npy"))
        optional = {name: np.load(d / f"{name}.npy") if (d / f"{name}.npy").exists() else None
                    for name in ("deleted", "fingerprints")}
        return cls(np.load(d / "figure_ids.npy"), np.load(d / "paper_ids.npy"), captions, **optional)
