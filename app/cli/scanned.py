"""`figsearch eval-scanned` and `figsearch train-scan-topics`: the scanned-paper commands."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def register(cli: typer.Typer) -> None:
    @cli.command("eval-scanned")
    def eval_scanned(data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Born-digital collection (read only)."),
                     out: Path = typer.Option(Path("artifacts/scanned"), "--out",
                                              help="Report folder. The folder of an earlier run is reused: its "
                                                   "scans and their OCR collection are kept, retrieval is measured "
                                                   "again (e.g. with another --ocr-free-model)."),
                     pdfs: Path = typer.Option(..., "--pdfs", exists=True, file_okay=False,
                                               help="Folder with the collection's PDFs (matched by sha256)."),
                     papers: int = typer.Option(16, "--papers", min=1, help="Held-out papers to scan."),
                     max_pages: int = typer.Option(12, "--max-pages", min=1),
                     seed: int = typer.Option(0, "--seed"),
                     model: Optional[Path] = typer.Option(None, "--ocr-free-model", exists=True, file_okay=False,
                                                          help="A trained OCR-free model: a model store (its CURRENT "
                                                               "scan-topics) or a version folder (default: train one "
                                                               "on the collection's other papers)."),
                     epochs: int = typer.Option(8, "--epochs", min=1),
                     dense: bool = typer.Option(True, "--dense/--lexical", help="Search index with MiniLM re-ranking.")) -> None:
        """Scan-like copies of held-out papers vs their born-digital extraction: figures, captions,
        crops, and retrieval by OCR, OCR-free and both (Acc@1/5/10)."""
        from app.eval.scanned import evaluate
        from app.settings import settings_for

        settings = settings_for(data_dir)
        rep = evaluate(settings.data_dir, out, pdfs, n_papers=papers, max_pages=max_pages, seed=seed,
                       ocr_free_model=model, train_epochs=epochs, dense=dense)
        typer.echo(json.dumps({k: v for k, v in rep.items() if k not in ("papers", "eval_papers")}, indent=1, default=float))
        typer.echo(f"wrote {out}/report.json and {out}/figures.json")

    @cli.command("train-scan-topics")
    def train_scan_topics(pdfs: Path = typer.Argument(..., exists=True, file_okay=False, help="Born-digital PDFs (recursive)."),
                          out: Path = typer.Option(Path("artifacts/models"), "--out", file_okay=False,
                                                   help="Model store to publish the scan-topics version into "
                                                        "(e.g. DATA_DIR/models)."),
                          topics: int = typer.Option(128, "--topics", min=2, help="Dimensions of the text space."),
                          pages: int = typer.Option(6, "--pages", min=1, help="First pages of each paper to train on."),
                          epochs: int = typer.Option(8, "--epochs", min=1),
                          workers: int = typer.Option(2, "--workers", min=1, help="Processes rendering the pages."),
                          seed: int = typer.Option(0, "--seed"),
                          held_out_of: Optional[Path] = typer.Option(
                              None, "--held-out-of", help="Data dir of the collection: train only on the papers "
                                                          "eval-scanned trains on (its held-out papers, with the "
                                                          "same --eval-papers and --eval-seed, left out)."),
                          eval_papers: int = typer.Option(16, "--eval-papers", min=1),
                          eval_seed: int = typer.Option(0, "--eval-seed")) -> None:
        """Train the OCR-free page encoder: word vectors of a latent semantic space of the pages' text
        as pseudo-labels of the word shapes printed there, circle loss."""
        from app.pdfs import file_sha256
        from app.ingest.scanned.topics import train

        paths = sorted(pdfs.rglob("*.pdf"))
        if held_out_of is not None:
            from app.eval.scanned import training_sha256
            from app.settings import settings_for

            allowed = training_sha256(settings_for(held_out_of).db_url, pdfs, eval_papers, eval_seed)
            n_all = len(paths)
            paths = [p for p in paths if file_sha256(p) in allowed]
            typer.echo(f"training on {len(paths)} of {n_all} PDFs (held-out papers left out)")
        rep = train(paths, out, n_topics=topics, max_pages=pages, epochs=epochs, seed=seed, workers=workers)
        typer.echo(json.dumps(rep.__dict__, default=float))
