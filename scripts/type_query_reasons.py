"""What the cards of a served search say for queries that name a figure type: per query, how many
results say they "look like" the named type, how many that they "may show" it, how many are
explained by query words (a matched sentence, or matched words where no sentence matched) or by
meaning (text at least `dense_match_min` close), and how many cards say nothing at all; and
how many results show the named type (it is listed among their types) below even odds.

    python scripts/type_query_reasons.py --base http://127.0.0.1:8765 [--k 24] [--show-silent]
"""
from __future__ import annotations

import argparse
import json
import urllib.parse
import urllib.request

from app.vision.vocabulary import types_named_in

QUERIES = ["box plot", "violin plot", "confusion matrix", "heatmap", "attention map", "network graph",
           "knowledge graph", "t-SNE", "scatter plot", "bar chart", "histogram", "line chart", "pie chart",
           "model architecture", "screenshot", "photo"]


def get(base: str, path: str, **params) -> dict:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}" if params else f"{base}{path}"
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.load(r)


def card_says(item: dict, close: float) -> str:
    """What the search page's card says of why the item is there (frontend/js/ui.js snippetBlock)."""
    by_type = next((r for r in item["reasons"] if r.startswith(("looks like", "may show"))), None)
    if item.get("snippet"):
        return "sentence"
    if by_type:
        return "type"
    if item.get("matched_terms"):
        return "words"
    if item.get("embedding_score") is not None and item["embedding_score"] >= close:
        return "meaning"
    return "nothing"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="http://127.0.0.1:8765")
    ap.add_argument("--k", type=int, default=24, help="results per query (the search page's first page: 24)")
    ap.add_argument("--show-silent", action="store_true", help="list the results whose card says nothing")
    ap.add_argument("--queries", nargs="*", default=QUERIES)
    args = ap.parse_args()
    close = get(args.base, "/api/v1/info")["ranking"]["thresholds"]["dense_match_min"]
    cols = ["looks like", "may show", "sentence", "type", "words", "meaning", "nothing"]
    print(f"{'query':<20} {'n':>3} " + " ".join(f"{c:>10}" for c in cols) + f" {'typed<.5':>9} {'no type reason':>15}")
    totals = dict.fromkeys(cols + ["n", "weak", "weak_silent"], 0)
    for q in args.queries:
        named = types_named_in(q)
        items = get(args.base, "/api/v1/search", q=q, k=args.k)["items"]
        counts = dict.fromkeys(cols, 0)
        weak = weak_silent = 0
        for it in items:
            said = card_says(it, close)
            reasons = [r for r in it["reasons"] if r.startswith(("looks like", "may show"))]
            counts["looks like"] += any(r.startswith("looks like") for r in reasons)
            counts["may show"] += any(r.startswith("may show") for r in reasons)
            counts[said] += 1
            scores = {t["type"]: t["score"] for t in it["figure_types"]}
            shown = [scores[t] for t in named if t in scores]
            if shown and max(shown) < 0.5:
                weak += 1
                weak_silent += not reasons
            if args.show_silent and said == "nothing":
                print(f"    nothing: {it['figure_id']} {it['figure_types']} emb={it['embedding_score']} "
                      f"{it['caption'][:80]!r}")
        print(f"{q:<20} {len(items):>3} " + " ".join(f"{counts[c]:>10}" for c in cols) + f" {weak:>9} {weak_silent:>15}")
        for c in cols:
            totals[c] += counts[c]
        totals["n"] += len(items)
        totals["weak"] += weak
        totals["weak_silent"] += weak_silent
    print(f"{'all':<20} {totals['n']:>3} " + " ".join(f"{totals[c]:>10}" for c in cols)
          + f" {totals['weak']:>9} {totals['weak_silent']:>15}")
    print("looks like / may show: results with that type reason. What the card says (one each): sentence "
          "(a matched sentence, or matches highlighted in its caption), else its type reason, else the query "
          "words it uses, else close in meaning, else nothing. typed<.5: results listing the named type below "
          "even odds; no type reason: of those, the ones without a type reason")


if __name__ == "__main__":
    main()
