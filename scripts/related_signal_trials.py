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
            `heading_trails`: the parser's reading order and heading rule, read again from the
            stored PDFs), idf over every figure and table of the index
  section_inner  the same over the innermost heading only
  section_minilm MiniLM cosine of the two heading trails
  section_cap    as `section`, always where the caption sits
  section_type   `section` where the two figures share their type (the served same-type signal), else 0
  section_caption MiniLM cosine of the innermost heading + the caption's first sentence
  section_role   1 when the innermost headings that name a purpose (`ROLES`: ablation, sensitivity,
                 case study, efficiency, deployment, data, results, the model) name the same one

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


_NUMBER_RE = re.compile(r"^(?P<num>(?:\d+|[IVX]+|[B-H]|A(?=\.))(?:\.\d+)*)\.?\s+(?=\S)")  # "A" alone is an article
_STEP_RE = re.compile(r"^\s*\d+\s*:")  # an algorithm's numbered step, bold keywords and all
_RUN_IN = 9  # a bold run-in paragraph heading: deeper than any numbered level


class SectionTrail:
    """The headings above the current point in reading order, outermost first. Levels come from
    the numbering ("4.2" level 2, "IV." level 1, "A.1" level 2); an unnumbered heading takes the
    level of a numbered one in the same style, else it is placed by its size against the one before."""

    def __init__(self):
        self.trail: list[tuple[int, str, tuple]] = []  # (level, text, (size, bold))
        self.style_level: dict[tuple, int] = {}

    def heading(self, text: str, style: tuple) -> None:
        if _STEP_RE.match(text):
            return
        m = _NUMBER_RE.match(text.strip())
        level = m.group("num").count(".") + 1 if m else None
        if level is not None:
            self.style_level.setdefault(style, level)
        elif style in self.style_level:
            level = self.style_level[style]
        else:
            outer = [t for t in self.trail if t[0] != _RUN_IN]
            if not outer or style[0] > outer[-1][2][0] + 0.5:
                level = 1
            else:
                level = outer[-1][0] + (style != outer[-1][2])
        self._push(level, text, style)

    def continue_heading(self, text: str) -> None:
        if self.trail:
            level, head, style = self.trail[-1]
            self.trail[-1] = (level, f"{head} {text.strip()}", style)

    def run_in(self, text: str) -> None:
        self._push(_RUN_IN, text, (0.0, True))

    def _push(self, level: int, text: str, style: tuple) -> None:
        text = _NUMBER_RE.sub("", text.strip()).strip(" .:")
        if text[:1].isupper():  # not a bullet, a formula or an algorithm's keyword
            self.trail = [t for t in self.trail if t[0] < level] + [(level, text, style)]

    @property
    def path(self) -> list[str]:
        return [t[1] for t in self.trail]


def _box_at(ln, page: int, boxes: dict) -> int | None:
    x, y = (ln.x0 + ln.x1) / 2, (ln.y0 + ln.y1) / 2
    for i, b in enumerate(boxes.get(page, ())):
        if b[0] - 1 <= x <= b[2] + 1 and b[1] - 1 <= y <= b[3] + 1:
            return i
    return None


def _heading_words(ln) -> str:
    """The bold lead of a heading line whose plain rest is running text."""
    from app.ingest.layout import clean_text, is_bold, join_spans

    if not ln.bold or all(is_bold(sp) for sp in ln.spans if sp["text"].strip()):
        return ln.text
    lead = []
    for sp in ln.spans:
        if sp["text"].strip() and not is_bold(sp) and not re.match(r"^[\d.IVX]+$", sp["text"].strip()):
            break
        lead.append(sp)
    return (clean_text(join_spans(lead)).strip() if lead else "") or ln.text


def heading_trails(layout, captions: dict, regions: dict):
    """The parser's reading order and heading rule (app/ingest/parse.py) with the headings kept:
    ([(heading trail, text of a block)] in reading order, {(page, caption index): trail where the
    caption sits}). `captions` and `regions` map a 0-based page to boxes; bold or large words inside
    a graphic (`regions`) are not headings."""
    from collections import Counter

    import app.ingest.parse as parse
    from app.ingest.layout import clean_text, join_spans

    run_in, original = {}, parse._drop_run_in_heading

    def recording(ln):
        cut = original(ln)
        if cut is not ln:
            run_in[id(cut)] = clean_text(join_spans(ln.spans[:len(ln.spans) - len(cut.spans)]))
        return cut
    parse._drop_run_in_heading = recording
    try:
        pages = [parse._page_blocks(pl)[0] for pl in layout.pages]
    finally:
        parse._drop_run_in_heading = original
    body_size = parse._body_size(pages)
    parse._remove_furniture(pages, [pl.height for pl in layout.pages], body_size)
    ordered = [b for pno, blocks in enumerate(pages) for b in parse._order_page(blocks, layout.pages[pno].width)]
    styled_lines = Counter(bi for bi, b in enumerate(ordered) for ln in b.lines
                           if ln.bold or ln.size >= body_size + 0.8)
    trail, units, at_caption = SectionTrail(), [], {}
    heading_block = cur_block = None
    for bi, b in enumerate(ordered):
        for ln in b.lines:
            cap = _box_at(ln, b.page, captions)
            if cap is not None:
                at_caption.setdefault((b.page, cap), trail.path)
                cur_block = heading_block = None
                continue
            styled = ln.bold or ln.size >= body_size + 0.8
            if (parse._is_heading(ln, body_size) and (styled and styled_lines[bi] <= 2 or not styled
                                                       and parse._SECTION_NO_RE.match(ln.text))
                    or parse._META_HEAD_RE.match(ln.text)):
                if _box_at(ln, b.page, regions) is None:
                    if heading_block == bi and not parse._SECTION_NO_RE.match(ln.text):
                        trail.continue_heading(_heading_words(ln))
                    else:
                        trail.heading(_heading_words(ln), (round(ln.size * 2) / 2, ln.bold))
                cur_block, heading_block = None, bi
                continue
            heading_block = None
            if id(ln) in run_in:
                trail.run_in(run_in[id(ln)])
                cur_block = None
            if bi != cur_block:
                units.append((trail.path, []))
                cur_block = bi
            units[-1][1].append(ln.text)
    return [(path, " ".join(lines)) for path, lines in units], at_caption


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
    from app.labels import references_in
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
                if f.page - 1 >= len(st.pages):
                    continue
                page = st.pages[f.page - 1]
                st.mark_body(page)
                caps = [c for c in captions_from_lines(page.lines, st) if (c.kind, c.number) == (f.kind, f.number)]
                if caps:
                    where[f.id] = (f.page - 1, len(captions[f.page - 1]))
                    captions[f.page - 1].append(list(max(caps, key=lambda c: c.score).bbox))
                if f.region_bbox:
                    regions[f.page - 1].append(f.region_bbox)
            t = time.perf_counter()
            units, at_caption = heading_trails(st, dict(captions), dict(regions))
            spent += time.perf_counter() - t
        first = {}
        for trail, text in units:
            for key in references_in(text):
                first.setdefault(key, trail)
        for f in figs:
            found += f.id in where
            out[f.id] = (first.get((f.kind, f.number), []), at_caption.get(where.get(f.id), []))
    print(f"sections: headings of {len(by_paper)} papers read in {spent:.1f} s (the page model built before); "
          f"caption found for {found} of {len(rows)} figures and tables; mentioned {sum(bool(m) for m, _ in out.values())}")
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


def section_type_signal(engine, cands, settings) -> None:
    _section_tfidf("any")(engine, cands, settings)
    for c in cands.values():
        c.signals["section_type"] = c.signals.pop("section") * (np.asarray(c.signals["type"]) > 0)


# what a section is for, by the words headings use for it (first match wins, innermost heading first)
ROLES = (
    ("ablation", r"ablation|component|variant|module|effect of|impact of|influence of|contribution"),
    ("sensitivity", r"sensitiv|hyper.?param|parameter|robust"),
    ("case study", r"case stud|visuali|qualitative|example|interpretab|illustrat"),
    ("efficiency", r"efficien|latency|runtime|running time|complexity|speed|scalab|cost|memory"),
    ("deployment", r"online|a/b|deploy|serving|production|system"),
    ("data", r"dataset|data analysis|statistic|observation|motivation|preliminar|empirical|analysis"),
    ("results", r"result|performance|comparison|evaluation|experiment"),
    ("model", r"architecture|framework|model|method|approach|network|layer|design|overview|propos"),
    ("introduction", r"introduction"),
)


def role(trail: list[str]) -> str:
    for heading in reversed(trail):
        for name, words in ROLES:
            if re.search(words, heading, re.I):
                return name
    return ""


def section_role_signal(engine, cands, settings) -> None:
    sections = figure_sections(settings)
    roles = {f: role(_trail(sections, f, "any")) for f in sections}
    for q, c in cands.items():
        a = roles.get(q, "")
        c.signals["section_role"] = np.array([float(bool(a) and roles.get(int(f), "") == a) for f in c.figure_ids])


def _section_minilm(with_caption: bool):
    def signal(engine, cands, settings) -> None:
        from app.search.encoder import default_encoder

        sections = figure_sections(settings)
        ids = sorted(set(cands) | {int(f) for c in cands.values() for f in c.figure_ids})
        if with_caption:
            texts = [" ".join(_trail(sections, f, "inner") + [first_sentence(engine.captions[engine.row_of(f)])])
                     for f in ids]
        else:
            texts = [" / ".join(_trail(sections, f, "any")) for f in ids]
        vec = default_encoder().encode(texts, max_length=64)
        vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-9)
        has = np.array([bool(t.strip()) for t in texts])
        at = {f: i for i, f in enumerate(ids)}
        name = "section_caption" if with_caption else "section_minilm"
        for q, c in cands.items():
            i = at[q]
            c.signals[name] = np.array([float(vec[at[int(f)]] @ vec[i]) if has[i] and has[at[int(f)]] else 0.0
                                        for f in c.figure_ids])
    return signal


SIGNALS = {"plots": plots_signal, "caption1": caption1_signal, "section": _section_tfidf("any"),
           "section_inner": _section_tfidf("inner"), "section_cap": _section_tfidf("cap"),
           "section_minilm": _section_minilm(False), "section_caption": _section_minilm(True),
           "section_type": section_type_signal, "section_role": section_role_signal}


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
