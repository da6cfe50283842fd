"""`figsearch train-types` and `figsearch eval-types`: registered on the main Typer app."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Optional

import typer


RESERVED_SOURCES = ("acl", "page_text", "drawn")


def labels_source(value: str) -> tuple[Path, str]:
    """`FILE` or `FILE:SOURCE` of `train-types --labels`: the file and the source its figures count as."""
    path, source = value, "labelled"
    m = re.fullmatch(r"(.+):([a-z][a-z0-9_]*)", value)
    if m and not Path(value).exists():
        path, source = m.group(1), m.group(2)
    if source in RESERVED_SOURCES:
        raise typer.BadParameter(f"--labels {value}: {source} is a source of its own; name the labels otherwise")
    if not Path(path).is_file():
        raise typer.BadParameter(f"--labels {value}: no such file {path}")
    return Path(path), source


def register(cli: typer.Typer) -> None:
    @cli.command("train-types")
    def train_types_cmd(
            acl: Optional[Path] = typer.Option(None, "--acl", exists=True, file_okay=False,
                                               help="Folder of labelled figures: labels.jsonl (image, type, types_accepted, paper) and images/."),
            data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Collection holding the --labels figures."),
            labels: Optional[list[str]] = typer.Option(
                None, "--labels",
                help="Hand labels of the data dir's figures (JSON lines: sha256, number, type, types), as FILE or "
                     "FILE:SOURCE; repeatable. A file's figures form the source SOURCE (default labelled) that "
                     "--weights names, e.g. --labels recsys.jsonl --labels stats.jsonl:field --weights field=0.5; "
                     "text cut from their papers' pages is source page_text."),
            page_text: int = typer.Option(2, "--page-text", min=0, help="Text crops cut from each labelled paper's pages."),
            synthetic: int = typer.Option(1000, "--synthetic", min=0, help="Drawn figures of every type to train on."),
            components: int = typer.Option(256, "--components", min=8, help="Principal components the head reads (and picture vectors keep)."),
            picture_dims: int = typer.Option(128, "--picture-dims", min=8, help="Length of a picture vector."),
            discriminant: float = typer.Option(0.0, "--picture-discriminant", min=0.0,
                                               help="Weight of the type-separating axes in the picture vector (0: principal components only)."),
            balance: float = typer.Option(0.0, "--balance", min=0.0, max=1.0,
                                          help="Weight examples of rare types up: by (their type's share) ** -balance (0: no, 1: every type counts the same)."),
            c: float = typer.Option(0.1, "--C", min=1e-6, help="Inverse regularisation of the logistic regression."),
            weights: str = typer.Option("", "--weights", help="How much an example of each source counts, e.g. acl=2,drawn=0.3 (default 1 each; sources: acl, labelled or the --labels SOURCE names, page_text, drawn)."),
            folds: int = typer.Option(5, "--folds", min=2, help="Paper-grouped folds (the temperature is fitted on them)."),
            seed: int = typer.Option(0, "--seed"),
            cv: bool = typer.Option(False, "--cv", help="Only cross-validate (prints the numbers, saves nothing)."),
            cache: Optional[Path] = typer.Option(None, "--cache", help="Folder that keeps backbone features between runs."),
            size: int = typer.Option(224, "--size", min=32,
                                     help="Input size of the backbone (crops padded to a square of this many pixels)."),
            fine_tune: int = typer.Option(
                0, "--fine-tune", min=0,
                help="Epochs of fine-tuning the backbone's last blocks, whose linear layer then types "
                     "(0: the frozen ImageNet backbone); each cross-validation fold tunes its own."),
            cv_predictions: Optional[Path] = typer.Option(
                None, "--cv-predictions", dir_okay=False,
                help="Write every labelled figure's held-out type probabilities here (JSON lines), to "
                     "compare recipes figure by figure (scripts/types_cv_compare.py)."),
            dominant_by_shown: float = typer.Option(
                0.0, "--dominant-by-shown", min=0.0, max=1.0,
                help="Choose the dominant type as the one most likely among the types a figure shows "
                     "(1), the most probable one (0), or a mix; how often a type comes with another is "
                     "counted on the labelled figures and ships with the head."),
            out: Optional[Path] = typer.Option(None, "--out", file_okay=False,
                                               help="Model store to publish the figure-types version into, e.g. "
                                                    "DATA_DIR/models to override the shipped one for a collection "
                                                    "(default: the store shipped with the package).")) -> None:
        """Train the figure-type head and the picture projection on the pretrained backbone's
        features: labelled ACL figures (--acl), hand-labelled crops of a collection (--data-dir
        --labels) with text cut from their pages, and drawn figures; paper-grouped
        cross-validation, temperature fitted on its folds. With --fine-tune the backbone's last
        blocks are retrained on the same figures first and ship with the head."""
        from app.model_store.store import SHIPPED
        from app.settings import settings_for
        from app.vision.train_types import _concat, acl_examples, drawn_examples, labelled_examples, train_types

        if bool(labels) != (data_dir is not None):
            raise typer.BadParameter("--labels and --data-dir go together")
        parts = {}
        tune = fine_tune > 0
        if acl is not None:
            parts["acl"] = acl_examples(acl, cache, progress=True, size=size, tune=tune)
        for path, source in (labels_source(v) for v in labels or []):
            ex = labelled_examples(settings_for(data_dir), path, cache, page_text, seed, progress=True,
                                   size=size, tune=tune, source=source)
            parts[source] = _concat([parts[source], ex]) if source in parts else ex
        if not parts:
            raise typer.BadParameter("give --acl and/or --data-dir with --labels")
        parts["drawn"] = drawn_examples(synthetic, seed, cache, progress=True, size=size, tune=tune)
        report = train_types(parts, out or SHIPPED, folds, components, c, seed,
                             command="figsearch " + " ".join(sys.argv[1:]), cv_only=cv,
                             picture_dims=picture_dims, discriminant=discriminant, balance=balance,
                             keep=1 if out is None else 3, size=size, tune_epochs=fine_tune, progress=True,
                             predictions_path=cv_predictions, cache=cache, dominant_by_shown=dominant_by_shown,
                             source_weight={k: float(v) for k, v in (p.split("=") for p in weights.split(",") if p)})
        typer.echo(json.dumps(report.get("cross_validation", report), indent=2))

    @cli.command("eval-types")
    def eval_types_cmd(
            data_dir: Optional[Path] = typer.Option(None, "--data-dir"),
            gold: Path = typer.Option(..., "--gold", exists=True, dir_okay=False,
                                      help="JSON lines: sha256, number, type, types (labelled by looking at the crops)."),
            out: Optional[Path] = typer.Option(None, "--out", help="Write report.json here."),
            reclassify: bool = typer.Option(False, "--reclassify", help="Classify every figure again first."),
            pixels_only: bool = typer.Option(False, "--pixels-only",
                                             help="With --reclassify: type by pixels alone, ignoring the type a caption "
                                                  "names.")) -> None:
        """Figure types against labels made by looking: dominant-type accuracy, a type the figure
        shows, mean recall over the labelled types, per-type recall/precision, the confusion matrix,
        and type-name queries (top 5)."""
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
