"""Inverse design: the largest or cheapest design that meets facility limits, a budget, a deadline.

"I have 2 MW and 40 racks of 40 kW air: how many DGX H100 fit?" is answered by enumerating
node counts of the base scenario, each a forward :class:`~gpucluster_lib.design.Design`
(stages shared through :class:`~gpucluster_lib.explore.cache.StageCache`), and masking the
candidates with every limit at once (numpy arrays over the candidates).

Node counts step by whole scalable units where the fabric has them (a rail-optimised fabric's
``scalable_unit_nodes``, e.g. 32 DGX H100 per SuperPOD SU), else by one node. Limits at the
top (power, racks, floor area, CapEx) only grow with the node count, so the candidates run up
to the first count past every upper limit; the space is enumerated exhaustively up to
:data:`MAX_ENUMERATED` candidates, and above that bisected on the monotone limits.

``binding_constraint`` is the limit the next larger design breaks (``max-gpus``) or the
requirement the next smaller one misses (``min-cost``); ``next`` is the next larger design and
what it breaks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.explore.cache import StageCache
from gpucluster_lib.explore.outputs import row_of
from gpucluster_lib.explore.sweep import apply
from gpucluster_lib.findings import Finding
from gpucluster_lib.scenario import Scenario

#: Candidates enumerated exhaustively; larger spaces are bisected on the monotone limits.
MAX_ENUMERATED = 400
#: The largest node count a fit looks at when no upper limit bounds it.
MAX_NODES = 100_000
OBJECTIVES = ("max-gpus", "min-cost")


@dataclass(frozen=True)
class Limits:
    """What a fit must meet. Upper limits are None when not given."""

    max_facility_kw: float | None = None
    max_it_kw: float | None = None
    max_racks: int | None = None
    max_floor_m2: float | None = None
    max_capex: float | None = None
    deadline_days: float | None = None
    serving: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "serving" or v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not math.isfinite(v):
                raise ScenarioError(f"--{f.name.replace('_', '-')}", f"must be a positive number, got {v!r}")


@dataclass(frozen=True)
class Check:
    """One limit: its name (the CLI option), words, the result key and which side is allowed."""

    name: str
    label: str
    unit: str
    upper: bool  # True: value <= limit (grows with nodes); False: a requirement met by enough nodes
    value: Callable[[dict[str, Any]], float | None]
    limit: float | None

    def holds(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` meets the check; an invalid design fails only ``design-errors``."""
        if row.get("status") != "ok" and self.name != "design-errors":
            return True
        v = self.value(row)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return False
        if self.limit is None:
            return bool(v <= 0)
        return bool(v <= self.limit)

    def detail(self, row: dict[str, Any]) -> str:
        v = self.value(row)
        if self.name == "serving":
            return f"{row.get('serving.gpus')} GPUs needed to serve the demand, {row.get('hardware.gpus')} in the design"
        if self.name == "design-errors":
            return f"the design has error findings: {row.get('error_findings') or row.get('message')}"
        if v is None:
            return f"{self.label}: not available"
        return f"{self.label} {v:,.6g}{' ' + self.unit if self.unit else ''} against a limit of " \
               f"{self.limit:,.6g}{' ' + self.unit if self.unit else ''}"


def _days(row: dict[str, Any]) -> float | None:
    exp = row.get("reliability.training_days_expected")
    return exp if exp is not None else row.get("training.training_days")


def checks(limits: Limits, currency: str = "USD") -> list[Check]:
    c = currency.lower()
    out = [Check("design-errors", "Error findings", "", True,
                 lambda r: 0.0 if r.get("status") == "ok" and not r.get("error_findings") else 1.0, None)]
    table = [
        ("max-facility-kw", "Facility power at peak", "kW", "facility.facility_power_kw", limits.max_facility_kw),
        ("max-it-kw", "IT power at peak", "kW", "facility.it_power_kw", limits.max_it_kw),
        ("max-racks", "Racks", "", "facility.racks", limits.max_racks),
        ("max-floor-m2", "Floor area", "m²", "facility.floor_area_m2", limits.max_floor_m2),
        ("max-capex", "CapEx", currency.upper(), f"cost.capex_{c}", limits.max_capex),
    ]
    for name, label, unit, key, lim in table:
        if lim is not None:
            out.append(Check(name, label, unit, True, lambda r, k=key: r.get(k), float(lim)))
    if limits.deadline_days is not None:
        out.append(Check("deadline-days", "Days to train (expected with failures)", "days", False, _days,
                         float(limits.deadline_days)))
    if limits.serving:
        out.append(Check("serving", "GPUs short of the serving demand", "", False,
                         lambda r: None if r.get("serving.gpus") is None or r.get("hardware.gpus") is None
                         else float(r["serving.gpus"] - r["hardware.gpus"]), None))
    return out


@dataclass
class FitResult:
    """The answer of :func:`fit` and the candidates looked at."""

    objective: str
    step_nodes: int
    best: dict[str, Any] | None
    binding_constraint: str | None
    binding_detail: str
    next: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    findings: list[Finding] = field(default_factory=list)
    design: Any = None
    currency: str = "USD"

    def to_dict(self) -> dict[str, Any]:
        """The ``gpucluster fit --json`` contract."""
        b = self.best or {}
        c = self.currency.lower()
        return {
            "objective": self.objective,
            "feasible": self.best is not None,
            "nodes": b.get("hardware.nodes"),
            "gpus": b.get("hardware.gpus"),
            "racks": b.get("facility.racks"),
            "facility_power_kw": b.get("facility.facility_power_kw"),
            "it_power_kw": b.get("facility.it_power_kw"),
            "floor_area_m2": b.get("facility.floor_area_m2"),
            "capex": b.get(f"cost.capex_{c}"),
            "currency": self.currency,
            "training_days": _days(b) if b else None,
            "binding_constraint": self.binding_constraint,
            "binding_detail": self.binding_detail,
            "next": self.next,
            "step_nodes": self.step_nodes,
            "candidates_evaluated": len(self.candidates),
            "findings": [f.to_dict() for f in self.findings],
        }


class _Evaluator:
    def __init__(self, base: Scenario, catalog: Catalog | None, currency: str) -> None:
        from gpucluster_lib.hardware.resolve import catalog_for

        self.base = base
        self.cache = StageCache(catalog or catalog_for(base))
        self.currency = currency
        self.rows: dict[int, dict[str, Any]] = {}
        self.designs: dict[int, Any] = {}

    def __call__(self, nodes: int) -> dict[str, Any]:
        if nodes not in self.rows:
            row: dict[str, Any] = {"status": "ok", "message": "", "hardware.nodes": nodes}
            try:
                d = self.cache.design(apply(self.base, {"hardware.nodes": nodes}))
                try:
                    row.update(row_of(d, self.currency))
                    row["error_findings"] = " ".join(dict.fromkeys(
                        f.code for f in d.findings if f.severity == "error"))
                    self.designs[nodes] = d
                finally:
                    self.cache.keep(d)
            except GpuClusterError as e:
                row.update(status="invalid", message=str(e))
            self.rows[nodes] = row
        return self.rows[nodes]


def _summary(row: dict[str, Any], currency: str) -> dict[str, Any]:
    c = currency.lower()
    return {"nodes": row.get("hardware.nodes"), "gpus": row.get("hardware.gpus"), "racks": row.get("facility.racks"),
            "facility_power_kw": row.get("facility.facility_power_kw"), "capex": row.get(f"cost.capex_{c}"),
            "training_days": _days(row)}


def step_nodes(base: Scenario, catalog: Catalog | None = None) -> int:
    """The node step of a fit: the fabric's scalable unit (1 where it has none), and for a model
    with a fixed plan, whole multiples of tensor x pipeline x context GPUs."""
    from gpucluster_lib.design import Design

    d = Design(base, catalog)
    try:
        su = int(d.network.scalable_unit_nodes or 1)
    except GpuClusterError:
        su = 1
    par = base.parallelism
    if par.tensor or par.pipeline or par.context:
        group = (par.tensor or 1) * (par.pipeline or 1) * (par.context or 1)
        try:
            gpn = d.hardware.gpus_per_node
        except GpuClusterError:
            gpn = 1
        su = math.lcm(su, group // math.gcd(group, gpn))
    return su


def fit_scenario(base: Scenario, *, rack_kw: float | None = None, rack_cooling_kw: float | None = None,
                 cooling: str | None = None) -> Scenario:
    """The base with the hall's rack limits (``rack_kw`` sets the rack's power limit and, unless
    ``rack_cooling_kw`` is given, the heat its cooling removes) and cooling type set; a model
    with a fixed plan gets its data-parallel width from each node count."""
    changes: dict[str, Any] = {}
    if rack_kw is not None:
        changes["facility.rack_power_limit_kw"] = float(rack_kw)
        changes["facility.rack_cooling_limit_kw"] = float(rack_cooling_kw or rack_kw)
    elif rack_cooling_kw is not None:
        changes["facility.rack_cooling_limit_kw"] = float(rack_cooling_kw)
    if cooling is not None:
        changes["facility.cooling"] = cooling
    if base.parallelism.data is not None and not base.parallelism.auto:
        changes["parallelism.data"] = None
    if not changes:
        return base
    from gpucluster_lib.scenario import from_dict, to_dict

    data = to_dict(base)
    for k, v in changes.items():
        sec, name = k.split(".")
        data.setdefault(sec, {})[name] = v
    return from_dict(data, base_dir=base.base_dir, path_policy=base.path_policy)  # the base's path rules


def fit(base: Scenario, limits: Limits, *, objective: str = "max-gpus", catalog: Catalog | None = None,
        step: int | None = None, max_nodes: int | None = None) -> FitResult:
    """The largest (``max-gpus``) or cheapest (``min-cost``) node count of ``base`` that meets ``limits``.

    Every candidate is a forward design of the base at that node count (aligned to ``step``
    nodes, by default the fabric's scalable unit). Returns the best candidate, the binding
    constraint, the next larger design and the findings (``explore-fit-infeasible`` when no
    count meets every limit, naming the limit that alone rules them all out).
    """
    if objective not in OBJECTIVES:
        raise ScenarioError("--objective", f"must be max-gpus or min-cost, got {objective!r}")
    cur = base.costs.currency
    chk = checks(limits, cur)
    upper = [c for c in chk if c.upper]
    lower = [c for c in chk if not c.upper]
    if objective == "max-gpus" and len(upper) == 1:
        raise ScenarioError("--max-facility-kw", "the largest design needs at least one upper limit: "
                                                 "--max-facility-kw, --max-it-kw, --max-racks, --max-floor-m2 "
                                                 "or --max-capex")
    if objective == "min-cost" and not lower and len(upper) == 1:
        raise ScenarioError("--objective", "the cheapest design needs a requirement (--deadline-days or "
                                           "--serving) or a limit")
    su = step or step_nodes(base, catalog)
    if isinstance(su, bool) or not isinstance(su, int) or su < 1:
        raise ScenarioError("--step", f"must be a positive whole number of nodes, got {su!r}")
    cap = max_nodes or MAX_NODES
    ev = _Evaluator(base, catalog, cur)

    def ok_upper(n: int) -> bool:
        r = ev(n)
        return all(c.holds(r) for c in upper if c.name != "design-errors")

    def ok_all(n: int) -> bool:
        r = ev(n)
        return all(c.holds(r) for c in chk)

    # the upper end: the first aligned count past every upper limit (doubling), then enumerate or bisect
    k_hi = 1
    while k_hi * su <= cap and ok_upper(k_hi * su) and len(upper) > 1:
        k_hi *= 2
    if len(upper) == 1:  # only requirements: enough nodes for them, doubling
        k_hi = 1
        while k_hi * su <= cap and not (ev(k_hi * su)["status"] == "ok"
                                         and all(c.holds(ev(k_hi * su)) for c in lower)):
            k_hi *= 2
        k_hi = min(k_hi, cap // su)
    k_hi = max(1, min(k_hi, cap // su + 1))
    if k_hi <= MAX_ENUMERATED:
        ks = list(range(1, k_hi + 1))
    else:  # bisect the monotone upper limits between k_hi / 2 (met) and k_hi (broken)
        lo, hi = k_hi // 2, k_hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok_upper(mid * su) else (lo, mid)
        ks = sorted(set(range(max(1, lo - MAX_ENUMERATED // 2), hi + 1)))
    counts = [k * su for k in ks if k * su <= cap]
    import numpy as np

    rows = [ev(n) for n in counts]
    mask = np.array([[c.holds(r) for c in chk] for r in rows], dtype=bool).reshape(len(rows), len(chk))
    feasible = mask.all(axis=1)
    findings: list[Finding] = []
    best_i: int | None = None
    if feasible.any():
        idx = np.flatnonzero(feasible)
        if objective == "max-gpus":
            best_i = int(idx[-1])
        else:
            capex = np.array([rows[i].get(f"cost.capex_{cur.lower()}") or math.inf for i in idx], dtype=float)
            best_i = int(idx[int(np.argmin(capex))])
    else:
        findings.append(_infeasible(chk, rows, mask, counts))
    best = rows[best_i] if best_i is not None else None
    binding, detail, nxt = None, "", None

    def neighbour(n: int, sign: int) -> int | None:
        """The next valid count after (or before) ``n``: invalid counts (a plan that does not divide
        them) are stepped over, up to 64 steps."""
        for i in range(1, 65):
            m = n + sign * i * su
            if m < su or m > cap + su:
                return None
            if ev(m)["status"] == "ok":
                return m
        return None

    if best is not None:
        n = counts[best_i]
        up = neighbour(n, +1)
        if up is not None:
            after = ev(up)
            broken = [c for c in chk if not c.holds(after)]
            nxt = {**_summary(after, cur), "breaks": [c.name for c in broken] or None,
                   "detail": "; ".join(c.detail(after) for c in broken)}
            if objective == "max-gpus" and broken:
                binding, detail = broken[0].name, broken[0].detail(after)
        if objective == "max-gpus" and binding is None:
            binding, detail = "max-nodes", f"the search stops at {cap:,} nodes"
        if objective == "min-cost":
            down = neighbour(n, -1)
            missed = [c for c in chk if not c.holds(ev(down))] if down is not None else []
            if missed:
                binding = missed[0].name
                detail = f"one step smaller ({down} nodes): {missed[0].detail(ev(down))}"
            else:
                binding, detail = "smallest-step", f"the smallest valid step ({n} nodes) already meets every limit"
    cands = [{"nodes": counts[i], "feasible": bool(feasible[i]), **_summary(rows[i], cur),
              "status": rows[i]["status"]} for i in range(len(rows))]
    return FitResult(objective=objective, step_nodes=su, best=best, binding_constraint=binding,
                     binding_detail=detail, next=nxt, candidates=cands, findings=findings,
                     design=ev.designs.get(counts[best_i]) if best_i is not None else None, currency=cur)


def _infeasible(chk: list[Check], rows: list[dict[str, Any]], mask: Any, counts: list[int]) -> Finding:
    """The limit that alone rules out every candidate (or the requirement and limit that conflict)."""
    import numpy as np

    valid = np.array([r["status"] == "ok" for r in rows], dtype=bool)
    for j, c in enumerate(chk):
        if not (mask[:, j] & valid).any():
            if c.name == "design-errors" or not valid.any():
                r = next((r for r in rows if r["status"] != "ok" or r.get("error_findings")), rows[0])
                return Finding("explore-fit-infeasible", "error",
                               f"no node count gives a design that works: at {int(r['hardware.nodes']):,} nodes, "
                               f"{Check.detail(chk[0], r)}", "fix the base scenario (see its findings)",
                               "hardware.nodes")
            i = int(np.flatnonzero(valid)[0 if c.upper else -1])
            where = "the smallest valid step" if c.upper else "the largest looked at"
            return Finding("explore-fit-infeasible", "error",
                           f"no node count meets every limit: {c.label} alone rules out every design "
                           f"(at {int(counts[i]):,} nodes, {where}: {c.detail(rows[i])})",
                           f"relax --{c.name}, or change the base scenario (a smaller node, other cooling)",
                           f"--{c.name}")
    ok = mask & valid[:, None]
    for j, c in enumerate(chk):
        if c.upper:
            continue
        first = int(np.flatnonzero(ok[:, j])[0])
        for u, cu in enumerate(chk):
            if cu.upper and not ok[first:, u].any():
                return Finding("explore-fit-infeasible", "error",
                               f"no node count meets every limit: {c.label} needs at least {int(counts[first]):,} "
                               f"nodes; at {int(counts[first]):,} nodes: {cu.detail(rows[first])}",
                               f"relax --{c.name} or --{cu.name}", f"--{c.name}")
    return Finding("explore-fit-infeasible", "error", "no node count meets every limit together",
                   "relax one of the limits", "")
