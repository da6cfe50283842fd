"""Rankings for queries that name a figure type, compared on labelled sets.

`figsearch eval-types` scores one ranking (the served search) by type-name precision@5 over the
labelled figures of one gold. This script does the same for several rankings at once, so they can
be chosen on development labels and only checked on a gold:

  dump   for each --set DATA_DIR LABELS (a collection, indexed, and figure types labelled by
         looking), every type-name and kind query of `app/eval/types.py` with at least 5 labelled
         figures of its type is run through the served search restricted to the labelled figures;
         every candidate is written with its signals and the features the rankings below use.
  score  the rankings on the dumped candidates: precision@5 per set and pooled over every query
         of the given sets, paired paper-bootstrap intervals against the served ranking; a fitted
         ranking is scored on each set with the ranking fitted on the other sets (which share no
         paper), and, as a second measure, on 5 folds grouped by paper (fitted on the other folds'
         labelled figures, p@5 within each held-out fold's figures).

The rankings (written down before any of them was scored): C0 the one served before the weight 2,
.5 lexical (min-max over the candidates) + .5 cosine + 1 x the named type's score; C1 that type
weight from .5 / 1 / 2 / 4, fitted; C2 + 1 when the figure shows the type (dominant, or score
>= .2); C3 the type's score over the figure's highest instead of the score; C4 + .5 when it is the
dominant type; C5 - the figure's `text` score; C6 + .5 when its caption or a mention names the
type; C7 a logistic regression of all these, fitted; C8 a coordinate search of their weights,
fitted. C1w2 is C1 as chosen (weight 2).

    PYTHONPATH=. python scripts/type_query_dev.py dump --set DIR LABELS [--set ...] --out ROWS.jsonl
    PYTHONPATH=. python scripts/type_query_dev.py score ROWS.jsonl [--sets a,b] [--candidates C0,C2]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

# ------------------------------------------------------------------ dump
def dump(sets: list[tuple[str, str]], out: Path) -> None:
    from sqlalchemy import select

    from app.db.schema import Figure, Mention, Paper
    from app.db.session import session_scope
    from app.eval.types import KIND_QUERIES, QUERIES, read_gold
    from app.learn.embed import text_query_encoder
    from app.pipeline.indexing import index_root
    from app.pipeline.searching import open_searcher
    from app.search.vectors import l2_normalize
    from app.settings import settings_for
    from app.vision.vocabulary import types_named_in

    rows_out = []
    for data_dir, labels in sets:
        name = Path(labels).stem.replace("figure_types_", "")
        settings = settings_for(Path(data_dir))
        gold = read_gold(Path(labels))
        with session_scope(settings.db_url) as s:
            figs = s.execute(select(Figure.id, Paper.sha256, Figure.number, Figure.figure_type, Figure.type_scores,
                                    Figure.caption).join(Paper).where(Figure.kind == "figure")).all()
            mentions = defaultdict(list)
            for fid, sent in s.execute(select(Mention.figure_id, Mention.sentence)).all():
                mentions[fid].append(sent)
        by_key = {(sha, num): (fid, ft, ts or {}, cap or "") for fid, sha, num, ft, ts, cap in figs}
        labelled = {}
        for g in gold:
            hit = by_key.get((g["sha256"], g["number"]))
            if hit is not None:
                fid, ft, ts, cap = hit
                labelled[fid] = {"sha256": g["sha256"], "types": g.get("types") or [g["type"]], "dominant": ft,
                                 "scores": ts, "caption": cap, "mentions": mentions.get(fid, [])}
        encoder = text_query_encoder(settings.data_dir) if settings.dense else None
        engine = open_searcher(index_root(settings), encoder=encoder)
        allowed = np.array([int(f) in labelled for f in engine.figure_ids], dtype=bool)
        counts = Counter(t for f in labelled.values() for t in f["types"])
        pairs = [(q, t, "type") for t, q in QUERIES.items() if counts.get(t, 0) >= 5]
        pairs += [(q, t, "kind") for q, t in KIND_QUERIES.items() if counts.get(t, 0) >= 5]
        # the rankings compared here order the fused scores; the per-paper spread of the served
        # search comes after them (scripts/paper_spread_dev.py measures it), so it is left out here
        served = engine.batch_search([q for q, _, _ in pairs], 5, rerank=encoder is not None, allowed_rows=allowed,
                                     per_paper=0)
        for (q, t, family), top5 in zip(pairs, served):
            named = engine.vocabulary.types_named_in(q)
            qvec = l2_normalize(encoder([q]))[0] if encoder is not None else None
            hits = engine.rank_text(q, int(allowed.sum()), qvec, types=named, allowed_rows=allowed, per_paper=0)
            same = [h.figure_id for h in hits[:5]] == [h.figure_id for h in top5]
            if not same:
                print(f"{name} {q!r}: candidates ranked apart from the served top 5", file=sys.stderr)
            for rank, h in enumerate(hits):
                f = labelled[h.figure_id]
                sig = h.signals or {}
                sc = f["scores"]
                top = max(sc.values()) if sc else 0.0
                p = max((float(sc.get(x, 0.0)) for x in named), default=0.0)
                rows_out.append({
                    "set": name, "query": q, "family": family, "type": t, "named": named,
                    "figure_id": h.figure_id, "paper": f["sha256"], "shows": t in f["types"],
                    "served_rank": rank, "lex": sig.get("lexical", h.lexical_score), "cos": sig.get("text"),
                    "p": p, "dom": f["dominant"] in named, "shown": bool(sig.get("type_shown", p >= 0.2)),
                    "share": p / top if top > 0 else 0.0,
                    "ptext": 0.0 if "text" in named else float(sc.get("text", 0.0)),
                    "capname": any(x in named for x in types_named_in(f["caption"], kinds_only=True)),
                    "mentname": any(x in named for m in f["mentions"] for x in types_named_in(m, kinds_only=True)),
                })
        print(f"{name}: {len(labelled)} labelled figures, {len(pairs)} queries", file=sys.stderr)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows_out))


# ------------------------------------------------------------------ features and rankings
FEATURES = ("lexn", "cos", "p", "logit", "dom", "shown", "share", "ptext", "named")


def features(rows: list[dict]) -> dict[str, np.ndarray]:
    """One array per feature over one query's candidates (lexical scaled over them, as served)."""
    lex = np.array([r["lex"] for r in rows], dtype=np.float64)
    lo, hi = (lex.min(), lex.max()) if len(lex) else (0.0, 0.0)
    lexn = (lex - lo) / (hi - lo) if hi > lo else np.full(len(lex), 1.0 if hi > 0 else 0.0)
    p = np.array([r["p"] for r in rows], dtype=np.float64)
    pc = np.clip(p, 1e-4, 1 - 1e-4)
    return {"lexn": lexn, "cos": np.array([r["cos"] or 0.0 for r in rows], dtype=np.float64), "p": p,
            "logit": np.log(pc / (1 - pc)) / 10.0,
            "dom": np.array([r["dom"] for r in rows], dtype=np.float64),
            "shown": np.array([r["shown"] for r in rows], dtype=np.float64),
            "share": np.array([r["share"] for r in rows], dtype=np.float64),
            "ptext": np.array([r["ptext"] for r in rows], dtype=np.float64),
            "named": np.array([r["capname"] or r["mentname"] for r in rows], dtype=np.float64)}


C0_WEIGHTS = {"lexn": 0.5, "cos": 0.5, "p": 1.0}
FIXED = {
    "C0": C0_WEIGHTS,
    "C2": {**C0_WEIGHTS, "shown": 1.0},
    "C3": {"lexn": 0.5, "cos": 0.5, "share": 1.0},
    "C4": {**C0_WEIGHTS, "dom": 0.5},
    "C5": {**C0_WEIGHTS, "ptext": -1.0},
    "C6": {**C0_WEIGHTS, "named": 0.5},
    "C1w2": {**C0_WEIGHTS, "p": 2.0},  # C1 as chosen (2 on every left-out set), for checks on other labels
}


def linear(weights: dict[str, float]):
    def score(f: dict[str, np.ndarray]) -> np.ndarray:
        return sum(w * f[k] for k, w in weights.items())
    return score


def order(score: np.ndarray) -> np.ndarray:
    """Best first, ties in the served candidate order (as fusion.order keeps them)."""
    return np.lexsort((np.arange(len(score)), -score))


def precision_at_5(shows: np.ndarray, score: np.ndarray) -> float:
    return float(shows[order(score)[:5]].sum() / 5)


def average_precision(shows: np.ndarray, score: np.ndarray, n_relevant: int) -> float:
    hits = shows[order(score)]
    if not n_relevant:
        return float("nan")
    prec = np.cumsum(hits) / np.arange(1, len(hits) + 1)
    return float((prec * hits).sum() / n_relevant)


class Query:
    """One query of one set: its candidates, features and labels."""

    def __init__(self, key: tuple, rows: list[dict]):
        rows = sorted(rows, key=lambda r: r["served_rank"])
        self.key, self.rows = key, rows
        self.f = features(rows)
        self.shows = np.array([r["shows"] for r in rows], dtype=np.float64)
        self.papers = np.array([r["paper"] for r in rows])

    def subset(self, keep: np.ndarray) -> "Query":
        q = Query.__new__(Query)
        q.key, q.rows = self.key, [r for r, k in zip(self.rows, keep) if k]
        q.f = features(q.rows)  # lexical scaled again over what is left, as the search would
        q.shows, q.papers = self.shows[keep], self.papers[keep]
        return q


def per_query_scores(queries: list[Query], rank) -> np.ndarray:
    return np.array([precision_at_5(q.shows, rank(q)) for q in queries])


# ------------------------------------------------------------------ fitting
GRID = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)


def fit_type_weight(train: list[Query]) -> dict[str, float]:
    best, best_w = -1.0, 1.0
    for w in (0.5, 1.0, 2.0, 4.0):
        v = per_query_scores(train, lambda q: linear({**C0_WEIGHTS, "p": w})(q.f)).mean()
        if v > best + 1e-9:
            best, best_w = v, w
    return {**C0_WEIGHTS, "p": best_w}


def fit_coordinate(train: list[Query]) -> dict[str, float]:
    """fusion.fit_weights' coordinate search; ptext enters with a negative sign."""
    from app.search.fusion import fit_weights

    names = ("lexn", "cos", "p", "shown", "dom", "ptext", "named")
    sign = {"ptext": -1.0}

    def evaluate(w: dict[str, float]) -> float:
        ws = {k: v * sign.get(k, 1.0) for k, v in w.items()}
        return float(per_query_scores(train, lambda q: linear(ws)(q.f)).mean())

    w, _ = fit_weights(evaluate, names, anchor="lexn", grid=GRID)
    return {k: v * sign.get(k, 1.0) for k, v in w.items()}


def fit_logistic(train: list[Query]):
    from sklearn.linear_model import LogisticRegression

    X = np.concatenate([np.stack([q.f[k] for k in FEATURES], axis=1) for q in train])
    y = np.concatenate([q.shows for q in train])
    model = LogisticRegression(C=1.0, max_iter=2000).fit(X, y)
    return lambda f: model.decision_function(np.stack([f[k] for k in FEATURES], axis=1))


def held_out(queries: list[Query], fit, folds: dict) -> np.ndarray:
    """Per query, p@5 over its held-out papers' figures in each fold, averaged over folds
    weighted by how many labelled figures of the query's type each fold holds (the fold where no
    figure shows the type is left out)."""
    scores = np.zeros(len(queries))
    weights = np.zeros(len(queries))
    k = max(folds.values()) + 1
    for fold in range(k):
        train = [q.subset(np.array([folds[p] != fold for p in q.papers])) for q in queries]
        test = [q.subset(np.array([folds[p] == fold for p in q.papers])) for q in queries]
        rank = fit([t for t in train if len(t.rows)])
        for i, t in enumerate(test):
            n = int(t.shows.sum())
            if not len(t.rows) or not n:
                continue
            scores[i] += n * precision_at_5(t.shows, rank(t.f))
            weights[i] += n
    return np.where(weights > 0, scores / np.maximum(weights, 1), np.nan)


def leave_set_out(queries: list[Query], fit) -> tuple[np.ndarray, dict]:
    """Per query, p@5 over all its set's labelled figures with the ranking fitted on the other
    sets' queries (sets share no paper); and the ranking used for each set."""
    names = sorted({q.key[0] for q in queries})
    ranks = {s: fit([q for q in queries if q.key[0] != s]) for s in names}
    return np.array([precision_at_5(q.shows, ranks[q.key[0]](q.f)) for q in queries]), ranks


# ------------------------------------------------------------------ scoring
def load(path: Path, sets: list[str] | None) -> list[Query]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if sets and r["set"] not in sets:
            continue
        groups[(r["set"], r["family"], r["query"])].append(r)
    return [Query(k, v) for k, v in sorted(groups.items())]


def paper_bootstrap(queries: list[Query], rank_a, rank_b, n: int = 500, seed: int = 0) -> list[float]:
    """95% interval of mean p@5 (a - b) over the queries when each set's papers are resampled
    (a paper drawn twice brings its figures twice)."""
    rng = np.random.default_rng(seed)
    by_set: dict[str, list[str]] = defaultdict(set)
    for q in queries:
        by_set[q.key[0]].update(q.papers.tolist())
    by_set = {s: sorted(p) for s, p in by_set.items()}
    diffs = []
    for _ in range(n):
        draw = {s: Counter(rng.choice(p, size=len(p), replace=True).tolist()) for s, p in by_set.items()}
        d = []
        for q in queries:
            c = draw[q.key[0]]
            idx = np.concatenate([np.repeat(np.flatnonzero(q.papers == p), m) for p, m in c.items()
                                  if (q.papers == p).any()] or [np.zeros(0, int)]).astype(int)
            idx.sort(kind="stable")
            if not len(idx):
                continue
            sub = Query.__new__(Query)
            sub.key, sub.rows = q.key, [q.rows[i] for i in idx]
            sub.f, sub.shows, sub.papers = features(sub.rows), q.shows[idx], q.papers[idx]
            d.append(precision_at_5(sub.shows, rank_a(sub)) - precision_at_5(sub.shows, rank_b(sub)))
        diffs.append(np.mean(d))
    return [round(float(np.quantile(diffs, 0.025)), 3), round(float(np.quantile(diffs, 0.975)), 3)]


def score(path: Path, sets: list[str] | None, candidates: list[str], seed: int, boot: int) -> dict:
    from app.stats import hashed_folds

    queries = load(path, sets)
    folds = hashed_folds(sorted({p for q in queries for p in q.papers.tolist()}), 5, seed=seed)
    results = {}
    served = per_query_scores(queries, lambda q: linear(C0_WEIGHTS)(q.f))
    for c in candidates:
        if c in FIXED:
            per_q = per_query_scores(queries, lambda q, w=FIXED[c]: linear(w)(q.f))
            rank = (lambda q, w=FIXED[c]: linear(w)(q.f))
            fitted = None
        else:
            fit = {"C1": lambda tr: linear(fit_type_weight(tr)), "C7": fit_logistic,
                   "C8": lambda tr: linear(fit_coordinate(tr))}[c]
            folds_q = held_out(queries, fit, folds)
            base = held_out(queries, lambda tr: linear(C0_WEIGHTS), folds)
            per_q, ranks = leave_set_out(queries, fit)
            rank = (lambda q, ranks=ranks: ranks[q.key[0]](q.f))
            final = {"C1": fit_type_weight, "C8": fit_coordinate}.get(c)
            fitted = {s: final([q for q in queries if q.key[0] != s]) for s in ranks} if final else None
        out = {"pooled_type_p5": None, "per_set": {}}
        fam = np.array([q.key[1] for q in queries])
        sets_ = np.array([q.key[0] for q in queries])
        for s in sorted(set(sets_)):
            m = sets_ == s
            out["per_set"][s] = {"type_p5": round(float(np.nanmean(per_q[m & (fam == "type")])), 3),
                                 "kind_p5": round(float(np.nanmean(per_q[m & (fam == "kind")])), 3)
                                 if (m & (fam == "kind")).any() else None}
        out["pooled_type_p5"] = round(float(np.nanmean(per_q[fam == "type"])), 3)
        if c in FIXED:  # a steadier second measure: average precision over every labelled figure
            out["pooled_type_map"] = round(float(np.mean([average_precision(q.shows, rank(q), int(q.shows.sum()))
                                                          for q in queries if q.key[1] == "type"])), 3)
        out["pooled_kind_p5"] = round(float(np.nanmean(per_q[fam == "kind"])), 3) if (fam == "kind").any() else None
        if c != "C0" and boot:
            tq = [q for q in queries if q.key[1] == "type"]
            out["diff_vs_C0_type_ci95"] = paper_bootstrap(tq, rank, lambda q: linear(C0_WEIGHTS)(q.f), boot, seed)
        if fitted is not None:
            out["fitted_without_set"] = fitted
        if c not in FIXED:  # the other measure: 5 folds grouped by paper, p@5 within each fold's papers
            out["five_folds_type_p5"] = round(float(np.nanmean(folds_q[fam == "type"])), 3)
            out["five_folds_served_type_p5"] = round(float(np.nanmean(base[fam == "type"])), 3)
        out["per_query"] = {"/".join(q.key): round(float(v), 2) for q, v in zip(queries, per_q)}
        results[c] = out
    results["served_check"] = round(float(np.mean(served[np.array([q.key[1] for q in queries]) == "type"])), 3)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--set", nargs=2, action="append", metavar=("DATA_DIR", "LABELS"), required=True)
    d.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("score")
    s.add_argument("rows", type=Path)
    s.add_argument("--sets", default="", help="comma-separated set names (default: all dumped)")
    s.add_argument("--candidates", default="C0,C1,C2,C3,C4,C5,C6,C7,C8")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--bootstrap", type=int, default=500)
    s.add_argument("--per-query", action="store_true")
    s.add_argument("--weight-curve", default="", help="also pooled p@5 of C0 with these type weights (e.g. 0.5,1,2,4)")
    a = ap.parse_args()
    if a.cmd == "dump":
        dump([tuple(x) for x in a.set], a.out)
        return
    sets = [x for x in a.sets.split(",") if x] or None
    res = score(a.rows, sets, a.candidates.split(","), a.seed, a.bootstrap)
    if a.weight_curve:
        queries = load(a.rows, sets)
        res["weight_curve"] = {fam: {w: round(float(per_query_scores(
            [q for q in queries if q.key[1] == fam],
            lambda q, w=float(w): linear({**C0_WEIGHTS, "p": w})(q.f)).mean()), 3) for w in a.weight_curve.split(",")}
            for fam in ("type", "kind")}
    if not a.per_query:
        for v in res.values():
            if isinstance(v, dict):
                v.pop("per_query", None)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
