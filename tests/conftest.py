"""Test-wide set-up: keep Jupyter, IPython and Chromium state inside the work tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / ".jupyter-home"
ARTIFACTS = ROOT / ".test-artifacts"

for var, sub in {
    "JUPYTER_CONFIG_DIR": "config",
    "JUPYTER_DATA_DIR": "data",
    "JUPYTER_RUNTIME_DIR": "runtime",
    "IPYTHONDIR": "ipython",
    "XDG_CONFIG_HOME": "xdg-config",
    "XDG_CACHE_HOME": "xdg-cache",
    "MPLCONFIGDIR": "mpl",
}.items():
    path = Path(os.environ.setdefault(var, str(HOME / sub)))
    path.mkdir(parents=True, exist_ok=True)
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
ARTIFACTS.mkdir(exist_ok=True)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def artifacts() -> Path:
    return ARTIFACTS


@pytest.fixture(scope="session")
def examples(root: Path) -> list[Path]:
    return sorted((root / "gpucluster_lib" / "data" / "scenarios").glob("*.yaml"))


#: The Llama 3 70B example (512 H100): the serving tests' common scenario.
LLAMA3_70B = ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml"


@pytest.fixture(scope="session")
def llama3_70b_serving():
    """The Llama 3 70B example's scenario, its catalogue and its serving estimate (computed once)."""
    from gpucluster_lib.hardware.resolve import catalog_for
    from gpucluster_lib.inference import serve
    from gpucluster_lib.scenario import load_scenario

    s = load_scenario(LLAMA3_70B)
    cat = catalog_for(s)
    return s, cat, serve(s, cat)
