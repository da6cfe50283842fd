"""The type index: what each row shows, for ranking and filtering.

Per row: its kind (a figure or a table: results and related figures keep to one kind), its
dominant figure type (a code into `names`, -1 unknown) and, when the classifier's scores were
indexed, one score per type name. A text query that names a type ("heatmap") ranks by those
scores; related figures compare them. An index built without types or tables stores none of it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

KINDS = ("figure", "table")  # what an index row is; stored per row as its position here


class TypeIndex:
    """Kinds, dominant types and type scores by row (each optional)."""

    # at most this many figures showing a named type join a text query's candidates
    type_pool = 400

    def __init__(self, n: int, names: Sequence[str] = (), types=None, scores=None, kinds=None):
        self.n = int(n)
        self.names = list(names)
        self.dominant = None if types is None else np.asarray(types, dtype=np.int16)  # -1 = unknown
        if self.dominant is not None and len(self.dominant) != n:
            raise ValueError("one figure type code per figure expected")
        # (n, len(names)) classifier scores; a query naming a type ranks by them
        self.scores = None if scores is None else np.asarray(scores, dtype=np.float16)
        if self.scores is not None and self.scores.shape != (n, len(self.names)):
            raise ValueError("one score per figure and type name expected")
        # per row: 0 figure, 1 table (KINDS); an index without tables has none
        self.kinds = None if kinds is None else np.asarray(kinds, dtype=np.int8)
        if self.kinds is not None and len(self.kinds) != n:
            raise ValueError("one kind per row expected")
        self._top: dict[tuple[int, float], np.ndarray] = {}  # rows_showing_type, computed once per type

    @classmethod
    def build(cls, kinds: Sequence[str], figure_types: Sequence[str | None] | None = None,
              type_scores: Sequence[Mapping[str, float] | None] | None = None) -> "TypeIndex":
        """kinds[i] is "figure" or "table"; figure_types[i] a type name or None and type_scores[i]
        the classifier's {type: score} (None: 1 for the dominant type)."""
        n = len(kinds)
        types, names, scores = None, [], None
        if figure_types is not None and any(t for t in figure_types):
            per_row = list(type_scores) if type_scores is not None else [None] * len(figure_types)
            names = sorted({t for t in figure_types if t} | {k for s in per_row if s for k in s})
            code = {t: i for i, t in enumerate(names)}
            types = np.array([code.get(t, -1) if t else -1 for t in figure_types], dtype=np.int16)
            if any(per_row):
                scores = np.zeros((len(figure_types), len(names)), dtype=np.float16)
                for i, (t, s) in enumerate(zip(figure_types, per_row)):
                    if s:
                        scores[i, [code[k] for k in s]] = list(s.values())
                    elif t:
                        scores[i, code[t]] = 1.0
        codes = np.array([KINDS.index(k) for k in kinds], dtype=np.int8)
        return cls(n, names, types, scores, codes if codes.any() else None)

    # -------------------------------------------------------------- kinds
    def kind_mask(self, rows: np.ndarray, kind: str) -> np.ndarray:
        """One bool per row in `rows`: the row holds `kind` ("figure", "table" or "both")."""
        rows = np.asarray(rows, dtype=np.int64)
        if kind == "both":
            return np.ones(len(rows), dtype=bool)
        code = KINDS.index(kind)
        if self.kinds is None:
            return np.full(len(rows), code == 0)
        return self.kinds[rows] == code

    def count(self, kind: str) -> int:
        """Rows of `kind` ("figure" or "table")."""
        if self.kinds is None:
            return self.n if kind == KINDS[0] else 0
        return int((self.kinds == KINDS.index(kind)).sum())

    def kind_of_row(self, row: int) -> str:
        return KINDS[0] if self.kinds is None else KINDS[int(self.kinds[row])]

    def same_kind(self, row: int, rows: np.ndarray) -> np.ndarray:
        """One bool per row in `rows`: it is of the kind of `row` (figures relate to figures)."""
        if self.kinds is None:
            return np.ones(len(rows), dtype=bool)
        return self.kinds[rows] == self.kinds[row]

    # -------------------------------------------------------------- types
    def type_of_row(self, row: int) -> str | None:
        if self.dominant is None or self.dominant[row] < 0:
            return None
        return self.names[int(self.dominant[row])]

    def codes(self, names: Sequence[str]) -> np.ndarray:
        """The codes of the known type `names` (none in an index without types)."""
        if self.dominant is None:
            return np.zeros(0, dtype=np.int16)
        return np.array([self.names.index(t) for t in names if t in self.names], dtype=np.int16)

    def named_type_score(self, rows: np.ndarray | None, codes: np.ndarray) -> np.ndarray:
        """Per row (all rows when None), the highest classifier score among the named types; in
        an index built without scores, 1 when one of them is the row's dominant type, else 0."""
        if self.scores is None:
            return np.isin(self.dominant if rows is None else self.dominant[rows], codes).astype(np.float64)
        part = self.scores[:, codes] if rows is None else self.scores[rows][:, codes]
        return part.max(axis=1).astype(np.float64)

    def named_type_match(self, rows: np.ndarray | None, codes: np.ndarray, match_min: float,
                         score: np.ndarray | None = None) -> np.ndarray:
        """Rows that show a named type: it is their dominant type or scores `match_min`."""
        score = self.named_type_score(rows, codes) if score is None else score
        return np.isin(self.dominant if rows is None else self.dominant[rows], codes) | (score >= match_min)

    def rows_showing_type(self, code: int, match_min: float) -> np.ndarray:
        """The `type_pool` rows that show type `code` with the highest scores; one pass over the
        scores the first time a type is asked for, then kept (an index never changes)."""
        top = self._top.get((code, match_min))
        if top is None:
            codes = np.array([code], dtype=np.int16)
            score = self.named_type_score(None, codes)
            score[~self.named_type_match(None, codes, match_min, score)] = -1.0
            top = np.argpartition(-score, min(self.type_pool, len(score) - 1))[:self.type_pool]
            top = np.sort(top[score[top] >= 0])
            self._top[(code, match_min)] = top
        return top

    def shows_type(self, name: str, match_min: float) -> bool:
        """Whether any row shows the figure type `name` (True when the index has no types:
        nothing can be said)."""
        if self.dominant is None:
            return True
        if name not in self.names:
            return False
        return bool(len(self.rows_showing_type(self.names.index(name), match_min)))

    # ------------------------------------------------------------ signals
    def same_type(self, row: int, rows: np.ndarray) -> np.ndarray | None:
        """1 where a row in `rows` has the dominant type of `row` (None: `row`'s is unknown)."""
        if self.dominant is None or self.dominant[row] < 0:
            return None
        return (self.dominant[rows] == self.dominant[row]).astype(np.float64)

    def score_cosine(self, row: int, rows: np.ndarray) -> np.ndarray | None:
        """Cosine of the type scores of each row in `rows` with those of `row`."""
        if self.scores is None or not len(rows):
            return None
        ts = self.scores[np.r_[row, rows]].astype(np.float64)
        norms = np.linalg.norm(ts, axis=1)
        norms[norms == 0] = 1.0
        return (ts[1:] @ ts[0]) / (norms[1:] * norms[0])

    def query_scores(self, query_scores: Mapping[str, float]) -> np.ndarray:
        """A picture's classifier scores ({type: score}) as a row of `scores` (one per type name)."""
        return np.array([float(query_scores.get(t, 0.0)) for t in self.names])

    def same_dominant(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """1 where a row's dominant type is the best-scoring one of `query` (query_scores), else 0."""
        return (self.dominant[rows] == int(np.argmax(query))).astype(np.float64)

    # --------------------------------------------------------- persistence
    def save(self, d: str | Path) -> None:
        """types.npy, type_scores.npy, kinds.npy (those that exist) and meta.json (type names)."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        for name, arr in (("types", self.dominant), ("type_scores", self.scores), ("kinds", self.kinds)):
            if arr is not None:
                np.save(d / f"{name}.npy", arr)
        (d / "meta.json").write_text(json.dumps({"n": self.n, "type_names": self.names, "format": 1}))

    @classmethod
    def load(cls, d: str | Path, mmap: bool = False) -> "TypeIndex":
        """The part saved in `d`. (An index version written before parts keeps these files at its
        top level, with the row count and type names in its meta.json: the same names, so it loads
        alike.)"""
        d = Path(d)
        arrays = {name: np.load(d / f"{name}.npy", mmap_mode="r" if mmap and name == "type_scores" else None)
                  if (d / f"{name}.npy").exists() else None for name in ("types", "type_scores", "kinds")}
        meta = json.loads((d / "meta.json").read_text())
        return cls(meta["n"], meta.get("type_names", []), arrays["types"], arrays["type_scores"], arrays["kinds"])
