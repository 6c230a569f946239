"""Cost: CapEx, OpEx, TCO with straight-line depreciation, cost per GPU-hour, build versus rent.

Pure functions take numbers; :func:`assess` wires them to a scenario. Prices come, in
order, from the scenario (``costs.*``, ``costs.prices[id]``), the catalogue
(``price_usd_estimate``) and ``data/cost_defaults.yaml`` (each with a source and date);
the origin of every price is in ``CostResult.price_sources``; figures that rest on an
assumption (a storage system missing from the catalogue) are listed in
``CostResult.assumptions``.

Definitions
-----------
* CapEx: compute (job nodes + hot spares + head nodes), network (every switch, cable and
  optic of the network design's bill of materials), storage
  (the central file system of :func:`gpucluster_lib.facility.storage.size_storage`, the appliances the
  facility budget powers and racks: appliances x catalogue price, else x capacity x the
  per-TB default; none for a single node on local NVMe), facility (building per kW of IT when ``costs.facility_model``
  is ``build``, plus racks with PDUs).
* OpEx per year: energy (typical IT kW of the job nodes, the facility budget's
  ``it_typical_kw``, x PUE x 8760 h x ``costs.load_fraction`` x price; spare nodes stand by
  and are not counted), maintenance (fraction of the IT CapEx), space (colocation per
  kW-month x 12 of the peak IT kW incl. spares, when ``colocation``).
* Network: the fabric of the job nodes (spares use free ports or replace failed nodes).
* Annualised cost: IT CapEx / years + building CapEx / facility life + OpEx (straight-line
  depreciation, no salvage value, no discounting).
* TCO over N years: IT CapEx + N years of building depreciation + N x OpEx.
* Cost per GPU-hour: annualised cost / (job GPUs x 8760 h); training run: GPUs x expected
  failure-aware days x 24 h x cost per GPU-hour.
* Cost per million tokens: annualised cost / (tokens/s per GPU of the inference engine x the
  cluster's GPUs x seconds per year) x 10^6, i.e. if the whole cluster serves at that rate.

References
----------
.. [1] Barroso, Hoelzle, Ranganathan 2018, "The Datacenter as a Computer", 3rd ed., ch. 6
       (TCO: CapEx depreciated straight-line + OpEx).
.. [2] The Green Grid WP#49 (PUE). Price sources: ``data/cost_defaults.yaml``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.checks import require_non_negative, require_positive
from gpucluster_lib.economics import carbon
from gpucluster_lib.economics import rent as rent_mod
from gpucluster_lib.economics.carbon import load_grid_presets
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.facility import site as facility
from gpucluster_lib.facility.storage import FALLBACK_STORAGE_CAPACITY_TB, size_storage
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import plural
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.network.cabling import load_cabling
from gpucluster_lib.network.topology import TopologyDesign, design_topology
from gpucluster_lib.reliability import core as reliability
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import (
    HOURS_PER_DAY,
    HOURS_PER_YEAR,
    MONTHS_PER_YEAR,
    SECONDS_PER_YEAR,
    TOKENS_PER_MILLION,
)
from gpucluster_lib.workloads.checkpoint import has_transformer

COST_DEFAULTS_PATH = data_path("cost_defaults.yaml")


# =========================================================================== pure functions


def energy_cost_per_year(it_kw: float, pue: float, price_per_kwh: float, load_fraction: float = 1.0) -> float:
    """Energy bill per year [currency/yr].

    Parameters
    ----------
    it_kw : float
        IT power [kW].
    pue : float
        Power usage effectiveness [-].
    price_per_kwh : float
        Energy price [currency/kWh].
    load_fraction : float
        Average IT load over ``it_kw`` [-].

    Notes
    -----
    .. math:: C = P_{IT} \\cdot PUE \\cdot 8760\\,h \\cdot f_{load} \\cdot p

    1 MW at PUE 1.3 and 0.10/kWh: 1000 x 1.3 x 8760 x 0.10 = 1,138,800 per year.
    """
    require_non_negative(it_kw=it_kw, price_per_kwh=price_per_kwh, load_fraction=load_fraction)
    if not (isinstance(pue, (int, float)) and math.isfinite(pue) and pue >= 1):
        raise ValueError(f"pue must be at least 1, got {pue!r}")
    return it_kw * pue * HOURS_PER_YEAR * load_fraction * price_per_kwh


def straight_line_depreciation(capex: float, years: float, salvage: float = 0.0) -> float:
    """Depreciation per year [currency/yr] = (CapEx - salvage) / years."""
    require_non_negative(capex=capex, salvage=salvage)
    require_positive(years=years)
    if salvage > capex:
        raise ValueError(f"salvage ({salvage}) cannot exceed capex ({capex})")
    return (capex - salvage) / years


def book_value(capex: float, years: float, age_years: float, salvage: float = 0.0) -> float:
    """Book value [currency] after ``age_years`` of straight-line depreciation (floored at salvage)."""
    require_non_negative(age_years=age_years)
    return max(capex - straight_line_depreciation(capex, years, salvage) * age_years, salvage)


def maintenance_per_year(capex: float, fraction: float) -> float:
    """Maintenance / support contracts per year [currency/yr] = fraction x CapEx."""
    require_non_negative(capex=capex, fraction=fraction)
    if fraction > 1:
        raise ValueError(f"fraction must be at most 1, got {fraction!r}")
    return capex * fraction


def colocation_per_year(it_kw: float, per_kw_month: float) -> float:
    """Colocation space and power capacity per year [currency/yr] = kW x price per kW-month x 12."""
    require_non_negative(it_kw=it_kw, per_kw_month=per_kw_month)
    return it_kw * per_kw_month * MONTHS_PER_YEAR


def cost_per_gpu_hour(annual_cost: float, gpus: int, utilization: float = 1.0) -> float:
    """Cost per delivered GPU-hour [currency/GPU-h] = annual cost / (GPUs x 8760 h x utilization)."""
    require_non_negative(annual_cost=annual_cost)
    require_positive(gpus=gpus, utilization=utilization)
    return annual_cost / (gpus * HOURS_PER_YEAR * utilization)


def gpu_hours(gpus: int, days: float) -> float:
    """GPU-hours [GPU-h] of ``gpus`` accelerators for ``days`` of wall-clock time."""
    require_non_negative(gpus=gpus, days=days)
    return gpus * days * HOURS_PER_DAY


def break_even_utilization(annual_own_cost: float, gpus: int, rent_per_gpu_hour: float) -> float:
    """Utilisation above which owning is cheaper than renting [fraction; may exceed 1].

    Owning costs the same whether used or not; renting costs rent x used GPU-hours:
    u* = annual own cost / (GPUs x 8760 h x rent).
    """
    require_non_negative(annual_own_cost=annual_own_cost)
    require_positive(gpus=gpus, rent_per_gpu_hour=rent_per_gpu_hour)
    return annual_own_cost / (gpus * HOURS_PER_YEAR * rent_per_gpu_hour)


# =========================================================================== data


@lru_cache(maxsize=2)
def load_cost_defaults(path: str | None = None) -> dict[str, Any]:
    """``data/cost_defaults.yaml`` as a dict (each value with ``value``, ``source``, ``date``)."""
    with Path(path or COST_DEFAULTS_PATH).open(encoding="utf-8") as fh:
        return load_yaml(fh)


def _speed_key(gbps: float, table: dict[str, Any]) -> dict[str, Any]:
    keys = sorted(table, key=float)
    best = min(keys, key=lambda k: abs(float(k) - gbps))
    return table[best]


# =========================================================================== scenario wiring


@dataclass
class CostResult:
    """Cost and carbon of a scenario. Money in ``currency``; energy in MWh; CO2e in tonnes."""

    currency: str
    years: int
    gpus: int
    nodes_bought: int
    it_power_kw: float
    facility_power_kw: float
    racks: int
    capex: dict[str, float]
    opex_per_year: dict[str, float]
    annualized_cost: float
    tco: float
    tco_by_year: list[float]
    cost_per_gpu_hour: float
    training_days: float | None
    training_gpu_hours: float | None
    training_run_cost: float | None
    rent_per_gpu_hour: float
    rent_training_run_cost: float | None
    break_even_utilization: float
    cost_per_million_tokens: float | None
    tokens_per_s_served: float | None
    energy_mwh_per_year: float
    grid_kg_co2e_per_kwh: float
    grid_source: str
    co2e_tonnes_per_year: float
    training_run_energy_mwh: float | None
    training_run_co2e_tonnes: float | None
    price_sources: dict[str, str] = field(default_factory=dict)
    assumptions: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: the priced storage appliances: {"system", "units"} of :func:`gpucluster_lib.facility.storage.size_storage`
    storage: dict[str, Any] = field(default_factory=dict)
    #: the priced lines of the CapEx, one per item bought: {"category", "sku", "description",
    #: "quantity", "unit_price", "source", "extended"}; they add up to ``capex["total"]``
    #: (the bill of materials, ``gpucluster export bom``)
    lines: list[dict[str, Any]] = field(default_factory=list)
    #: "buy" or "rent" (costs.purchase), and the rental term when rented
    purchase: str = "buy"
    rent_term: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``gpucluster cost --json`` contract."""
        return {
            "currency": self.currency,
            "years": self.years,
            "gpus": self.gpus,
            "nodes_bought": self.nodes_bought,
            "it_power_kw": self.it_power_kw,
            "facility_power_kw": self.facility_power_kw,
            "racks": self.racks,
            "capex": dict(self.capex),
            "storage": dict(self.storage),
            "opex_per_year": dict(self.opex_per_year),
            "annualized_cost": self.annualized_cost,
            "tco": self.tco,
            "tco_by_year": list(self.tco_by_year),
            "cost_per_gpu_hour": self.cost_per_gpu_hour,
            "training_days": self.training_days,
            "training_gpu_hours": self.training_gpu_hours,
            "training_run_cost": self.training_run_cost,
            "build_vs_rent": {
                "rent_per_gpu_hour": self.rent_per_gpu_hour,
                "rent_training_run_cost": self.rent_training_run_cost,
                "own_training_run_cost": self.training_run_cost,
                "break_even_utilization": self.break_even_utilization,
            },
            "purchase": self.purchase,
            "rent_term": self.rent_term,
            "cost_per_million_tokens": self.cost_per_million_tokens,
            "tokens_per_s_served": self.tokens_per_s_served,
            "energy_mwh_per_year": self.energy_mwh_per_year,
            "grid_kg_co2e_per_kwh": self.grid_kg_co2e_per_kwh,
            "grid_source": self.grid_source,
            "co2e_tonnes_per_year": self.co2e_tonnes_per_year,
            "training_run_energy_mwh": self.training_run_energy_mwh,
            "training_run_co2e_tonnes": self.training_run_co2e_tonnes,
            "price_sources": dict(self.price_sources),
            "assumptions": dict(self.assumptions),
            "findings": [f.to_dict() for f in self.findings],
        }


class _Prices:
    """Price look-up: scenario override > costs.prices[id] > catalogue > cost_defaults; records the origin."""

    def __init__(self, scenario: Scenario, catalog: Any):
        self.costs = scenario.costs
        self.cat = catalog
        self.defaults = load_cost_defaults()
        self.sources: dict[str, str] = {}
        self.lines: list[dict[str, Any]] = []

    def line(self, category: str, sku: str, description: str, quantity: float, unit_price: float,
             source: str) -> float:
        """Record one priced CapEx line; returns its extended price (quantity x unit price)."""
        extended = float(quantity) * float(unit_price)
        self.lines.append({"category": category, "sku": sku, "description": description, "quantity": quantity,
                           "unit_price": float(unit_price), "source": source, "extended": extended})
        return extended

    def item(self, key: str, table: str, id_: str | None, default_group: dict[str, Any] | None,
             override: float | None = None, override_field: str = "") -> float | None:
        if override is not None:
            self.sources[key] = f"scenario {override_field}"
            return float(override)
        if id_ and id_ in self.costs.prices:
            self.sources[key] = f"scenario costs.prices.{id_}"
            return float(self.costs.prices[id_])
        if id_:
            try:
                row = self.cat.get(table, id_)
            except Exception:
                row = None
            if row and row.get("price_usd_estimate"):
                self.sources[key] = f"catalogue {table}.csv {id_}: {row.get('price_source') or 'price_usd_estimate'}"
                return float(row["price_usd_estimate"])
        if default_group and id_ in default_group:
            d = default_group[id_]
            self.sources[key] = f"cost_defaults: {d['source']} ({d['date']})"
            return float(d["value"])
        return None

    def default(self, key: str, entry: dict[str, Any], override: float | None = None, override_field: str = "") -> float:
        if override is not None:
            self.sources[key] = f"scenario {override_field}"
            return float(override)
        self.sources[key] = f"cost_defaults: {entry['source']} ({entry['date']})"
        return float(entry["value"])


#: Words for the priced items (the keys of ``CostResult.price_sources``), as the findings show them.
PRICE_WORDS = {"accelerator": "accelerator", "server": "server", "head_node": "head node", "network": "network",
               "rack": "rack with power distribution", "facility_per_kw": "facility build cost per kW",
               "colocation_per_kw_month": "colocation per kW and month", "rent": "rented GPU-hour",
               "storage": "storage system", "storage_per_tb": "storage per TB",
               "storage:capacity": "capacity-tier storage system",
               "storage_capacity_per_tb": "capacity-tier storage per TB"}
#: cable media and length classes of data/cabling.yaml in words
_CABLE_WORDS = {"fibre-mmf": "multimode fibre", "fibre-smf": "single-mode fibre", "DAC": "copper cable (DAC)",
                "AOC": "active optical cable", "copper-rj": "copper patch cord"}
_LENGTH_WORDS = {"in-rack": "in the rack", "in-row": "in the row", "hall": "across the hall"}


def price_name(key: str, cat: Any = None) -> str:
    """A priced item in words: ``head_node`` -> "head node", ``switch:qm9700`` -> the switch's catalogue
    name, ``transceiver:mma4z00-ns`` -> "MMA4Z00-NS transceiver" (NVIDIA's part number),
    ``cable:fibre-mmf:in-row:400G`` -> "400G multimode fibre in the row"."""
    if key in PRICE_WORDS:
        return PRICE_WORDS[key]
    kind, _, rest = key.partition(":")
    if kind == "switch" and rest:
        try:
            return str((cat.get("switches", rest) if cat is not None else {}).get("name") or f"switch {rest}")
        except Exception:  # not in the catalogue: the id is all there is
            return f"switch {rest}"
    if kind == "transceiver" and rest:
        return f"{rest.upper()} transceiver"
    if kind == "cable" and rest:
        medium, length, speed = (rest.split(":") + ["", ""])[:3]
        words = [speed, _CABLE_WORDS.get(medium, medium.replace("-", " ")), _LENGTH_WORDS.get(length, length)]
        return " ".join(w for w in words if w)
    return key.replace("_", " ").replace(":", " ")


def _network_capex(scenario: Scenario, cat: Any, prices: _Prices, topology: TopologyDesign) -> float:
    """Network CapEx [currency]: ``costs.network_price``, else the topology's bill of materials."""
    if scenario.costs.network_price is not None:
        prices.sources["network"] = "scenario costs.network_price"
        return prices.line("network", "network", "the whole network (scenario override)", 1,
                           float(scenario.costs.network_price), "scenario costs.network_price")
    return _price_network_bom(topology.bom(), cat, prices, prices.defaults["network"])


def _price_network_bom(bom: list[dict[str, Any]], cat: Any, prices: Any, defaults: dict[str, Any]) -> float:
    """Price the topology's bill of materials: every switch (compute, storage and management
    networks), every cable and every pluggable transceiver [currency], each optic once.

    A switch costs its scenario override (``costs.prices``), else its catalogue estimate, else
    the per-port default for its port speed x its port count (``data/cost_defaults.yaml``).
    A row with ``price_usd_each`` (``data/cabling.yaml``) or a ``costs.prices`` entry costs that.
    Otherwise, with ``link`` the per-link default for the speed (cable + two transceivers):

    * DAC / AOC (ends built in) and any cable of a (network, role) group without transceiver
      rows: one link price per cable;
    * a passive fibre in a group whose transceivers are listed in their own rows: the fibre
      share of a link only (``optics_split.fibre_share``, an ESTIMATE), because the
      transceivers are priced below; pricing it at the full link price counted the optics twice;
    * a transceiver: ``optics_split.transceiver_share`` x link price for each link it carries
      (a twin-port 2x400G module = 2 link ends), at its own speed (``data/cabling.yaml``), so
      one fibre + two single-link transceivers = exactly one link price;
    * a copper RJ45 patch cord: the 100G link default's tenth (an ESTIMATE: Cat6A cords cost
      tens of USD).
    """
    split = defaults["optics_split"]
    t_share, f_share = float(split["transceiver_share"]["value"]), float(split["fibre_share"]["value"])
    optics: dict[str, Any] = {}
    try:
        optics = load_cabling().transceivers
    except Exception:  # cabling data unreadable: transceivers fall back to the 100G link share
        optics = {}
    with_optics = {(r.get("network"), r.get("role")) for r in bom if r.get("kind") == "transceiver"}
    total = 0.0
    for row in bom:
        count = float(row.get("count") or 0)
        if not count:
            continue
        rid = str(row.get("id", ""))
        if row.get("kind") == "switch":
            sw = cat.get("switches", rid)
            each = prices.item(f"switch:{rid}", "switches", rid, None)
            if each is None:
                per_port = _speed_key(float(sw["port_speed_gbps"]), defaults["switch_per_port_by_gbps"])
                each = per_port["value"] * int(sw["ports"])
                prices.sources[f"switch:{rid}"] = (f"cost_defaults: {per_port['value']} per "
                                                   f"{sw['port_speed_gbps']:g}G port x {sw['ports']} ports")
            total += prices.line("network", rid, f"{sw.get('name', rid)} ({row.get('network')} {row.get('role')})",
                                 count, each, prices.sources.get(f"switch:{rid}", ""))
            continue
        each = row.get("price_usd_each")
        src: str | None = None
        if each is None and rid in prices.costs.prices:
            each = float(prices.costs.prices[rid])
            prices.sources[f"{row.get('kind')}:{rid}"] = f"scenario costs.prices.{rid}"
        if each is None and row.get("kind") == "transceiver":
            t = optics.get(rid)
            speed = float(getattr(t, "speed_gbps", None) or 100.0)
            ends = int(getattr(t, "links", None) or 1)
            link = _speed_key(speed, defaults["link_by_gbps"])
            each = t_share * link["value"] * ends
            prices.sources[f"transceiver:{rid}"] = (f"cost_defaults: {t_share:g} x {link['value']} per {speed:g}G "
                                                    f"link x {ends} link end(s) ({split['transceiver_share']['source']})")
        elif each is None:
            m = re.search(r"(\d+)G$", rid)
            link = _speed_key(float(m[1]) if m else 100.0, defaults["link_by_gbps"])
            medium = rid.split(":", 1)[0].lower()
            if medium.startswith("copper"):
                each = link["value"] / 10
                src = f"cost_defaults: a tenth of the {link['value']} link (Cat6A patch cords cost tens of USD)"
            elif medium.startswith("fibre") and (row.get("network"), row.get("role")) in with_optics:
                each = f_share * link["value"]
                prices.sources[f"cable:{rid}"] = (f"cost_defaults: {f_share:g} x {link['value']} link "
                                                  f"(fibre only; transceivers priced separately) "
                                                  f"({split['fibre_share']['source']})")
            else:
                each = link["value"]
                src = f"cost_defaults: {link['value']} per link with its ends ({link.get('source', '')})"
        src = (src or prices.sources.get(f"{row.get('kind')}:{rid}") or prices.sources.get(f"cable:{rid}")
               or "data/cabling.yaml price_usd_estimate")
        total += prices.line("network", rid, f"{row.get('kind')} {row.get('part') or rid} ({row.get('network')} "
                             f"{row.get('role')})", count, float(each), src)
    prices.sources["network"] = "topology bill of materials (compute, storage and management networks)"
    return total


def _tokens_served(serving: Any, gpus: int, findings: list[Finding]) -> float | None:
    """Output tokens/s the whole cluster serves [tokens/s], the divisor of the cost per million tokens.

    The cost is the whole cluster's, so the tokens must be the whole cluster's too: the
    inference engine's tokens/s per GPU at the SLO-meeting batch
    (``inference.serve(...).tokens_per_s_per_gpu``) x the cluster's GPUs, in whole replicas
    (floor(GPUs / tensor parallel) x tensor parallel). Not the serving fleet sized for the
    scenario's demand, which may be a small part of the cluster. None without a language
    model to serve, or when no batch meets the SLO.
    """
    per_gpu = getattr(serving, "tokens_per_s_per_gpu", None) if serving is not None else None
    if not per_gpu:
        return None
    tp = int(getattr(serving, "tensor_parallel", None) or 1)
    serving_gpus = (gpus // tp) * tp if gpus >= tp else gpus
    tps = float(per_gpu) * serving_gpus
    findings.append(Finding(
        "cost-per-token-basis", "info",
        f"cost per million tokens if the whole cluster serves: {serving_gpus} GPUs x {per_gpu:,.1f} "
        f"output tokens/s per GPU (inference engine, SLO-meeting batch) = {tps:,.0f} tokens/s, "
        "against the whole cluster's annualised cost",
        field="inference"))
    return tps


def assess(scenario: Scenario, catalog: Any = None, *, training_days: float | None = None, budget: Any = None,
           topology: TopologyDesign | None = None, reliability_result: Any = None, hardware: Any = None,
           storage: Any = None, spares: Any = None, serving: Any = None) -> CostResult:
    """CapEx, OpEx, TCO, per-GPU-hour and per-run cost and carbon of the scenario.

    Parameters
    ----------
    scenario : Scenario
    catalog : Catalog, optional
    training_days : float, optional
        Wall-clock days of the training run [days]; default: the failure-aware expected days
        of the reliability assessment (none without a training workload).
    budget : Budget, optional
        The facility budget (IT and facility power, racks, installed spares).
    topology : TopologyDesign, optional
        The network design whose bill of materials is priced.
    reliability_result : ReliabilityResult, optional
        The reliability assessment (expected days of the training run).
    hardware, storage, spares, serving : optional
        The resolved hardware, the storage design, the spare plan and the serving estimate
        (tokens/s per GPU for the cost per million tokens).

    Each argument left out is computed from the scenario; a
    :class:`~gpucluster_lib.design.Design` passes them all, so nothing is computed twice.
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    costs = scenario.costs
    fac = scenario.facility
    findings: list[Finding] = []
    assumptions: dict[str, str] = {}
    prices = _Prices(scenario, cat)
    d = prices.defaults

    intensity, grid_src = carbon.grid_intensity(scenario)  # validate facility.grid_* before the heavy work
    plan = spares if spares is not None else reliability.spare_plan(scenario, hw)
    store = storage if storage is not None else size_storage(scenario, cat, nodes=hw.nodes, gpus=hw.gpus)
    topo = topology if topology is not None else design_topology(scenario, cat, hardware=hw)
    if budget is None:
        budget = facility.budget(scenario, cat, hardware=hw, spare_nodes=plan.spare_nodes, network=topo,
                                 storage=store)
    rel = reliability_result
    if rel is None and training_days is None and has_transformer(scenario):
        rel = reliability.assess(scenario, cat, hardware=hw, storage=store, spares=plan)
    if rel is not None:
        for k, v in rel.assumptions.items():
            assumptions[f"reliability.{k}"] = v
    spares_n = int(getattr(budget, "spare_nodes", 0))
    nodes_bought = hw.nodes + spares_n

    # ---- power and racks
    # peak IT power (incl. the installed spares) sizes the building; the typical IT power of the
    # running job nodes (the budget's it_typical_kw) gives the energy, as in `gpucluster budget`
    it_kw, fac_kw, racks = float(budget.it_power_kw), float(budget.facility_power_kw), int(budget.racks)
    it_typ_kw = float(getattr(budget, "it_typical_kw", None) or it_kw)
    pue = fac_kw / it_kw if it_kw > 0 else fac.pue

    rent_mod.require_purchasable(hw.accelerator, costs.purchase)
    if costs.purchase == "rent":
        return _rented(scenario, hw, budget, rel, training_days, intensity, grid_src, it_kw, fac_kw, racks,
                       it_typ_kw, pue, assumptions, store)

    # ---- CapEx
    node_price = prices.item("server", "servers", hw.server_id, d["compute"]["servers"], costs.server_price,
                             "costs.server_price")
    if node_price is None:
        acc = prices.item("accelerator", "accelerators", hw.accelerator_id, d["compute"]["accelerators"],
                          costs.accelerator_price, "costs.accelerator_price")
        if acc is None:
            raise ScenarioError("costs.accelerator_price",
                                f"no price known for {hw.accelerator_id!r}: set costs.accelerator_price "
                                f"or costs.prices.{hw.accelerator_id}")
        ovh = d["compute"]["server_overhead_fraction"]
        node_price = acc * hw.gpus_per_node * (1 + ovh["value"])
        prices.sources["server"] = (f"{hw.gpus_per_node} x accelerator price x (1 + {ovh['value']}) "
                                    f"({ovh['source']})")
    head_price = prices.default("head_node", d["compute"]["head_node"], costs.head_node_price, "costs.head_node_price")
    compute = prices.line("compute", hw.server_id or hw.accelerator_id, f"compute node, {hw.gpus_per_node} x "
                          f"{hw.accelerator_id} ({hw.nodes} job + {spares_n} spare)", nodes_bought, node_price,
                          prices.sources.get("server", ""))
    if scenario.hardware.head_nodes:
        compute += prices.line("compute", "head-node", "head / management node", scenario.hardware.head_nodes,
                               head_price, prices.sources["head_node"])
    # the fabric is sized for the job's nodes: a spare takes a free port or the place of the
    # failed node it replaces, so spares must not add switches (or a whole scalable unit)
    network = _network_capex(scenario, cat, prices, topo)
    if spares_n:
        findings.append(Finding("cost-fabric-job-nodes", "info",
                                f"network fabric sized and priced for the {plural(hw.nodes, 'job node')}; a spare node "
                                f"({spares_n:,} in all) uses a free switch port or takes the failed node's place "
                                "and cabling",
                                fix="give a network price if your design wires the spares permanently",
                                field="reliability.spare_nodes"))
    # storage: the same appliances as the facility budget and the checkpoint write time
    # (gpucluster_lib.facility.storage.size_storage); a single node on local NVMe buys none
    storage_capex = 0.0
    if store.appliances:
        unit_price = prices.item("storage", "storage", store.system, None)
        if unit_price is None:
            per_tb = prices.default("storage_per_tb", d["storage"]["per_tb"], costs.storage_per_tb,
                                    "costs.storage_per_tb")
            cap_tb = store.appliance_capacity_tb or FALLBACK_STORAGE_CAPACITY_TB
            unit_price = per_tb * cap_tb
            prices.sources["storage"] = (f"{store.appliances} x {store.system}: {cap_tb:g} TB x "
                                         f"{per_tb:g} per TB ({prices.sources['storage_per_tb']})")
        storage_capex = prices.line("storage", store.system, f"shared storage appliance {store.system}",
                                    store.appliances, unit_price, prices.sources.get("storage", ""))
    if getattr(store, "capacity_units", 0):
        # the capacity tier (facility.storage): its catalogue price, else its capacity x the price per TB
        cap_price = prices.item("storage:capacity", "storage", store.capacity_system, None)
        if cap_price is None:
            per_tb = prices.default("storage_capacity_per_tb", d["storage"]["capacity_per_tb"], None, "")
            cap_price = per_tb * store.capacity_unit_tb
            prices.sources["storage:capacity"] = (f"{store.capacity_units} x {store.capacity_system}: "
                                                  f"{store.capacity_unit_tb:g} TB x {per_tb:g} per TB "
                                                  f"({prices.sources['storage_capacity_per_tb']})")
        storage_capex += prices.line("storage", store.capacity_system,
                                     f"capacity-tier storage {store.capacity_system}", store.capacity_units,
                                     cap_price, prices.sources.get("storage:capacity", ""))
    rack_price = prices.default("rack", d["facility"]["rack_with_pdus"], costs.rack_price, "costs.rack_price")
    if costs.facility_model == "build":
        per_kw = prices.default("facility_per_kw", d["facility"]["build_per_kw"], costs.facility_per_kw,
                                "costs.facility_per_kw")
        building = prices.line("facility", "building-per-kw", "building, per kW of peak IT power", it_kw, per_kw,
                               prices.sources["facility_per_kw"])
    else:
        building = 0.0
    facility_capex = building + prices.line("facility", "rack", "rack with PDUs", racks, rack_price,
                                            prices.sources["rack"])
    it_capex = compute + network + storage_capex
    capex = {"compute": compute, "network": network, "storage": storage_capex, "facility": facility_capex,
             "total": it_capex + facility_capex}

    # ---- OpEx
    energy = energy_cost_per_year(it_typ_kw, pue, fac.energy_price_per_kwh, costs.load_fraction)
    maintenance = maintenance_per_year(it_capex, costs.maintenance_fraction)
    if costs.facility_model == "colocation":
        colo = prices.default("colocation_per_kw_month", d["facility"]["colocation_per_kw_month"],
                              costs.colocation_per_kw_month, "costs.colocation_per_kw_month")
        space = colocation_per_year(it_kw, colo)
    else:
        space = 0.0
        if costs.colocation_per_kw_month is not None:
            findings.append(Finding("cost-colocation-ignored", "warning",
                                    "a colocation price per kW and month is set, but the facility model is to build",
                                    fix="choose colocation as the facility model, or remove the colocation price", field="costs.facility_model"))
    opex = {"energy": energy, "maintenance": maintenance, "space": space, "total": energy + maintenance + space}

    # ---- TCO
    years = costs.years
    life = costs.facility_life_years or float(d["facility"]["life_years"]["value"])
    building_dep = straight_line_depreciation(building, life) if building else 0.0
    racks_dep = straight_line_depreciation(racks * rack_price, years)
    annual = straight_line_depreciation(it_capex, years) + racks_dep + building_dep + opex["total"]
    tco_by_year = [it_capex + racks * rack_price + y * (building_dep + opex["total"]) for y in range(years + 1)]
    tco = tco_by_year[-1]
    per_gpu_h = cost_per_gpu_hour(annual, hw.gpus)

    # ---- training run, rent, serving
    days = training_days if training_days is not None else (rel.training_days_expected if rel is not None else None)
    if days is not None and not days > 0:
        raise ValueError(f"training_days must be positive, got {days!r}")
    run_gpu_h = gpu_hours(hw.gpus, days) if days is not None else None
    run_cost = run_gpu_h * per_gpu_h if run_gpu_h is not None else None
    rent_group = d["rent"]
    if costs.rent_per_gpu_hour is not None:
        rent = costs.rent_per_gpu_hour
        prices.sources["rent"] = "scenario costs.rent_per_gpu_hour"
    else:
        r = rent_group.get(hw.accelerator_id, rent_group["default"])
        rent = float(r["value"])
        prices.sources["rent"] = f"cost_defaults: {r['source']} ({r['date']})"
    rent_run = run_gpu_h * rent if run_gpu_h is not None else None
    breakeven = break_even_utilization(annual, hw.gpus, rent) if rent > 0 else math.inf
    if serving is None and has_transformer(scenario):
        serving = serve(scenario, cat, hardware=hw, cluster_facility=budget)
    tps = _tokens_served(serving, hw.gpus, findings)
    per_m_tokens = annual / (tps * SECONDS_PER_YEAR) * TOKENS_PER_MILLION if tps else None

    # ---- carbon
    mwh_year = carbon.energy_mwh_per_year(it_typ_kw, pue, costs.load_fraction)
    co2_year = carbon.co2e_tonnes(mwh_year, intensity)
    run_mwh = (carbon.facility_energy_mwh(it_typ_kw, pue, days * HOURS_PER_DAY, costs.load_fraction)
               if days else None)
    run_co2 = carbon.co2e_tonnes(run_mwh, intensity) if run_mwh is not None else None

    # ---- findings
    if rent_run is not None and run_cost is not None and rent_run < run_cost:
        findings.append(Finding("cost-rent-cheaper", "info",
                                f"renting at {rent:.2f}/GPU-h ({rent_run:,.0f}) costs less than owning "
                                f"({run_cost:,.0f}) for this run; owning pays off above {breakeven:.0%} utilisation",
                                field="costs.rent_per_gpu_hour"))
    if breakeven > 1:
        findings.append(Finding("cost-own-never-pays", "warning",
                                f"owning costs {per_gpu_h:.2f} per GPU-hour at 100% use, more than renting at {rent:.2f}",
                                fix="check the prices, or rent", field="costs.rent_per_gpu_hour"))
    estimated = sorted(k for k, v in prices.sources.items() if "ESTIMATE" in v)
    if estimated:
        findings.append(Finding("cost-estimated-prices", "info",
                                "prices that are engineering estimates: "
                                + ", ".join(sorted({price_name(k, cat) for k in estimated})),
                                fix="replace them with quoted prices", field="costs.prices"))

    return CostResult(
        currency=costs.currency, years=years, gpus=hw.gpus, nodes_bought=nodes_bought, it_power_kw=it_kw,
        facility_power_kw=fac_kw, racks=racks, capex=capex, opex_per_year=opex, annualized_cost=annual, tco=tco,
        tco_by_year=tco_by_year, cost_per_gpu_hour=per_gpu_h, training_days=days, training_gpu_hours=run_gpu_h,
        training_run_cost=run_cost, rent_per_gpu_hour=rent, rent_training_run_cost=rent_run,
        break_even_utilization=breakeven, cost_per_million_tokens=per_m_tokens, tokens_per_s_served=tps,
        energy_mwh_per_year=mwh_year, grid_kg_co2e_per_kwh=intensity, grid_source=grid_src,
        co2e_tonnes_per_year=co2_year, training_run_energy_mwh=run_mwh, training_run_co2e_tonnes=run_co2,
        price_sources=dict(sorted(prices.sources.items())), assumptions=assumptions, findings=sort_findings(findings),
        storage={"system": store.system, "units": store.appliances}, lines=list(prices.lines),
    )


def _rented(scenario: Scenario, hw: Any, budget: Any, rel: Any, training_days: float | None, intensity: float,
            grid_src: str, it_kw: float, fac_kw: float, racks: int, it_typ_kw: float, pue: float,
            assumptions: dict[str, str], store: Any) -> CostResult:
    """The cost of rented capacity (:mod:`gpucluster_lib.economics.rent`): no CapEx, the rental as OpEx."""
    costs = scenario.costs
    price, src = rent_mod.rent_price(hw.accelerator_id, costs.rent_term, costs.rent_per_gpu_hour)
    per_year = rent_mod.rent_per_year(hw.gpus, price, costs.rent_term, costs.load_fraction)
    years = costs.years
    capex = {"compute": 0.0, "network": 0.0, "storage": 0.0, "facility": 0.0, "total": 0.0}
    opex = {"energy": 0.0, "maintenance": 0.0, "space": 0.0, "rent": per_year, "total": per_year}
    days = training_days if training_days is not None else (rel.training_days_expected if rel is not None else None)
    run_gpu_h = gpu_hours(hw.gpus, days) if days is not None else None
    run_cost = run_gpu_h * price if run_gpu_h is not None else None
    mwh_year = carbon.energy_mwh_per_year(it_typ_kw, pue, costs.load_fraction)
    run_mwh = (carbon.facility_energy_mwh(it_typ_kw, pue, days * HOURS_PER_DAY, costs.load_fraction)
               if days else None)
    findings = [Finding("cost-rented", "info",
                        f"{hw.gpus:,} x {hw.accelerator_id} rented {costs.rent_term} at {price:.3g} per GPU-hour: "
                        f"{per_year:,.0f} a year; no hardware, facility, energy or maintenance cost of its own",
                        fix="give a quoted rent per GPU-hour", field="costs.rent_per_gpu_hour")]
    # per GPU-hour used: on-demand pays only the hours used; a reserved term pays idle hours too
    used = 1.0 if costs.rent_term == "on-demand" else costs.load_fraction
    return CostResult(
        currency=costs.currency, years=years, gpus=hw.gpus, nodes_bought=0, it_power_kw=it_kw,
        facility_power_kw=fac_kw, racks=racks, capex=capex, opex_per_year=opex, annualized_cost=per_year,
        tco=per_year * years, tco_by_year=[per_year * y for y in range(years + 1)],
        cost_per_gpu_hour=price / used if used else price, training_days=days, training_gpu_hours=run_gpu_h,
        training_run_cost=run_cost, rent_per_gpu_hour=price, rent_training_run_cost=run_cost,
        break_even_utilization=math.inf, cost_per_million_tokens=None, tokens_per_s_served=None,
        energy_mwh_per_year=mwh_year, grid_kg_co2e_per_kwh=intensity, grid_source=grid_src,
        co2e_tonnes_per_year=carbon.co2e_tonnes(mwh_year, intensity), training_run_energy_mwh=run_mwh,
        training_run_co2e_tonnes=carbon.co2e_tonnes(run_mwh, intensity) if run_mwh is not None else None,
        price_sources={"rent": src}, assumptions=assumptions, findings=findings,
        storage={"system": store.system, "units": store.appliances}, purchase="rent", rent_term=costs.rent_term)


def grid_presets() -> dict[str, float]:
    """Grid intensity presets {region: kg CO2e per kWh} (``data/grid_intensity.yaml``)."""
    return {k: float(v["kg_co2e_per_kwh"]) for k, v in load_grid_presets()["regions"].items()}
