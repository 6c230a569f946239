"""Sweeps: many designs from one base scenario and a few axes, in process, in parallel or on Dask.

A sweep file (YAML)::

    base: base.yaml                   # relative to the sweep file, or a shipped example's name
    axes:                             # any scenario key; values: a list, a range or a logrange
      hardware.nodes: {range: [16, 128, 16]}     # 16, 32, ..., 128 (stop included when reached)
      facility.pue: [1.1, 1.3]
      costs.energy_price_per_kwh: {logrange: [0.05, 0.2, 3]}   # 3 values from 0.05 to 0.2, geometric
    sample: {method: grid}            # or {method: random | lhs, points: 1000, seed: 1}
    constraints: ["facility.racks <= 40", "facility.facility_power_kw <= 2000"]
    objectives: {cost.capex_usd: min, facility.facility_power_kw: min}

Each point is one :class:`~gpucluster_lib.design.Design` of the base scenario with the axis
values set, computed in process (no notebook per point); stages with equal inputs are shared
between points (:class:`~gpucluster_lib.explore.cache.StageCache`). The grid walks the last
axis fastest; ``random`` draws each axis' value uniformly among its values; ``lhs`` is a Latin
hypercube over the value indices (McKay, Beckman and Conover 1979, Technometrics 21(2)): each
axis' values are split into ``points`` equal strata and every stratum is used once.

Executors give identical tables in the same order: in process (``workers=1``), a process pool
(``workers=N``), a Dask ``LocalCluster`` (``dask_local=N``) or an existing Dask scheduler
(``scheduler="tcp://host:port"``). Rows are written as they finish to ``OUTDIR/points.jsonl``,
so a re-run skips the finished points; at the end ``results.csv`` and ``results.parquet`` hold
one row per point, in point order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_lib.errors import (
    GpuClusterError,
    ScenarioError,
    closest,
    excerpt,
    one_of,
    yaml_value,
)
from gpucluster_lib.explore.cache import StageCache
from gpucluster_lib.explore.expr import Constraint, parse_constraints, parse_objectives
from gpucluster_lib.explore.outputs import clean, output_keys, outputs, unknown_key
from gpucluster_lib.findings import Finding
from gpucluster_lib.scenario import (
    Scenario,
    cross_checks,
    field_docs,
    from_dict,
    load_scenario,
    to_dict,
)

#: Grids larger than this need ``yes=True`` (``--yes``).
MAX_POINTS_WITHOUT_YES = 10_000_000
#: Columns every row has besides the axes and the outputs.
STATUS_COLUMNS = ("point", "status", "message", "feasible")
SWEEP_KEYS = ("name", "base", "axes", "sample", "constraints", "objectives")
METHODS = ("grid", "random", "lhs")


def scenario_keys() -> list[str]:
    """Every scenario key path an axis may name (``hardware.nodes``, ``facility.pue``, ...)."""
    return [k for k, _, _ in field_docs()]


# --------------------------------------------------------------------------- axes


@dataclass(frozen=True)
class Axis:
    """One swept scenario key and its values (validated and converted to the key's type)."""

    key: str
    values: tuple[Any, ...]


def _number(v: Any, path: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ScenarioError(path, f"must be a finite number, got {v!r}")
    return v


def axis_values(spec: Any, path: str) -> list[Any]:
    """The values of an axis: a list, ``{range: [start, stop, step]}`` or ``{logrange: [a, b, n]}``.

    ``range`` gives start, start + step, ... up to stop (stop included when reached, within a
    millionth of a step); ``logrange`` gives ``n`` values from ``a`` to ``b`` in geometric steps,
    rounded to whole numbers when ``a`` and ``b`` are whole (repeats dropped).
    """
    if isinstance(spec, list):
        vals = list(spec)
    elif isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) in ("range", "logrange"):
        kind, args = next(iter(spec.items()))
        if not isinstance(args, list) or len(args) != 3:
            what = "[start, stop, step]" if kind == "range" else "[first, last, count]"
            raise ScenarioError(f"{path}.{kind}", f"must be a list {what}, got {args!r}")
        a, b, c = (_number(x, f"{path}.{kind}[{i}]") for i, x in enumerate(args))
        whole = all(isinstance(x, int) for x in (a, b))
        if kind == "range":
            if c == 0 or (b - a) * c < 0:
                raise ScenarioError(f"{path}.range", f"step {c!r} never goes from {a!r} to {b!r}")
            n = int(math.floor((b - a) / c + 1e-6)) + 1
            if n > MAX_POINTS_WITHOUT_YES:
                raise ScenarioError(f"{path}.range", f"gives {n:,} values; use a larger step")
            whole = whole and isinstance(c, int)
            vals = [a + i * c if whole else round(a + i * c, 12) for i in range(n)]
        else:
            if isinstance(c, float) and not c.is_integer() or c < 1:
                raise ScenarioError(f"{path}.logrange[2]", f"the count must be a positive whole number, got {c!r}")
            if a <= 0 or b <= 0:
                raise ScenarioError(f"{path}.logrange", f"first and last must be positive, got {a!r} and {b!r}")
            n = int(c)
            raw = np.geomspace(a, b, n) if n > 1 else np.array([float(a)])
            vals = [int(round(float(v))) for v in raw] if whole else [float(f"{v:.12g}") for v in raw]
            vals = list(dict.fromkeys(vals))
    else:
        raise ScenarioError(path, "must be a list of values, {range: [start, stop, step]} or "
                                  f"{{logrange: [first, last, count]}}, got {spec!r}")
    if not vals:
        raise ScenarioError(path, "has no values: give at least one")
    return vals


def _set_path(obj: Any, parts: Sequence[str], value: Any) -> Any:
    """``obj`` with the dotted field ``parts`` replaced (frozen dataclasses, no re-validation)."""
    if len(parts) == 1:
        return dataclasses.replace(obj, **{parts[0]: value})
    child = getattr(obj, parts[0])
    if child is None or not dataclasses.is_dataclass(child):
        raise LookupError(parts[0])
    return dataclasses.replace(obj, **{parts[0]: _set_path(child, parts[1:], value)})


def _set_dict(data: dict[str, Any], parts: Sequence[str], value: Any) -> None:
    for p in parts[:-1]:
        data = data.setdefault(p, {})
    data[parts[-1]] = value


def _companions(base: Scenario, changes: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """Setting nodes or GPUs clears the other (as ``--nodes`` does) unless both are axes, and a
    fixed plan's data-parallel width, which then follows from the GPU count (unless it is an axis)."""
    out = dict(changes)
    if "hardware.nodes" in out and "hardware.gpus" not in keys:
        out["hardware.gpus"] = None
    if "hardware.gpus" in out and "hardware.nodes" not in keys:
        out["hardware.nodes"] = None
    sized = "hardware.nodes" in out or "hardware.gpus" in out
    if sized and "parallelism.data" not in keys and base.parallelism.data is not None and not base.parallelism.auto:
        out["parallelism.data"] = None
    return out


def apply(base: Scenario, changes: Mapping[str, Any], keys: Sequence[str] = ()) -> Scenario:
    """``base`` with the dotted keys of ``changes`` set (values of the keys' types).

    Fast path: nested ``dataclasses.replace`` plus the scenario's cross-field checks; a key
    under a section the base leaves empty (``hardware.parts.psus.count``) goes through the full
    loader. Raises :class:`ScenarioError` for a combination the scenario rules reject.
    """
    full = _companions(base, dict(changes), keys or tuple(changes))
    s = base
    try:
        for k, v in full.items():
            s = _set_path(s, k.split("."), v)
    except LookupError:
        data = to_dict(base)
        for k, v in full.items():
            _set_dict(data, k.split("."), v)
        return from_dict(data, base_dir=base.base_dir, path_policy=base.path_policy)  # the base's path rules
    cross_checks(s)
    return s


def _validated_axis(base: Scenario, key: str, spec: Any, valid: list[str]) -> Axis:
    path = f"axes.{key}"
    if key not in valid:
        raise unknown_key(key, valid, "scenario", path)
    if key in ("costs.currency", "name", "description", "catalog"):
        raise ScenarioError(path, "cannot be swept (the currency names the cost columns; the name and "
                                  "catalogue files are fixed per sweep)")
    vals = axis_values(spec, path)
    out = []
    parts = key.split(".")
    generated = isinstance(spec, Mapping)  # a range or logrange: one type, so its ends stand for all
    for i, v in enumerate(vals):
        if generated and 0 < i < len(vals) - 1:
            out.append(v)
            continue
        data: dict[str, Any] = {}
        _set_dict(data, parts, v)
        try:  # the value alone, for its type and range; combinations are checked per point
            value: Any = from_dict(data)
        except ScenarioError as e:
            if e.path == key:
                raise ScenarioError(f"{path}[{i}]", e.detail) from None
            out.append(v)
            continue
        for p in parts:
            value = getattr(value, p)
        out.append(value)
    return Axis(key, tuple(out))


# --------------------------------------------------------------------------- the sweep


@dataclass
class Sweep:
    """A validated sweep: base scenario, axes, sampling, constraints and objectives."""

    base: Scenario
    axes: tuple[Axis, ...]
    method: str = "grid"
    n_samples: int | None = None
    seed: int = 0
    constraints: tuple[Constraint, ...] = ()
    objectives: dict[str, str] = field(default_factory=dict)
    name: str = "sweep"
    _index: np.ndarray | None = field(default=None, repr=False)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(a.key for a in self.axes)

    @property
    def currency(self) -> str:
        return self.base.costs.currency

    @property
    def output_columns(self) -> list[str]:
        """The output columns (an output with an axis' key is that axis' column)."""
        return [k for k in output_keys(self.currency) if k not in self.keys]

    @property
    def columns(self) -> list[str]:
        return ["point", *self.keys, "status", "message", "feasible", *self.output_columns, "error_findings"]

    @property
    def result_keys(self) -> list[str]:
        """Keys a constraint or objective may name: the outputs and the axes."""
        return [*output_keys(self.currency), *[k for k in self.keys if k not in output_keys(self.currency)]]

    @property
    def grid_size(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    @property
    def n_points(self) -> int:
        return self.grid_size if self.method == "grid" else int(self.n_samples or 0)

    def _sampled(self) -> np.ndarray:
        if self._index is None:
            rng = np.random.default_rng(self.seed)
            n = self.n_points
            cols = []
            for a in self.axes:
                k = len(a.values)
                if self.method == "random":
                    cols.append(rng.integers(0, k, size=n))
                else:  # lhs: one draw in each of n strata of [0, 1), strata shuffled per axis
                    u = (rng.permutation(n) + rng.random(n)) / n
                    cols.append(np.minimum((u * k).astype(np.int64), k - 1))
            self._index = np.stack(cols, axis=1) if cols else np.zeros((n, 0), dtype=np.int64)
        return self._index

    def value_indices(self, point: int) -> tuple[int, ...]:
        """The index of each axis' value at ``point`` (the grid walks the last axis fastest)."""
        if self.method == "grid":
            out = []
            for a in reversed(self.axes):
                point, r = divmod(point, len(a.values))
                out.append(r)
            return tuple(reversed(out))
        return tuple(int(i) for i in self._sampled()[point])

    def values_at(self, point: int) -> dict[str, Any]:
        """The axis values of ``point``."""
        return {a.key: a.values[i] for a, i in zip(self.axes, self.value_indices(point), strict=True)}

    def scenario_at(self, point: int) -> Scenario:
        """The scenario of ``point`` (raises :class:`ScenarioError` for a combination the rules reject)."""
        s = apply(self.base, self.values_at(point), self.keys)
        return dataclasses.replace(s, name=f"{self.base.name} · point {point}")

    def fingerprint(self) -> str:
        """What the rows depend on (not the constraints or objectives): base, axes, sampling."""
        blob = json.dumps({"base": to_dict(self.base), "axes": {a.key: list(a.values) for a in self.axes},
                           "method": self.method, "points": self.n_points, "seed": self.seed},
                          sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_sweep(data: Any, *, base_dir: str | Path | None = None, yes: bool = False,
                base: Scenario | None = None) -> Sweep:
    """A :class:`Sweep` from plain data (a sweep file's contents). Errors name the sweep key."""
    if not isinstance(data, Mapping):
        raise ScenarioError("sweep", f"a sweep file is a mapping with base, axes, sample, ..., got {data!r}")
    for k in data:
        if k not in SWEEP_KEYS:
            near = closest(str(k), SWEEP_KEYS)
            hint = f"did you mean {near[0]!r}?" if near else f"valid keys: {', '.join(SWEEP_KEYS)}"
            raise ScenarioError(str(k), f"unknown sweep key; {hint}")
    folder = Path(base_dir) if base_dir is not None else Path.cwd()
    if base is None:
        ref = data.get("base")
        if ref is None:
            base = from_dict({}, base_dir=folder)
        elif isinstance(ref, Mapping):
            base = from_dict(dict(ref), base_dir=folder, path_policy="inside")  # paths stay in the sweep's folder
        elif isinstance(ref, str):
            from gpucluster_lib.resources import scenario_path

            p = folder / ref
            base = load_scenario(p if p.is_file() else scenario_path(ref))
        else:
            raise ScenarioError("base", f"must be a scenario file, an example's name or a mapping, got {ref!r}")
    axes_spec = data.get("axes")
    if not axes_spec:
        raise ScenarioError("axes", "no axes: give at least one scenario key with its values, "
                                    "e.g. hardware.nodes: [16, 32, 64]")
    if not isinstance(axes_spec, Mapping):
        raise ScenarioError("axes", f"must map scenario keys to values, got {axes_spec!r}")
    valid = scenario_keys()
    axes = tuple(_validated_axis(base, str(k), v, valid) for k, v in axes_spec.items())
    sample = data.get("sample") or {"method": "grid"}
    if not isinstance(sample, Mapping):
        raise ScenarioError("sample", f"must be a mapping like {{method: grid}}, got {sample!r}")
    for k in sample:
        if k not in ("method", "points", "seed"):
            raise ScenarioError(f"sample.{k}", "unknown key; valid keys: method, points, seed")
    method = sample.get("method", "grid")
    if method not in METHODS:
        near = closest(str(method), METHODS)
        raise ScenarioError("sample.method", f"must be one of {one_of(METHODS)}, not {yaml_value(method)}"
                            + (f" (did you mean {near[0]!r}?)" if near else ""))
    n = sample.get("points")
    if method != "grid":
        if n is None:
            raise ScenarioError("sample.points", f"{method} sampling needs a number of points, e.g. points: 1000")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ScenarioError("sample.points", f"must be a positive whole number of points, got {n!r}")
    elif n is not None:
        raise ScenarioError("sample.points", "a grid takes every combination; give points only with random or lhs")
    seed = sample.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ScenarioError("sample.seed", f"must be a whole number >= 0, got {seed!r}")
    sw = Sweep(base=base, axes=axes, method=method, n_samples=n, seed=seed,
               name=str(data.get("name") or base.name))
    if sw.n_points > MAX_POINTS_WITHOUT_YES and not yes:
        raise ScenarioError("sample", f"the sweep has {sw.n_points:,} points, more than "
                                      f"{MAX_POINTS_WITHOUT_YES:,}: sample fewer (method: random or lhs with "
                                      "points), use fewer values, or confirm with --yes")
    sw.constraints = tuple(parse_constraints(data.get("constraints"), sw.result_keys))
    sw.objectives = parse_objectives(data.get("objectives"), sw.result_keys)
    return sw


def load_sweep(path: str | Path, *, yes: bool = False) -> Sweep:
    """Read a sweep YAML file (a path, or the name of a shipped sweep in ``data/sweeps/``)."""
    import yaml

    p = Path(path)
    if not p.is_file():
        from gpucluster_lib.resources import data_path

        shipped = data_path("sweeps", f"{p.stem}.yaml")
        if os.sep not in str(path) and shipped.is_file():
            p = shipped
        else:
            raise ScenarioError("", f"sweep file not found: {path}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ScenarioError("", f"{p.name}: not valid YAML: {getattr(e, 'problem', e)}") from None
    return parse_sweep(data, base_dir=p.parent, yes=yes)


# --------------------------------------------------------------------------- evaluation


def evaluate(sweep: Sweep, point: int, cache: StageCache) -> dict[str, Any]:
    """One row: the point, its axis values, status and message, outputs, error finding codes.

    ``status`` is ``ok``, ``invalid`` (the scenario rules or the catalogue reject the point:
    the message names the field) or ``error`` (an unexpected failure, kept so the sweep goes on).
    """
    row: dict[str, Any] = {"point": point, **sweep.values_at(point), "status": "ok", "message": ""}
    d = None
    try:
        d = cache.design(sweep.scenario_at(point))
        keys = sweep.keys
        for o in outputs(sweep.currency):
            if o.key not in keys:
                row[o.key] = clean(o.get(d))
        row["error_findings"] = " ".join(dict.fromkeys(f.code for f in d.findings if f.severity == "error"))
    except GpuClusterError as e:
        row.update(status="invalid", message=str(e))
    except Exception as e:  # noqa: BLE001 - isolate the point, report it as an error row
        row.update(status="error", message=f"unexpected {type(e).__name__}: {e}")
    finally:
        if d is not None:
            cache.keep(d)
    return row


_LOCAL = threading.local()


def _context(sweep: Sweep) -> tuple[Sweep, StageCache]:
    """This thread's copy of the sweep and its stage cache (Dask threads must not share one)."""
    key = sweep.fingerprint()
    held = getattr(_LOCAL, "context", None)
    if held is None or held[0] != key:
        from gpucluster_lib.hardware.resolve import catalog_for

        held = _LOCAL.context = (key, sweep, StageCache(catalog_for(sweep.base)))
    return held[1], held[2]


def run_chunk(sweep: Sweep, points: Sequence[int]) -> list[dict[str, Any]]:
    """The rows of ``points`` (in a worker: the sweep's catalogue and stage cache are kept)."""
    sw, cache = _context(sweep)
    return [evaluate(sw, int(p), cache) for p in points]


def _pool_init(sweep: Sweep) -> None:
    _context(sweep)


def _pool_chunk(points: Sequence[int]) -> list[dict[str, Any]]:
    return run_chunk(_LOCAL.context[1], points)


def _chunks(points: Sequence[int], workers: int) -> list[list[int]]:
    """Contiguous chunks (neighbouring grid points share stages), about 8 per worker, at most 256."""
    size = max(1, min(256, math.ceil(len(points) / max(1, workers * 8))))
    return [list(points[i:i + size]) for i in range(0, len(points), size)]


def _iter_serial(sweep: Sweep, points: Sequence[int]) -> Iterator[list[dict[str, Any]]]:
    for chunk in _chunks(points, 1):
        yield run_chunk(sweep, chunk)


def _iter_pool(sweep: Sweep, points: Sequence[int], workers: int) -> Iterator[list[dict[str, Any]]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_pool_init,
                             initargs=(sweep,)) as ex:
        futures = [ex.submit(_pool_chunk, c) for c in _chunks(points, workers)]
        for fut in as_completed(futures):
            yield fut.result()


def _dask_client(dask_local: int | None, scheduler: str | None) -> tuple[Any, Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ScenarioError("--dask-local" if dask_local else "--scheduler",
                            "needs Dask: pip install 'gpucluster_lib[dask]' (dask[distributed])") from None
    if scheduler:
        try:
            return Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError) as e:
            raise ScenarioError("--scheduler", f"no Dask scheduler answers at {scheduler}: {e}") from None
    import multiprocessing

    import dask

    # fork where the platform has it: the workers start with the library imported (as the pool's
    # do) instead of importing it again (spawn), a few seconds per worker on a busy machine
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with dask.config.set({"distributed.worker.multiprocessing-method": method}):
        cluster = LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, worker_dashboard_address=None)
    return Client(cluster), cluster


def _iter_dask(sweep: Sweep, points: Sequence[int], client: Any, workers: int) -> Iterator[list[dict[str, Any]]]:
    from distributed import as_completed

    sw = client.scatter(sweep, broadcast=True)
    futures = [client.submit(run_chunk, sw, c, pure=False) for c in _chunks(points, workers)]
    for fut in as_completed(futures):
        yield fut.result()


# --------------------------------------------------------------------------- results


@dataclass
class SweepResult:
    """The table (one row per point, in point order), the summary and the findings of a sweep."""

    sweep: Sweep
    table: Any  # pandas.DataFrame
    seconds: float
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def feasible(self) -> Any:
        return self.table[self.table["feasible"]]

    def pareto(self) -> Any:
        """The feasible, non-dominated rows over the sweep's objectives (all feasible rows without)."""
        from gpucluster_lib.explore.pareto import pareto_rows

        return pareto_rows(self.feasible, self.sweep.objectives)

    def best(self) -> dict[str, Any]:
        """For each objective, the feasible row with its best value."""
        feas = self.feasible
        out = {}
        for key, sense in self.sweep.objectives.items():
            col = feas[key].astype(float)
            if col.notna().any():
                out[key] = feas.loc[col.idxmin() if sense == "min" else col.idxmax()]
        return out

    def summary(self) -> dict[str, Any]:
        """The ``gpucluster sweep --json`` object."""
        t = self.table
        status = t["status"].value_counts()
        keep = ["point", *self.sweep.keys, *self.sweep.objectives]
        front = self.pareto()[list(dict.fromkeys(keep))] if len(t) else t
        return {
            "name": self.sweep.name,
            "points": int(len(t)),
            "ok": int(status.get("ok", 0)),
            "invalid": int(status.get("invalid", 0)),
            "error": int(status.get("error", 0)),
            "failed": int(status.get("invalid", 0) + status.get("error", 0)),
            "feasible": int(t["feasible"].sum()) if len(t) else 0,
            "skipped": self.skipped,
            "constraints": [c.text for c in self.sweep.constraints],
            "objectives": dict(self.sweep.objectives),
            "pareto": _records(front),
            "best": {k: _records(r.to_frame().T[list(dict.fromkeys(keep))])[0] for k, r in self.best().items()},
            "findings": [f.to_dict() for f in self.findings],
            "seconds": round(self.seconds, 3),
        }


def _records(df: Any) -> list[dict[str, Any]]:
    return [{k: clean(v) for k, v in r.items()} for r in df.to_dict(orient="records")]


def feasible_mask(table: Any, constraints: Sequence[Constraint]) -> np.ndarray:
    """Rows that are ``ok``, have no error finding and meet every constraint."""
    ok = (table["status"] == "ok").to_numpy() & (table["error_findings"].fillna("") == "").to_numpy()
    for c in constraints:
        ok &= c.mask(table[c.key].to_numpy())
    return ok


def infeasibility_findings(table: Any, sweep: Any) -> list[Finding]:
    """Why no point is feasible: the constraint no design meets alone, or the error findings.

    ``sweep`` is a :class:`Sweep` or anything with its ``constraints`` and ``currency``."""
    if not len(table) or table["feasible"].any():
        return []
    ok = (table["status"] == "ok").to_numpy()
    if not ok.any():
        return []
    workable = ok & (table["error_findings"].fillna("") == "").to_numpy()
    if not workable.any():
        codes = " ".join(table.loc[ok, "error_findings"]).split()
        common = max(set(codes), key=codes.count)
        return [Finding("explore-no-workable-design", "error",
                        f"every design of the sweep has an error finding; the most common is {common} "
                        f"({codes.count(common)} of {int(ok.sum())} designs)",
                        "change the axes or the base scenario so that the design can work (see the finding's fix)",
                        "axes")]
    out = []
    masks = {c: c.mask(table[c.key].to_numpy()) & workable for c in sweep.constraints}
    for i, (c, m) in enumerate(masks.items()):
        if m.any():
            continue
        label = _label(c.key, sweep)
        vals = table.loc[workable, c.key].astype(float)
        near = vals.min() if c.op in ("<=", "<") else vals.max()
        out.append(Finding("explore-infeasible", "error",
                           f"no design meets every constraint: {c.describe(label)} alone is met by none of the "
                           f"{int(workable.sum())} workable designs (the closest is {near:,.4g})",
                           f"relax or drop the constraint {c.text}, or widen the axes", f"constraints[{i}]"))
    if not out:  # each constraint is met by some design, never all together: name the pairs' culprit
        for i, c in enumerate(sweep.constraints):
            others = workable.copy()
            for c2, m2 in masks.items():
                if c2 is not c:
                    others &= m2
            if others.any():
                out.append(Finding("explore-infeasible", "error",
                                   f"no design meets every constraint together; without "
                                   f"{c.describe(_label(c.key, sweep))}, {int(others.sum())} designs would",
                                   f"relax the constraint {c.text}", f"constraints[{i}]"))
                break
    return out


def _label(key: str, sweep: Any) -> str:
    for o in outputs(sweep.currency):
        if o.key == key:
            return o.label + (f" [{o.unit}]" if o.unit else "")
    return key


def failure_findings(table: Any) -> list[Finding]:
    bad = table[table["status"] != "ok"]
    if not len(bad):
        return []
    first = bad.iloc[0]
    return [Finding("explore-failed-points", "warning",
                    f"{len(bad)} of {len(table)} points failed ({int((bad['status'] == 'invalid').sum())} invalid, "
                    f"{int((bad['status'] == 'error').sum())} errors); the first, point {int(first['point'])}: "
                    f"{first['message']}", "see the message of each failed point in the results table", "axes")]


def _table(sweep: Sweep, rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    rows = sorted(rows, key=lambda r: r["point"])
    cols = sweep.columns
    t = pd.DataFrame.from_records(rows, columns=[c for c in cols if c != "feasible"])
    t["error_findings"] = t["error_findings"].fillna("").astype(str)
    t["message"] = t["message"].fillna("").astype(str)
    t.insert(cols.index("feasible"), "feasible", feasible_mask(t, sweep.constraints) if len(t) else
             np.zeros(0, dtype=bool))
    for c in sweep.output_columns:  # one dtype per column whatever the executor and the failed rows
        if t[c].dtype == object and t[c].map(lambda v: v is None or isinstance(v, (int, float))).all():
            t[c] = t[c].astype(float)
    return t


def _read_done(outdir: Path, sweep: Sweep) -> dict[int, dict[str, Any]]:
    meta, rows = outdir / "sweep.json", outdir / "points.jsonl"
    if not meta.is_file() or not rows.is_file():
        return {}
    try:
        fp = json.loads(meta.read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError):
        fp = None
    if fp != sweep.fingerprint():
        raise ScenarioError("-o", f"{outdir} holds the results of another sweep (other base, axes or sampling): "
                                  "choose a new folder, or delete this one to start again")
    done: dict[int, dict[str, Any]] = {}
    with rows.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                r = json.loads(line)
            except ValueError:  # a line cut short by an interrupted run: that point runs again
                continue
            done[int(r["point"])] = r
    return done


def run_sweep(sweep: Sweep, outdir: str | Path | None = None, *, workers: int = 1, dask_local: int | None = None,
              scheduler: str | None = None, progress: bool = False,
              on_rows: Callable[[int, int], None] | None = None) -> SweepResult:
    """Evaluate every point of ``sweep`` and return the table (and write it under ``outdir``).

    ``workers`` > 1 uses a process pool, ``dask_local`` a Dask LocalCluster of that many
    workers, ``scheduler`` an existing Dask scheduler. ``on_rows(done, total)`` is called as
    rows arrive (the app's progress bar); ``progress`` shows a tqdm bar on stderr.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ScenarioError("--workers", f"must be a positive whole number, got {workers!r}")
    if dask_local is not None and (isinstance(dask_local, bool) or not isinstance(dask_local, int) or dask_local < 1):
        raise ScenarioError("--dask-local", f"must be a positive whole number of workers, got {dask_local!r}")
    t0 = time.perf_counter()
    out = Path(outdir) if outdir is not None else None
    done: dict[int, dict[str, Any]] = {}
    fh = None
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ScenarioError("-o", f"{excerpt(str(out), 240)} is a file; a sweep writes its results into a folder: "
                                "give a folder name (OUTDIR)")
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / "points.jsonl").open("a", encoding="utf-8").close()
        except OSError as exc:
            raise ScenarioError("-o", f"cannot write into {excerpt(str(out), 240)} ({exc.strerror or exc}); choose a "
                                "folder you can write to") from None
        done = _read_done(out, sweep)
        (out / "sweep.json").write_text(json.dumps({
            "fingerprint": sweep.fingerprint(), "name": sweep.name, "axes": list(sweep.keys),
            "points": sweep.n_points, "method": sweep.method, "currency": sweep.currency,
            "constraints": [c.text for c in sweep.constraints], "objectives": sweep.objectives}, indent=1),
            encoding="utf-8")
        fh = (out / "points.jsonl").open("a", encoding="utf-8")
    total = sweep.n_points
    pending = [p for p in range(total) if p not in done]
    rows = list(done.values())
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, initial=len(done), unit="point", desc=sweep.name, smoothing=0.1)
    client = cluster = None
    try:
        if not pending:
            chunks: Iterator[list[dict[str, Any]]] = iter(())
        elif dask_local or scheduler:
            client, cluster = _dask_client(dask_local, scheduler)
            n = dask_local or max(1, len(client.scheduler_info().get("workers", {})))
            chunks = _iter_dask(sweep, pending, client, n)
        elif workers > 1 and len(pending) > 1:
            chunks = _iter_pool(sweep, pending, workers)
        else:
            chunks = _iter_serial(sweep, pending)
        for chunk in chunks:
            rows.extend(chunk)
            if fh is not None:
                fh.write("".join(json.dumps(r, default=str) + "\n" for r in chunk))
                fh.flush()
            if bar is not None:
                bar.update(len(chunk))
            if on_rows is not None:
                on_rows(len(rows), total)
    finally:
        if fh is not None:
            fh.close()
        if bar is not None:
            bar.close()
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    table = _table(sweep, rows)
    result = SweepResult(sweep, table, time.perf_counter() - t0, skipped=len(done))
    result.findings = failure_findings(table) + infeasibility_findings(table, sweep)
    if out is not None:
        write_results(table, out)
    return result


def write_results(table: Any, outdir: Path) -> None:
    """``results.csv`` and ``results.parquet`` (one row per point, in point order)."""
    table.to_csv(outdir / "results.csv", index=False)
    table.to_parquet(outdir / "results.parquet", index=False)


def sweep_table(sweep: Sweep, **kw: Any) -> Any:
    """The result table of ``sweep`` (no files)."""
    return run_sweep(sweep, **kw).table


__all__ = ["Axis", "Sweep", "SweepResult", "apply", "axis_values", "evaluate", "load_sweep", "parse_sweep",
           "run_sweep", "scenario_keys", "feasible_mask"]
