"""CLI commands of the central-figure feature; `register(cli)` adds them to the main `figsearch` app:

    figsearch train-central --data-dir DIR [--epochs N] [--max-steps N] [--exclude-papers FILE]
    figsearch eval-central  --data-dir DIR [--gold FILE] --out DIR [--save-weights] [--no-model]
    figsearch score-central --data-dir DIR [--paper-id ID ...]
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from app.cli.settings_option import DataDir, settings_or_exit


def train_central_cmd(
        data_dir: Optional[Path] = DataDir,
        epochs: int = typer.Option(6, "--epochs", min=1),
        max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, help="Stop after this many steps."),
        exclude_papers: Optional[Path] = typer.Option(None, "--exclude-papers", exists=True, dir_okay=False,
                                                      help="sha256 per line (or gold JSON lines): never train on these."),
        max_length: int = typer.Option(96, "--max-length", min=16, max=512),
        batch_size: int = typer.Option(16, "--batch-size", min=2),
        time_budget: float = typer.Option(30.0, "--time-budget-min", min=0.1, help="Wall-clock limit in minutes."),
        seed: int = typer.Option(0, "--seed"),
        tables: bool = typer.Option(True, "--tables/--no-tables",
                                    help="Also train on sentences that mention tables (table captions as candidates)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Save the model into this folder instead of publishing "
                                                               "a new version in the data dir's model store "
                                                               "(data_dir/models/central)."),
) -> None:
    """Fine-tune the central-figure bi-encoder on self-supervised (mention sentence, caption) pairs."""
    from app.central.train import TrainConfig, train_central
    from app.pdfs import read_paper_shas

    settings = settings_or_exit(data_dir)
    cfg = TrainConfig(epochs=epochs, max_steps=max_steps, max_length=max_length, batch_size=batch_size,
                      time_budget_s=time_budget * 60, seed=seed, tables=tables)
    try:
        meta = train_central(settings, cfg, exclude=read_paper_shas(exclude_papers), out_dir=out, progress=True)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1)
    typer.echo(json.dumps({k: meta.get(k) for k in ("steps", "train_seconds", "stopped_early", "final_loss",
                                                     "n_train_queries", "n_val_queries", "dev_mrr_by_epoch", "kept_epoch", "lexical_fit",
                                                     "data_hash", "metrics")}))


def eval_central_cmd(
        data_dir: Optional[Path] = DataDir,
        gold: Optional[Path] = typer.Option(None, "--gold", exists=True, dir_okay=False,
                                            help='JSON lines {"sha256": ..., "central": [3, 1, 2]}.'),
        out: Path = typer.Option(Path("artifacts/central"), "--out", help="Folder for report.json and report.md."),
        save_weights: bool = typer.Option(False, "--save-weights",
                                          help="Install the combined weights fitted on all gold papers."),
        no_model: bool = typer.Option(False, "--no-model", help="Evaluate the non-learned fallback only."),
        seed: int = typer.Option(0, "--seed"),
) -> None:
    """Evaluate random, pick-first, tf.idf, the model and the combined score (self-supervised + gold).

    Refuses (exit 2) to report gold papers the model trained on."""
    from app.central.evaluate import GoldLeak, evaluate_central

    settings = settings_or_exit(data_dir)
    try:
        report = evaluate_central(settings, out, gold_path=gold, seed=seed, save_weights=save_weights,
                                  use_model=not no_model)
    except GoldLeak as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo((out / "report.md").read_text())
    if report.get("info", {}).get("n_gold_papers") == 0 and gold:
        typer.echo("warning: no paper of the gold file is in the collection", err=True)


def score_central_cmd(
        data_dir: Optional[Path] = DataDir,
        paper_id: Optional[list[int]] = typer.Option(None, "--paper-id", help="Only these papers (repeatable)."),
) -> None:
    """Compute and store central_score / central_rank for the figures of the collection."""
    from app.central.scoring import score_papers

    settings = settings_or_exit(data_dir)
    r = score_papers(settings, paper_id or None, progress=True)
    typer.echo(json.dumps(r))


def register(cli: typer.Typer) -> None:
    """Add train-central, eval-central and score-central to the main app."""
    cli.command("train-central")(train_central_cmd)
    cli.command("eval-central")(eval_central_cmd)
    cli.command("score-central")(score_central_cmd)


def main() -> None:  # `python -m app.central.cli ...` without the main CLI
    app = typer.Typer(add_completion=False, no_args_is_help=True)
    register(app)
    app()


if __name__ == "__main__":
    main()
