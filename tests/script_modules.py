"""Scripts of scripts/ loaded as modules, for tests of the measurement commands the README names."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py as module `name` (registered in sys.modules first: a dataclass of the
    script looks its module up while being made)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = sys.modules[name] = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]  # not half a module for the next test: its own import error again
        raise
    return mod
