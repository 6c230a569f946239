"""GPU cluster design workbook: pure, typed calculations behind the notebooks, app and CLI.

The public API is re-exported here; everything else is importable from its module. The names
are bound on first use (PEP 562), so ``import gpucluster_lib`` stays cheap: pandas, altair and
ipywidgets load only when something needs them.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "Catalog": "gpucluster_lib.catalog",
    "load_catalog": "gpucluster_lib.catalog",
    "CatalogError": "gpucluster_lib.errors",
    "GpuClusterError": "gpucluster_lib.errors",
    "ScenarioError": "gpucluster_lib.errors",
    "UnknownIdError": "gpucluster_lib.errors",
    "Finding": "gpucluster_lib.findings",
    "Scenario": "gpucluster_lib.scenario",
    "dumps": "gpucluster_lib.scenario",
    "from_dict": "gpucluster_lib.scenario",
    "load_scenario": "gpucluster_lib.scenario",
    "loads": "gpucluster_lib.scenario",
    "Design": "gpucluster_lib.design",
    "design": "gpucluster_lib.design",
}

__all__ = [  # the same names as _EXPORTS (tests/test_startup.py checks)
    "Catalog",
    "CatalogError",
    "Design",
    "Finding",
    "GpuClusterError",
    "Scenario",
    "ScenarioError",
    "UnknownIdError",
    "design",
    "dumps",
    "from_dict",
    "load_catalog",
    "load_scenario",
    "loads",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ binds these
    from gpucluster_lib.catalog import Catalog, load_catalog
    from gpucluster_lib.design import Design, design
    from gpucluster_lib.errors import CatalogError, GpuClusterError, ScenarioError, UnknownIdError
    from gpucluster_lib.findings import Finding
    from gpucluster_lib.scenario import Scenario, dumps, from_dict, load_scenario, loads


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """Keeps ``gpucluster_lib.design`` the function when the ``design`` submodule is imported.

    Importing a submodule binds it to the package attribute of the same name; for ``design``
    that would hide the public function ``design()`` (as ``from .design import design`` in an
    eager ``__init__`` would not).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if (name in _EXPORTS and isinstance(value, types.ModuleType)
                and value.__name__ == _EXPORTS[name] and hasattr(value, name)):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
