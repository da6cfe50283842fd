"""How close the served query encoder puts queries to a collection's figure texts: for queries
that make no sense in research figures (keyboard mashes, everyday topics), misspellings, English
words a collection may lack, and research queries,
the best MiniLM cosine over the figures and tables, whether any query word occurs in the collection, and how
many figures and tables the served search returns (at most 50); for a query that finds nothing,
the spelling the search falls back to (`Searcher.spelling_suggestion`). Shows where the search's meaning thresholds
(the ranking config's `dense_match_min`, `dense_match_unknown_words_min`) fall.

    python scripts/query_matches.py --data-dir DIR
"""
from __future__ import annotations

import argparse
from pathlib import Path

from app.learn.embed import text_query_encoder
from app.pipeline.indexing import index_root
from app.pipeline.searching import open_searcher
from app.search.text import analyze
from app.settings import Settings

NONSENSE = ["qwertyuiop", "asdfghjkl", "zxcvbnm", "hjkl", "zzzz", "xkcd blorp", "ajsdkfj qweoiru",
            "lorem ipsum dolor", "banana bread recipe", "dog grooming tips", "sourdough starter",
            "fjord kayak", "volcano eruption lava", "purple elephant dance", "wedding dress",
            "football world cup final", "cheap flights to paris", "guitar chord chart"]
MISSPELT = ["heatmpa", "scaterplot", "archtecture", "recomendation", "embeddigns", "visualisaton", "attenton",
            "histogramm", "convolutoinal"]
# ordinary English words a research collection may lack: never "corrected" to a near word it has
ENGLISH = ["recall", "umbrella", "lantern", "harvest", "violin", "glacier", "sparrow", "pottery"]
RESEARCH = ["heat map", "heatmap", "bar chart", "scatter plot", "confusion matrix", "t-SNE",
            "attention weights", "training loss curve", "model architecture", "ablation study",
            "learning rate", "embedding visualization", "precision recall curve", "transformer encoder",
            "graph neural network", "negative sampling", "latency vs throughput", "user study interface"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    args = ap.parse_args()
    settings = Settings(data_dir=args.data_dir)
    encoder = text_query_encoder(args.data_dir)
    engine = open_searcher(index_root(settings), encoder=encoder)
    known = engine.lexical().term_ids
    print(f"thresholds: {engine.threshold('dense_match_min')} (a query word is known), "
          f"{engine.threshold('dense_match_unknown_words_min')} (no query word is known)")
    print(f"{'kind':9s} {'query':28s} {'best cosine':>11s} {'known word':>10s} {'results':>7s}  searched instead")
    for kind, queries in (("nonsense", NONSENSE), ("misspelt", MISSPELT), ("english", ENGLISH), ("research", RESEARCH)):
        for q in queries:
            _, sims = engine.vectors.search(encoder([q]), 1)
            has_known = any(t in known for t in analyze(q))
            hits = engine.search(q, k=50, kind="both")
            n = len(hits) if hits.query == q else 0
            instead = (hits.query if hits.query != q else "-") if n == 0 else ""
            print(f"{kind:9s} {q:28s} {sims[0][0]:11.3f} {str(has_known):>10s} {n:7d}  {instead}")


if __name__ == "__main__":
    main()
