"""Sweeps: axes, sampling, constraints, failure isolation, resuming, executors, bad input."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.explore.expr import parse_constraint
from gpucluster_lib.explore.pareto import pareto_mask
from gpucluster_lib.explore.sweep import axis_values, load_sweep, parse_sweep, run_sweep
from gpucluster_lib.resources import PACKAGE_DATA

SWEEPS = PACKAGE_DATA / "sweeps"
HALL = str(SWEEPS / "hall-dgx-h100.yaml")


def small(**extra):
    data = {"base": HALL, "axes": {"hardware.nodes": [8, 16, 24], "facility.pue": [1.2, 1.4]},
            "objectives": {"cost.capex_usd": "min", "facility.facility_power_kw": "min"}}
    data.update(extra)
    return parse_sweep(data, base_dir=SWEEPS)


# ----------------------------------------------------------------- axes and sampling

def test_axis_values_list_range_logrange():
    assert axis_values([16, 32], "a") == [16, 32]
    assert axis_values({"range": [16, 64, 16]}, "a") == [16, 32, 48, 64]  # stop included when reached
    assert axis_values({"range": [1.1, 1.5, 0.1]}, "a") == [1.1, 1.2, 1.3, 1.4, 1.5]
    assert axis_values({"logrange": [1, 1024, 11]}, "a") == [2 ** i for i in range(11)]  # 1024 = 2^10
    assert axis_values({"logrange": [0.01, 1.0, 3]}, "a") == [0.01, 0.1, 1.0]  # ratio 10 per step


def test_grid_walks_the_last_axis_fastest():
    sw = small()
    assert sw.n_points == 6  # 3 node counts x 2 PUEs
    got = [tuple(sw.values_at(p).values()) for p in range(6)]
    assert got == list(itertools.product([8, 16, 24], [1.2, 1.4]))


def test_lhs_uses_every_stratum_once_and_is_seeded():
    data = {"base": HALL, "axes": {"hardware.nodes": {"range": [1, 10, 1]}, "facility.pue": {"range": [1.1, 2.0, 0.1]}},
            "sample": {"method": "lhs", "points": 10, "seed": 3}}
    a, b = parse_sweep(data, base_dir=SWEEPS), parse_sweep(data, base_dir=SWEEPS)
    nodes = [a.values_at(p)["hardware.nodes"] for p in range(10)]
    # 10 values and 10 strata: a Latin hypercube takes each value exactly once (McKay et al. 1979)
    assert sorted(nodes) == list(range(1, 11))
    assert nodes == [b.values_at(p)["hardware.nodes"] for p in range(10)]  # same seed, same sample


def test_random_sampling_is_reproducible_and_in_range():
    data = {"base": HALL, "axes": {"hardware.nodes": [8, 16, 24, 32]}, "sample": {"method": "random", "points": 50,
                                                                                  "seed": 1}}
    a = parse_sweep(data, base_dir=SWEEPS)
    vals = [a.values_at(p)["hardware.nodes"] for p in range(50)]
    assert set(vals) <= {8, 16, 24, 32} and len(set(vals)) == 4  # 50 draws of 4 values: all appear (P miss < 1e-5)
    assert vals == [parse_sweep(data, base_dir=SWEEPS).values_at(p)["hardware.nodes"] for p in range(50)]


# ----------------------------------------------------------------- evaluation

def test_rows_follow_the_axes_and_the_pue_rule():
    t = run_sweep(small()).table
    assert list(t["point"]) == list(range(6)) and (t["status"] == "ok").all()
    assert list(t["hardware.gpus"]) == [64, 64, 128, 128, 192, 192]  # 8 GPUs per DGX H100 x nodes
    lo, hi = t.iloc[0], t.iloc[1]  # same nodes, PUE 1.2 and 1.4
    assert lo["facility.it_power_kw"] == hi["facility.it_power_kw"]
    # facility power = IT power x PUE (The Green Grid WP #49)
    assert hi["facility.facility_power_kw"] == pytest.approx(lo["facility.it_power_kw"] * 1.4)
    assert lo["facility.facility_power_kw"] == pytest.approx(lo["facility.it_power_kw"] * 1.2)


def test_constraints_mark_feasible_rows():
    sw = small(constraints=["facility.racks <= 5", "hardware.nodes >= 16"])
    t = run_sweep(sw).table
    want = (t["facility.racks"] <= 5) & (t["hardware.nodes"] >= 16)
    assert list(t["feasible"]) == list(want)


def test_stage_cache_shares_the_topology_between_points():
    from gpucluster_lib.design import STAGE_CALLS

    sw = parse_sweep({"base": HALL, "axes": {"facility.pue": [1.1, 1.2, 1.3, 1.4],
                                             "facility.energy_price_per_kwh": [0.05, 0.1]}}, base_dir=SWEEPS)
    before = STAGE_CALLS["network"]
    run_sweep(sw)
    # PUE and energy price are not inputs of the topology: 8 points, one network design
    assert STAGE_CALLS["network"] - before == 1


def test_failure_isolation_invalid_points_are_rows():
    sw = parse_sweep({"base": HALL, "axes": {"hardware.server": ["dgx-h100", "dgx-h1000"]}}, base_dir=SWEEPS)
    res = run_sweep(sw)
    t = res.table
    assert list(t["status"]) == ["ok", "invalid"]
    assert "dgx-h1000" in t.loc[1, "message"] and "dgx-h100" in t.loc[1, "message"]  # names the closest id
    assert not t.loc[1, "feasible"]
    assert [f.code for f in res.findings] == ["explore-failed-points"]


def test_resume_skips_finished_points(tmp_path):
    sw = small()
    first = run_sweep(sw, tmp_path)
    lines = (tmp_path / "points.jsonl").read_text().splitlines()
    (tmp_path / "points.jsonl").write_text("\n".join(lines[:4]) + "\n")  # as if stopped after 4 points
    again = run_sweep(small(), tmp_path)
    assert again.skipped == 4
    pd.testing.assert_frame_equal(first.table, again.table)
    csv = pd.read_csv(tmp_path / "results.csv")
    pq = pd.read_parquet(tmp_path / "results.parquet")
    assert len(csv) == len(pq) == 6 and list(pq.columns) == list(first.table.columns)


def test_resume_refuses_another_sweeps_folder(tmp_path):
    run_sweep(small(), tmp_path)
    other = parse_sweep({"base": HALL, "axes": {"hardware.nodes": [8, 9]}}, base_dir=SWEEPS)
    with pytest.raises(ScenarioError, match="another sweep"):
        run_sweep(other, tmp_path)


def test_pool_and_dask_give_identical_tables():
    try:
        import distributed
    except ImportError:  # a missing tool fails with its install command
        pytest.fail("Dask is missing: pip install -e '.[test]' (or '.[dask]')")
    sw = small()
    serial = run_sweep(sw).table
    pool = run_sweep(small(), workers=2).table
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None, worker_dashboard_address=None) as cluster:
        dask = run_sweep(small(), scheduler=cluster.scheduler_address).table
    local = run_sweep(small(), dask_local=2).table  # --dask-local: its own LocalCluster of 2 processes
    pd.testing.assert_frame_equal(serial, pool)
    pd.testing.assert_frame_equal(serial, dask)
    pd.testing.assert_frame_equal(serial, local)


# ----------------------------------------------------------------- Pareto

def brute_front(values, senses):
    x = np.asarray(values, float) * np.array([1 if s == "min" else -1 for s in senses])
    out = []
    for i, p in enumerate(x):
        dominated = any(all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
                        for j, q in enumerate(x) if j != i)
        out.append(not dominated)
    return np.array(out)


def test_pareto_front_matches_brute_force_on_a_sweep():
    sw = parse_sweep({"base": HALL, "axes": {"hardware.nodes": [8, 16, 32], "facility.pue": [1.1, 1.3, 1.5],
                                             "facility.energy_price_per_kwh": [0.05, 0.15]}}, base_dir=SWEEPS)
    t = run_sweep(sw).table
    cols, senses = ["cost.tco_usd", "facility.facility_power_kw", "hardware.gpus"], ["min", "min", "max"]
    got = pareto_mask(t[cols].to_numpy(), senses)
    assert list(got) == list(brute_front(t[cols].to_numpy(), senses))
    # by hand: at each node count the lowest PUE and price is cheapest and least power, so 3 of 18 designs
    assert got.sum() == 3 and set(t[got]["facility.pue"]) == {1.1}


def test_pareto_small_hand_case():
    pts = [[1, 5], [2, 3], [3, 4], [4, 1], [2, 3]]  # [3, 4] is dominated by [2, 3]; the two [2, 3] tie
    assert list(pareto_mask(pts, ["min", "min"])) == [True, True, False, True, True]
    assert list(pareto_mask([[1, np.nan], [2, 2]], ["min", "min"])) == [False, True]


# ----------------------------------------------------------------- bad input

def test_unknown_axis_names_the_closest_keys():
    with pytest.raises(ScenarioError) as e:
        parse_sweep({"base": HALL, "axes": {"hardware.node": [1, 2]}}, base_dir=SWEEPS)
    assert e.value.path == "axes.hardware.node" and "'hardware.nodes'" in str(e.value)


def test_unknown_output_key_names_the_closest():
    with pytest.raises(ScenarioError) as e:
        small(constraints=["facility.rack <= 40"])
    assert "'facility.racks'" in str(e.value) and e.value.path == "constraints[0]"
    with pytest.raises(ScenarioError, match="cost.capex_usd"):
        small(objectives={"cost.capex": "min"})


def test_constraint_grammar_is_not_eval():
    c = parse_constraint("facility.racks <= 40", ["facility.racks"])
    assert (c.key, c.op, c.limit) == ("facility.racks", "<=", 40.0)
    assert c.holds(40) and not c.holds(41) and not c.holds(None) and not c.holds(math.nan)
    for bad in ["__import__('os').system('true') <= 1", "facility.racks <= 40 or 1", "facility.racks"]:
        with pytest.raises(ScenarioError, match="KEY OP NUMBER|unknown result key"):
            parse_constraint(bad, ["facility.racks"])


@pytest.mark.parametrize("data, path, words", [
    ({"axes": {}}, "axes", "no axes"),
    ({"axes": {"hardware.nodes": []}}, "axes.hardware.nodes", "no values"),
    ({"axes": {"hardware.nodes": [1]}, "sample": {"method": "lhs", "points": 0}}, "sample.points", "positive"),
    ({"axes": {"hardware.nodes": [1]}, "sample": {"method": "lhs"}}, "sample.points", "needs a number"),
    ({"axes": {"hardware.nodes": [1]}, "sample": {"method": "sobol", "points": 3}}, "sample.method", "grid, random"),
    ({"axes": {"hardware.nodes": [4, -4]}}, "axes.hardware.nodes[1]", "positive"),
    ({"axes": {"hardware.nodes": {"range": [1, 10, 0]}}}, "axes.hardware.nodes.range", "never goes"),
    ({"axis": {"hardware.nodes": [1]}}, "axis", "did you mean 'axes'"),
])
def test_bad_sweep_files(data, path, words):
    with pytest.raises(ScenarioError) as e:
        parse_sweep({"base": HALL, **data}, base_dir=SWEEPS)
    assert e.value.path == path and words in str(e.value)


def test_more_than_ten_million_points_needs_yes():
    data = {"base": HALL, "axes": {"hardware.nodes": {"range": [1, 1000, 1]}, "facility.pue": {"range": [1.0, 2.0, 0.1]},
                                   "facility.energy_price_per_kwh": {"range": [0.01, 10.0, 0.01]}}}
    with pytest.raises(ScenarioError, match="11,000,000 points.*--yes"):  # 1000 x 11 x 1000
        parse_sweep(data, base_dir=SWEEPS)
    assert parse_sweep(data, base_dir=SWEEPS, yes=True).n_points == 11_000_000


def test_infeasible_constraint_set_names_the_constraint():
    sw = small(constraints=["facility.racks <= 1000", "facility.facility_power_kw <= 50"])
    res = run_sweep(sw)
    assert not res.table["feasible"].any()
    (f,) = res.findings
    # the smallest design, 8 DGX H100 at 10.2 kW each (NVIDIA DGX H100 datasheet), is above 80 kW alone
    assert f.code == "explore-infeasible" and f.field == "constraints[1]" and "Facility power" in f.message
    assert "Racks" not in f.message


def test_infeasible_only_together_names_one_to_relax():
    sw = small(constraints=["hardware.nodes >= 24", "facility.racks <= 5"])
    res = run_sweep(sw)
    # 24 DGX H100 at 3 per 40 kW rack need at least 8 racks by hand, so no point meets both
    assert not res.table["feasible"].any()
    assert [f.code for f in res.findings] == ["explore-infeasible"]


# ----------------------------------------------------------------- CLI

def test_cli_sweep_json(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {HALL}\naxes:\n  hardware.nodes: [8, 16]\nconstraints: ['facility.racks <= 6']\n"
                     "objectives: {cost.capex_usd: min, hardware.gpus: max}\n")
    assert main(["sweep", str(sweep), "-o", str(tmp_path / "out"), "--workers", "1", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["points"], s["ok"], s["failed"]) == (2, 2, 0)
    # 8 nodes + spares at 3 per rack fit 6 racks; 16 nodes need 6 compute racks alone (16 / 3 -> 6)
    assert s["feasible"] == 1 and [r["hardware.nodes"] for r in s["pareto"]] == [8]
    assert (tmp_path / "out" / "results.csv").is_file() and (tmp_path / "out" / "results.parquet").is_file()


def test_cli_sweep_bad_input_exits_2(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {HALL}\naxes:\n  hardwre.nodes: [8]\n")
    assert main(["sweep", str(sweep), "-o", str(tmp_path / "o")]) == 2
    assert "hardware.nodes" in capsys.readouterr().err


def test_shipped_sweeps_load():
    for p in sorted(SWEEPS.glob("*.yaml")):
        if p.name.startswith("hall-dgx"):
            continue
        sw = load_sweep(p)
        assert sw.n_points > 0 and sw.objectives


def test_no_exception_escapes_for_odd_values():
    for spec in [{"range": "x"}, {"logrange": [0, 1, 3]}, {"logrange": [1, 10, 2.5]}, "abc", {"grid": [1]}]:
        with pytest.raises(GpuClusterError):
            parse_sweep({"base": HALL, "axes": {"hardware.nodes": spec}}, base_dir=SWEEPS)
