"""A candidate signal for related figures in other papers, measured before it is built into the index.

The served candidates of the judged queries (`figsearch fit`'s first stage) get one more signal,
and `figsearch fit`'s cross-validation (folds grouped by the query's paper, judge1's grades) is
run with it and without it on the same folds; the held-out rankings are also graded by judge2
(never fitted on), and the paired difference (with - without) gets a paper-bootstrap interval.
Signals:
  plots     what both charts plot (app/search/plots.py, read from the two captions): .5 when they
            name the same measure (same head noun, a shared informative stem) + .5 the same variable
  caption1  MiniLM cosine of the two captions' first sentences only (figure label removed)
  section   tf.idf cosine of the headings above the two figures (the trail of section, subsection and
            run-in paragraph headings where each is first mentioned, else where its caption sits;
            app/ingest/sections.py), idf over every figure of the index
  section_inner  the same over the innermost heading only
  section_minilm MiniLM cosine of the two heading trails
  section_cap    as `section`, always where the caption sits

  python scripts/related_signal_trials.py --data-dir DIR --signal plots [--seeds 0,1,2]
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

import app.eval.fit as fit
from app.eval.run import _served_judged
from app.search.explain import BOILERPLATE, CHART_WORDS
from app.search.plots import plotted
from app.search.text import analyze
from app.settings import settings_for
from app.stats import paired_by_paper

JUDGMENTS = [Path("tests/data/related_judgments.jsonl"), Path("tests/data/related_judgments_judge2.jsonl")]
_LABEL = re.compile(r"^\s*(?:fig\.?|figure)\s*\d+[a-z]?\s*[:.|]?\s*", re.I)


def first_sentence(caption: str) -> str:
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(])", _LABEL.sub("", caption or ""), maxsplit=1)[0]


def plots_signal(engine, cands, _settings) -> None:
    seen = {}

    def of(row):
        if row not in seen:
            seen[row] = plotted(engine.captions[row])
        return seen[row]
    for q, c in cands.items():
        a = of(engine.row_of(q))
        vals = []
        for f in c.figure_ids.tolist():
            b = of(engine.row_of(int(f)))
            same_measure = bool(a.measure_head and a.measure_head == b.measure_head
                                and (a.measure_stems & b.measure_stems) - BOILERPLATE - CHART_WORDS)
            same_variable = bool(a.against_head and a.against_head == b.against_head
                                 and (a.against_stems & b.against_stems) - BOILERPLATE)
            vals.append(0.5 * same_measure + 0.5 * same_variable)
        c.signals["plots"] = np.asarray(vals)


def caption1_signal(engine, cands, _settings) -> None:
    from app.search.encoder import default_encoder

    rows = sorted({engine.row_of(q) for q in cands} | {engine.row_of(int(f)) for c in cands.values() for f in c.figure_ids})
    vec = default_encoder().encode([first_sentence(engine.captions[r]) for r in rows], max_length=64)
    vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-9)
    at = {r: i for i, r in enumerate(rows)}
    for q, c in cands.items():
        v = vec[at[engine.row_of(q)]]
        c.signals["caption1"] = np.array([float(vec[at[engine.row_of(int(f))]] @ v) for f in c.figure_ids])


def figure_sections(settings) -> dict[int, tuple[list[str], list[str]]]:
    """{figure id: (heading trail of its first mention, of its caption)}, read again from the stored
    PDFs: the captions found on the figure's page, the graphics' boxes as stored."""
    import time
    from collections import defaultdict

    import pymupdf
    from sqlalchemy import select

    from app.db.schema import Figure, Paper
    from app.db.session import session_scope
    from app.ingest.captions import captions_from_lines
    from app.ingest.layout import build_layout
    from app.ingest.mentions import find_mentions
    from app.ingest.parse import parse_pdf
    from app.pdfs import stored_pdf

    with session_scope(settings.db_url) as s:
        rows = s.execute(select(Figure.id, Paper.sha256, Figure.kind, Figure.number, Figure.page, Figure.region_bbox)
                         .join(Paper, Figure.paper_id == Paper.id)).all()
    by_paper = defaultdict(list)
    for r in rows:
        by_paper[r.sha256].append(r)
    out, spent, found = {}, 0.0, 0
    for sha, figs in by_paper.items():
        path = stored_pdf(settings.data_dir, sha)
        if path is None:
            continue
        with pymupdf.open(path) as doc:
            st = build_layout(doc)
            captions, regions, where = defaultdict(list), defaultdict(list), {}
            for f in figs:
                page = st.pages[f.page - 1] if f.page - 1 < len(st.pages) else None
                if page is None:
                    continue
                st.mark_body(page)
                caps = [c for c in captions_from_lines(page.lines, st) if (c.kind, c.number) == (f.kind, f.number)]
                if caps:
                    where[f.id] = (f.page - 1, len(captions[f.page - 1]))
                    captions[f.page - 1].append(list(max(caps, key=lambda c: c.score).bbox))
                if f.region_bbox:
                    regions[f.page - 1].append(f.region_bbox)
            t = time.perf_counter()
            paper = parse_pdf(doc, layout=st, captions=dict(captions), regions=dict(regions))
            spent += time.perf_counter() - t
        first = {}
        for m in find_mentions(paper.sentences):
            first.setdefault((m.kind, m.number), paper.sentence_sections[m.position])
        for f in figs:
            found += f.id in where
            out[f.id] = (first.get((f.kind, f.number), []), paper.caption_sections.get(where.get(f.id), []))
    print(f"sections: {len(by_paper)} papers parsed in {spent:.1f} s; caption found for {found} of {len(rows)} "
          f"figures and tables; mentioned {sum(bool(m) for m, _ in out.values())}")
    return out


def _trail(sections, fid: int, how: str) -> list[str]:
    mention, caption = sections.get(fid, ([], []))
    trail = caption if how == "cap" else (mention or caption)
    return trail[-1:] if how == "inner" else trail


def _section_tfidf(how: str):
    def signal(engine, cands, settings) -> None:
        from collections import Counter

        sections = figure_sections(settings)
        terms = {f: Counter(t for h in _trail(sections, f, how) for t in set(analyze(h))) for f in sections}
        df = Counter(t for c in terms.values() for t in c)
        n = len(terms)
        vec = {}
        for f, c in terms.items():
            v = {t: k * np.log((1 + n) / (1 + df[t])) for t, k in c.items()}
            norm = np.sqrt(sum(x * x for x in v.values())) or 1.0
            vec[f] = {t: x / norm for t, x in v.items()}
        name = {"any": "section", "inner": "section_inner", "cap": "section_cap"}[how]
        for q, c in cands.items():
            a = vec.get(q, {})
            c.signals[name] = np.array([sum(x * vec.get(int(f), {}).get(t, 0.0) for t, x in a.items())
                                        for f in c.figure_ids])
    return signal


def section_minilm_signal(engine, cands, settings) -> None:
    from app.search.encoder import default_encoder

    sections = figure_sections(settings)
    ids = sorted(set(cands) | {int(f) for c in cands.values() for f in c.figure_ids})
    vec = default_encoder().encode([" / ".join(_trail(sections, f, "any")) for f in ids], max_length=64)
    vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-9)
    has = np.array([bool(_trail(sections, f, "any")) for f in ids])
    at = {f: i for i, f in enumerate(ids)}
    for q, c in cands.items():
        i = at[q]
        c.signals["section_minilm"] = np.array([float(vec[at[int(f)]] @ vec[i]) if has[i] and has[at[int(f)]] else 0.0
                                                for f in c.figure_ids])


SIGNALS = {"plots": plots_signal, "caption1": caption1_signal, "section": _section_tfidf("any"),
           "section_inner": _section_tfidf("inner"), "section_cap": _section_tfidf("cap"),
           "section_minilm": section_minilm_signal}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--signal", required=True, choices=sorted(SIGNALS))
    ap.add_argument("--seeds", default="0,1,2", help="draws of the folds")
    args = ap.parse_args()
    settings = settings_for(args.data_dir)
    engine, judged = _served_judged(settings, JUDGMENTS, "judge1")
    _, graded2 = _served_judged(settings, JUDGMENTS, "judge2")
    cands = fit.served_candidates(engine, judged)
    SIGNALS[args.signal](engine, cands, settings)
    share = np.mean(np.concatenate([c.signals[args.signal] for c in cands.values()]) != 0)
    print(f"{args.signal}: non-zero for {share:.4f} of the candidates")
    fit.FIT_SIGNALS = fit.FIT_SIGNALS + (args.signal,)
    fit.served_candidates = lambda _engine, _judged: cands  # the candidates with the new signal
    for seed in (int(s) for s in args.seeds.split(",")):
        runs = {}
        for name, without in (("with", ()), ("without", (args.signal,))):
            r = runs[name] = fit.cross_validate(engine, judged, seed=seed, without=without)
            h, o = r["rankings"]["fitted_held_out"], fit.other_judge(r, graded2, "judge2")
            print(f"seed {seed} {name}: judge1 close / related fill / nDCG@5 {h['close_fill']:.3f} / "
                  f"{h['related_fill']:.3f} / {h['ndcg@5']:.3f} (unjudged {h['unjudged']:.3f}); judge2 "
                  f"{o['close_fill']:.3f} / {o['related_fill']:.3f} / {o['ndcg@5']:.3f}; weights {r['weights']}")
        queries = sorted(int(q) for q in runs["with"]["held_out_top5"])
        papers = [judged.paper_of_query[q] for q in queries]
        for m in ("close_fill", "related_fill", "ndcg@5"):
            d = paired_by_paper(papers, runs["with"]["rankings"]["fitted_held_out"]["per_query"][m],
                                runs["without"]["rankings"]["fitted_held_out"]["per_query"][m])
            print(f"  seed {seed} with - without, {m}: {d['mean_diff']:+.3f} {d['ci95']}")


if __name__ == "__main__":
    main()
