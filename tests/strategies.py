"""Hypothesis strategies over the scenario schema: valid, near-miss and hostile values.

Everything is derived from the dataclasses of :mod:`gpucluster_lib.scenario` and their field
metadata (``gt``/``ge``/``le``/``lt``, ``max_len``, ``Literal`` choices), so a new field is
fuzzed the day it is added. Used by ``tests/test_fuzz.py`` (small, seeded, in CI) and by
``benchmarks/fuzz_scenarios.py`` (the long run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import types
import typing
from typing import Any, Literal, Union, get_args, get_origin

from hypothesis import strategies as st

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.cli import main
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.workloads.transformer import load_presets
from gpucluster_lib.workloads.vision import load_vision_presets

COMMANDS = ("estimate", "budget", "topology", "serve", "reliability", "cost")

#: Small designs that compute fast: the starting points the mutations change.
BASES: list[dict[str, Any]] = [
    {"name": "fuzz dense", "model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
     "parallelism": {"tensor": 8, "pipeline": 1, "data": 2, "micro_batch_size": 1, "global_batch_size": 16},
     "training": {"tokens": 1.0e9}, "inference": {"requests_per_s": 2.0}},
    {"name": "fuzz a100", "model": {"preset": "gpt3-175b"},
     "hardware": {"server": "dgx-a100-640gb", "nodes": 16, "head_nodes": 2},
     "parallelism": {"tensor": 8, "pipeline": 8, "data": 2, "micro_batch_size": 1, "global_batch_size": 64},
     "training": {"tokens": 1.0e10}, "network": {"topology": "fat-tree", "switch": "qm8700"}},
    {"name": "fuzz vision", "model": {"preset": "resnet50"}, "hardware": {"accelerator": "l40s", "nodes": 1},
     "training": {"epochs": 1, "dataset_images": 1.0e5}, "inference": {"images_per_s": 100.0}},
    {"name": "fuzz facility", "hardware": {"server": "dgx-h100", "nodes": 4}},
]


@dataclasses.dataclass(frozen=True, eq=False)
class Leaf:
    """One scenario key: its path, type and rules."""

    path: tuple[str, ...]
    tp: Any
    md: Any


def _unwrap(tp: Any) -> tuple[Any, bool]:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return (args[0] if len(args) == 1 else tp), len(args) < len(get_args(tp))
    return tp, False


def leaves(cls: type = Scenario, prefix: tuple[str, ...] = ()) -> list[Leaf]:
    """Every key of the schema (nested sections expanded), from the dataclass fields."""
    out = []
    hints = typing.get_type_hints(cls)
    for fl in dataclasses.fields(cls):
        if fl.metadata.get("internal") or fl.name in ("catalog", "calibration"):
            continue  # file references: tests/test_paths.py covers them
        tp, _ = _unwrap(hints[fl.name])
        if dataclasses.is_dataclass(tp):
            out += leaves(tp, prefix + (fl.name,))
        else:
            out.append(Leaf(prefix + (fl.name,), hints[fl.name], fl.metadata))
    return out


def _ids() -> dict[str, list[str]]:
    cat = load_catalog()
    return {"accelerator": cat.ids("accelerators"), "server": cat.ids("servers"), "chassis": cat.ids("servers"),
            "switch": cat.ids("switches"), "mgmt_switch": cat.ids("switches"), "storage_switch": cat.ids("switches"),
            "nic": cat.ids("nics"), "storage_system": cat.ids("storage"),
            "preset": list(load_presets()) + list(load_vision_presets()), "id": cat.ids("cpus") + cat.ids("nics")}


IDS = _ids()
HOSTILE = st.sampled_from([None, 10**30, -(10**30), 1.0e308, -1.0e308, float("nan"), float("inf"), -0.0, "",
                           "x" * 5000, "nan", "1e999", [1, 2], {"a": 1}, True, "\u202e\u0000evil"])


def _bounds(md: Any, is_int: bool) -> tuple[float, float]:
    lo = md.get("ge", md.get("gt", 0))
    if "gt" in md and "ge" not in md:
        lo = lo + (1 if is_int else max(abs(lo) * 1e-9, 1e-9))
    hi = md.get("le", md.get("lt", 1e6))
    if "lt" in md and "le" not in md:
        hi = hi - (1 if is_int else max(abs(hi) * 1e-9, 1e-9))
    return lo, hi


def _number(md: Any, is_int: bool) -> st.SearchStrategy:
    lo, hi = _bounds(md, is_int)
    if is_int:
        lo, hi = math.ceil(lo), math.floor(hi)
        plausible = st.integers(lo, min(hi, max(lo, 64)))
        valid = st.one_of(plausible, plausible, st.integers(lo, hi), st.sampled_from([lo, hi]))
        near = st.sampled_from([lo - 1, hi + 1, float(lo), lo + 0.5, str(lo)])
    else:
        plausible = st.floats(lo, min(hi, max(lo * 10, lo + 10)), allow_nan=False)
        valid = st.one_of(plausible, plausible, st.floats(lo, hi, allow_nan=False), st.sampled_from([lo, hi]))
        near = st.sampled_from([lo - 1e-6 - abs(lo) * 1e-3, hi * 1.001 + 1e-6, str(lo), f"{hi}"])
    return st.one_of(valid, valid, valid, near, HOSTILE)


@st.composite
def _split(draw: st.DrawFn, total: int, parts: int) -> list[int]:
    """``total`` layers over ``parts`` stages, each at least one."""
    cuts = sorted(draw(st.lists(st.integers(1, total - 1), min_size=parts - 1, max_size=parts - 1, unique=True)))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def _stage_layouts() -> st.SearchStrategy:
    """Layer lists that fit a base (96 layers on 8 stages, 32 on 1 or 2) and their near misses:
    one layer too many, a stage with none, one stage too few."""
    fits = st.one_of(_split(96, 8), _split(32, 2), st.just([32]))
    near = fits.flatmap(lambda st_: st.sampled_from([[*st_[:-1], st_[-1] + 1], [0, *st_[1:-1], st_[0] + st_[-1]]
                                                     if len(st_) > 1 else [0, 32], st_[1:] or [0]]))
    return st.one_of(fits, fits, near)


def value_for(leaf: Leaf) -> st.SearchStrategy:
    """Valid (three in five), near-miss and hostile values for one key."""
    tp, optional = _unwrap(leaf.tp)
    name = leaf.path[-1]
    if name == "pipeline_layers":  # random lists almost never add up to the model's layers
        return st.one_of(_stage_layouts(), _stage_layouts(), st.lists(_number(leaf.md, True), max_size=4), HOSTILE)
    if get_origin(tp) is Literal:
        choices = [c for c in get_args(tp)]
        near = st.sampled_from([str(c).upper() for c in choices] + [str(c) + "x" for c in choices])
        return st.one_of(st.sampled_from(choices), st.sampled_from(choices), near, HOSTILE)
    if tp is bool:
        return st.one_of(st.booleans(), st.booleans(), st.sampled_from(["yes", 1, 0]), HOSTILE)
    if tp in (int, float):
        return _number(leaf.md, tp is int)
    if tp is str:
        if name in IDS:
            ids = IDS[name]
            near = st.sampled_from([i[:-1] for i in ids] + [i.upper() for i in ids])
            return st.one_of(st.sampled_from(ids), st.sampled_from(ids), st.sampled_from(ids), near, HOSTILE)
        return st.one_of(st.text(max_size=30), st.text(max_size=30), HOSTILE)
    origin = get_origin(tp)
    if origin is list:
        (item,) = get_args(tp)
        if dataclasses.is_dataclass(item):
            return st.one_of(st.just([]), st.lists(st.fixed_dictionaries({"id": st.sampled_from(IDS["id"]),
                                                                           "count": st.integers(-1, 4)}),
                                                   max_size=3), HOSTILE)
        inner = _number(leaf.md, item is int)
        return st.one_of(st.lists(inner, min_size=2, max_size=2), st.lists(inner, max_size=4), HOSTILE)
    if origin is dict:
        _, vt = get_args(tp)
        keys = st.sampled_from(["gpu", "hbm", "host", "gemm_efficiency", "qm9700", "dgx-h100", "bogus"])
        return st.one_of(st.dictionaries(keys, _number(leaf.md, vt is int), max_size=3), HOSTILE)
    return HOSTILE if not optional else st.one_of(st.none(), HOSTILE)


LEAVES = leaves()


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[path[-1]] = value


@st.composite
def scenarios(draw: st.DrawFn, max_changes: int = 3) -> dict[str, Any]:
    """A base design with one to ``max_changes`` keys set to valid, near-miss or hostile values."""
    data = json.loads(json.dumps(draw(st.sampled_from(BASES))))
    for leaf in draw(st.lists(st.sampled_from(LEAVES), min_size=1, max_size=max_changes, unique=True)):
        _set(data, leaf.path, draw(value_for(leaf)))
    return data


@st.composite
def edits(draw: st.DrawFn, max_changes: int = 3) -> dict[str, Any]:
    """``AppState.update`` keyword arguments (``section__field``) as the app's widgets make them."""
    two_level = [lf for lf in LEAVES if len(lf.path) == 2]
    chosen = draw(st.lists(st.sampled_from(two_level), min_size=1, max_size=max_changes, unique=True))
    return {"__".join(lf.path): draw(value_for(lf)) for lf in chosen}


# ------------------------------------------------------------------ running and checking

def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``gpucluster ARGV`` in process: (exit status, stdout, stderr). Exceptions other than a
    GpuClusterError propagate (the CLI turns those into status 2 and one line)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _no_constants(name: str) -> Any:
    raise AssertionError(f"JSON holds {name}")


#: JSON keys whose numbers may be negative (differences, signed margins, coordinates).
SIGNED_WORDS = ("margin", "delta", "headroom", "difference", "change", "slack", "diff", "error", "x", "y",
                "offset", "residual", "saving", "gain", "vs_", "relative", "over_", "surplus", "balance")


def check_json(text: str) -> Any:
    """Parse ``--json`` output strictly: no NaN/Infinity, every number finite, no negative count."""
    data = json.loads(text, parse_constant=_no_constants)
    bad: list[str] = []

    def walk(obj: Any, path: str) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, f"{path}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
        elif isinstance(obj, bool) or obj is None or isinstance(obj, str):
            return
        elif isinstance(obj, (int, float)):
            key = path.rsplit(".", 1)[-1].split("[")[0].lower()
            if isinstance(obj, float) and not math.isfinite(obj):
                bad.append(f"{path} = {obj}")
            elif isinstance(obj, int) and obj < 0 and not any(w in key for w in SIGNED_WORDS):
                bad.append(f"{path} = {obj} (a negative count)")

    walk(data, "")
    assert not bad, bad[:5]
    return data


def check_design_dicts(design: Any) -> None:
    """Every stage of an app design as JSON (what the tabs and the CLI read): same checks."""
    from gpucluster_lib.commands import jsonable

    for stage in ("facility", "network", "training", "serving", "reliability", "cost"):
        try:
            result = getattr(design, stage)
        except GpuClusterError:
            continue
        if result is not None and hasattr(result, "to_dict"):
            check_json(json.dumps(jsonable(result.to_dict()), allow_nan=False))


def exercise(data: dict[str, Any], folder: Any, *, commands: tuple[str, ...] = COMMANDS) -> dict[str, int]:
    """Write ``data`` as a scenario file and run every command on it twice over one: exit statuses.

    Fails on any exception that is not a GpuClusterError, on a status other than 0 or 2, on
    invalid JSON, on a traceback in the message, and on two runs of one command that differ.
    """
    import yaml

    path = folder / "fuzz.yaml"
    try:
        text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    except yaml.YAMLError:
        return {}
    path.write_text(text, encoding="utf-8")
    statuses = {}
    for i, command in enumerate(commands):
        rc, out, err = run_cli([command, str(path), "--json"])
        assert rc in (0, 2), (command, rc, err)
        assert "Traceback" not in err and len(err) < 2000, (command, err[:300])
        if rc == 0:
            check_json(out)
            if i == 0:  # determinism: the same file gives the same JSON
                assert run_cli([command, str(path), "--json"])[1] == out, command
        else:
            assert out == "" and err.startswith(f"gpucluster {command}: error: "), (command, err[:300])
        statuses[command] = rc
    return statuses
