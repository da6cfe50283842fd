"""Scanned-paper evaluation: scan-like copies of born-digital papers vs their born-digital extraction.

Held-out papers of a collection are rendered into image-only PDFs (grey, 200 dpi, small skew,
noise, JPEG), ingested into a temporary collection through the normal pipeline and compared
with the born-digital records: figures found, caption similarity (ratio), crop agreement (IoU of
the regions), and retrieval of the scanned figures with the original captions and with the
papers' titles as topic queries, by OCR (the product's search index over OCR text), OCR-free
(page-pixel topic encoder trained on the other papers of the collection) and both combined
(reciprocal rank fusion). Real scans found among the PDFs are ingested and reported apart.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz import fuzz
from sqlalchemy import create_engine, select
from sqlalchemy.orm import Session

from app.db.schema import Paper, PaperStatus
from app.eval.crops import iou
from app.pdfs import file_sha256


KS = (1, 5, 10)
RRF_K = 60  # reciprocal rank fusion constant (the usual default; not tuned here)


@dataclass
class Born:
    paper_id: int
    sha256: str
    title: str
    norm_title: str
    n_pages: int
    pdf: Path
    figures: list[dict]




def _read_only(db_url: str):
    if db_url.startswith("sqlite:///"):
        path = db_url.split("///", 1)[1]
        return create_engine(f"sqlite:///file:{path}?mode=ro&uri=true")
    return create_engine(db_url)


def load_born(db_url: str, pdf_root: Path) -> tuple[list[Born], list[Path]]:
    """Born-digital papers of the collection with their PDFs; and PDFs under `pdf_root` that
    are real scans (no usable text layer on most pages)."""
    import pymupdf

    from app.ingest.scanned.detect import classify_pages, source_kind

    by_sha, real_scans = {}, []
    for p in sorted(pdf_root.rglob("*.pdf")):
        by_sha[file_sha256(p)] = p
        try:
            with pymupdf.open(p) as doc:
                if source_kind(classify_pages(doc, 30)) != "born_digital":
                    real_scans.append(p)
        except Exception:  # noqa: BLE001
            continue
    out = []
    with Session(_read_only(db_url)) as s:
        papers = s.scalars(select(Paper).where(Paper.status == PaperStatus.OK)).all()
        for p in papers:
            if p.sha256 not in by_sha or not p.has_text_layer or (p.source_kind or "born_digital") != "born_digital":
                continue
            figs = [dict(kind=f.kind, number=f.number, caption=f.caption, page=f.page, bbox=list(f.bbox or []))
                    for f in p.figures]
            out.append(Born(p.id, p.sha256, p.title or "", p.norm_title or "", p.n_pages, by_sha[p.sha256], figs))
    return out, real_scans


def split(born: list[Born], n_eval: int, max_pages: int, seed: int) -> tuple[list[Born], list[Born]]:
    """Held-out evaluation papers (with a Figure 1, at most `max_pages`) and training papers
    (all others, minus any copy of an evaluation paper under another name)."""
    eligible = [b for b in born if b.n_pages <= max_pages and any(f["kind"] == "figure" and f["number"] == 1
                                                                   for f in b.figures)]
    rng = np.random.default_rng(seed)
    picked = [eligible[i] for i in sorted(rng.choice(len(eligible), min(n_eval, len(eligible)), replace=False))]
    held = {b.sha256 for b in picked} | {b.norm_title for b in picked if b.norm_title}
    train = [b for b in born if b.sha256 not in held and b.norm_title not in held]
    return picked, train


def training_sha256(db_url: str, pdf_root: Path, n_eval: int, seed: int, max_pages: int = 12) -> set[str]:
    """sha256 of the papers eval-scanned may train on: the collection's papers other than its
    held-out evaluation papers and their copies under another name (PDFs the collection does not
    hold are not among them, so a copy refused at ingest is never trained on either)."""
    born, _real = load_born(db_url, pdf_root)
    _held, training = split(born, n_eval, max_pages, seed)
    return {b.sha256 for b in training}


def caption_ratio(a: str, b: str) -> float:
    return fuzz.ratio(" ".join(a.split()), " ".join(b.split())) / 100.0


def _acc(ranks: list[int | None]) -> dict[str, float]:
    n = max(len(ranks), 1)
    return {f"acc@{k}": round(sum(1 for r in ranks if r is not None and r <= k) / n, 3) for k in KS}


def _first_rank(order: list[int], relevant: set[int]) -> int | None:
    for i, fid in enumerate(order):
        if fid in relevant:
            return i + 1
    return None


def _rrf(*orders: list[int]) -> list[int]:
    score: dict[int, float] = {}
    for order in orders:
        for i, fid in enumerate(order):
            score[fid] = score.get(fid, 0.0) + 1.0 / (RRF_K + i + 1)
    return sorted(score, key=lambda f: -score[f])


def _random_acc(n_candidates: int, n_relevant: list[int]) -> dict[str, float]:
    from math import comb

    out = {}
    for k in KS:
        vals = [1 - comb(n_candidates - r, k) / comb(n_candidates, k) if n_candidates >= k else 1.0 for r in n_relevant]
        out[f"acc@{k}"] = round(float(np.mean(vals)) if vals else 0.0, 3)
    return out


def _ingest(paths: list[Path], settings) -> dict[str, float]:
    """Ingest through the normal embedded pipeline, one file at a time; seconds per file."""
    from app.pipeline.ingest_jobs import prepare_job, run_job_embedded

    job = prepare_job([str(p) for p in paths], settings)
    seconds: dict[str, float] = {}
    last = [time.perf_counter()]

    def on_file(name: str, outcome) -> None:
        now = time.perf_counter()
        seconds[Path(name).name] = now - last[0]
        last[0] = now

    run_job_embedded(settings, job, workers=1, on_file=on_file)
    return seconds


def _ingested_before(out_dir: Path, scan_of: dict[str, Born]) -> dict[str, float] | None:
    """Seconds per file of an earlier run into the same out dir that ingested the scans of the
    same papers (its scans are kept), so another OCR-free model is compared on the same OCR
    collection without scanning and ingesting again."""
    from app.settings import settings_for

    done = out_dir / "ingest_seconds.json"
    if not done.is_file():
        return None
    seconds = json.loads(done.read_text())
    with Session(_read_only(settings_for(out_dir / "collection").db_url)) as s:
        stored = {p.source: p.sha256 for p in s.scalars(select(Paper))}
    scans = out_dir / "scans"
    if set(stored) != set(scan_of) or any(stored[n] != file_sha256(scans / n) for n in scan_of):
        raise SystemExit(f"{out_dir} holds another run's scans; use a new --out")
    return seconds


def evaluate(data_dir: Path, out_dir: Path, pdf_root: Path, n_papers: int = 16, max_pages: int = 12,
             seed: int = 0, ocr_free_model: Path | None = None, train_epochs: int = 8, dense: bool = True) -> dict:
    import pymupdf

    from app.ingest.scanned.simulate import ScanStyle, scan_like_pdf
    from app.ingest.scanned.topics import OcrFreeModel, page_image, train
    from app.settings import settings_for

    src = settings_for(data_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    born, real_scans = load_born(src.db_url, pdf_root)
    held, training = split(born, n_papers, max_pages, seed)
    report: dict = {"n_eval_papers": len(held), "n_training_papers": len(training), "seed": seed,
                    "eval_papers": [b.pdf.name for b in held]}

    # 1. scan-like copies, ingested into a temporary collection
    scans_dir = out_dir / "scans"
    scans_dir.mkdir(exist_ok=True)
    scan_of = {f"scan-{b.paper_id}.pdf": b for b in held}
    col = settings_for(out_dir / "collection", dense=dense, auto_index=False)
    col.ensure_dirs()
    seconds = _ingested_before(out_dir, scan_of)
    if seconds is None:  # a new out dir: scan, ingest and index
        for i, (name, b) in enumerate(scan_of.items()):
            scan_like_pdf(b.pdf, scans_dir / name, ScanStyle(), seed=seed * 1000 + i)
        seconds = _ingest(sorted(scans_dir.glob("scan-*.pdf")), col)
        from app.pipeline.ingest_jobs import refresh_index

        refresh_index(col)
        (out_dir / "ingest_seconds.json").write_text(json.dumps(seconds))

    # 2. extraction: figures found, caption ratio, crop agreement
    from app.db.session import session_scope

    scanned: dict[str, dict] = {}
    with session_scope(col.db_url) as s:
        for p in s.scalars(select(Paper)):
            scanned[p.source] = dict(
                paper_id=p.id, status=p.status, error=p.error, source_kind=p.source_kind, title=p.title,
                figures=[dict(id=f.id, kind=f.kind, number=f.number, caption=f.caption, page=f.page,
                              bbox=list(f.bbox or []), text_source=f.text_source) for f in p.figures])
    per_paper, fig_rows = [], []
    for name, b in scan_of.items():
        sc = scanned.get(name, {"figures": [], "status": "missing"})
        got = {(f["kind"], f["number"]): f for f in sc["figures"]}
        rows = []
        for f in b.figures:
            g = got.get((f["kind"], f["number"]))
            ratio = caption_ratio(f["caption"], g["caption"]) if g else 0.0
            agree = iou(f["bbox"], g["bbox"]) if g and g["page"] == f["page"] else 0.0
            rows.append(dict(paper=name, kind=f["kind"], number=f["number"], found=g is not None,
                             ratio=round(ratio, 3), iou=round(agree, 3), scanned_id=g["id"] if g else None,
                             caption=f["caption"]))
        fig1 = next((r for r in rows if r["kind"] == "figure" and r["number"] == 1), None)
        per_paper.append(dict(paper=name, status=sc["status"], seconds=round(seconds.get(name, 0.0), 1),
                              n_pages=b.n_pages, title_ratio=round(caption_ratio(b.title, sc.get("title") or ""), 3),
                              fig1_ratio=fig1["ratio"] if fig1 else 0.0))
        fig_rows += rows
    figs_only = [r for r in fig_rows if r["kind"] == "figure"]
    matched = [r for r in figs_only if r["found"]]
    report["extraction"] = {
        "papers_fig1_caption_ratio_ge_0.8": round(np.mean([p["fig1_ratio"] >= 0.8 for p in per_paper]), 3),
        "figures_found": round(np.mean([r["found"] for r in figs_only]), 3),
        "figures_caption_ratio_ge_0.8": round(np.mean([r["ratio"] >= 0.8 for r in figs_only]), 3),
        "tables_found": round(np.mean([r["found"] for r in fig_rows if r["kind"] == "table"] or [0]), 3),
        "median_caption_ratio_of_found": round(float(np.median([r["ratio"] for r in matched])) if matched else 0, 3),
        "crop_iou_mean_of_found": round(float(np.mean([r["iou"] for r in matched])) if matched else 0, 3),
        "crop_iou_ge_0.5_of_found": round(float(np.mean([r["iou"] >= 0.5 for r in matched])) if matched else 0, 3),
        "title_ratio_ge_0.8": round(np.mean([p["title_ratio"] >= 0.8 for p in per_paper]), 3),
        "n_figures": len(figs_only),
        "seconds_per_paper_median": round(float(np.median([p["seconds"] for p in per_paper])), 1),
        "pages_per_second": round(sum(p["n_pages"] for p in per_paper) / max(sum(p["seconds"] for p in per_paper), 1e-9), 2),
    }
    report["papers"] = per_paper

    # 3. retrieval over all scanned figures: OCR (product search), OCR-free, combined
    all_figs = [f for sc in scanned.values() for f in sc["figures"] if f["kind"] == "figure"]
    cand_ids = [f["id"] for f in all_figs]
    engine = _search_engine(col)

    def ocr_order(q: str) -> list[int]:
        hits = engine.search(q, k=len(cand_ids), candidates=max(100, len(cand_ids)))
        keep = set(cand_ids)
        return [h.figure_id for h in hits if h.figure_id in keep]

    model_path = ocr_free_model
    if model_path is None:
        model_path = out_dir / "models"  # a model store: the trained version and its meta.json
        tr = train([b.pdf for b in training], model_path, epochs=train_epochs, seed=seed, keep=1)
        report["ocr_free_training"] = tr.__dict__
    model = OcrFreeModel(model_path)
    fig_vecs = np.zeros((len(all_figs), model.space.n_topics), dtype=np.float32)
    by_scan_pid = {sc["paper_id"]: name for name, sc in scanned.items()}
    pid_of = {f["id"]: sc["paper_id"] for sc in scanned.values() for f in sc["figures"]}
    page_maps: dict[str, list] = {}  # every page of a scan, encoded once
    for name in {by_scan_pid[pid_of[f["id"]]] for f in all_figs}:
        with pymupdf.open(scans_dir / name) as doc:
            page_maps[name] = [model.feature_map(page_image(page)) for page in doc]
    paper_vecs = {name: model.paper_vector(maps) for name, maps in page_maps.items()}
    for i, f in enumerate(all_figs):
        name = by_scan_pid[pid_of[f["id"]]]
        fig_vecs[i] = model.figure_vector(page_maps[name][f["page"] - 1], f["bbox"], paper_vecs[name])

    def free_order(qvec: np.ndarray) -> list[int]:
        return [cand_ids[j] for j in np.argsort(-(fig_vecs @ qvec), kind="stable")]

    # caption queries: the original caption should find its scanned figure
    cap_rows = [r for r in figs_only]
    cap_q = [r["caption"] for r in cap_rows]
    cap_vecs = model.query_vectors(cap_q)
    ranks = {"ocr": [], "ocr_free": [], "combined": []}
    fig1_top3 = {}
    for r, q, qv in zip(cap_rows, cap_q, cap_vecs):
        rel = {r["scanned_id"]} if r["scanned_id"] is not None else set()
        o, fr = ocr_order(q), free_order(qv)
        ranks["ocr"].append(_first_rank(o, rel))
        ranks["ocr_free"].append(_first_rank(fr, rel))
        ranks["combined"].append(_first_rank(_rrf(o, fr), rel))
        if r["number"] == 1:
            fig1_top3[r["paper"]] = ranks["ocr"][-1] is not None and ranks["ocr"][-1] <= 3
    report["caption_queries"] = {m: _acc(v) for m, v in ranks.items()}
    report["caption_queries"]["random"] = _random_acc(len(cand_ids), [1] * len(cap_rows))
    report["caption_queries"]["n_queries"], report["caption_queries"]["n_candidates"] = len(cap_rows), len(cand_ids)
    report["papers_fig1_caption_query_top3"] = round(np.mean([fig1_top3.get(p["paper"], False) for p in per_paper]), 3)

    # topic queries: a paper's title should find any of its scanned figures
    t_ranks = {"ocr": [], "ocr_free": [], "combined": []}
    n_rel = []
    titles = [b.title for b in scan_of.values()]
    t_vecs = model.query_vectors(titles)
    for (name, b), qv in zip(scan_of.items(), t_vecs):
        rel = {f["id"] for f in scanned.get(name, {"figures": []})["figures"] if f["kind"] == "figure"}
        if not rel or not b.title:
            continue
        o, fr = ocr_order(b.title), free_order(qv)
        t_ranks["ocr"].append(_first_rank(o, rel))
        t_ranks["ocr_free"].append(_first_rank(fr, rel))
        t_ranks["combined"].append(_first_rank(_rrf(o, fr), rel))
        n_rel.append(len(rel))
    report["topic_queries"] = {m: _acc(v) for m, v in t_ranks.items()}
    report["topic_queries"]["random"] = _random_acc(len(cand_ids), n_rel)
    report["topic_queries"]["n_queries"] = len(n_rel)

    # 4. real scans among the PDFs, reported apart
    report["real_scans"] = _real_scans(real_scans, out_dir)
    (out_dir / "figures.json").write_text(json.dumps(fig_rows, indent=1))
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, default=float))
    return report


def _search_engine(settings):
    """The product's searcher over the index, without the vocabulary of figure-type names: this
    evaluation compares retrieval by OCR text with retrieval without it, and a type name in a
    caption query would reward the type classifier instead (it has measured words and meaning
    only from the start)."""
    from app.pipeline.indexing import index_root
    from app.search.searcher import Searcher

    encoder = None
    if settings.dense:
        from app.learn.embed import text_query_encoder

        encoder = text_query_encoder(settings.data_dir)
    return Searcher.load_current(index_root(settings), encoder=encoder, gpu="off")


def _real_scans(paths: list[Path], out_dir: Path) -> list[dict]:
    """Extract each real scan (no usable text layer) and say what came out."""
    from app.ingest.extract import extract_pdf

    rows = []
    for p in paths:
        t0 = time.perf_counter()
        ex = extract_pdf(p, out_dir / "real_scans")
        rows.append(dict(file=p.name, status=ex.status, source_kind=ex.source_kind, error=ex.error,
                         seconds=round(time.perf_counter() - t0, 1), title=ex.paper.title,
                         n_pages=ex.paper.n_pages, figures=[(f.label, f.caption[:80]) for f in ex.figures]))
    return rows
