"""Reliability: hand-worked and published values, with the source on each line."""

from __future__ import annotations

import json
import math
import time
import types
from pathlib import Path

import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.facility.storage import size_storage
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.reliability import core as rel
from gpucluster_lib.scenario import from_dict, load_scenario, loads
from gpucluster_lib.training import estimate

ROOT = Path(__file__).resolve().parent.parent
GPT3 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


# --------------------------------------------------------------------------- checkpoint interval


def test_young_interval_60s_3h():
    assert rel.young_interval_s(60, 3 * 3600) == pytest.approx(1138.4, abs=0.1)  # Young 1974: sqrt(2 x 60 x 10800) = 1138 s


@pytest.mark.parametrize(("delta_min", "m_h", "young_min", "daly_min"), [
    (1, 1.8, 14.7, 14.0),    # hw_reference.md 6.4 worked values (Young 1974; Daly 2006 eq. 37)
    (5, 1.8, 32.9, 29.6),    # idem
    (1, 3.1, 19.3, 18.6),    # idem, Llama 3 MTBI
    (5, 7.9, 68.9, 65.6),    # idem, RSC 1,024-GPU job MTTF
    (10, 24, 169.7, 163.1),  # idem
])
def test_young_and_daly_table(delta_min, m_h, young_min, daly_min):
    assert rel.young_interval_s(delta_min * 60, m_h * 3600) / 60 == pytest.approx(young_min, abs=0.06)
    assert rel.daly_interval_s(delta_min * 60, m_h * 3600) / 60 == pytest.approx(daly_min, abs=0.06)


def test_daly_interval_when_checkpoint_exceeds_twice_mtbf():
    assert rel.daly_interval_s(7200, 3000) == 3000  # Daly 2006 eq. 37: tau = M for delta >= 2M


# --------------------------------------------------------------------------- goodput


def test_goodput_no_failures_is_checkpoint_overhead():
    assert rel.goodput(3600, 60, 600, math.inf) == pytest.approx(3600 / 3660)  # M -> inf: tau / (tau + delta)


def test_goodput_daly_eq13_by_hand():
    # tau = 1138.42, delta = 60, R = 0, M = 10800: e^(1198.42/10800) - 1 = 0.117356 (series to 4th order)
    # G = 1138.42 / (10800 x 0.117356) = 0.89820
    assert rel.goodput(1138.42, 60, 0, 10800) == pytest.approx(0.8982, abs=2e-4)


def test_goodput_restart_factor():
    # R = M ln 2 doubles the wall time (Daly eq. 13 factor e^(R/M) = 2)
    g0 = rel.goodput(1000, 10, 0, 36000)
    assert rel.goodput(1000, 10, 36000 * math.log(2), 36000) == pytest.approx(g0 / 2)


def test_expected_wall_time():
    # 100 h of work, tau 1 h, delta 36 s, no failures: 100 x 3636 / 3600 = 101 h
    assert rel.expected_wall_time_s(100 * 3600, 3600, 36, 0, math.inf) == pytest.approx(101 * 3600)


def test_goodput_array_matches_scalar():
    import numpy as np
    g = rel.goodput_array(np.array([1000.0, 2000.0]), 30, 300, 20000)
    assert g[1] == pytest.approx(rel.goodput(2000, 30, 300, 20000))


# --------------------------------------------------------------------------- rates


def test_llama3_default_rates_reproduce_published_mtbi():
    rates = rel.preset_rates("llama3-405b")
    assert sum(rates.values()) == pytest.approx(419 / 884_736 * 1000)  # Table 5: 419 unexpected, 16,384 x 54 GPU-days
    per_day = rel.interruptions_per_day(16_384, sum(rates.values()))
    assert per_day == pytest.approx(419 / 54)  # 7.76 per day
    assert rel.mtbi_hours(per_day) == pytest.approx(3.1, abs=0.05)  # Llama 3 Sec. 3.3.4: one every ~3.1 h (3.09)


def test_llama3_gpu_share_by_count():
    rates = rel.preset_rates("llama3-405b")
    assert rates["gpu"] / sum(rates.values()) == pytest.approx(196 / 419)  # 148+19+17+6+6 GPU causes of 419
    assert rates["hbm"] / sum(rates.values()) == pytest.approx(72 / 419)   # Table 5: HBM3 72


def test_rsc1_projection_16k_gpus():
    total = sum(rel.preset_rates("rsc1").values())
    assert total == pytest.approx(6.50 / 8)  # Kokolis 2025: r_f = 6.50 per 1000 node-days, 8 GPUs per node
    assert rel.mtbi_hours(rel.interruptions_per_day(16_384, total)) == pytest.approx(1.8, abs=0.01)  # paper: 1.8 h at 16k


def test_planned_rate():
    assert rel.planned_rate("llama3-405b") == pytest.approx(47 / 884_736 * 1000)  # Table 5: 47 planned
    assert rel.planned_rate("rsc1") == 0.0


def test_mtbi_zero_rate_is_infinite():
    assert rel.mtbi_hours(0) == math.inf


# --------------------------------------------------------------------------- checkpoint size, storage


def test_checkpoint_bytes_and_write_time():
    size = rel.checkpoint_bytes(175e9)  # 14 B/param (ZeRO Sec. 3.1 less 2 B of gradients)
    assert size == pytest.approx(2.45e12)
    assert rel.checkpoint_write_s(size, 65) == pytest.approx(37.69, abs=0.01)  # 2.45e12 / 65e9


def test_storage_units_by_bandwidth_and_capacity():
    assert rel.storage_units_for_checkpoint(10e12, 60, 65, 368.6) == 3      # 10e12 / (60 x 65e9) = 2.56 -> 3
    assert rel.storage_units_for_checkpoint(100e12, 3600, 65, 368.6, kept=3) == 1  # 300 TB fits one 368.6 TB unit
    assert rel.storage_units_for_checkpoint(200e12, 3600, 65, 368.6, kept=3) == 2  # 600 TB -> 2 units


# --------------------------------------------------------------------------- spares, availability


def test_poisson_cdf():
    assert rel.poisson_cdf(2, 1.0) == pytest.approx(2.5 * math.exp(-1))  # 1 + 1 + 1/2 times e^-1
    assert rel.poisson_cdf(-1, 1.0) == 0.0


def test_spares_needed():
    # 1/3 node failure per day x 72 h = mean 1 in repair; P(X<=3) = 0.981, P(X<=4) = 0.9963
    assert rel.spares_needed(1 / 3, 72, 0.99) == 4
    assert rel.spares_needed(1 / 3, 72, 0.98) == 3
    assert rel.spares_needed(0, 72) == 0


def test_availability():
    assert rel.availability(99, 1) == pytest.approx(0.99)
    assert rel.redundant_availability(0.99, 2) == pytest.approx(0.9999)  # 1 - 0.01^2


def test_redundant_group_failures():
    # 1+1, MTBF 1000 h, MTTR 10 h: 2 x (0.01) x 1 x 0.001 /h = 2e-5 /h = 0.1752 /yr
    assert rel.redundant_group_failures_per_year(1, 1, 1000, 10) == pytest.approx(0.1752)
    assert rel.redundant_group_failures_per_year(3, 0, 1000, 10) == pytest.approx(26.28)  # 3 x 8760 / 1000


def test_ideal_days_6nd():
    # 6 x 175e9 x 300e9 / (1024 x 312e12 x 0.4) = 2.4649e6 s = 28.53 days
    assert rel.ideal_training_days_6nd(175e9, 300e9, 1024, 312) == pytest.approx(28.53, abs=0.01)


# --------------------------------------------------------------------------- band


def test_band_is_deterministic_and_ordered():
    a = rel.days_to_train_band(30, 3600, 40, 600, 50 * 3600)
    b = rel.days_to_train_band(30, 3600, 40, 600, 50 * 3600)
    assert a == b
    assert a["p10"] < a["p50"] < a["p90"]
    # every sample is at least the work at the fastest efficiency: 30 / 1.1 days
    assert a["p10"] > 30 / 1.1


def test_band_collapses_without_uncertainty_and_failures():
    b = rel.days_to_train_band(30, 3600, 36, 0, 1e15, failure_range=(1, 1), efficiency_range=(1, 1))
    assert b["p10"] == pytest.approx(30 * 3636 / 3600, rel=1e-6)  # checkpoint overhead only
    assert b["p90"] == pytest.approx(b["p10"], rel=1e-6)


# --------------------------------------------------------------------------- scenario


def test_gpt3_scenario():
    s = load_scenario(GPT3)
    r = rel.assess(s, training_days_ideal=estimate(s).training_days)  # as the Design passes them
    assert r.gpus == 1024
    assert r.mtbi_hours == pytest.approx(24 * 884_736 / (1024 * 419))  # 49.49 h: Llama 3 rate at 1,024 GPUs
    assert r.checkpoint_bytes == pytest.approx(174.6e9 * 14, rel=0.005)  # Narayanan 2021 Table 2: 174.6B params
    # two DDN AI400X2 at 65 GB/s write: the read of 1,024 GPUs x 160/1,016 GB/s (NVIDIA DGX SuperPOD
    # "better" storage class) = 161 GB/s needs 2 x 90 GB/s appliances
    assert r.checkpoint_write_s == pytest.approx(r.checkpoint_bytes / 130e9)
    assert r.checkpoint_interval_s < r.young_interval_s  # Daly's correction shortens Young's interval
    assert 0.9 < r.goodput < 1.0
    assert r.training_days_p10 < r.training_days_p50 < r.training_days_p90
    assert r.training_days_expected > r.training_days_ideal
    assert r.training_days_ideal == pytest.approx(estimate(s).training_days)
    assert 25 < r.training_days_ideal < 40  # Narayanan 2021 Sec. 5.1: about 34 days (tests/test_training.py)
    assert r.assumptions == {}  # the default storage system is in the catalogue


def test_spare_plan_gpt3_by_hand():
    s = load_scenario(GPT3)
    plan = rel.spare_plan(s, resolve_hardware(s, catalog_for(s)))
    # node repairs per day: 1,024 GPUs x (gpu 196 + hbm 72 + nic 7 + host 43 + psu 3 = 321) / 884,736
    # GPU-days (Llama 3 Table 5 hardware causes) = 0.37153 per day
    assert plan.node_repairs_per_day == pytest.approx(1024 * 321 / 884_736)
    # nodes in repair: Poisson with mean 0.37153 / 24 h x 72 h repair = 1.1146;
    # P(X <= 3) = 0.9732 < 0.99 <= P(X <= 4) = 0.9943 -> 4 spares (failure_rates.yaml repair_hours 72)
    mean = 1024 * 321 / 884_736 / 24 * 72
    assert mean == pytest.approx(1.1146, abs=1e-4)
    assert (plan.recommended, plan.spare_nodes) == (4, 4)
    assert plan.full_size_availability == pytest.approx(
        math.exp(-mean) * (1 + mean + mean**2 / 2 + mean**3 / 6 + mean**4 / 24))
    assert plan.full_size_availability == pytest.approx(0.9943, abs=1e-4)
    # reliability.spare_nodes overrides the count, not the recommendation
    fixed = rel.spare_plan(s.replace(reliability__spare_nodes=2), resolve_hardware(s, catalog_for(s)))
    assert (fixed.recommended, fixed.spare_nodes) == (4, 2)
    # the assessment reports the same plan
    r = rel.assess(s, training_days_ideal=30.0)
    assert (r.spare_nodes, r.spare_nodes_recommended) == (4, 4)


def test_llama3_scale_scenario_mtbi():
    s = loads("hardware: {server: dgx-h100, nodes: 2048}\nmodel: llama3-70b\n")  # 16,384 H100 as in Llama 3
    r = rel.assess(s)
    assert r.mtbi_hours == pytest.approx(3.09, abs=0.01)  # 54 x 24 / 419


def test_injected_training_days_are_used():
    r = rel.assess(load_scenario(GPT3), training_days_ideal=34.0)  # Narayanan 2021 Sec. 5.1: ~34 days
    assert r.training_days_ideal == 34.0
    # expected = ideal x E[1/e] / goodput / P(full size) (see test_expected_days_is_the_expectation_of_the_band)
    assert r.training_days_expected == pytest.approx(
        34.0 * rel.efficiency_time_factor(0.75, 1.1) / r.goodput / r.full_size_availability)


def test_checkpoint_size_and_write_bandwidth_come_from_the_storage_design():
    s = load_scenario(GPT3)
    cat = catalog_for(s)
    # a storage design passed in (as a Design does): 2 appliances of 65 GB/s write = 130 GB/s
    store = size_storage(s.replace(reliability__storage_units=2), cat, nodes=128)
    r = rel.assess(s, cat, storage=store, training_days_ideal=30.0)
    assert r.checkpoint_bytes == store.checkpoint_bytes == pytest.approx(174.6e9 * 14, rel=0.005)
    assert (r.storage_system, r.storage_units, r.checkpoint_write_gb_per_s) == ("ddn-ai400x2", 2, 130.0)
    assert r.checkpoint_write_s == pytest.approx(store.checkpoint_bytes / 130e9)  # 2.44e12 B / 130 GB/s = 18.8 s


def test_global_rate_override_and_component_override():
    s = load_scenario(GPT3).replace(reliability__gpu_failures_per_1000_gpu_days=1.0)
    r = rel.assess(s)
    assert r.interruptions_per_day == pytest.approx(1.024)  # 1024 x 1.0 / 1000
    s2 = s.replace(reliability__component_rates={"software": 0.0})
    r2 = rel.assess(s2)
    assert r2.interruptions_per_day == pytest.approx(1.024 * (1 - 63 / 419))  # software 63 of 419 removed


def test_more_spares_raise_full_size_availability():
    s = load_scenario(GPT3)
    low = rel.assess(s.replace(reliability__spare_nodes=0), training_days_ideal=30.0)
    high = rel.assess(s.replace(reliability__spare_nodes=6), training_days_ideal=30.0)
    assert low.full_size_availability < high.full_size_availability
    assert low.training_days_expected > high.training_days_expected
    assert any(f.code == "rel-too-few-spares" for f in low.findings)


def test_head_node_findings():
    s = load_scenario(GPT3)
    one = rel.assess(s.replace(hardware__head_nodes=1))
    assert any(f.code == "rel-head-node-not-redundant" for f in one.findings)
    off = rel.assess(s.replace(reliability__redundant_head_node=False))
    assert any(f.code == "rel-single-head-node" for f in off.findings)
    assert off.head_node_availability < rel.assess(s).head_node_availability


def test_psu_redundancy_effect():
    r = rel.assess(load_scenario(GPT3))
    assert r.psu_redundancy == "3+3"  # DGX A100 User Guide: 6 x 3 kW, half redundant
    assert r.psu_node_outages_per_year < r.psu_node_outages_per_year_without_redundancy


def test_slow_checkpoint_gives_error_finding():
    s = load_scenario(GPT3).replace(reliability__checkpoint_write_gbps=0.05, reliability__restart_minutes=600)
    r = rel.assess(s)
    assert any(f.code == "rel-goodput-very-low" and f.severity == "error" for f in r.findings)


def test_deadline_finding():
    # 34 failure-free days (Narayanan 2021 Sec. 5.1) cannot make a 20-day deadline at P90
    r = rel.assess(load_scenario(GPT3).replace(training__deadline_days=20), training_days_ideal=34.0)
    assert any(f.code == "rel-deadline-at-risk" for f in r.findings)


def test_no_tokens():
    r = rel.assess(loads("hardware: {server: dgx-a100-640gb, nodes: 4}\nmodel: gpt3-175b\n"))
    assert r.training_days_ideal is None and r.training_days_p90 is None
    assert any(f.code == "rel-no-tokens" for f in r.findings)


def test_no_days_are_estimated_without_a_plan_that_fits():
    # GPT-3 175B with TP 8 x PP 1 x DP 128 and no ZeRO: weights, gradients and Adam states take
    # 16 B x 175e9 / 8 = 350 GB on every GPU (Rajbhandari et al. 2020, ZeRO Sec. 3), over 80 GB
    s = load_scenario(GPT3).replace(parallelism__pipeline=1, parallelism__data=128, parallelism__virtual_stages=1)
    d = Design(s)
    assert d.training.fits is False
    r = d.reliability
    assert (r.training_days_ideal, r.training_days_expected, r.training_days_p10, r.training_days_p90) == \
        (None, None, None, None)
    assert not any(f.code == "rel-no-tokens" for f in r.findings)  # the budget is set; the plan is what fails
    assert rel.scaling_table(s, base=r) == []  # no days-to-train band either
    # stand alone, the assessment asks the training engine, which refuses the days of this plan too
    assert rel.assess(s).training_days_ideal is None
    assert r.goodput == pytest.approx(Design(load_scenario(GPT3)).reliability.goodput)  # the rest stands


def test_scaling_table():
    s = load_scenario(GPT3)
    rows = rel.scaling_table(s, node_counts=[64, 128, 256], base=rel.assess(s, training_days_ideal=34.0))
    assert [r["gpus"] for r in rows] == [512, 1024, 2048]
    assert rows[0]["mtbi_hours"] == pytest.approx(2 * rows[1]["mtbi_hours"])  # rate proportional to GPUs
    assert rows[0]["ideal"] == pytest.approx(2 * rows[1]["ideal"])


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("call", "match"), [
    (lambda: rel.young_interval_s(-1, 100), "checkpoint_s must be a positive"),
    (lambda: rel.young_interval_s(60, 0), "mtbf_s must be a positive"),
    (lambda: rel.daly_interval_s(0, 100), "checkpoint_s must be a positive"),
    (lambda: rel.goodput(0, 60, 0, 100), "interval_s must be a positive"),
    (lambda: rel.goodput(10, -1, 0, 100), "checkpoint_s must be a non-negative"),
    (lambda: rel.goodput(10, 1, 0, -5), "mtbf_s must be positive"),
    (lambda: rel.expected_wall_time_s(10, 10, 1, 0, 0), "mtbf_s must be positive"),
    (lambda: rel.interruptions_per_day(0, 1), "gpus must be a positive"),
    (lambda: rel.interruptions_per_day(8, -1), "rate_per_1000_gpu_days must be a non-negative"),
    (lambda: rel.mtbi_hours(float("nan")), "rate_per_day must be a non-negative"),
    (lambda: rel.checkpoint_bytes(0), "params must be a positive finite number, got 0"),
    (lambda: rel.checkpoint_write_s(1e12, 0), "write_gb_per_s must be a positive"),
    (lambda: rel.spares_needed(1, 72, 1.0), "confidence must be between 0 and 1"),
    (lambda: rel.spares_needed(1, 0), "repair_hours must be a positive"),
    (lambda: rel.availability(0, 1), "mtbf_h must be a positive"),
    (lambda: rel.redundant_availability(1.5, 2), "single availability must be between 0 and 1"),
    (lambda: rel.redundant_group_failures_per_year(0, 1, 1000, 10), "N >= 1 and M >= 0"),
    (lambda: rel.days_to_train_band(30, 3600, 40, 600, 1e5, failure_range=(2, 1)), "0 < low <= high"),
    (lambda: rel.ideal_training_days_6nd(1e9, 1e9, 8, 0), "peak_tflops must be a positive"),
])
def test_pure_function_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_component():
    s = load_scenario(GPT3).replace(reliability__component_rates={"gpus": 0.1})
    with pytest.raises(UnknownIdError, match="reliability.component_rates.gpus: unknown failure component 'gpus'; did you mean 'gpu'"):
        rel.assess(s)


def test_negative_component_rate():
    with pytest.raises(ScenarioError, match="reliability.component_rates.gpu: must be at least 0"):
        load_scenario(GPT3).replace(reliability__component_rates={"gpu": -1.0})  # refused at load


@pytest.mark.parametrize(("key", "value", "match"), [
    ("reliability__failure_rate_range", [2.0, 1.0], r"reliability.failure_rate_range: must satisfy 0 < low <= high"),
    ("reliability__efficiency_range", [0.5, 0.7, 0.9], r"reliability.efficiency_range: must be two numbers"),
    ("reliability__efficiency_range", [0.0, 1.0], r"reliability.efficiency_range: must satisfy"),
])
def test_bad_ranges(key, value, match):
    with pytest.raises(ScenarioError, match=match):
        rel.assess(load_scenario(GPT3).replace(**{key: value}))


def test_bad_preset_at_load():
    with pytest.raises(ScenarioError, match="reliability.failure_preset: must be one of"):
        loads("reliability: {failure_preset: llama4}\n")


def test_bad_scenario_values_at_load():
    with pytest.raises(ScenarioError, match="reliability.spare_confidence: must be less than 1"):
        loads("reliability: {spare_confidence: 1.5}\n")
    with pytest.raises(ScenarioError, match="reliability.checkpoint_write_gbps: must be a positive number"):
        loads("reliability: {checkpoint_write_gbps: 0}\n")


def test_unknown_storage_system():
    s = load_scenario(GPT3).replace(reliability__storage_system="ddn-ai400x9")
    with pytest.raises(UnknownIdError, match="reliability.storage_system: unknown storage option 'ddn-ai400x9'"):
        rel.assess(s)


def test_injected_bad_training_days():
    with pytest.raises(ValueError, match="training_days_ideal must be positive"):
        rel.assess(load_scenario(GPT3), training_days_ideal=-3)


# --------------------------------------------------------------------------- CLI contract


REL_KEYS = {"interruptions_per_day", "mtbi_hours", "checkpoint_bytes", "checkpoint_write_s", "checkpoint_interval_s",
            "goodput", "training_days_ideal", "training_days_expected", "training_days_p10", "training_days_p90",
            "spare_nodes", "findings"}


def test_cli_json_contract(capsys):
    assert main(["reliability", str(GPT3), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert REL_KEYS <= set(out)
    assert out["mtbi_hours"] == pytest.approx(49.49, abs=0.01)  # 24 x 884,736 / (1,024 x 419)
    assert out["training_days_ideal"] == pytest.approx(estimate(load_scenario(GPT3)).training_days)
    assert (out["spare_nodes"], out["spare_nodes_recommended"]) == (4, 4)  # test_spare_plan_gpt3_by_hand
    assert out["assumptions"] == {}


def test_cli_text_and_bad_file(capsys, tmp_path):
    assert main(["reliability", str(GPT3)]) == 0
    assert "MTBI" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {preset: gpt3-175b}\nreliability: {component_rates: {gpux: 1}}\nhardware: {nodes: 2}\n")
    assert main(["reliability", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert "reliability.component_rates.gpux" in err and "Traceback" not in err
    # no model: no training job to assess
    bad.write_text("hardware: {server: dgx-a100-640gb, nodes: 2}\n")
    assert main(["reliability", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert "model: the scenario has no model, so there is no training job to assess" in err


def test_scaling_table_row_matches_assess_at_scenario_size():
    s = load_scenario(GPT3)
    r = rel.assess(s, training_days_ideal=34.0)
    (row,) = rel.scaling_table(s, node_counts=[128], base=r)
    assert row["goodput"] == pytest.approx(r.goodput)                      # same model at the same size
    assert row["expected"] == pytest.approx(r.training_days_expected)
    assert row["spare_nodes"] == r.spare_nodes
    with pytest.raises(ValueError, match="node counts must be positive integers"):
        rel.scaling_table(s, node_counts=[0], base=r)


def test_more_bad_input_branches():
    with pytest.raises(ValueError, match="kept must be a positive"):
        rel.storage_units_for_checkpoint(1e12, 60, 65, 368.6, kept=0)
    with pytest.raises(ValueError, match="mean must be a non-negative"):
        rel.poisson_cdf(2, -1)
    with pytest.raises(ValueError, match="copies must be a positive"):
        rel.redundant_availability(0.9, 0)
    with pytest.raises(UnknownIdError, match="unknown failure preset 'llama5'"):
        rel.preset_rates("llama5")


def test_precision_without_peak():
    # T4 has no BF16 tensor-core figure in the catalogue (Turing: FP16/INT8 only): the training
    # engine refuses the precision and names the ones the catalogue has
    s = loads("hardware: {accelerator: t4, nodes: 1}\nmodel: llama2-7b\ntraining: {tokens: 1.0e+9, precision: bf16}\n")
    with pytest.raises(ScenarioError, match="training.precision: t4 has no dense bf16 peak in the catalogue; "
                                            "choose one of: fp16, fp32"):
        _ = Design(s).reliability  # the training stage refuses it


def test_fp8_on_a100_is_refused():
    s = load_scenario(GPT3).replace(training__precision="fp8")  # A100: no FP8 tensor cores (A100 datasheet)
    with pytest.raises(ScenarioError, match="training.precision: a100-sxm4-80gb has no dense fp8 peak in the "
                                            "catalogue; choose one of: bf16, fp16, tf32, fp32"):
        _ = Design(s).reliability  # the training stage refuses it


def test_storage_without_write_bandwidth():
    row = {"kind": "nfs-appliance", "write_gb_per_s": 0.0, "capacity_tb": 100.0}
    fake = types.SimpleNamespace(get=lambda table, id_, path="": dict(row))
    s = load_scenario(GPT3).replace(reliability__storage_system="slow-nas")
    with pytest.raises(ScenarioError, match="reliability.storage_system: slow-nas has no write bandwidth"):
        size_storage(s, fake, nodes=128, checkpoint_bytes=1e12)


def test_default_storage_missing_from_catalogue_is_a_marked_assumption():
    def get(table, id_, path=""):
        raise UnknownIdError("storage option", id_, ["other"], path)

    s = load_scenario(GPT3)
    d = size_storage(s, types.SimpleNamespace(get=get), nodes=128, checkpoint_bytes=2.45e12)
    # datasheet figures of the default appliance: 2.45e12 / (60 s x 65e9) = 0.63 -> 1 unit at 65 GB/s;
    # 3 kept x 2.45 TB = 7.35 TB < 368.6 TB -> 1 by capacity
    assert (d.system, d.appliances, d.checkpoint_write_gb_per_s) == ("ddn-ai400x2", 1, 65.0)
    assert (d.by_bandwidth, d.by_capacity) == (1, 1)
    assert "not in the catalogue" in d.sources["storage"]
    # the reliability assessment names the assumption its checkpoint write time rests on
    r = rel.assess(s, storage=d, training_days_ideal=30.0)
    assert r.assumptions["storage"] == d.sources["storage"]
    assert r.checkpoint_write_s == pytest.approx(2.45e12 / 65e9)  # 37.7 s


# --------------------------------------------------------------------------- expected = mean of the band


def test_efficiency_time_factor_by_hand():
    # e ~ U(0.75, 1.1): E[1/e] = ln(1.1 / 0.75) / (1.1 - 0.75) = 0.382992 / 0.35 = 1.094263
    assert rel.efficiency_time_factor(0.75, 1.1) == pytest.approx(1.094263, abs=1e-6)
    assert rel.efficiency_time_factor(0.8, 0.8) == pytest.approx(1.25)  # a point: 1 / 0.8
    with pytest.raises(ValueError, match="0 < low <= high"):
        rel.efficiency_time_factor(1.1, 0.75)


def test_band_mean_matches_the_efficiency_factor_without_failures():
    # no failures (M = 1e15 s), failure multiplier fixed: days = 30 x (3636 / 3600) / e, whose mean
    # is 30 x 1.01 x 1.094263 = 33.157 days (checkpoint overhead tau / (tau + delta) = 3600 / 3636)
    b = rel.days_to_train_band(30, 3600, 36, 0, 1e15, failure_range=(1, 1))
    assert b["mean"] == pytest.approx(30 * 3636 / 3600 * 1.094263, rel=0.005)
    assert b["p10"] >= 30 * 3636 / 3600 / 1.1 * (1 - 1e-9)  # never faster than the fastest throughput


def test_expected_days_is_the_expectation_of_the_band():
    r = rel.assess(load_scenario(GPT3), training_days_ideal=30.0)
    # expected = ideal x E[1/e] / goodput / P(full size) = 30 x 1.094263 / g / P
    ratio = r.training_days_expected / (30.0 * 1.094263 / r.goodput)  # = 1 / P(full size)
    assert 1.0 <= ratio <= 1 / 0.99  # P(full size) >= 0.99 with the recommended spares (spare_confidence)
    # before the fix, expected (30 / g / P ~ 30.8) sat below P50 and near P10; now it is inside the band
    assert r.training_days_p10 < r.training_days_expected < r.training_days_p90
    assert abs(r.training_days_expected - r.training_days_p50) / r.training_days_p50 < 0.05
    (row,) = rel.scaling_table(load_scenario(GPT3), node_counts=[128], base=r)
    assert row["expected"] == pytest.approx(r.training_days_expected)


# ------------------------------------------------------------------ loops that end, numbers that do not overflow

def test_poisson_quantile_matches_the_poisson_table():
    # Poisson table (e.g. CRC Standard Probability and Statistics Tables): lambda 2: P(X<=5) = 0.9834,
    # P(X<=6) = 0.9955; lambda 10: P(X<=17) = 0.9857, P(X<=18) = 0.9928
    assert rel.poisson_cdf(5, 2.0) == pytest.approx(0.9834, abs=5e-5)
    assert rel.poisson_cdf(18, 10.0) == pytest.approx(0.9928, abs=5e-5)
    assert rel.spares_needed(2.0 * 24 / 10, 10, 0.99) == 6  # mean 2.0 = 4.8/day / 24 h x 10 h
    assert rel.poisson_quantile(0.99, 10.0) == 18


def test_poisson_cdf_does_not_underflow_at_large_means():
    # the old recursion started at exp(-1000) = 0 and returned 0 for every k (and spares_needed never ended);
    # P(X <= lambda) ~ 1/2 + 2 / (3 sqrt(2 pi lambda)) = 0.5084 at lambda 1000 (Ramanujan's median term)
    assert rel.poisson_cdf(1000, 1000.0) == pytest.approx(0.5084, abs=5e-4)
    assert rel.poisson_cdf(10, 1000.0) == 0.0 and rel.poisson_cdf(2000, 1000.0) == pytest.approx(1.0, abs=1e-9)


def test_spares_quantile_at_large_means_by_hand():
    # Cornish-Fisher: k = mean + z sqrt(mean) + (z^2 - 1)/6 - 1/2, z(0.99) = 2.3263:
    # mean 800: 800 + 65.80 + 0.735 - 0.5 = 866.03 -> 867
    assert rel.poisson_quantile(0.99, 800.0) == 867
    # 16,384 DGX H100 (131,072 GPUs) with 720 h repairs: 47.56 repairs/day x 720 / 24 = 1426.7 in repair;
    # 1426.7 + 2.3263 x 37.77 + 0.235 = 1514.8 -> 1515 (this case looped forever before)
    d = Design(from_dict({"hardware": {"server": "dgx-h100", "nodes": 16384}, "reliability": {"repair_hours": 720}}))
    t0 = time.perf_counter()
    assert d.spares.node_repairs_per_day * 720 / 24 == pytest.approx(1426.67, abs=0.01)
    assert d.spares.recommended == 1515
    assert time.perf_counter() - t0 < 2
    # above 1e5 the expansion alone: mean 1e6 -> 1e6 + 2326.3 + 0.735 - 0.5 = 1,002,326.6 -> 1,002,327
    assert rel.poisson_quantile(0.99, 1.0e6) == 1_002_327


def test_goodput_in_logs_when_restarts_last_hundreds_of_mtbis():
    # tau = M, delta = 0: G = 1 / (e - 1) x exp(-R/M) (Daly eq. 13); exp(705) overflowed before
    assert rel.goodput(3600.0, 0.0, 705 * 3600.0, 3600.0) == pytest.approx(math.exp(-705) / (math.e - 1), rel=1e-9)
    assert rel.goodput(3600.0, 0.0, 800 * 3600.0, 3600.0) == 0.0  # below the smallest float: zero, no error
    g = rel.goodput_array([3600.0, 7200.0], 0.0, 705 * 3600.0, 3600.0)
    assert g[0] == pytest.approx(math.exp(-705) / (math.e - 1), rel=1e-9)


def test_a_run_that_never_ends_has_no_days_and_an_error_finding():
    # 800,000 H100 (100,000 DGX) at 0.47 interruptions per 1000 GPU-days: one every 0.063 h = 228 s, against
    # week-long restarts: R/M = 604,800 / 228 = 2,650, so exp(-R/M) is below the smallest float and the
    # goodput is 0; before, goodput raised OverflowError ("math range error")
    s = from_dict({"model": "llama3-8b", "hardware": {"server": "dgx-h100", "nodes": 100_000},
                   "reliability": {"restart_minutes": 10_080}})
    r = rel.assess(s, training_days_ideal=10.0)
    assert r.mtbi_hours == pytest.approx(0.0633, abs=1e-4) and r.goodput == 0.0
    assert r.training_days_expected is None and r.training_days_p90 is None
    assert "rel-goodput-very-low" in [f.code for f in r.findings]
    d = r.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d  # no NaN or infinity in the JSON


def test_a_very_slow_checkpoint_is_a_finding_not_an_internal_error():
    # 0.001 GB/s writes the 2.45 TB GPT-3 checkpoint in 2.45e6 s (28 days) against an interruption every
    # ~3 h; before, the days band raised "lam value too large"
    r = Design(load_scenario(GPT3).replace(reliability__checkpoint_write_gbps=0.001)).reliability
    assert r.checkpoint_write_s == pytest.approx(2.45e12 / 1e6, rel=0.01)  # 175e9 params x 14 B / 1 MB/s
    assert r.goodput < 1e-6 and "rel-goodput-very-low" in [f.code for f in r.findings]
    assert json.dumps(r.to_dict(), allow_nan=False)


def test_days_band_draws_a_normal_count_where_numpy_refuses_the_mean():
    band = rel.days_to_train_band(1.0e9, 3600.0, 60.0, 600.0, 3600.0, samples=200)  # mean count ~1e12+
    assert all(math.isfinite(v) and v > 1.0e9 for v in band.values())


def test_stand_alone_assessment_asks_the_training_engine_for_the_days():
    # outside a Design the lower layer's one public function gives the failure-free days
    s = load_scenario(GPT3)
    r = rel.assess(s)
    assert r.training_days_ideal == pytest.approx(estimate(s).training_days)
    assert 25 < r.training_days_ideal < 40  # Narayanan 2021 Sec. 5.1: about 34 days
    rows = rel.scaling_table(s, node_counts=[64, 128])
    assert [row["nodes"] for row in rows] == [64, 128]
    # perfect scaling from the scenario's own 128 nodes: half the nodes, twice the days
    assert rows[0]["ideal"] == pytest.approx(2 * rows[1]["ideal"])


def test_stand_alone_assessment_has_no_days_for_a_plan_that_does_not_fit():
    # GPT-3 175B with TP 8 x PP 1 on 80 GB A100s: the 175B weights, gradients and Adam states
    # (16 B x 175e9 / 8 = 350 GB a GPU) cannot fit, so there are no days and no band
    s = load_scenario(GPT3).replace(parallelism__pipeline=1, parallelism__data=128, parallelism__virtual_stages=1)
    assert not estimate(s).fits
    r = rel.assess(s)
    assert r.training_days_ideal is None and r.training_days_expected is None
    assert rel.scaling_table(s) == []
