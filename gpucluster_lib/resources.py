"""Where the shipped data lives: one root for the catalogue, presets and example scenarios.

The data ships inside the package (``gpucluster_lib/data/``), so an installed wheel finds it.
``GPUCLUSTER_DATA`` names another folder of the same layout (a site's own catalogue).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The package's own data folder.
PACKAGE_DATA = Path(__file__).resolve().parent / "data"


def data_root() -> Path:
    """The data folder in force: ``GPUCLUSTER_DATA`` when set, else the package's."""
    env = os.environ.get("GPUCLUSTER_DATA")
    return Path(env) if env else PACKAGE_DATA


def data_path(*parts: str) -> Path:
    """A file under the data root, e.g. ``data_path("models.yaml")``."""
    return data_root().joinpath(*parts)


def examples_dir() -> Path:
    """The shipped example scenarios."""
    return data_path("scenarios")
