"""Energy and carbon: facility energy through PUE, and CO2e from grid intensity.

References
----------
.. [1] The Green Grid 2012, "PUE: A Comprehensive Examination of the Metric", WP#49:
       facility energy = IT energy x PUE.
.. [2] Ember, Yearly Electricity Data (data year 2023), via Our World in Data
       "Carbon intensity of electricity generation"; US EIA FAQ 74 (2023). Presets in
       ``data/grid_intensity.yaml`` with the source of each value.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.checks import require_non_negative
from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import HOURS_PER_YEAR, KW_PER_MW

GRID_PATH = data_path("grid_intensity.yaml")


def facility_energy_mwh(it_kw: float, pue: float, hours: float, load_fraction: float = 1.0) -> float:
    """Facility energy [MWh] drawn by an IT load over ``hours``.

    Parameters
    ----------
    it_kw : float
        IT power [kW].
    pue : float
        Power usage effectiveness [-], >= 1.
    hours : float
        Duration [h].
    load_fraction : float
        Average IT load as a fraction of ``it_kw`` [-].

    Notes
    -----
    .. math:: E = P_{IT} \\cdot PUE \\cdot t \\cdot f_{load} / 1000   (The Green Grid WP#49)
    """
    require_non_negative(it_kw=it_kw)
    require_non_negative(hours=hours)
    require_non_negative(load_fraction=load_fraction)
    if not (isinstance(pue, (int, float)) and math.isfinite(pue) and pue >= 1):
        raise ValueError(f"pue must be at least 1, got {pue!r}")
    return it_kw * pue * hours * load_fraction / KW_PER_MW


def energy_mwh_per_year(it_kw: float, pue: float, load_fraction: float = 1.0) -> float:
    """Facility energy per (365-day) year [MWh/yr]: ``it_kw x pue x 8760 h x load / 1000``."""
    return facility_energy_mwh(it_kw, pue, HOURS_PER_YEAR, load_fraction)


def co2e_tonnes(energy_mwh: float, kg_co2e_per_kwh: float) -> float:
    """Emissions [t CO2e] = energy [MWh] x intensity [kg/kWh] (1 MWh x 1 kg/kWh = 1 t)."""
    require_non_negative(energy_mwh=energy_mwh)
    require_non_negative(kg_co2e_per_kwh=kg_co2e_per_kwh)
    return energy_mwh * kg_co2e_per_kwh


@lru_cache(maxsize=2)
def load_grid_presets(path: str | None = None) -> dict[str, Any]:
    """``data/grid_intensity.yaml``: ``{"default": id, "regions": {id: {kg_co2e_per_kwh, source}}}``."""
    with Path(path or GRID_PATH).open(encoding="utf-8") as fh:
        data = load_yaml(fh)
    for rid, row in data["regions"].items():
        if not row.get("source"):
            raise ScenarioError(f"grid_intensity.yaml:{rid}", "every region needs a source")
    return data


def grid_intensity(scenario: Scenario) -> tuple[float, str]:
    """(kg CO2e per kWh, where it came from) for the scenario.

    ``facility.grid_kg_co2e_per_kwh`` wins; else the ``facility.grid_region`` preset; else
    the world average preset.
    """
    fac = scenario.facility
    if fac.grid_kg_co2e_per_kwh is not None:
        return fac.grid_kg_co2e_per_kwh, "facility.grid_kg_co2e_per_kwh"
    data = load_grid_presets()
    region = fac.grid_region or data["default"]
    regions = data["regions"]
    if region not in regions:
        raise UnknownIdError("grid region", region, regions, "facility.grid_region")
    row = regions[region]
    return float(row["kg_co2e_per_kwh"]), f"grid region {region!r}: {row['source']}"
