"""`figsearch train-types` and `figsearch eval-types`: registered on the main Typer app."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def register(cli: typer.Typer) -> None:
    @cli.command("train-types")
    def train_types_cmd(
            data_dir: Optional[Path] = typer.Option(None, "--data-dir",
                                                    help="Also learn from this collection's figures whose caption names a type."),
            exclude_papers: Optional[Path] = typer.Option(None, "--exclude-papers", exists=True, dir_okay=False,
                                                          help="sha256 per line: these papers give no example."),
            synthetic: int = typer.Option(4000, "--synthetic", min=100, help="Drawn figures to train on."),
            epochs: int = typer.Option(12, "--epochs", min=1),
            seed: int = typer.Option(0, "--seed"),
            cache: Optional[Path] = typer.Option(None, "--cache", help="Folder that keeps the drawn figures between runs."),
            out: Optional[Path] = typer.Option(None, "--out", help="Weights file (default: the shipped weights).")) -> None:
        """Train the figure-type classifier (drawn figures of every type + weak caption labels)."""
        from app.learn.data import read_sha_file
        from app.settings import settings_for
        from app.vision.figure_types import WEIGHTS
        from app.vision.train_types import train_types

        settings = settings_for(data_dir) if data_dir else None
        exclude = read_sha_file(exclude_papers) if exclude_papers else set()
        meta = train_types(settings, exclude, n_synthetic=synthetic, epochs=epochs, seed=seed,
                           out=out or WEIGHTS, cache=cache, progress=True)
        typer.echo(json.dumps(meta))

    @cli.command("eval-types")
    def eval_types_cmd(
            data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
            gold: Path = typer.Option(..., "--gold", exists=True, dir_okay=False,
                                      help="JSON lines: sha256, number, type, types (labelled by looking at the crops)."),
            out: Optional[Path] = typer.Option(None, "--out", help="Write report.json here."),
            reclassify: bool = typer.Option(False, "--reclassify", help="Classify every figure again first.")) -> None:
        """Figure types against labels made by looking: dominant-type accuracy, a type the figure
        shows, per-type recall/precision, and type-name queries (top 5)."""
        from app.eval.types import evaluate_types
        from app.settings import settings_for

        report = evaluate_types(settings_for(data_dir), gold, reclassify=reclassify)
        if out:
            out.mkdir(parents=True, exist_ok=True)
            (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        typer.echo(json.dumps({k: v for k, v in report.items() if k not in ("per_figure", "queries")}, indent=2))

    @cli.command("eval-image-copies")
    def eval_image_copies_cmd(data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
                              n: int = typer.Option(300, "--n", min=1, help="Figures to copy and search."),
                              seed: int = typer.Option(0, "--seed")) -> None:
        """Search by picture with rescaled JPEG copies of collection figures: how often the figure
        itself comes first."""
        from app.eval.image_copies import evaluate_image_copies
        from app.settings import settings_for

        typer.echo(json.dumps(evaluate_image_copies(settings_for(data_dir), n=n, seed=seed), indent=2))
