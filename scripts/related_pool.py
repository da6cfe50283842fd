"""Make the judging pool for "closely related figures in other papers".

Query figures are drawn by a fixed rule before any ranking is looked at: per collection folder
(`--collection FOLDER=COUNT`: the papers whose PDF is under FOLDER, by sha256), the papers are sorted
by sha256 and shuffled with `--seed`; the first COUNT papers with a figure whose caption has at least five indexed
words give one figure each, drawn with the same random generator. Tables are
never queries nor candidates.

For each query the top five figures of other papers of several rankings are pooled, de-duplicated
and shuffled (same seed), and written without saying which ranking proposed which:
  pairs.jsonl         one line per (query, candidate): ids by paper sha256 + kind + number
  sheets/qNN.png      query crop + caption, numbered candidates with crop, caption, paper title
and, kept apart for after the judging, provenance.json (which rankings proposed each candidate).

  python scripts/related_pool.py --data-dir DIR --out /work/judging --provenance DIR2/provenance.json
"""
from __future__ import annotations

import argparse
import hashlib
import json
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from sqlalchemy import select

from app.db.schema import Figure, Paper
from app.db.session import session_scope
from app.eval.judged import baseline_rankers
from app.pipeline.searching import open_searcher
from app.search.searcher import Searcher
from app.pipeline.indexing import index_root
from app.search.fusion import minmax
from app.search.text import analyze
from app.settings import Settings

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
FONT_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
TOP = 5


def shas_under(folder: Path) -> set[str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*.pdf")}


def pick_queries(session, engine: Searcher, spec: list[tuple[Path, int]], seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    papers = session.execute(select(Paper.id, Paper.sha256).order_by(Paper.sha256)).all()
    out = []
    for folder, count in spec:
        shas = shas_under(folder)
        mine = [p for p in papers if p.sha256 in shas]
        order = rng.permutation(len(mine))
        taken = 0
        for i in order.tolist():
            if taken >= count:
                break
            rows = engine.docs.rows_of_paper(mine[i].id)
            rows = [int(r) for r in rows if engine.types.kind_of_row(int(r)) == "figure"
                    and len(analyze(engine.captions[int(r)])) >= 5]
            if not rows:
                continue
            rows.sort(key=lambda r: int(engine.figure_ids[r]))
            out.append(int(engine.figure_ids[rows[int(rng.integers(len(rows)))]]))
            taken += 1
    return out


def topical_figure_rankers(engine: Searcher, n_papers: int = 20) -> dict:
    """Figure-level rankings among the figures of the `n_papers` papers nearest by topic (a
    generator for judging pools: they aim at figures of the same kind and content, where the
    served ranking's paper-level weights show a related paper's figures of any kind). Each takes
    (figure id, depth) and returns figure ids, best first."""
    lex = engine.lexical("tfidf")

    def within(fid):
        row = engine.row_of(fid)
        near = engine.papers.related(int(engine.paper_ids[row]), n_papers)
        rows = engine.docs.rows_of_papers(near)
        return row, rows[engine.types.kind_mask(rows, "figure")]

    def top(rows, score, depth):
        return [int(engine.figure_ids[r]) for r in rows[np.lexsort((rows, -score))][:depth]]

    def parts(row, rows):
        q, qtf = lex.doc_terms(row)
        terms = minmax(lex.score_docs(q, lex.query_weights(q, qtf), rows))
        same = engine.types.same_type(row, rows)
        same = np.zeros(len(rows)) if same is None else same
        text = engine.vectors.vectors_for(rows) @ engine.vectors.vectors_for([row])[0]
        pic = (engine.visual.vectors_for(rows) @ engine.visual.vectors_for([row])[0]
               if engine.visual is not None else np.zeros(len(rows)))
        return terms, same, text, pic

    def make(mix):
        def rank(fid, depth):
            row, rows = within(fid)
            if not len(rows):
                return []
            return top(rows, mix(*parts(row, rows)), depth)
        return rank

    return {"near_type_terms": make(lambda terms, same, text, pic: 2 * same + terms),
            "near_picture": make(lambda terms, same, text, pic: pic),
            "near_minilm": make(lambda terms, same, text, pic: text),
            "near_mix": make(lambda terms, same, text, pic: same + terms + 2 * text + 2 * pic)}


def rankings(engine: Searcher, fid: int, depth: int = TOP, weight_sets: list[dict] = (),
             topical: dict | None = None, deep: int = 0) -> dict[str, list[int]]:
    """Top figure ids of other papers by each pooled ranking (and by the served rule with each of
    `weight_sets`, e.g. weights a fit produced; and by the `topical` figure-level generators, to
    `deep` figures of their mixed ranking when `deep` is set)."""
    out = {name: rank(fid) for name, rank in baseline_rankers(engine, depth).items()}
    for name, rank in (topical or {}).items():
        out[name] = rank(fid, max(depth, deep) if name in ("near_mix", "near_minilm") else depth)
    for i, w in enumerate(weight_sets):
        out[f"weights{i}"] = [h.figure_id for h in engine.similar(fid, k=depth, scope="other_papers", weights=w)]
    return out


def fig_key(session, fid: int) -> dict:
    f = session.get(Figure, fid)
    p = session.get(Paper, f.paper_id)
    return {"sha256": p.sha256, "kind": f.kind, "number": f.number}


def font(size: int, bold: bool = False):
    return ImageFont.truetype(FONT_BOLD if bold else FONT, size)


def paste_crop(sheet: Image.Image, path: Path, box: tuple[int, int, int, int]) -> None:
    x, y, w, h = box
    try:
        im = Image.open(path).convert("RGB")
    except OSError:
        return
    im.thumbnail((w, h))
    sheet.paste(im, (x + (w - im.width) // 2, y))


def draw_text(d: ImageDraw.ImageDraw, xy, text: str, width_chars: int, max_lines: int, f) -> int:
    lines = textwrap.wrap(" ".join(text.split()), width_chars)[:max_lines]
    x, y = xy
    for ln in lines:
        d.text((x, y), ln, fill=(0, 0, 0), font=f)
        y += f.size + 3
    return y


def contact_sheet(session, data_dir: Path, qid: str, fid: int, cands: list[int], out: Path, first: int = 1) -> None:
    cols, cw, ch_img, ch = 4, 480, 250, 410
    rows_n = (len(cands) + cols - 1) // cols
    head = 430
    sheet = Image.new("RGB", (cols * cw, head + rows_n * ch), "white")
    d = ImageDraw.Draw(sheet)
    f = session.get(Figure, fid)
    p = session.get(Paper, f.paper_id)
    d.text((10, 8), f"{qid}  QUERY: {(p.title or '')[:110]}", fill=(160, 0, 0), font=font(20, True))
    paste_crop(sheet, data_dir / f.image_path, (10, 40, 760, 380))
    draw_text(d, (790, 44), f"{f.label or 'Figure'} {f.number}: {f.caption}", 95, 19, font(15))
    d.line((0, head - 8, cols * cw, head - 8), fill=(160, 0, 0), width=3)
    for i, cf in enumerate(cands):
        x, y = (i % cols) * cw, head + (i // cols) * ch
        c = session.get(Figure, cf)
        cp = session.get(Paper, c.paper_id)
        d.rectangle((x + 2, y + 2, x + cw - 2, y + ch - 4), outline=(180, 180, 180))
        d.text((x + 8, y + 6), f"#{i + first}", fill=(0, 0, 200), font=font(22, True))
        paste_crop(sheet, data_dir / c.image_path, (x + 60, y + 6, cw - 70, ch_img))
        yy = draw_text(d, (x + 8, y + ch_img + 12), f"[{(cp.title or '')[:90]}]", 58, 2, font(13, True))
        draw_text(d, (x + 8, yy + 2), c.caption, 60, 7, font(13))
    sheet.save(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--provenance", type=Path, required=True)
    ap.add_argument("--collection", action="append", default=None,
                    help="FOLDER=COUNT: COUNT queries from the papers of the PDFs under FOLDER "
                         "(default: ../shared/corpus/recsys=34 and ../shared/corpus/naacl2024=16)")
    ap.add_argument("--seed", type=int, default=2025)
    ap.add_argument("--depth", type=int, default=TOP, help="Pool this many figures of each ranking.")
    ap.add_argument("--weights", type=Path, help="A `figsearch fit` report (fit.json): its fold and final "
                                                 "weights rank too (a later pooling round).")
    ap.add_argument("--exclude", type=Path, action="append", default=[],
                    help="Judgments (JSON lines, repeatable): pairs judged already are left out.")
    ap.add_argument("--topical", type=int, default=0, help="Also pool figure-level rankings among the figures of "
                                                           "this many papers nearest by topic (0: none).")
    ap.add_argument("--deep", type=int, default=0, help="For queries whose judged candidates hold no grade-2 "
                                                        "figure, pool this many of the topical mixed and MiniLM "
                                                        "rankings (does a closely related figure exist at all?).")
    ap.add_argument("--per-sheet", type=int, default=0, help="At most this many candidates a sheet (0: one sheet a query).")
    ap.add_argument("--prefix", default="", help="Sheet/query id prefix of this round, e.g. r2-")
    args = ap.parse_args()
    weight_sets = []
    if args.weights:
        fit = json.loads(args.weights.read_text())
        weight_sets = fit["fold_weights"] + [fit["weights"]]
    judged, has_close = set(), set()
    for path in args.exclude:
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                judged.add((tuple(r["query"].values()), tuple(r["candidate"].values())))
                if r["grade"] >= 2:
                    has_close.add(tuple(r["query"].values()))
    spec = [(Path(c.rsplit("=", 1)[0]), int(c.rsplit("=", 1)[1]))
            for c in (args.collection or ["../shared/corpus/recsys=34", "../shared/corpus/naacl2024=16"])]
    settings = Settings(data_dir=args.data_dir)
    engine = open_searcher(index_root(settings))
    (args.out / "sheets").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed + 1)
    pairs, prov, index = [], {}, []
    topical = topical_figure_rankers(engine, args.topical) if args.topical else None
    with session_scope(settings.db_url) as s:
        queries = pick_queries(s, engine, spec, args.seed)
        for n, fid in enumerate(queries, 1):
            qid = f"{args.prefix}q{n:02d}"
            qkey = fig_key(s, fid)
            deep = args.deep if tuple(qkey.values()) not in has_close else 0
            ranks = rankings(engine, fid, args.depth, weight_sets, topical, deep)
            pooled: dict[int, list[str]] = {}
            for name, fids in ranks.items():
                for f in fids:
                    if (tuple(qkey.values()), tuple(fig_key(s, int(f)).values())) not in judged:
                        pooled.setdefault(int(f), []).append(name)
            cands = sorted(pooled)
            rng.shuffle(cands)
            if not cands:
                continue
            for i, cf in enumerate(cands, 1):
                pairs.append({"query_id": qid, "candidate": i, "query": qkey, "candidate_figure": fig_key(s, cf),
                              "query_figure_id": fid, "candidate_figure_id": cf})
            prov[qid] = {"figure_id": fid, "deep": bool(deep), "candidates": {str(cf): pooled[cf] for cf in cands}}
            per = args.per_sheet or len(cands)
            for page, start in enumerate(range(0, len(cands), per), 1):
                name = f"{qid}.png" if per >= len(cands) else f"{qid}-p{page}.png"
                contact_sheet(s, settings.data_dir, qid, fid, cands[start:start + per], args.out / "sheets" / name,
                              first=start + 1)
                index += [{"sheet": f"sheets/{name}", "query_id": qid, "candidate_no": start + i + 1,
                           "query": qkey, "candidate": fig_key(s, cf)}
                          for i, cf in enumerate(cands[start:start + per])]
            print(qid, fid, len(cands), flush=True)
    with open(args.out / f"{args.prefix}pairs.jsonl", "w") as fh:
        for p in pairs:
            fh.write(json.dumps(p) + "\n")
    (args.out / f"{args.prefix}sheet_index.json").write_text(json.dumps(index, indent=1))
    args.provenance.parent.mkdir(parents=True, exist_ok=True)
    args.provenance.write_text(json.dumps(prov, indent=1))


if __name__ == "__main__":
    main()
