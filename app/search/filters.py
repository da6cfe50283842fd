"""Search and browse filters over the collection: kind (figure/table/both), year range, paper and
figure type. One rule, applied as SQL conditions for browsing and as the engine's `allowed_rows`
for ranked search (no FastAPI here: the API and the CLI both use it)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.db.schema import Figure, Paper, in_collection

KINDS = ("figure", "table", "both")


@dataclass(frozen=True)
class FigureFilter:
    kind: str = "figure"  # figure | table | both
    year_from: int | None = None
    year_to: int | None = None
    paper_id: int | None = None
    figure_type: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")

    @property
    def restricts_index(self) -> bool:
        """Whether ranked search needs the database to restrict its rows (the index holds the
        figures and tables of OK papers and tells them apart itself: `kind` is the engine's)."""
        return any(v is not None for v in (self.year_from, self.year_to, self.paper_id, self.figure_type))

    def apply(self, stmt: Select, with_type: bool = True) -> Select:
        """`stmt` (a select joined with Paper) restricted to the collection's papers and these conditions."""
        stmt = stmt.where(in_collection())
        if self.kind != "both":
            stmt = stmt.where(Figure.kind == self.kind)
        if self.year_from is not None:
            stmt = stmt.where(Paper.year >= self.year_from)
        if self.year_to is not None:
            stmt = stmt.where(Paper.year <= self.year_to)
        if self.paper_id is not None:
            stmt = stmt.where(Figure.paper_id == self.paper_id)
        if with_type and self.figure_type is not None:
            stmt = stmt.where(Figure.figure_type == self.figure_type)
        return stmt

    def figure_ids(self, db: Session) -> np.ndarray:
        stmt = self.apply(select(Figure.id).join(Paper, Paper.id == Figure.paper_id))
        return np.fromiter(db.scalars(stmt), dtype=np.int64)

    def count(self, db: Session) -> int:
        stmt = self.apply(select(Figure.id).join(Paper, Paper.id == Figure.paper_id))
        return db.scalar(select(func.count()).select_from(stmt.subquery())) or 0

    def allowed_rows(self, db: Session, figure_ids_of_rows: np.ndarray) -> np.ndarray | None:
        """One bool per index row (the row's figure passes), or None when nothing is filtered."""
        if not self.restricts_index:
            return None
        return np.isin(figure_ids_of_rows, self.figure_ids(db))

    def type_counts(self, db: Session) -> dict[str, int]:
        """Figures per figure type under the other conditions (the type itself is not applied, so
        every type chip shows what choosing it would give); unclassified figures are not counted."""
        stmt = self.apply(select(Figure.figure_type, func.count()).join(Paper, Paper.id == Figure.paper_id),
                          with_type=False).where(Figure.figure_type.is_not(None)).group_by(Figure.figure_type)
        return {t: n for t, n in db.execute(stmt).all()}


def year_range(db: Session) -> tuple[int | None, int | None]:
    """The earliest and latest year of the collection's papers (None when no year is known)."""
    lo, hi = db.execute(select(func.min(Paper.year), func.max(Paper.year))
                        .where(in_collection())).one()
    return lo, hi
