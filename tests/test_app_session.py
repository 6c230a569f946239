"""An app session reads one Design per scenario state: visiting every tab computes each stage
once, and a change on a tab recomputes exactly the stages downstream of it, so no tab shows
numbers of an older scenario (no browser: the panels are driven through their widgets)."""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path

import pytest

from gpucluster_lib.design import DESIGN_STAGES
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.ui import (
    tab_hardware,
    tab_inference,
    tab_operations,
    tab_power,
    tab_reliability,
    tab_topology,
    tab_training,
)
from gpucluster_lib.ui.common import AppState

design_mod = importlib.import_module("gpucluster_lib.design")
GPT3 = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"
ALL = set(DESIGN_STAGES) | {"plans"}


@pytest.fixture()
def session():
    state = AppState.from_path(GPT3)
    start = Counter(design_mod.STAGE_CALLS)
    panels = {
        "hardware": tab_hardware.HardwarePanel(state),
        "power": tab_power.PowerPanel(state),
        "training": tab_training.TrainingPanel(state),
        "topology": tab_topology.TopologyPanel(state),
        "inference": tab_inference.InferencePanel(state),
        "reliability": tab_reliability.ReliabilityPanel(state),
        "operations": tab_operations.OperationsPanel(state),
    }
    return state, panels, start


def _delta(start: Counter) -> Counter:
    return Counter(design_mod.STAGE_CALLS) - start


def test_visiting_every_tab_computes_each_stage_once(session):
    state, panels, start = session
    assert _delta(start) == Counter({name: 1 for name in ALL})
    assert all(p.msg.value == "" for p in panels.values() if hasattr(p, "msg"))


def test_one_change_on_each_tab_recomputes_only_what_follows_from_it(session):
    state, panels, start = session
    seen = Counter({name: 1 for name in ALL})
    steps = [
        # (what the user changes, the stages it must recompute)
        (lambda: setattr(panels["training"].pp, "value", 16), {"training", "reliability", "cost", "operations"}),
        (lambda: setattr(panels["reliability"].years, "value", 5), {"serving", "cost", "operations"}),
        (lambda: setattr(panels["inference"].rps, "value", 20.0), {"serving", "cost", "operations"}),
        (lambda: setattr(panels["operations"].scheduler, "value", "both"), {"operations"}),
        (lambda: setattr(panels["topology"].oversub, "value", 2.0), ALL - {"hardware", "storage", "spares", "calibration"}),
        # a rack limit lays the racks out again; the plan reads only the fabric's per-GPU bandwidth,
        # which the racks leave as it is, so neither the plan (search) nor its reliability is redone
        (lambda: setattr(panels["power"].rack_kw, "value", 45.0), {"network", "facility", "serving", "cost",
                                                                   "operations"}),
        # the picker filters the catalogue: the design stays as it is
        (lambda: setattr(panels["hardware"].min_memory, "value", 80), set()),
    ]
    for change, expected in steps:
        design_before = state.design
        change()
        computed = set(state.design.computed) if state.design is not design_before else set()
        assert computed == expected, f"recomputed {sorted(computed)}, expected {sorted(expected)}"
        seen.update(expected)
        for p in panels.values():
            assert getattr(p, "msg", None) is None or p.msg.value == "", p.msg.value
    assert _delta(start) == seen  # every stage computed exactly once per state it depends on


def test_reliability_tab_follows_a_training_tab_change(session):
    # the stale-number case: PP 8 -> 16 on the Training tab must move the Reliability tab's ideal days
    state, panels, _ = session
    before = state.design.reliability.training_days_ideal
    panels["training"].pp.value = 16
    after = state.design.training.training_days
    assert after != pytest.approx(before)
    assert state.design.reliability.training_days_ideal == after
    assert f"ideal {after:.1f}," in panels["reliability"].summary.value


def test_a_notebook_design_is_the_panels_design():
    from gpucluster_lib.design import Design

    d = Design.from_yaml(GPT3)
    state = AppState.from_design(d)
    panel = tab_reliability.ReliabilityPanel(state)
    assert state.design is d and d.is_computed("cost")
    assert f"{d.cost.capex['total']:,.0f}" in panel.summary.value


def test_days_band_at_the_scenario_size_is_the_headline_band():
    # the Reliability tab's band chart and its headline figures come from the same Monte Carlo
    from gpucluster_lib.design import Design
    from gpucluster_lib.reliability import core as rel

    d = Design.from_yaml(GPT3)
    r = d.reliability
    row = next(x for x in rel.scaling_table(d.scenario, d.catalog, base=r) if x["nodes"] == r.nodes)
    assert (row["p10"], row["p50"], row["p90"]) == pytest.approx(
        (r.training_days_p10, r.training_days_p50, r.training_days_p90), rel=1e-9)


def test_a_hidden_tab_catches_up_when_it_is_shown(session):
    # the app redraws only the tab on screen; one opened later shows the current design, not its last one
    state, panels, _ = session
    state.shown = tab_training.TITLE
    before = panels["reliability"].summary.value
    panels["training"].pp.value = 16
    assert panels["reliability"].summary.value == before  # hidden: not redrawn on the change
    state.shown = tab_reliability.TITLE
    days = state.design.training.training_days  # PP 16: the ideal days moved (the stale-number case above)
    assert panels["reliability"].summary.value != before
    assert f"ideal {days:.1f}," in panels["reliability"].summary.value


def test_a_plan_that_does_not_fit_prints_no_days(session):
    # micro-batch 12 without recomputation: 175B at TP 8 x PP 8 needs far more than 80 GiB per GPU
    # (Korthikanti 2022 eq. 2: activations grow with the micro-batch), so there is no time to train (12 keeps
    # 1,536 / (16 x 12) = 8 micro-batches a step, a multiple of the 8 stages, as the interleaved schedule asks)
    state, panels, _ = session
    panels["training"].recompute.value = "none"
    panels["training"].mb.value = 12
    assert state.design.training.fits is False
    assert "does not fit" in panels["training"].summary.value
    assert " days" not in panels["training"].summary.value
    assert state.design.summary()["training_days"]["value"] is None
    assert "the training plan does not fit in memory" in panels["reliability"].summary.value


def test_operations_retention_keeps_the_value_typed_and_refuses_one_out_of_range():
    from gpucluster_lib.ui import tab_operations
    state = AppState.from_path(GPT3)
    panel = tab_operations.OperationsPanel(state)
    panel.retention.value = 7.5  # fractions are kept (the slider used to truncate to whole days)
    assert state.scenario.operations.retention_days == 7.5
    panel.retention.value = 40_000.0  # over the field's bound of 36,500 days (100 years)
    assert state.scenario.operations.retention_days == 7.5  # refused: the design keeps the last valid value
    assert "36" in panel.msg.value and "retention" in panel.msg.value.lower()


def test_every_tab_reads_the_same_accelerator_of_the_state():
    """The hardware, training and serving tabs read the accelerator from AppState.accelerator_id:
    a server's GPU when the scenario names only the server, the scenario's own id when it does
    not resolve (the tab still shows what was typed, with the hardware stage's message)."""
    from gpucluster_lib.scenario import from_dict

    # NVIDIA DGX H100 user guide: eight H100 SXM5 80GB GPUs per system
    assert AppState.from_scenario(from_dict({"hardware": {"server": "dgx-h100", "nodes": 2}})).accelerator_id() \
        == "h100-sxm5-80gb"
    unknown = AppState.from_scenario(from_dict({"hardware": {"accelerator": "nope", "nodes": 2}}))
    with pytest.raises(GpuClusterError, match="unknown accelerator 'nope'"):
        _ = unknown.design.hardware
    assert unknown.accelerator_id() == "nope"
