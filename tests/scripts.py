"""The repository's scripts/ as modules, for tests that check the figures they print or the docs they write."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@functools.cache
def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as a module (once per test session; the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
