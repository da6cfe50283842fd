"""How many figures of one paper a text search may show in each block of results, measured.

For each per-paper limit given (0: none), on one collection:
  labelled   the type-name and kind queries of `figsearch eval-types`, searched over the labelled
             figures (as eval-types does): precision@5 (and @10), how many queries' first five
             the limit changes, and a paired paper-bootstrap interval of
             its difference to no limit (each labelled paper drawn with replacement; a paper
             drawn twice counts as two papers; the drawn figures keep the unlimited ranking's order);
  crowding   the same queries and the keyword queries of --queries (one a line) over the whole
             collection: the share of the top 10 held by its most frequent paper and the number
             of distinct papers in the top 10, means and a query-bootstrap interval of the
             difference to no limit.

    PYTHONPATH=. python scripts/paper_spread_dev.py --data-dir DIR --labels LABELS.jsonl \\
        --queries scripts/paper_spread_queries.txt [--per-paper 0,2,3,4] [--bootstrap 1000]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from app.search.spread import spread

TOP = 10


def crowding(hits) -> tuple[float, int]:
    """(share of the first TOP results held by their most frequent paper, distinct papers there)."""
    papers = [h.paper_id for h in hits[:TOP]]
    if not papers:
        return float("nan"), 0
    return Counter(papers).most_common(1)[0][1] / len(papers), len(set(papers))


def precision_at_5(shows: list[bool], papers: list, per_paper: int, block: int) -> float:
    """p@5 of a ranking (whether each result shows the type, its paper) once spread."""
    pos, _ = spread(papers, per_paper, block, 5) if per_paper else (np.arange(len(papers)), set())
    return float(sum(shows[i] for i in pos[:5]) / 5)


def paper_bootstrap(rankings: list[tuple[list[bool], list]], per_paper: int, block: int, n: int,
                    seed: int = 0) -> list[float]:
    """95% interval of mean p@5 (limit - no limit) over the queries, the labelled papers resampled."""
    rng = np.random.default_rng(seed)
    papers = sorted({p for _, ps in rankings for p in ps})
    diffs = []
    for _ in range(n):
        draw = Counter(rng.choice(len(papers), size=len(papers), replace=True).tolist())
        copies = {papers[i]: m for i, m in draw.items()}
        d = []
        for shows, ps in rankings:
            sub = [(s, p * 1000 + c) for s, p in zip(shows, ps) for c in range(copies.get(p, 0))]  # copy c of paper p
            if sub:
                s_, p_ = [x[0] for x in sub], [x[1] for x in sub]
                d.append(precision_at_5(s_, p_, per_paper, block) - precision_at_5(s_, p_, 0, block))
        diffs.append(np.mean(d))
    return [round(float(np.quantile(diffs, 0.025)), 3), round(float(np.quantile(diffs, 0.975)), 3)]


def query_bootstrap(diff: np.ndarray, n: int, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    means = [np.nanmean(diff[rng.integers(0, len(diff), len(diff))]) for _ in range(n)]
    return [round(float(np.quantile(means, 0.025)), 3), round(float(np.quantile(means, 0.975)), 3)]


def measure(data_dir: Path, labels: Path, keyword_queries: list[str], limits: list[int], boot: int) -> dict:
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.eval.types import KIND_QUERIES, QUERIES, read_gold
    from app.learn.embed import text_query_encoder
    from app.pipeline.indexing import index_root
    from app.pipeline.searching import open_searcher
    from app.search.collection import paper_titles
    from app.settings import settings_for

    settings = settings_for(data_dir)
    gold = read_gold(labels)
    with session_scope(settings.db_url) as s:
        by_key = {(sha, num): fid for fid, sha, num in s.execute(
            select(Figure.id, Paper.sha256, Figure.number).join(Paper).where(Figure.kind == "figure")).all()}
    types_of = {by_key[(g["sha256"], g["number"])]: g.get("types") or [g["type"]]
                for g in gold if (g["sha256"], g["number"]) in by_key}
    encoder = text_query_encoder(settings.data_dir) if settings.dense else None
    engine = open_searcher(index_root(settings), encoder=encoder)
    block = engine.ranking.text_block
    allowed = np.array([int(f) in types_of for f in engine.figure_ids], dtype=bool)
    counts = Counter(t for ts in types_of.values() for t in ts)
    families = {"type": [(q, t) for t, q in QUERIES.items() if counts.get(t, 0) >= 5],
                "kind": [(q, t) for q, t in KIND_QUERIES.items() if counts.get(t, 0) >= 5]}
    out: dict = {"labelled_figures": int(allowed.sum()), "block": block, "labelled": {}, "crowding": {}}
    rerank = encoder is not None
    for family, pairs in families.items():
        # the whole unlimited ranking of the labelled figures, then each limit applied to it
        full = engine.batch_search([q for q, _ in pairs], int(allowed.sum()), rerank=rerank,
                                   allowed_rows=allowed, per_paper=0)
        rankings = [([t in types_of[h.figure_id] for h in hits], [h.paper_id for h in hits])
                    for hits, (_, t) in zip(full, pairs)]
        for n in limits:
            served10 = engine.batch_search([q for q, _ in pairs], 10, rerank=rerank, allowed_rows=allowed, per_paper=n)
            served = [hits[:5] for hits in served10]
            p5 = [sum(t in types_of[h.figure_id] for h in hits) / 5 for hits, (_, t) in zip(served, pairs)]
            p10 = [sum(t in types_of[h.figure_id] for h in hits) / 10 for hits, (_, t) in zip(served10, pairs)]
            check = [precision_at_5(s, p, n, block) for s, p in rankings]
            # the bootstrap spreads the whole ranking; a deeper search may rank its first five apart
            row = {"p@5": round(float(np.mean(p5)), 3), "per_query": dict(zip([q for q, _ in pairs], p5)),
                   "p@5_of_the_whole_ranking": round(float(np.mean(check)), 3),
                   "top5": [[h.figure_id for h in hits] for hits in served],
                   "p@10 (reported, not a guard)": round(float(np.mean(p10)), 3)}
            none = out["labelled"].get(family, {}).get(0)
            if none is not None:  # how many queries' first five the limit changed
                row["queries_with_another_top5"] = sum(a != b for a, b in zip(row["top5"], none["top5"]))
            if n and boot:
                row["diff_vs_none_ci95"] = paper_bootstrap(rankings, n, block, boot)
            out["labelled"].setdefault(family, {})[n] = row
    all_queries = {**{q: "type" for q, _ in families["type"]}, **{q: "kind" for q, _ in families["kind"]},
                   **{q: "keyword" for q in keyword_queries}}
    names = list(all_queries)
    fam = np.array([all_queries[q] for q in names])
    base = None
    with session_scope(settings.db_url) as s:
        for n in limits:
            found = engine.batch_search(names, TOP, rerank=rerank, per_paper=n, titles=paper_titles(s))
            share, distinct = map(np.array, zip(*[crowding(h) for h in found]))
            row = {}
            for f in ("type", "kind", "keyword", "all"):
                m = np.ones(len(names), bool) if f == "all" else fam == f
                row[f] = {"top10_max_paper_share": round(float(np.nanmean(share[m])), 3),
                          "top10_distinct_papers": round(float(np.mean(distinct[m])), 2)}
                if base is not None and boot:
                    row[f]["share_diff_ci95"] = query_bootstrap(share[m] - base[0][m], boot)
                    row[f]["distinct_diff_ci95"] = query_bootstrap(distinct[m] - base[1][m], boot)
            row["per_query"] = {q: [round(float(a), 2), int(b)] for q, a, b in zip(names, share, distinct)}
            out["crowding"][n] = row
            if base is None and n == 0:
                base = (share, distinct)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--labels", type=Path, required=True)
    ap.add_argument("--queries", type=Path, required=True, help="keyword queries, one a line")
    ap.add_argument("--per-paper", default="0,2,3,4", help="limits to compare; 0 (no limit) first")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--per-query", action="store_true")
    a = ap.parse_args()
    limits = [int(x) for x in a.per_paper.split(",")]
    queries = [l.strip() for l in a.queries.read_text().splitlines() if l.strip() and not l.startswith("#")]
    res = measure(a.data_dir, a.labels, queries, limits, a.bootstrap)
    if not a.per_query:
        for part in ("labelled", "crowding"):
            for v in res[part].values():
                for row in (v.values() if part == "labelled" else [v]):
                    row.pop("per_query", None)
                    row.pop("top5", None)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
