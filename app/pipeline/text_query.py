"""The one path of a text query, shared by the API, the CLI and the evaluation: the words and the
figure types the query names (a "heatmap" query also finds heatmaps whose captions never say so),
then, when nothing matches because of a word the collection lacks, the closest known spelling."""
from __future__ import annotations

import numpy as np

from app.search.engine import Hit, SearchEngine
from app.vision.vocabulary import name_words, types_named_in


def text_query(engine: SearchEngine, q: str, k: int, offset: int = 0, rerank: bool = True,
               allowed_rows: np.ndarray | None = None, kind: str = "figure",
               method: str = "bm25") -> tuple[list[Hit], str]:
    """Hits for `q` (up to k, from `offset`) and the query actually searched: `q`, or the
    spelling suggestion when `q` finds nothing."""
    def hits_for(text: str) -> list[Hit]:
        return engine.search(text, k=k, offset=offset, rerank=rerank, types=types_named_in(text),
                             allowed_rows=allowed_rows, kind=kind, method=method)

    hits = hits_for(q)
    if not hits:
        suggestion = engine.spelling_suggestion(q, understood=name_words())
        if suggestion:
            return hits_for(suggestion), suggestion
    return hits, q
