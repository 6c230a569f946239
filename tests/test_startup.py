"""Startup: ``import gpucluster_lib`` stays light, and catalogue look-ups by id use the index."""

from __future__ import annotations

import csv
import importlib.util
import subprocess
import sys

import pytest

import gpucluster_lib
from gpucluster_lib.catalog import SCHEMAS, TABLES, catalog_from_bytes, load_catalog
from gpucluster_lib.errors import UnknownIdError
from gpucluster_lib.resources import PACKAGE_DATA

HEAVY = ("pandas", "altair", "ipywidgets", "numpy")


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_loads_no_dataframe_chart_or_widget_library():
    loaded = _fresh(f"import sys, gpucluster_lib; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    assert loaded == ""


def test_scenario_and_catalogue_lookups_load_no_dataframe_library():
    code = (
        "import sys, gpucluster_lib as g\n"
        "from gpucluster_lib.resources import examples_dir\n"
        "g.load_scenario(examples_dir() / 'gpt3-175b-1024-a100.yaml')\n"
        "c = g.load_catalog()\n"
        "c.accelerator('h100-sxm5-80gb'); c.server(c.ids('servers')[0]); c.records('switches')\n"
        "print(' '.join(m for m in ('pandas', 'altair', 'ipywidgets') if m in sys.modules))"
    )
    assert _fresh(code) == ""


def test_public_names_resolve_lazily():
    assert set(gpucluster_lib.__all__) == set(gpucluster_lib._EXPORTS)
    assert set(gpucluster_lib.__all__) <= set(dir(gpucluster_lib))
    assert gpucluster_lib.__version__
    for name in gpucluster_lib.__all__:
        if gpucluster_lib._EXPORTS[name] == "gpucluster_lib.design" and importlib.util.find_spec(
                "gpucluster_lib.design") is None:
            continue  # the design pipeline module is not there yet
        assert getattr(gpucluster_lib, name) is getattr(importlib.import_module(gpucluster_lib._EXPORTS[name]), name)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        gpucluster_lib.nope  # noqa: B018


def test_design_stays_the_function_whichever_import_comes_first():
    for code in ("import gpucluster_lib.design; import gpucluster_lib as g",
                 "import gpucluster_lib as g; g.design; import gpucluster_lib.design",
                 "from gpucluster_lib.design import Design; import gpucluster_lib as g"):
        out = _fresh(code + "; import types; print(isinstance(g.design, types.ModuleType), callable(g.design))")
        assert out == "False True", code


def _csv_row(table: str, id_: str) -> dict[str, str]:
    with open(PACKAGE_DATA / f"{table}.csv", encoding="utf-8", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["id"] == id_)


def test_lookup_by_id_matches_the_csv_row():
    cat = load_catalog()
    row = cat.accelerator("h100-sxm5-80gb")
    # gpucluster_lib/data/accelerators.csv, line 11 (NVIDIA H100 product page table, dense values):
    # h100-sxm5-80gb,NVIDIA H100 SXM5 80GB,NVIDIA,Hopper (GH100),SXM,,passive,80,HBM3,3350,34,67,494.7,
    # 989.4,989.4,1978.9,1978.9,700,NVLink 4.0 (18 links),900,5,16,2022,27500,...
    assert row["name"] == "NVIDIA H100 SXM5 80GB"
    assert row["bf16_tflops"] == 989.4 and isinstance(row["bf16_tflops"], float)
    assert row["tdp_w"] == 700
    assert row["launch_year"] == 2022 and type(row["launch_year"]) is int
    assert row["slot_width_slots"] is None  # empty cell: SXM has no slot width
    assert list(row) == [c.name for c in SCHEMAS["accelerators"]]
    # Every cell agrees with the CSV read directly (numbers parsed, empty cells None).
    raw = _csv_row("accelerators", "h100-sxm5-80gb")
    for col in SCHEMAS["accelerators"]:
        cell = raw[col.name].strip()
        want = None if cell == "" else float(cell) if col.kind == "float" else int(cell) if col.kind == "int" else cell
        assert row[col.name] == want, col.name


@pytest.mark.parametrize("table", TABLES)
def test_index_rows_equal_the_dataframe_rows(table):
    import pandas as pd

    cat = load_catalog()
    df = cat.tables[table]
    assert list(df["id"]) == cat.ids(table)
    for i, id_ in enumerate(cat.ids(table)):
        want = {k: None if pd.isna(v) else v.item() if hasattr(v, "item") else v for k, v in df.iloc[i].items()}
        assert cat.get(table, id_) == want
        assert cat.has(table, id_)
    assert cat.records(table) == [cat.get(table, i) for i in cat.ids(table)]


def test_returned_rows_are_copies():
    cat = load_catalog()
    row = cat.accelerator("h100-sxm5-80gb")
    row["tdp_w"] = 1.0
    cat.records("accelerators")[0]["id"] = "changed"
    assert cat.accelerator("h100-sxm5-80gb")["tdp_w"] == 700
    assert cat.records("accelerators")[0]["id"] != "changed"


def test_unknown_id_still_lists_closest():
    cat = load_catalog()
    with pytest.raises(UnknownIdError, match=r"^hardware.server: unknown server 'dgx-h10'; did you mean 'dgx-h100'"):
        cat.server("dgx-h10", path="hardware.server")
    assert not cat.has("servers", "dgx-h10")


def test_merged_user_rows_are_indexed():
    cols = [c.name for c in SCHEMAS["switches"]]
    vals = dict(id="qm9700", name="SW1", vendor="ACME", protocol="Ethernet", ports="32", port_speed_gbps="400",
                rack_units="1", max_power_w="500", source="ACME datasheet", source_date="2024-01")
    content = (",".join(cols) + "\n" + ",".join(vals.get(c, "") for c in cols) + "\n").encode()
    base = load_catalog()
    cat = catalog_from_bytes("switches", content, "my_switches.csv", base=base, override=True)
    assert cat.get("switches", "qm9700")["vendor"] == "ACME"
    assert cat.ids("switches")[-1] == "qm9700" and len(cat.ids("switches")) == len(base.ids("switches"))
    assert base.get("switches", "qm9700")["vendor"] == "NVIDIA"
    assert cat.tables["switches"].set_index("id").loc["qm9700", "vendor"] == "ACME"
