"""Fuzzing in process, seeded: the scenario schema's valid, near-miss and hostile values through
every CLI subcommand and through the app's state object.

Properties: no exception other than GpuClusterError (the CLI exits 0 or 2 with one line), no
NaN, infinity or negative count in any JSON, and the same input gives the same JSON. The CI
budget is small (derandomized, a few dozen examples); ``python benchmarks/fuzz_scenarios.py``
runs the long version.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.scenario import from_dict
from tests.strategies import BASES, LEAVES, check_design_dicts, edits, exercise, scenarios


def fuzz(examples: int) -> settings:
    """Seeded (derandomize), no example database, no deadline: the same examples on every run."""
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_the_strategies_cover_the_schema():
    paths = {".".join(lf.path) for lf in LEAVES}
    assert len(paths) > 150  # every key of every section, nested ones included
    assert {"hardware.nodes", "model.ffn_hidden_size", "network.topology", "reliability.repair_hours",
            "hardware.parts.psus.count", "inference.tokens_per_s", "costs.prices"} <= paths


@fuzz(14)
@given(data=scenarios())
def test_every_command_refuses_or_answers(data):
    with tempfile.TemporaryDirectory() as tmp:
        exercise(data, Path(tmp))


@fuzz(30)
@given(changes=edits())
def test_app_state_refuses_or_answers(changes):
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_scenario(from_dict(BASES[0]))
    try:
        state.update(**changes)
    except GpuClusterError:
        assert state.scenario.name == "fuzz dense"  # a refused edit leaves the state as it was
        return
    d = state.design
    check_design_dicts(d)
    again = AppState.from_scenario(state.scenario).design  # determinism: a fresh state, the same numbers
    for stage in ("facility", "cost"):
        try:
            assert getattr(again, stage).to_dict() == getattr(d, stage).to_dict()
        except GpuClusterError:
            pass
