"""How the API, the CLI and the evaluation open the searcher: one loader, so every caller answers
text queries with the same vocabulary of figure-type names (a "heatmap" query also finds heatmaps
whose captions never say so; a misspelt type name is corrected to it)."""
from __future__ import annotations

from pathlib import Path

from app.search.searcher import Encoder, QueryVocabulary, Searcher
from app.vision.vocabulary import name_words, types_named_in

QUERY_VOCABULARY = QueryVocabulary(types_named_in, name_words())


def open_searcher(path: str | Path, encoder: Encoder | None = None, gpu: str = "auto", mmap: bool = False,
                  check: bool = True) -> Searcher:
    """The searcher of an index version folder, or of the CURRENT version of an index root
    (Searcher.load; FileNotFoundError when there is none)."""
    return Searcher.load(path, encoder=encoder, mmap=mmap, gpu=gpu, check=check, vocabulary=QUERY_VOCABULARY)
