"""GPU cluster design workbook: pure, typed calculations behind the notebooks, app and CLI.

The public API is re-exported here; everything else is importable from its module.
"""

from gpucluster_lib.catalog import Catalog, load_catalog
from gpucluster_lib.errors import CatalogError, GpuClusterError, ScenarioError, UnknownIdError
from gpucluster_lib.findings import Finding
from gpucluster_lib.scenario import Scenario, dumps, from_dict, load_scenario, loads

__all__ = [
    "Catalog",
    "CatalogError",
    "Finding",
    "GpuClusterError",
    "Scenario",
    "ScenarioError",
    "UnknownIdError",
    "dumps",
    "from_dict",
    "load_catalog",
    "load_scenario",
    "loads",
]
__version__ = "0.1.0"
