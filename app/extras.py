"""Optional packages: those only the evaluation, the benchmark, the demo-paper generator and the
drawing of training figures use are extras of the package (pyproject `eval`, `demo`, `train`),
not installed by a plain `pip install figsearch`. Code that needs one imports it through
`require`, so a missing extra says which one to install instead of a bare ImportError."""
from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ImportError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import `module`, or raise MissingExtra naming `extra` (the pyproject extra holding it)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{purpose} needs the {module.split('.')[0]!r} package, which is not installed: "
                           f"install figsearch with the {extra!r} extra, e.g. pip install -e '.[{extra}]'") from exc
