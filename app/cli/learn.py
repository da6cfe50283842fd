"""`figsearch train` (and `figsearch eval-ablation`): registered on the main Typer app by
`register(cli)`."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer


def register(cli: typer.Typer) -> None:
    @cli.command()
    def train(data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Data directory."),
              model: str = typer.Option("fused", "--model",
                                        help="Model name (variant): fused (default: MiniLM text + style CNN + paper context), "
                                             "fused_nopaper, lstm_cnn, bilstm_cnn, "
                                             "minilm_text, style_image, lstm_seedcnn, fused_ce, fused_triplet, "
                                             "fused_ssim, fcc_ce, fcc_pearson."),
              exclude_papers: Optional[Path] = typer.Option(None, "--exclude-papers", exists=True, dir_okay=False,
                                                            help="sha256 per line (or gold JSON lines): these "
                                                                 "papers' figures take part in no training pair."),
              epochs: Optional[int] = typer.Option(None, "--epochs", min=1),
              steps: Optional[int] = typer.Option(None, "--steps-per-epoch", min=1),
              seed: int = typer.Option(0, "--seed"),
              device: Optional[str] = typer.Option(None, "--device", help="cpu / cuda (default: cuda if present)."),
              reindex: bool = typer.Option(True, "--reindex/--no-reindex",
                                           help="Re-embed all figures and publish a new index version "
                                                "(default model only)."),
              json_out: bool = typer.Option(False, "--json")) -> None:
        """Train a figure-embedding model on the collection (weak supervision: same paper 1, citing
        0.6, random 0) and publish it as data_dir/models/<model>/<version> (CURRENT pointer)."""
        from app.learn.variants import FCC_VARIANTS, VARIANTS, config_for
        from app.learn.data import load_learn_data
        from app.learn.registry import DEFAULT_MODEL, publish
        from app.learn.train import train as run_train
        from app.pdfs import read_paper_shas
        from app.settings import settings_for

        if model not in VARIANTS and model not in FCC_VARIANTS:
            typer.echo(f"error: unknown model {model!r}", err=True)
            raise typer.Exit(2)
        settings = settings_for(data_dir)
        over = {k: v for k, v in (("epochs", epochs), ("steps_per_epoch", steps)) if v is not None}
        cfg = config_for(model, seed=seed, **over)
        data = load_learn_data(settings)
        shas = read_paper_shas(exclude_papers)
        excluded = data.rows_of_papers(shas)
        if shas and len(excluded) < len(shas):
            typer.echo(f"note: {len(shas) - len(excluded)} excluded sha256 are not in the collection", err=True)
        t0 = time.perf_counter()
        data.minilm(progress=True) if cfg.text == "minilm" else None
        res = run_train(data, cfg, excluded, progress=True, device=device)
        version = publish(res, settings.data_dir, model, {"data_hash": data.data_hash(excluded),
                                                          "excluded_sha256": sorted(shas)},
                          papers=data.papers_trained_on(excluded))
        out = {"model": model, "version": version, "seconds": round(time.perf_counter() - t0, 1),
               "train_seconds": res.metrics["train_seconds"], "val_acc": res.metrics["val_acc"],
               "n_train_figures": res.metrics.get("n_train_figures"), "excluded_papers": len(excluded)}
        if reindex and model == DEFAULT_MODEL:
            from app.pipeline.indexing import reembed_all

            out["index"] = reembed_all(settings, progress=True)
        typer.echo(json.dumps(out) if json_out else "\n".join(f"{k}: {v}" for k, v in out.items()))

    @cli.command("eval-ablation")
    def eval_ablation(data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
                      out: Path = typer.Option(Path("artifacts/eval-ablation"), "--out"),
                      target_papers: Optional[Path] = typer.Option(None, "--target-papers", exists=True,
                                                                   dir_okay=False),
                      variants: Optional[str] = typer.Option(None, "--variants",
                                                             help="Comma-separated (default: all)."),
                      folds: int = typer.Option(3, "--folds", min=2),
                      seed: int = typer.Option(0, "--seed"),
                      first_stage: str = typer.Option("tfidf", "--first-stage")) -> None:
        """`figsearch eval` plus a row per model variant (cross-fitted: targets' papers never train
        the model that ranks them); same report files."""
        from app.eval.run import evaluate_data_dir
        from app.settings import settings_for

        settings = settings_for(data_dir)
        try:
            evaluate_data_dir(settings, out, target_papers, seed=seed, first_stage=first_stage, ablation=True,
                              variants=variants.split(",") if variants else None, folds=folds)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1)
        typer.echo((out / "report.md").read_text())
