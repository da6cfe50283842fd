"""The `--data-dir` option and the settings it gives, shared by the main command line and the
commands registered from their subsystems, so a bad setting is reported the same way by each."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from app.settings import Settings, settings_for

DataDir = typer.Option(None, "--data-dir", help="Data directory (default $FIGSEARCH_DATA_DIR or ./data).")


def settings_or_exit(data_dir: Optional[Path]) -> Settings:
    """The settings for `data_dir`; a bad FIGSEARCH_* value is an error message and exit code 2,
    not a traceback."""
    try:
        return settings_for(data_dir)
    except Exception as exc:  # pydantic validation: a bad FIGSEARCH_* value
        typer.echo(f"error: bad setting: {exc}", err=True)
        raise typer.Exit(2)
