"""One design, computed once: the chain of stages every front end reads.

In the spirit of pvlib's ``ModelChain``: the topic packages below know nothing of this
module; a :class:`Design` wires them. Each stage is a function of the scenario, the
catalogue and the results of the stages before it, and runs at most once per design (on
first access). Front ends (CLI, app tabs, notebooks, report) read the same stage results, so
the same figure is the same number everywhere.

Stages, in order (each lists the stages it reads)::

    hardware                        the accelerator, server, GPUs per node, nodes
    calibration                     the measured profile the scenario selects (None without one)
    node          <- hardware       one node built from parts and checked (power, PCIe, cooling)
    network       <- hardware, node the compute, storage and management networks (every switch,
                                    cable and optic), racks laid out by the node's rack fit
    storage       <- hardware       the shared file system sized for checkpoints
    spares        <- hardware       hot-spare nodes: one decision for facility, reliability, cost
    facility      <- hardware, node, network, storage, spares
                                    racks, power, cooling, space (installed spares included)
    training      <- hardware, network
                                    the training plan and time (None without a model)
    serving       <- hardware, network, node, facility, calibration
                                    the serving fleet (None without a model)
    reliability   <- hardware, storage, spares, training
                                    interruptions, checkpoints, goodput, days to train
                                    (None without a transformer to checkpoint)
    cost          <- hardware, network, storage, spares, facility, reliability, serving
                                    CapEx, OpEx, TCO, cost per GPU-hour and per token, carbon
    operations    <- hardware, node, network, storage, serving, reliability
                                    the software-stack, security and data-management plans
    plans         <- hardware, network
                                    the ranked plans at the scenario's batch size (the Training
                                    tab's table; computed only when asked for)

A scenario without a workload (no ``model``) is a valid design: hardware, network, facility,
spares and cost; ``training``, ``serving`` and ``reliability`` are None.

:meth:`Design.evolve` makes the design of a changed scenario and keeps every stage whose
declared scenario inputs (sections, or single fields such as ``facility.cooling``) and
upstream stages did not change, so an app change recomputes exactly the stages downstream of
what changed. A stage recomputed upstream does not invalidate a stage that reads only a few
of its figures (``Stage.reads``: training reads the network's per-GPU all-reduce bandwidth,
not its rack layout) when those figures are unchanged, and each stage keeps its last few
results (a memo shared along ``evolve``), so returning to an earlier value (a node count, a
rack limit) takes the earlier result instead of repeating the plan search.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucluster_lib.calibration.profile import CalibrationProfile, scenario_profile
from gpucluster_lib.catalog import Catalog
from gpucluster_lib.economics import cost as cost_mod
from gpucluster_lib.facility import site as facility_mod
from gpucluster_lib.facility.storage import size_storage
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.hardware.node import build_node
from gpucluster_lib.hardware.resolve import ClusterHardware, catalog_for, resolve_hardware
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.network.topology import design_topology, fabric_gbps_per_gpu
from gpucluster_lib.operations.plan import plan_operations
from gpucluster_lib.reliability import core as reliability_mod
from gpucluster_lib.scenario import ModelSpec, ParallelismSpec, Scenario, load_scenario
from gpucluster_lib.training.estimate import build_context, search_plans
from gpucluster_lib.training.estimate import estimate as estimate_training
from gpucluster_lib.workloads.checkpoint import has_checkpoint, has_transformer
from gpucluster_lib.workloads.vision import ignored_language_settings

#: How many times each stage has run in this process (tests and benchmarks read it).
STAGE_CALLS: Counter[str] = Counter()


def has_model(spec: ModelSpec) -> bool:
    """Whether the scenario names a workload: a preset, a family or any architecture field."""
    return any(getattr(spec, f.name) is not None for f in dataclasses.fields(spec))


# --------------------------------------------------------------------------- stages


def _hardware(d: Design) -> ClusterHardware:
    return resolve_hardware(d.scenario, d.catalog)


def _calibration(d: Design) -> CalibrationProfile | None:
    return scenario_profile(d.scenario)


def _node(d: Design) -> Any:
    return build_node(d.scenario, d.catalog, hardware=d.hardware)


def _network(d: Design) -> Any:
    return design_topology(d.scenario, d.catalog, hardware=d.hardware, node=d.node)


def _storage(d: Design) -> Any:
    return size_storage(d.scenario, d.catalog, nodes=d.hardware.nodes, gpus=d.hardware.gpus)


def _spares(d: Design) -> reliability_mod.SparePlan:
    return reliability_mod.spare_plan(d.scenario, d.hardware)


def _facility(d: Design) -> facility_mod.Budget:
    return facility_mod.budget(d.scenario, d.catalog, hardware=d.hardware, node=d.node, network=d.network,
                               storage=d.storage, spare_nodes=d.spares.spare_nodes)


def _training(d: Design) -> Any:
    if not has_model(d.scenario.model):
        return None
    return _with_ignored_settings(estimate_training(d.scenario, d.catalog, hardware=d.hardware, network=d.network),
                                  d.scenario, "training")


def _serving(d: Design) -> Any:
    if not has_model(d.scenario.model):
        return None
    gbps = fabric_gbps_per_gpu(d.scenario, d.hardware, d.catalog, d.network)
    return _with_ignored_settings(serve(d.scenario, d.catalog, hardware=d.hardware, fabric_gbps=gbps, node=d.node,
                                        cluster_facility=d.facility, network=d.network, calibration=d.calibration),
                                  d.scenario, "serving")


def _with_ignored_settings(result: Any, scenario: Scenario, stage: str) -> Any:
    """``result`` with a warning for each language-model key a vision model ignores
    (:func:`~gpucluster_lib.workloads.vision.ignored_language_settings`), as a new result."""
    extra = ignored_language_settings(scenario, stage)
    return dataclasses.replace(result, findings=[*result.findings, *extra]) if extra else result


def _plans(d: Design) -> Any:
    """The ranked plans for the model on this cluster at the scenario's global batch (all
    other parallelism fields free): the Training tab's table of alternatives."""
    if not has_transformer(d.scenario):
        return None
    spec = ParallelismSpec(auto=True, global_batch_size=d.scenario.parallelism.global_batch_size)
    ctx = build_context(d.scenario, d.catalog, hardware=d.hardware, network=d.network)[0]
    return search_plans(d.scenario, d.catalog, context=ctx, spec=spec)


def _reliability(d: Design) -> Any:
    if not has_checkpoint(d.scenario):  # a transformer or a CNN/ViT preset
        return None
    tr = d.training  # days to train only for a plan that fits: no band for one that cannot run
    days = tr.training_days if tr is not None and getattr(tr, "fits", True) else None
    return reliability_mod.assess(d.scenario, d.catalog, hardware=d.hardware, storage=d.storage,
                                  spares=d.spares, training_days_ideal=days)


def _operations(d: Design) -> Any:
    return plan_operations(d.scenario, d.catalog, hardware=d.hardware, node=d.node, network=d.network,
                           storage=d.storage, serving=d.serving, reliability=d.reliability)


def _cost(d: Design) -> cost_mod.CostResult:
    return cost_mod.assess(d.scenario, d.catalog, hardware=d.hardware, topology=d.network, storage=d.storage,
                           spares=d.spares, budget=d.facility, reliability_result=d.reliability,
                           serving=d.serving)


@dataclass(frozen=True)
class Stage:
    """One step of the chain: its function, the scenario sections it reads, the stages it reads.

    ``reads`` names, for an upstream stage, the attributes of its result this stage reads (all
    it reads of it): a recomputed upstream whose listed attributes are equal leaves this stage's
    result valid. An upstream not listed there must be the very same result.
    """

    name: str
    compute: Callable[[Design], Any]
    sections: tuple[str, ...]
    upstream: tuple[str, ...]
    label: str
    reads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


#: Facility fields the rack fit reads (the node's racks: space, power, cooling, weight).
_RACK_FIELDS = ("facility.cooling", "facility.rack_cooling_limit_kw", "facility.rack_power_limit_kw",
                "facility.rack_units", "facility.rack_weight_limit_kg", "facility.reserved_rack_units")
#: Reliability fields of the checkpoint file system and of the failure rates.
_STORAGE_FIELDS = tuple(f"reliability.{f}" for f in (
    "checkpoint_bytes_per_param", "checkpoint_target_s", "checkpoint_write_gbps", "checkpoints_kept",
    "storage_system", "storage_units")) + ("storage", "training.tokens", "training.dataset_images")
_FAILURE_FIELDS = tuple(f"reliability.{f}" for f in (
    "component_rates", "failure_preset", "gpu_failures_per_1000_gpu_days", "repair_hours", "spare_confidence",
    "spare_nodes"))
#: What the training engine reads of the hardware and of the network design
#: (``training.estimate.build_context`` through ``network.topology.fabric_gbps_per_gpu``).
_HARDWARE_ALL = ("accelerator", "server", "gpus_per_node", "nodes")
_TRAINING_READS = {"hardware": _HARDWARE_ALL, "network": ("nodes", "per_gpu_allreduce_gbps")}

#: The chain, in order. ``sections`` are the scenario sections (or single fields,
#: ``"facility.cooling"``) a stage reads directly; everything else reaches it through its
#: upstream stages. ``catalog`` stands for the extra CSV files. tests/test_design.py checks
#: the declarations against what each stage really reads.
STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("hardware", _hardware, ("catalog", "hardware"), (), "Hardware"),
    Stage("calibration", _calibration, ("calibration",), (), "Calibration profile"),
    Stage("node", _node, ("catalog", "hardware", "network", "facility.cooling"), ("hardware",), "Node"),
    Stage("network", _network, ("catalog", "hardware", "network", *_RACK_FIELDS), ("hardware", "node"), "Network"),
    Stage("storage", _storage, ("catalog", "model", *_STORAGE_FIELDS), ("hardware",), "Storage"),
    Stage("spares", _spares, _FAILURE_FIELDS, ("hardware",), "Spare nodes"),
    Stage("facility", _facility, ("catalog", "hardware", "network", "facility"),
          ("hardware", "node", "network", "storage", "spares"), "Power, cooling and space"),
    Stage("training", _training, ("catalog", "model", "training", "parallelism", "network", "hardware",
                                  "calibration"), ("hardware", "network", "calibration"), "Training",
          _TRAINING_READS),
    Stage("serving", _serving, ("catalog", "model", "inference", "costs", "facility", "network", "hardware",
                                *_STORAGE_FIELDS),
          ("hardware", "network", "node", "facility", "calibration"), "Serving"),
    Stage("plans", _plans, ("catalog", "model", "training", "network", "hardware", "parallelism.global_batch_size",
                            "calibration"), ("hardware", "network", "calibration"), "Plan search",
          _TRAINING_READS),
    Stage("reliability", _reliability, ("catalog", "model", "training", "reliability", "hardware"),
          ("hardware", "storage", "spares", "training"), "Reliability"),
    Stage("cost", _cost, ("catalog", "costs", "facility", "hardware"),
          ("hardware", "network", "storage", "spares", "facility", "reliability", "serving"), "Cost and carbon"),
    Stage("operations", _operations, ("catalog", "operations", "hardware.head_nodes",
                                      "reliability.redundant_head_node", "training.tokens",
                                      "training.dataset_images", "model"),
          ("hardware", "node", "network", "storage", "serving", "reliability"), "Software stack and operations"),
)}


#: The stages a design is made of (findings, to_dict); ``plans`` is an exploration the
#: Training tab asks for, computed only on request.
DESIGN_STAGES = tuple(n for n in STAGES if n != "plans")

# --------------------------------------------------------------------------- design


def scenario_input(scenario: Scenario, path: str) -> Any:
    """What a stage reads of ``scenario`` at ``path``, one entry of a :class:`Stage`'s
    ``sections``: a whole section (``"hardware"``, a frozen dataclass) or one field of it
    (``"parallelism.global_batch_size"``). Two scenarios give equal values exactly when a stage
    that reads ``path`` sees the same input there, which is how :meth:`Design.evolve` (and a
    front end that keeps a result of its own) decides that a result still holds."""
    value: Any = scenario
    for part in path.split("."):
        value = getattr(value, part)
    return value


#: Results kept per stage for reuse along :meth:`Design.evolve` (the latest first).
MEMO_SIZE = 6


def _view(stage: Stage, upstream: str, result: Any) -> Any:
    """What ``stage`` reads of an upstream result: its ``reads`` attributes, else the result itself."""
    attrs = stage.reads.get(upstream)
    if attrs is None or result is None:
        return result
    return tuple(getattr(result, a) for a in attrs)


def _same(a: Any, b: Any) -> bool:
    """Whether two inputs of a stage are the same: one object, or equal views (tuples of figures)."""
    return a is b or (type(a) is tuple and type(b) is tuple and a == b)


class Design:
    """A cluster design: a scenario, its catalogue and its stage results, each computed once.

    Use :func:`design` or :meth:`Design.from_yaml`. Stage results are attributes
    (``d.hardware``, ``d.node``, ``d.network``, ``d.storage``, ``d.spares``, ``d.facility``,
    ``d.training``, ``d.serving``, ``d.reliability``, ``d.cost``), computed on first access.
    """

    def __init__(self, scenario: Scenario, catalog: Catalog | None = None, *,
                 _reuse: dict[str, Any] | None = None) -> None:
        self.scenario = scenario
        self._catalog = catalog
        self._results: dict[str, Any] = dict(_reuse or {})
        #: the stages this design computed itself, in order (not those it took over from another)
        self.computed: list[str] = []
        #: per stage, its latest results with the inputs they came from (shared along evolve)
        self._memo: dict[str, list[tuple[tuple, tuple, Any]]] = {}

    # -- construction ------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | Path, catalog: Catalog | None = None) -> Design:
        """The design of a scenario YAML file."""
        return cls(load_scenario(path), catalog)

    @property
    def catalog(self) -> Catalog:
        """The catalogue: the one given, else the shipped one plus the scenario's CSV files."""
        if self._catalog is None:
            self._catalog = catalog_for(self.scenario)
        return self._catalog

    def evolve(self, scenario: Scenario, catalog: Catalog | None = None) -> Design:
        """The design of ``scenario``, reusing every stage whose inputs are unchanged.

        A stage is reused when the scenario sections it reads are equal and every stage it
        reads is reused too; a different catalogue object invalidates everything.
        """
        cat = self._catalog if catalog is None else catalog
        if catalog is not None and catalog is not self._catalog:
            return Design(scenario, catalog)
        kept: dict[str, Any] = {}
        for name, stage in STAGES.items():
            if name not in self._results or any(u not in kept for u in stage.upstream):
                continue
            if all(scenario_input(self.scenario, s) == scenario_input(scenario, s) for s in stage.sections):
                kept[name] = self._results[name]
        new = Design(scenario, cat, _reuse=kept)
        new._memo = self._memo
        return new

    # -- stages ------------------------------------------------------------
    def stage(self, name: str) -> Any:
        """The result of stage ``name``, computing it (and what it reads) on first use."""
        if name not in self._results:
            st = STAGES[name]
            sections = tuple(scenario_input(self.scenario, s) for s in st.sections)
            views = tuple(_view(st, u, self.stage(u)) for u in st.upstream)
            entries = self._memo.setdefault(name, [])
            hit = next((i for i, (secs, ups, _v) in enumerate(entries)
                        if all(_same(a, b) for a, b in zip(ups, views, strict=True)) and secs == sections), None)
            if hit is not None:
                entries.insert(0, entries.pop(hit))  # the latest used first
            else:
                entries.insert(0, (sections, views, st.compute(self)))
                del entries[MEMO_SIZE:]
                self.computed.append(name)
                STAGE_CALLS[name] += 1
            self._results[name] = entries[0][2]
        return self._results[name]

    def is_computed(self, name: str) -> bool:
        return name in self._results

    hardware = property(lambda self: self.stage("hardware"), doc="ClusterHardware")
    calibration = property(lambda self: self.stage("calibration"), doc="CalibrationProfile or None")
    node = property(lambda self: self.stage("node"), doc="NodeDesign")
    network = property(lambda self: self.stage("network"), doc="TopologyDesign")
    storage = property(lambda self: self.stage("storage"), doc="StorageDesign")
    spares = property(lambda self: self.stage("spares"), doc="SparePlan")
    facility = property(lambda self: self.stage("facility"), doc="Budget")
    training = property(lambda self: self.stage("training"), doc="TrainingEstimate or None")
    serving = property(lambda self: self.stage("serving"), doc="ServingEstimate or None")
    reliability = property(lambda self: self.stage("reliability"), doc="ReliabilityResult or None")
    cost = property(lambda self: self.stage("cost"), doc="CostResult")
    operations = property(lambda self: self.stage("operations"), doc="OperationsPlan: stack, security, data")
    plans = property(lambda self: self.stage("plans"), doc="SearchResult of the plan search, or None")

    # -- views -------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Every stage's findings, most severe first, each once."""
        seen: set[tuple[str, str]] = set()
        out: list[Finding] = []
        for name in DESIGN_STAGES:
            result = self.stage(name)
            for f in getattr(result, "findings", None) or []:
                key = (f.code, f.message)
                if key not in seen:
                    seen.add(key)
                    out.append(f)
        return sort_findings(out)

    def summary(self) -> dict[str, dict[str, Any]]:
        """The key figures: {key: {"label", "value", "unit"}} (value None when not applicable)."""
        return key_figures(self)

    def to_dict(self) -> dict[str, Any]:
        """Every stage's contract (the CLI's ``--json`` sections), the summary and the findings."""
        hw = self.hardware
        out: dict[str, Any] = {
            "name": self.scenario.name,
            "summary": self.summary(),
            "hardware": {"accelerator": hw.accelerator_id, "server": hw.server_id,
                         "gpus_per_node": hw.gpus_per_node, "nodes": hw.nodes, "gpus": hw.gpus,
                         "nvlink_domain_gpus": hw.nvlink_domain_gpus, "racks_per_node": hw.racks_per_node},
        }
        for name in ("node", "network", "storage", "spares", "facility", "training", "serving", "reliability",
                     "cost", "operations"):
            result = self.stage(name)
            out[name] = result.to_dict() if result is not None else None
        out["findings"] = [f.to_dict() for f in self.findings]
        return out


def design(scenario: Scenario | str | Path, catalog: Catalog | None = None) -> Design:
    """The :class:`Design` of a scenario (a :class:`~gpucluster_lib.scenario.Scenario` or a YAML path)."""
    if isinstance(scenario, (str, Path)):
        return Design.from_yaml(scenario, catalog)
    return Design(scenario, catalog)


# --------------------------------------------------------------------------- key figures


def _fig(label: str, value: Any, unit: str = "") -> dict[str, Any]:
    return {"label": label, "value": value, "unit": unit}


def key_figures(d: Design) -> dict[str, dict[str, Any]]:
    """The design's headline numbers with human labels and units."""
    hw, fac, net, cst = d.hardware, d.facility, d.network, d.cost
    tr, sv, rel = d.training, d.serving, d.reliability
    figs = {
        "accelerator": _fig("Accelerator", hw.accelerator_id),
        "gpus": _fig("GPUs", hw.gpus),
        "nodes": _fig("Nodes", hw.nodes),
        "spare_nodes": _fig("Hot-spare nodes", fac.spare_nodes),
        "training_days": _fig("Days to train, no failures",
                              getattr(tr, "training_days", None) if getattr(tr, "fits", False) else None, "days"),
        "training_days_expected": _fig("Days to train, expected with failures",
                                       getattr(rel, "training_days_expected", None), "days"),
        "training_days_p90": _fig("Days to train, P90", getattr(rel, "training_days_p90", None), "days"),
        "mfu": _fig("Model FLOPs utilisation", getattr(tr, "mfu", None), "fraction"),
        "serving_gpus": _fig("GPUs to serve the demand", getattr(sv, "gpus", None)),
        "tokens_per_s_per_gpu": _fig("Output tokens/s per GPU", getattr(sv, "tokens_per_s_per_gpu", None),
                                     "tokens/s"),
        "it_power_kw": _fig("IT power at peak", fac.it_power_kw, "kW"),
        "facility_power_kw": _fig("Facility power at peak", fac.facility_power_kw, "kW"),
        "racks": _fig("Racks", fac.racks),
        "floor_area_m2": _fig("Floor area", fac.floor_area_m2, "m²"),
        "switches": _fig("Switches, all networks", sum(g.count for g in net.switch_groups)),
        "capex": _fig("CapEx", cst.capex["total"], cst.currency),
        "tco": _fig(f"TCO over {cst.years} years", cst.tco, cst.currency),
        "cost_per_gpu_hour": _fig("Cost per GPU-hour", cst.cost_per_gpu_hour, cst.currency),
        "training_run_cost": _fig("Training run cost", cst.training_run_cost, cst.currency),
        "co2e_tonnes_per_year": _fig("CO2e per year", cst.co2e_tonnes_per_year, "t"),
    }
    return figs
