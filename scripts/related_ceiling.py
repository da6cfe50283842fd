"""What a ranking of related figures in other papers could reach on the judged set, and how much of
a ranking's top five nobody judged.

By each judge's grades (tests/data/related_judgments*.jsonl), per query figure:
  known     how many grade-2 (closely related) candidates of other papers are known, and of how
            many papers
  oracle    the close fill of the best order of the judged candidates: every known grade-2 figure
            first, under the served rule (at most `max_per_paper` figures of a paper before the
            other papers) and without it
With --data-dir, also over the served first stage (the candidates any weighting of `figsearch fit`
reorders): the known grade-2 figures it holds and its oracle close fill; and the unjudged share of
the top five of the served ranking, of each --weights set over the served candidates and of each
--fit FILE's held-out top fives (`figsearch fit`'s fit.json). Unjudged slots count as grade 0 in
every judged metric, which is a bias against any ranking that differs from the judged pools.

  python scripts/related_ceiling.py [--per-query] [--data-dir DIR] [--weights '{"lexical": 1, ...}'] [--fit fit.json]
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import numpy as np

from app.eval.judged import key_of, read_judgments
from app.search.fusion import diversify
from app.search.ranking import RankingConfig

JUDGMENTS = [Path("tests/data/related_judgments.jsonl"), Path("tests/data/related_judgments_judge2.jsonl")]
JUDGES = ("judge1", "judge2")
TOP = 5


def oracle_fill(grade_paper: list[tuple[float, object]], max_per_paper: int) -> float:
    """Close fill of the judged candidates (grade, paper) in the best order: grade-2 first, then
    the rest, at most `max_per_paper` of a paper before the others (0: no cap)."""
    ranked = np.argsort([-g for g, _ in grade_paper], kind="stable")
    papers = np.array([str(p) for _, p in grade_paper])
    top = diversify(ranked, papers, max_per_paper)[:TOP]
    return sum(grade_paper[i][0] >= 1.5 for i in top.tolist()) / TOP


def known_close(rows: list[dict], max_per_paper: int, per_query: bool = False) -> None:
    """The known grade-2 candidates per query and the oracle close fill, by each judge."""
    for judge in JUDGES:
        by_query: dict[tuple, dict[tuple, float]] = {}
        for r in rows:
            if r.get("judge") == judge:
                by_query.setdefault(key_of(r["query"]), {})[key_of(r["candidate"])] = float(r["grade"])
        n2 = {q: sum(g >= 1.5 for g in c.values()) for q, c in by_query.items()}
        papers2 = {q: len({k[0] for k, g in c.items() if g >= 1.5}) for q, c in by_query.items()}
        capped = [oracle_fill([(g, k[0]) for k, g in c.items()], max_per_paper) for c in by_query.values()]
        free = [oracle_fill([(g, k[0]) for k, g in c.items()], 0) for c in by_query.values()]
        hist = Counter(min(v, TOP) for v in n2.values())
        print(f"{judge}: {len(by_query)} queries, {sum(len(c) for c in by_query.values())} judged candidates; "
              f"known grade-2 candidates per query: mean {np.mean(list(n2.values())):.2f}, median "
              f"{np.median(list(n2.values())):.0f}, of {np.mean(list(papers2.values())):.2f} papers on average; "
              "queries with 0/1/2/3/4/5+: " + "/".join(str(hist.get(i, 0)) for i in range(TOP + 1)))
        print(f"  oracle close fill over the judged candidates: {np.mean(capped):.3f} (at most {max_per_paper} "
              f"of a paper first), {np.mean(free):.3f} (no cap)")
        if per_query:
            print("  per query (paper sha256[:8] kind number: grade-2 candidates / papers / judged candidates): " +
                  ", ".join(f"{q[0][:8]} {q[1]} {q[2]}: {n2[q]}/{papers2[q]}/{len(by_query[q])}"
                            for q in sorted(by_query)))


def served_side(args) -> None:
    from app.eval.fit import rank_candidates, served_candidates
    from app.eval.run import _served_judged
    from app.settings import settings_for

    settings = settings_for(args.data_dir)
    graded = {j: _served_judged(settings, JUDGMENTS, j) for j in JUDGES}
    engine = graded["judge1"][0]
    cands = served_candidates(engine, graded["judge1"][1])
    mpp = engine.ranking.max_per_paper
    served = {q: [h.figure_id for h in hits] for q, hits in
              engine.batch_similar(sorted(cands), k=TOP, scope="other_papers").items()}
    tops = {"served": served}
    for w in args.weights:
        tops[w] = {q: rank_candidates(c, json.loads(w), mpp)[:TOP] for q, c in cands.items()}
    for path in args.fit:
        tops[str(path)] = {int(q): t for q, t in json.loads(Path(path).read_text())["held_out_top5"].items()}
    for judge, (_, judged) in graded.items():
        qs = [q for q in sorted(cands) if q in judged.grades]
        inside = [sum(judged.grades[q].get(int(f), 0) >= 1.5 for f in cands[q].figure_ids) for q in qs]
        known = [sum(g >= 1.5 for g in judged.grades[q].values()) for q in qs]
        oracle = [oracle_fill([(judged.grades[q].get(int(f), 0.0), int(p))
                               for f, p in zip(cands[q].figure_ids, cands[q].paper_ids)], mpp) for q in qs]
        print(f"{judge}, served first stage ({len(qs)} queries, {np.mean([len(cands[q].figure_ids) for q in qs]):.0f} "
              f"candidates each): holds {sum(inside)} of {sum(known)} known grade-2 figures; oracle close fill "
              f"{np.mean(oracle):.3f}")
        for name, top in tops.items():
            unjudged = [sum(int(f) not in judged.grades[q] for f in top[q][:TOP]) / TOP for q in qs if q in top]
            print(f"  unjudged share of the top five: {np.mean(unjudged):.3f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", help="also the served first stage and the rankings' unjudged shares")
    ap.add_argument("--weights", action="append", default=[],
                    help="a weight set (JSON object) over the served candidates")
    ap.add_argument("--fit", action="append", default=[], type=Path,
                    help="a `figsearch fit` fit.json (held-out top fives)")
    ap.add_argument("--max-per-paper", type=int, default=RankingConfig().max_per_paper,
                    help="the cap of the judged candidates' oracle (default: the ranking config's)")
    ap.add_argument("--per-query", action="store_true", help="also list each query's counts")
    args = ap.parse_args()
    known_close([r for p in JUDGMENTS for r in read_judgments(p)], args.max_per_paper, args.per_query)
    if args.data_dir:
        served_side(args)


if __name__ == "__main__":
    main()
