"""`figsearch train-types` and `figsearch eval-types`: registered on the main Typer app."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer


def register(cli: typer.Typer) -> None:
    @cli.command("train-types")
    def train_types_cmd(
            data_dir: Optional[Path] = typer.Option(None, "--data-dir",
                                                    help="Also learn from this collection's figures (hand labels, or captions that name a type)."),
            exclude_papers: Optional[Path] = typer.Option(None, "--exclude-papers", exists=True, dir_okay=False,
                                                          help="sha256 per line: these papers give no example."),
            labels: Optional[Path] = typer.Option(None, "--labels", exists=True, dir_okay=False,
                                                  help="Hand labels of the data dir's figures (JSON lines: sha256, number, type, types): fine-tune --init on them."),
            init: Optional[Path] = typer.Option(None, "--init", exists=True, dir_okay=False,
                                                help="Weights to fine-tune (with --labels)."),
            real_weight: float = typer.Option(3.0, "--real-weight", min=0.0, help="A real crop's loss counts this many drawings'."),
            page_text: int = typer.Option(2, "--page-text", min=0, help="Text crops cut from each labelled paper's pages."),
            copies: int = typer.Option(3, "--copies", min=1, help="Versions of each real crop: as extracted + augmented ones."),
            taps: str = typer.Option("3,4", "--taps", help="Blocks (0-4) whose pooled features the new head reads."),
            hidden: int = typer.Option(128, "--hidden", min=0, help="Hidden units of the new head (0: linear)."),
            pixels: bool = typer.Option(False, "--pixels", help="The new head also reads pixel statistics of the full-resolution crop (text, rules, colours)."),
            cv: bool = typer.Option(False, "--cv", help="Only compare heads by cross-validation over the labelled papers (prints the numbers)."),
            folds: int = typer.Option(4, "--folds", min=2),
            synthetic: int = typer.Option(4000, "--synthetic", min=100, help="Drawn figures to train on."),
            epochs: int = typer.Option(12, "--epochs", min=1),
            seed: int = typer.Option(0, "--seed"),
            cache: Optional[Path] = typer.Option(None, "--cache", help="Folder that keeps the drawn figures between runs."),
            out: Optional[Path] = typer.Option(None, "--out", help="Weights file (default: the shipped weights).")) -> None:
        """Train the figure-type classifier: from scratch on drawn figures of every type + weak
        caption labels, or a new head over --init's conv blocks on hand-labelled real crops
        (--labels), their pages' text and drawn figures."""
        from app.learn.data import read_sha_file
        from app.settings import settings_for
        from app.vision.figure_types import WEIGHTS
        from app.vision.train_types import cross_validate, read_labels, synthetic_set, train_types, variants

        if (labels is None) != (init is None) or (labels is not None and data_dir is None):
            raise typer.BadParameter("--labels and --init go together, with the --data-dir holding the labelled figures")
        settings = settings_for(data_dir) if data_dir else None
        exclude = read_sha_file(exclude_papers) if exclude_papers else set()
        if cv:
            if labels is None:
                raise typer.BadParameter("--cv needs --labels and --init")
            drawn = synthetic_set(synthetic, seed, cache, progress=True)
            report = cross_validate(settings, read_labels(labels), init, drawn, variants(real_weight, epochs),
                                    folds=folds, seed=seed, copies=copies, page_text=page_text, exclude=exclude,
                                    progress=True)
            typer.echo(json.dumps(report, indent=2))
            return
        meta = train_types(settings, exclude, n_synthetic=synthetic, epochs=epochs, seed=seed, out=out or WEIGHTS,
                           cache=cache, progress=True, labels=labels, init=init, real_weight=real_weight,
                           page_text=page_text, copies=copies, taps=tuple(int(t) for t in taps.split(",")),
                           hidden=hidden, pixels=pixels, command="figsearch " + " ".join(sys.argv[1:]))
        typer.echo(json.dumps(meta))

    @cli.command("eval-types")
    def eval_types_cmd(
            data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
            gold: Path = typer.Option(..., "--gold", exists=True, dir_okay=False,
                                      help="JSON lines: sha256, number, type, types (labelled by looking at the crops)."),
            out: Optional[Path] = typer.Option(None, "--out", help="Write report.json here."),
            reclassify: bool = typer.Option(False, "--reclassify", help="Classify every figure again first."),
            pixels_only: bool = typer.Option(False, "--pixels-only",
                                             help="With --reclassify: type by pixels alone, ignoring the "
                                                  "type a caption names.")) -> None:
        """Figure types against labels made by looking: dominant-type accuracy, a type the figure
        shows, per-type recall/precision, and type-name queries (top 5)."""
        from app.eval.types import evaluate_types
        from app.settings import settings_for

        report = evaluate_types(settings_for(data_dir), gold, reclassify=reclassify, captions=not pixels_only)
        if out:
            out.mkdir(parents=True, exist_ok=True)
            (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        typer.echo(json.dumps({k: v for k, v in report.items() if k not in ("per_figure", "queries")}, indent=2))

    @cli.command("eval-image-copies")
    def eval_image_copies_cmd(data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
                              n: int = typer.Option(300, "--n", min=1, help="Figures to copy and search."),
                              seed: int = typer.Option(0, "--seed"),
                              labels: Optional[Path] = typer.Option(
                                  None, "--labels", exists=True, dir_okay=False,
                                  help="Figure types labelled by looking (JSON lines): also judge whether "
                                       "uploads find figures of their kind in other papers.")) -> None:
        """Search by picture with rescaled JPEG copies of collection figures: how often the figure
        itself comes first (and, with --labels, how often the results from other papers are of the
        uploaded figure's kind)."""
        from app.eval.image_copies import evaluate_image_copies
        from app.settings import settings_for

        typer.echo(json.dumps(evaluate_image_copies(settings_for(data_dir), n=n, seed=seed, labels=labels), indent=2))
