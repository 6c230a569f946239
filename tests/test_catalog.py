"""Catalogue loading and validation: every rule refuses bad data naming file, row, column."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from gpucluster_lib.catalog import (
    SCHEMAS,
    TABLES,
    catalog_from_bytes,
    load_catalog,
    read_table,
)
from gpucluster_lib.errors import CatalogError, UnknownIdError

REQUIRED_ACCELERATORS = [
    "k80", "p100-sxm2-16gb", "p100-pcie-16gb", "v100-sxm2-32gb", "v100-pcie-32gb", "a100-sxm4-40gb",
    "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h100-nvl-94gb",
    "h200-sxm-141gb", "b200-sxm-180gb", "l40s", "l4", "t4", "a10", "mi250x", "mi300x", "mi325x", "tpu-v4",
    "tpu-v5e", "tpu-v5p", "gaudi2", "gaudi3",
]


def header(table: str) -> str:
    return ",".join(c.name for c in SCHEMAS[table])


def one_row(table: str, **values: str) -> str:
    """A CSV with the header and one valid accelerator/switch row, with ``values`` replaced."""
    base = {
        "accelerators": dict(id="x1", name="X1", vendor="ACME", architecture="Y", form_factor="SXM", cooling="passive",
                             memory_gib="80", memory_type="HBM3", memory_bandwidth_gb_per_s="3000",
                             bf16_tflops="500", fp8_tflops="1000", tdp_w="700", launch_year="2024",
                             source="ACME datasheet", source_date="2024-01"),
        "switches": dict(id="sw1", name="SW1", vendor="ACME", protocol="Ethernet", ports="32", port_speed_gbps="400",
                         rack_units="1", max_power_w="500", source="ACME datasheet", source_date="2024-01"),
    }[table]
    base.update(values)
    cols = [c.name for c in SCHEMAS[table]]
    cells = []
    for c in cols:
        v = base.get(c, "")
        cells.append(f'"{v}"' if "," in v else v)
    return header(table) + "\n" + ",".join(cells) + "\n"


def read(table: str, text: str):
    return read_table(table, io.StringIO(text), label=f"user_{table}.csv")


def test_shipped_catalogue_loads_and_has_required_ids():
    cat = load_catalog()
    assert set(REQUIRED_ACCELERATORS) <= set(cat.ids("accelerators"))
    for t in TABLES:
        assert len(cat.tables[t]) > 0, t
        assert cat.tables[t]["source"].notna().all(), f"{t}: every row needs a source"


def test_valid_row_parses_numbers_as_numbers():
    df = read("accelerators", one_row("accelerators"))
    assert df.loc[0, "bf16_tflops"] == 500.0
    assert df.loc[0, "launch_year"] == 2024


@pytest.mark.parametrize(
    ("values", "match"),
    [
        (dict(source=""), r"user_accelerators.csv, row 2, column 'source': required value is missing"),
        (dict(tdp_w="-5"), r"row 2, column 'tdp_w': negative value -5"),
        (dict(memory_gib="80 GB"), r"column 'memory_gib': expected a number, got '80 GB': put the unit in the column name"),
        (dict(form_factor="Socket"), r"column 'form_factor': 'Socket' is not one of SXM, PCIe, OAM"),
        (dict(id="H100 SXM"), r"column 'id': id 'H100 SXM' must be lowercase"),
        (dict(source_date="March 2024"), r"column 'source_date': date 'March 2024' must be YYYY"),
        # H100 SXM sparse headline: 1,979 TFLOP/s BF16 at 700 W = 2.83 TFLOP/s per W (dense is 989.4)
        (dict(bf16_tflops="1979", fp8_tflops="3958"), r"column 'bf16_tflops': dense BF16 1979 .* 2:4-sparsity headline"),
        (dict(bf16_tflops="600", fp8_tflops="500"), r"column 'bf16_tflops': bf16_tflops 600 exceeds fp8_tflops 500"),
        (dict(form_factor="PCIe"), r"column 'slot_width_slots': PCIe cards need a slot width"),
        (dict(price_usd_estimate="1000"), r"column 'price_source': a price needs its source"),
    ],
)
def test_bad_accelerator_rows_are_refused(values, match):
    with pytest.raises(CatalogError, match=match):
        read("accelerators", one_row("accelerators", **values))


def test_unknown_unit_in_column_name_is_refused():
    text = one_row("switches").replace("max_power_w", "max_power_kw")
    with pytest.raises(CatalogError, match=r"row 1, column 'max_power_kw': unknown unit in column name: use 'max_power_w'"):
        read("switches", text)


def test_unknown_column_is_refused():
    text = one_row("switches").replace("managed", "colour")
    with pytest.raises(CatalogError, match=r"column 'colour': unknown column"):
        read("switches", text)


def test_missing_required_column_is_refused():
    text = one_row("switches").replace("port_speed_gbps,", "", 1)
    with pytest.raises(CatalogError):
        read("switches", text)


def test_duplicate_id_is_refused():
    text = one_row("switches")
    text += text.splitlines()[1] + "\n"
    with pytest.raises(CatalogError, match=r"row 3, column 'id': duplicate id 'sw1' \(first on line 2\)"):
        read("switches", text)


def test_user_csv_clashing_with_shipped_id_is_refused_unless_override():
    content = one_row("switches", id="qm9700").encode()
    with pytest.raises(CatalogError, match=r"duplicate id 'qm9700': already in the shipped catalogue"):
        catalog_from_bytes("switches", content, "my_switches.csv")
    cat = catalog_from_bytes("switches", content, "my_switches.csv", override=True)
    assert cat.get("switches", "qm9700")["vendor"] == "ACME"


def test_user_csv_merges_and_validates_like_shipped(tmp_path):
    path = tmp_path / "my_switches.csv"
    path.write_text(one_row("switches", id="acme-800"))
    cat = load_catalog([path])
    assert cat.get("switches", "acme-800")["ports"] == 32
    assert "qm9700" in cat.ids("switches")


def test_user_server_referring_to_unknown_gpu_is_refused(tmp_path):
    cols = [c.name for c in SCHEMAS["servers"]]
    row = dict(id="my-box", name="Box", vendor="ACME", kind="system", gpu_id="h100-sxm6-80gb", gpu_count="8",
               gpu_baseboard="sxm", cpu_count="2", cooling="air", source="ACME", source_date="2024")
    path = tmp_path / "my_servers.csv"
    path.write_text(",".join(cols) + "\n" + ",".join(row.get(c, "") for c in cols) + "\n")
    with pytest.raises(CatalogError, match=r"my_servers.csv.*column 'gpu_id': refers to accelerator 'h100-sxm6-80gb'; did you mean 'h100-sxm5-80gb'"):
        load_catalog([path])


def test_user_csv_with_unrecognisable_name_is_refused(tmp_path):
    path = tmp_path / "parts.csv"
    path.write_text(one_row("switches"))
    with pytest.raises(CatalogError, match="file name must end with one of accelerators"):
        load_catalog([path])


def test_unknown_id_lists_closest():
    with pytest.raises(UnknownIdError, match=r"unknown accelerator 'h100-sxm-80gb'; did you mean 'h100-sxm5-80gb'"):
        load_catalog().accelerator("h100-sxm-80gb")


def test_cli_catalog_json_lists_every_row_with_numbers_as_numbers():
    out = subprocess.run([sys.executable, "-m", "gpucluster_lib", "catalog", "accelerators", "--json"],
                         capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)
    by_id = {r["id"]: r for r in rows}
    assert set(REQUIRED_ACCELERATORS) <= set(by_id)
    # NVIDIA A100 datasheet (2020): BF16 tensor 312 TFLOPS dense (624 with sparsity), 400 W SXM4
    assert by_id["a100-sxm4-80gb"]["bf16_tflops"] == 312
    assert by_id["a100-sxm4-80gb"]["tdp_w"] == 400
    assert by_id["a100-sxm4-80gb"]["fp8_tflops"] is None  # Ampere has no FP8
    assert isinstance(by_id["h100-sxm5-80gb"]["memory_bandwidth_gb_per_s"], (int, float))


@pytest.mark.parametrize("table", ["servers", "cpus", "nics", "switches", "storage"])
def test_cli_catalog_json_other_tables(table):
    out = subprocess.run([sys.executable, "-m", "gpucluster_lib", "catalog", table, "--json"],
                         capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)
    assert rows and all("id" in r and r["source"] for r in rows)


def test_cli_help_lists_subcommands():
    out = subprocess.run([sys.executable, "-m", "gpucluster_lib", "--help"], capture_output=True, text=True, check=True)
    for cmd in ("catalog", "report"):
        assert cmd in out.stdout


def test_cli_unknown_table_exits_nonzero_without_traceback():
    out = subprocess.run([sys.executable, "-m", "gpucluster_lib", "catalog", "gpus", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "invalid choice: 'gpus'" in out.stderr
    assert "Traceback" not in out.stderr
