"""The hardware catalogue: sourced CSV tables, validated on load.

Each table in ``data/`` (``accelerators.csv``, ``servers.csv``, ``cpus.csv``,
``nics.csv``, ``switches.csv``, ``storage.csv``) has a schema below. Numeric
columns carry their unit in the name (``tdp_w``, ``memory_gib``,
``bf16_tflops``); every row carries a ``source`` and a ``source_date``.
Loading refuses bad data with a :class:`~gpucluster_lib.errors.CatalogError`
naming the file, row, column and rule. Users may add their own CSV files with
the same schema; they are validated the same way and merged (a user row with
an id that already exists replaces the shipped row only when ``override=True``).

Row numbers in messages are the line numbers a spreadsheet shows
(header = line 1, first data row = line 2).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster_lib.checks import decode_text
from gpucluster_lib.errors import CatalogError, UnknownIdError, excerpt
from gpucluster_lib.resources import data_root

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built, not with this module
    import pandas as pd

#: Shipped data folder (``data/`` at the repository root). ``GPUCLUSTER_DATA`` overrides it.
DATA_DIR = data_root()

#: Largest catalogue CSV (shipped or user) [bytes]; the largest shipped table is about 19 KB.
MAX_CATALOG_BYTES = 2 * 1024 * 1024
#: Longest cell [characters]; the longest shipped cell (a source citation) is about 400.
MAX_CELL_CHARS = 4000
#: Most rows in one CSV.
MAX_CATALOG_ROWS = 20_000
_COLUMN_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

ID_RE = re.compile(r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")
DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")

#: Unit suffixes a numeric column name may end with, and what they mean.
UNIT_SUFFIXES: dict[str, str] = {
    "_w": "watt",
    "_kw": "kilowatt",
    "_gib": "gibibyte (2^30 B)",
    "_gb": "gigabyte (10^9 B)",
    "_tb": "terabyte (10^12 B)",
    "_gb_per_s": "gigabyte per second (10^9 B/s)",
    "_gbps": "gigabit per second (10^9 bit/s)",
    "_tflops": "10^12 floating-point operations per second",
    "_tops": "10^12 integer operations per second",
    "_u": "rack units (44.45 mm)",
    "_kg": "kilogram",
    "_usd": "US dollar",
    "_year": "calendar year",
    "_count": "count",
    "_cores": "count of cores",
    "_threads": "count of hardware threads",
    "_ghz": "gigahertz",
    "_lanes": "PCIe lanes",
    "_slots": "slots (PCIe slot widths)",
    "_cfm": "cubic feet per minute",
    "_m": "metre",
    "_mm": "millimetre",
    "_gen": "generation number",
    "_channels": "memory channels",
    "_usd_estimate": "US dollar, indicative estimate",
    "_gpus": "count of GPUs",
    "_usd_per_gpu_hour": "US dollar per GPU-hour",
}
#: Numeric columns whose whole name states the unit (counts and rack units).
UNIT_NAMES: dict[str, str] = {
    "cores": "count of cores",
    "threads": "count of hardware threads",
    "ports": "count of ports",
    "rack_units": "rack units (44.45 mm)",
}


@dataclass(frozen=True)
class Column:
    """One column of a catalogue table.

    ``kind`` is one of ``id``, ``str``, ``float``, ``int``, ``enum``, ``ref``, ``bool``,
    ``date``. Numeric columns must end with a suffix from :data:`UNIT_SUFFIXES`.
    """

    name: str
    kind: str = "str"
    required: bool = False
    choices: tuple[str, ...] = ()
    ref: str = ""  # table name for kind == "ref"
    min: float | None = None
    max: float | None = None
    doc: str = ""

    @property
    def numeric(self) -> bool:
        return self.kind in ("float", "int")


def _c(name: str, kind: str = "str", **kw: Any) -> Column:
    return Column(name, kind, **kw)


SOURCE_COLUMNS = (
    _c("source", required=True, doc="datasheet / paper / official page: title and URL"),
    _c("source_date", "date", required=True, doc="date of the document or of reading it (YYYY-MM[-DD])"),
    _c("notes"),
)
PRICE_COLUMNS = (
    _c("price_usd_estimate", "float", min=0, doc="indicative street price; an estimate the user can override"),
    _c("price_source"),
    _c("price_date", "date"),
)

SCHEMAS: dict[str, tuple[Column, ...]] = {
    "accelerators": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("architecture", required=True),
        _c("form_factor", "enum", required=True, choices=("SXM", "PCIe", "OAM", "TPU", "board")),
        _c("slot_width_slots", "int", min=1, max=4, doc="PCIe slot width of a card; empty for SXM/OAM/TPU"),
        _c("cooling", "enum", required=True, choices=("active", "passive", "liquid")),
        _c("memory_gib", "float", required=True, min=0.5, max=2048,
           doc="vendor-stated device memory; HBM/GDDR 'GB' figures are binary (A100 80GB = 81,920 MiB)"),
        _c("memory_type", required=True),
        _c("memory_bandwidth_gb_per_s", "float", required=True, min=1, max=100_000),
        _c("fp64_tflops", "float", min=0),
        _c("fp32_tflops", "float", min=0),
        _c("tf32_tflops", "float", min=0),
        _c("bf16_tflops", "float", min=0),
        _c("fp16_tflops", "float", min=0),
        _c("fp8_tflops", "float", min=0),
        _c("int8_tops", "float", min=0),
        _c("tdp_w", "float", required=True, min=1, max=5000),
        _c("scaleup_link", doc="NVLink4, Infinity Fabric, ICI, PCIe only, ..."),
        _c("scaleup_bandwidth_gb_per_s", "float", min=0, doc="per device, bidirectional total"),
        _c("pcie_gen", "int", min=1, max=7),
        _c("pcie_lanes", "int", min=1, max=32),
        _c("launch_year", "int", required=True, min=2010, max=2030),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
    "cpus": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("architecture"),
        _c("cores", "int", required=True, min=1, max=1024),
        _c("threads", "int", min=1, max=2048),
        _c("base_ghz", "float", min=0.1, max=10),
        _c("boost_ghz", "float", min=0.1, max=10),
        _c("tdp_w", "float", required=True, min=1, max=1000),
        _c("pcie_lanes", "int", required=True, min=0, max=512),
        _c("pcie_gen", "int", required=True, min=1, max=7),
        _c("memory_channels", "int", min=1, max=24),
        _c("max_memory_gb", "float", min=1),
        _c("launch_year", "int", min=2010, max=2030),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
    "nics": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("protocol", "enum", required=True, choices=("InfiniBand", "Ethernet", "VPI")),
        _c("speed_gbps", "float", required=True, min=1, max=3200, doc="per port"),
        _c("ports", "int", required=True, min=1, max=8),
        _c("pcie_gen", "int", required=True, min=1, max=7),
        _c("pcie_lanes", "int", required=True, min=1, max=32),
        _c("max_power_w", "float", min=0, max=200),
        _c("launch_year", "int", min=2000, max=2030),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
    "switches": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("protocol", "enum", required=True, choices=("InfiniBand", "Ethernet")),
        _c("ports", "int", required=True, min=4, max=1024),
        _c("port_speed_gbps", "float", required=True, min=1, max=3200),
        _c("rack_units", "int", required=True, min=1, max=48),
        _c("max_power_w", "float", required=True, min=1, max=20_000),
        _c("typical_power_w", "float", min=1, max=20_000),
        _c("managed", "bool"),
        _c("launch_year", "int", min=2000, max=2030),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
    "storage": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("kind", "enum", required=True,
           choices=("nvme-ssd", "sata-ssd", "hdd", "parallel-fs", "nfs-appliance", "object-store")),
        _c("interface", required=True),
        _c("capacity_tb", "float", required=True, min=0.01),
        _c("read_gb_per_s", "float", required=True, min=0),
        _c("write_gb_per_s", "float", required=True, min=0),
        _c("max_power_w", "float", min=0),
        _c("rack_units", "int", min=0, max=48, doc="for appliances; empty for drives"),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
    "servers": (
        _c("id", "id", required=True),
        _c("name", required=True),
        _c("vendor", required=True),
        _c("kind", "enum", required=True, choices=("system", "chassis", "workstation"),
           doc="a complete system, an empty chassis to fill with parts, or a tower workstation"),
        _c("gpu_id", "ref", ref="accelerators"),
        _c("gpu_count", "int", required=True, min=0, max=72),
        _c("gpu_baseboard", "enum", required=True, choices=("sxm", "oam", "pcie", "none"),
           doc="sxm/oam: HGX/DGX/OAM baseboard; pcie: slots"),
        _c("cpu_id", "ref", ref="cpus"),
        _c("cpu_count", "int", required=True, min=0, max=72, doc="CPUs in one row (a rack-scale NVL72 has 36 Grace CPUs)"),
        _c("system_memory_gb", "float", min=0),
        _c("os_storage_tb", "float", min=0),
        _c("data_storage_tb", "float", min=0),
        _c("storage_desc"),
        _c("compute_nic_id", "ref", ref="nics"),
        _c("compute_nic_count", "int", min=0, max=144),
        _c("storage_nic_id", "ref", ref="nics"),
        _c("storage_nic_count", "int", min=0, max=72),
        _c("mgmt_ports_count", "int", min=0, max=64, doc="1/10 GbE ports incl. BMC (a rack-scale system counts every tray's)"),
        _c("pcie_x16_slots", "int", min=0, max=32),
        _c("pcie_x8_slots", "int", min=0, max=32),
        _c("max_gpu_slot_width_slots", "int", min=1, max=4),
        _c("rack_units", "int", min=1, max=48, doc="empty for towers"),
        _c("max_power_w", "float", min=1, max=200_000),
        _c("psu_count", "int", min=1, max=16),
        _c("psu_rating_w", "float", min=100, max=20_000),
        _c("psu_redundancy", doc="N+M, e.g. 3+3"),
        _c("weight_kg", "float", min=1, max=3000),
        _c("cooling", "enum", required=True, choices=("air", "liquid", "hybrid")),
        _c("airflow_cfm", "float", min=0),
        _c("launch_year", "int", min=2010, max=2030),
        _c("nvlink_domain_gpus", "int", min=1, max=576,
           doc="GPUs in one NVLink (scale-up) domain; empty: the node's GPUs"),
        _c("racks_count", "int", min=1, max=8,
           doc="rack-scale system: racks one row occupies (NVL72: 1, NVL36x2: 2); empty for rack-mount servers"),
        _c("compute_trays_count", "int", min=0, max=72, doc="rack-scale system: compute trays"),
        _c("switch_trays_count", "int", min=0, max=72, doc="rack-scale system: NVLink switch trays"),
        _c("power_shelves_count", "int", min=0, max=32, doc="rack-scale system: power shelves"),
        _c("liquid_cooled_parts", doc="node power categories on cold plates, e.g. 'gpu; cpu; network'"),
        _c("rack_systems_count", "int", min=1, max=16,
           doc="systems per rack in the vendor's reference architecture (DGX H100 SuperPOD: 4)"),
        _c("su_nodes_count", "int", min=1, max=1024, doc="nodes per scalable unit in the vendor's reference architecture"),
        _c("su_network_racks_count", "int", min=0, max=16,
           doc="network racks per scalable unit in the vendor's reference architecture"),
        _c("pod_management_racks_count", "int", min=0, max=64,
           doc="racks for spine switches, management servers and fabric managers per pod (vendor reference architecture)"),
        *PRICE_COLUMNS,
        *SOURCE_COLUMNS,
    ),
}

TABLES: tuple[str, ...] = tuple(SCHEMAS)

#: Precisions with a dense peak column, in the order the UI lists them.
PRECISION_COLUMNS: dict[str, str] = {
    "fp64": "fp64_tflops",
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
    "int8": "int8_tops",
}

#: Dense 16-bit tensor throughput per watt above which a row almost certainly holds
#: the 2:4-sparsity headline. The densest part in the catalogue, B200, is
#: 2,250 TFLOP/s at 1,000 W = 2.25 TFLOP/s/W (NVIDIA HGX page); sparse headlines
#: double that (H100 SXM 1,979 / 700 W = 2.8).
MAX_DENSE_BF16_TFLOPS_PER_W = 2.6


def _unit_of(name: str) -> str | None:
    if name in UNIT_NAMES:
        return name
    for suffix in sorted(UNIT_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return suffix
    return None


def _parse_cell(table: str, file: str, line: int, col: Column, raw: str) -> Any:
    raw = raw.strip()
    if raw == "" or raw.upper() == "NA":
        if col.required:
            raise CatalogError(file, line, col.name, "required value is missing")
        return None
    if col.kind in ("float", "int"):
        try:
            value = float(raw.replace(",", "")) if col.kind == "float" else int(raw)
        except ValueError:
            hint = ": put the unit in the column name, not in the cell" if re.search(r"[a-zA-Z]", raw) else ""
            raise CatalogError(file, line, col.name,
                               f"expected a {'number' if col.kind == 'float' else 'whole number'}, got {excerpt(raw)}{hint}") from None
        if not math.isfinite(value):
            raise CatalogError(file, line, col.name, f"expected a finite number, got {excerpt(raw)}")
        if col.min is not None and value < col.min:
            what = "negative" if value < 0 else "too small"
            raise CatalogError(file, line, col.name, f"{what} value {value:g} (minimum {col.min:g})")
        if col.max is not None and value > col.max:
            raise CatalogError(file, line, col.name, f"value {value:g} above the plausible maximum {col.max:g}")
        return value
    if col.kind == "bool":
        low = raw.lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise CatalogError(file, line, col.name, f"expected true/false, got {excerpt(raw)}")
    if col.kind == "enum":
        if raw not in col.choices:
            raise CatalogError(file, line, col.name, f"{excerpt(raw)} is not one of {', '.join(col.choices)}")
        return raw
    if col.kind == "id":
        if not ID_RE.match(raw):
            raise CatalogError(file, line, col.name,
                               f"id {excerpt(raw)} must be lowercase letters, digits and hyphens (e.g. 'h100-sxm5-80gb')")
        return raw
    if col.kind == "date":
        if not DATE_RE.match(raw):
            raise CatalogError(file, line, col.name, f"date {excerpt(raw)} must be YYYY, YYYY-MM or YYYY-MM-DD")
        return raw
    return raw


def _check_row(table: str, file: str, line: int, row: dict[str, Any]) -> None:
    """Cross-column plausibility rules."""
    if table == "accelerators":
        order = [c for c in ("tf32_tflops", "bf16_tflops", "fp8_tflops") if row.get(c) is not None]
        for lo, hi in zip(order, order[1:], strict=False):
            if row[lo] > row[hi] * 1.001:
                raise CatalogError(file, line, lo, f"{lo} {row[lo]:g} exceeds {hi} {row[hi]:g}: "
                                   "lower precisions are never slower")
        bf16, tdp = row.get("bf16_tflops"), row.get("tdp_w")
        if bf16 is not None and tdp and bf16 / tdp > MAX_DENSE_BF16_TFLOPS_PER_W:
            raise CatalogError(
                file, line, "bf16_tflops",
                f"dense BF16 {bf16:g} TFLOP/s at {tdp:g} W is {bf16 / tdp:.2f} TFLOP/s per W, above the "
                f"{MAX_DENSE_BF16_TFLOPS_PER_W} any shipping part reaches: is this the 2:4-sparsity headline? "
                "Store the dense figure (half the sparse one)")
        if row.get("form_factor") == "PCIe" and row.get("slot_width_slots") is None:
            raise CatalogError(file, line, "slot_width_slots", "PCIe cards need a slot width")
    if table == "servers":
        if row.get("kind") != "chassis" and row.get("gpu_count", 0) > 0 and not row.get("gpu_id"):
            raise CatalogError(file, line, "gpu_id", "a system with GPUs must name its GPU id")
        red = row.get("psu_redundancy")
        if red is not None:
            m = re.fullmatch(r"(\d+)\+(\d+)", red)
            if not m:
                raise CatalogError(file, line, "psu_redundancy", f"{excerpt(red)} must be written N+M, e.g. 3+1")
            if row.get("psu_count") is not None and int(m[1]) + int(m[2]) != row["psu_count"]:
                raise CatalogError(file, line, "psu_redundancy",
                                   f"{red} does not add up to psu_count {row['psu_count']}")
    if row.get("price_usd_estimate") is not None and not row.get("price_source"):
        raise CatalogError(file, line, "price_source", "a price needs its source")


def _read_rows(table: str, path: str | os.PathLike | io.TextIOBase, label: str | None) -> list[dict[str, Any]]:
    """Parse and validate one catalogue CSV into row dicts (schema order, missing values None)."""
    if table not in SCHEMAS:
        raise UnknownIdError("catalogue table", table, SCHEMAS)
    schema = SCHEMAS[table]
    by_name = {c.name: c for c in schema}
    if isinstance(path, (str, os.PathLike)):
        file = label or Path(path).name
        text = _decode(file, _read_bytes(Path(path), file))
    else:
        file = label or Path(str(getattr(path, "name", f"<{table}.csv>"))).name
        text = _decode(file, path.read(MAX_CATALOG_BYTES + 1))
    reader = csv.DictReader(io.StringIO(text))
    try:
        return _parse_rows(table, file, schema, by_name, reader)
    except csv.Error as e:
        rule = f"a cell longer than {MAX_CELL_CHARS:,} characters" if "field larger" in str(e) \
            else f"not a valid CSV file ({str(e)[:100]})"
        raise CatalogError(file, reader.line_num or None, None, rule) from None


def _read_bytes(path: Path, file: str) -> bytes:
    """A catalogue file's bytes; a folder, a missing file and one over the size limit are refused by name."""
    try:
        if path.is_dir():
            raise CatalogError(file, None, None, "is a folder, not a CSV file")
        with path.open("rb") as fh:
            return fh.read(MAX_CATALOG_BYTES + 1)
    except FileNotFoundError:
        raise CatalogError(file, None, None, "file not found") from None
    except OSError as e:
        raise CatalogError(file, None, None, f"cannot be read ({e.strerror or type(e).__name__})") from None


def _decode(file: str, data: bytes | str) -> str:
    """UTF-8 text (Excel's byte-order mark dropped); other encodings and binary files refused."""
    try:
        return decode_text(data, limit_bytes=MAX_CATALOG_BYTES)
    except ValueError as e:
        raise CatalogError(file, None, None, str(e)) from None


def _parse_rows(table: str, file: str, schema: tuple[Column, ...], by_name: dict[str, Column],
                reader: csv.DictReader) -> list[dict[str, Any]]:
    header = reader.fieldnames or []
    for i, name in enumerate(header):
        if name not in by_name:
            if not _COLUMN_NAME_RE.match(name):  # not a column name: do not quote what the file holds
                raise CatalogError(file, 1, None, f"header cell {i + 1} is not a column name; {table}.csv "
                                                  f"columns are: {', '.join(by_name)}")
            stem_matches = [c.name for c in schema if c.numeric and name.rsplit("_", 1)[0] == c.name[: -len(_unit_of(c.name) or "")]]
            if stem_matches:
                raise CatalogError(file, 1, name, f"unknown unit in column name: use {stem_matches[0]!r}")
            raise CatalogError(file, 1, name,
                               f"unknown column; {table}.csv columns are: {', '.join(by_name)}")
    for col in schema:
        if col.required and col.name not in header:
            raise CatalogError(file, 1, col.name, "required column is missing")
        if col.numeric and _unit_of(col.name) is None:  # guards the schema itself
            raise CatalogError(file, 1, col.name, "numeric column without a unit suffix")
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(reader):
        line = i + 2
        if i >= MAX_CATALOG_ROWS:
            raise CatalogError(file, line, None, f"more than {MAX_CATALOG_ROWS:,} rows")
        if None in raw:  # more cells than header columns
            raise CatalogError(file, line, None, f"{len(raw[None])} cell(s) more than the header has columns")
        for name, cell in raw.items():
            if isinstance(cell, str) and len(cell) > MAX_CELL_CHARS:
                raise CatalogError(file, line, name, f"a cell of {len(cell):,} characters, more than the "
                                                     f"{MAX_CELL_CHARS:,} allowed")
        row = {c.name: _parse_cell(table, file, line, c, raw.get(c.name) or "") for c in schema}
        _check_row(table, file, line, row)
        if row["id"] in seen:
            raise CatalogError(file, line, "id", f"duplicate id {row['id']!r} (first on line {seen[row['id']]})")
        seen[row["id"]] = line
        rows.append(row)
    return rows


def _frame(table: str, rows: Iterable[Mapping[str, Any]], lines: Iterable[int] | None = None) -> pd.DataFrame:
    """A table's rows as a DataFrame: float columns float64, whole-number columns Int64."""
    import pandas as pd

    schema = SCHEMAS[table]
    df = pd.DataFrame(list(rows), columns=[c.name for c in schema])
    for c in schema:
        if c.kind == "float":
            df[c.name] = df[c.name].astype("float64")
        elif c.kind == "int":
            df[c.name] = df[c.name].astype("Int64")
    df.attrs["table"] = table
    if lines is not None:
        df.attrs["lines"] = _Lines(lines)
    return df


class _Lines(tuple):
    """A table's source line numbers, kept in ``DataFrame.attrs``: pandas deep-copies the attrs
    into the result of every operation (a list of ints per filter, sort or column); this
    immutable tuple is its own copy."""

    def __deepcopy__(self, memo: dict) -> _Lines:
        return self


def read_table(table: str, path: str | os.PathLike | io.TextIOBase, *, label: str | None = None) -> pd.DataFrame:
    """Read and validate one catalogue CSV (no cross-table checks) into a DataFrame.

    Parameters
    ----------
    table : one of :data:`TABLES`
    path : file path or open text stream
    label : name used in error messages (defaults to the file name)
    """
    return _frame(table, _read_rows(table, path, label))


class _Frames(Mapping[str, "pd.DataFrame"]):
    """``Catalog.tables``: the tables as DataFrames, each built (and pandas imported) on first use."""

    def __init__(self, index: Mapping[str, Mapping[str, Mapping[str, Any]]], lines: Mapping[str, list[int]],
                 built: dict[str, pd.DataFrame] | None = None):
        self._index, self._lines, self._built = index, lines, dict(built or {})

    def __getitem__(self, table: str) -> pd.DataFrame:
        df = self._built.get(table)
        if df is None:
            df = self._built[table] = _frame(table, self._index[table].values(), self._lines.get(table))
        return df

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"<catalogue tables {', '.join(self._index)}>"


class Catalog:
    """All catalogue tables, indexed by id. Build with :func:`load_catalog`.

    Look-ups by id (:meth:`get`, :meth:`accelerator`, :meth:`server`, :meth:`has`) are dict
    look-ups in an index built once at load time; each returns a fresh ``dict`` the caller may
    change without touching the catalogue. ``tables`` gives pandas DataFrames for the picker and
    the UI, built on first access.
    """

    def __init__(self, tables: Mapping[str, pd.DataFrame] | None = None):
        # ``Catalog({table: DataFrame})`` as before; load_catalog builds from rows (no pandas).
        index: dict[str, dict[str, dict[str, Any]]] = {}
        lines: dict[str, list[int]] = {}
        for table, df in (tables or {}).items():
            index[table] = {r["id"]: r for r in (_row_dict(s) for _, s in df.iterrows())}
            lines[table] = list(df.attrs.get("lines") or range(2, len(df) + 2))
        self._init(index, lines, dict(tables or {}))

    @classmethod
    def _from_rows(cls, rows: Mapping[str, list[dict[str, Any]]], lines: Mapping[str, list[int]]) -> Catalog:
        cat = cls.__new__(cls)
        cat._init({t: {r["id"]: r for r in rs} for t, rs in rows.items()}, dict(lines), {})
        return cat

    def _init(self, index: dict[str, dict[str, dict[str, Any]]], lines: dict[str, list[int]],
              frames: dict[str, pd.DataFrame]) -> None:
        self._index = index
        self._lines = lines
        self._frames = _Frames(index, lines, frames)

    @property
    def tables(self) -> Mapping[str, pd.DataFrame]:
        """``{table: DataFrame}``; each DataFrame is built on first access."""
        return self._frames

    def __getattr__(self, name: str) -> pd.DataFrame:
        index = self.__dict__.get("_index", {})
        if name in index:
            return self._frames[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"Catalog({', '.join(f'{t}: {len(rows)}' for t, rows in self._index.items())})"

    def ids(self, table: str) -> list[str]:
        return list(self._index[table])

    def has(self, table: str, id_: str) -> bool:
        """Whether ``table`` holds a row with this id (no copy, no DataFrame)."""
        return id_ in self._index[table]

    def get(self, table: str, id_: str, *, path: str = "") -> dict[str, Any]:
        """One row as a new dict (missing values None). Unknown ids raise with the closest ids."""
        rows = self._index[table]
        try:
            return dict(rows[id_])
        except (KeyError, TypeError):
            pass
        raise UnknownIdError(_SINGULAR[table], id_, rows, path)

    def accelerator(self, id_: str, *, path: str = "") -> dict[str, Any]:
        return self.get("accelerators", id_, path=path)

    def server(self, id_: str, *, path: str = "") -> dict[str, Any]:
        return self.get("servers", id_, path=path)

    def records(self, table: str) -> list[dict[str, Any]]:
        """Rows as JSON-ready dicts (new ones): numbers as numbers, missing values as None."""
        return [dict(r) for r in self._index[table].values()]


_SINGULAR = {"accelerators": "accelerator", "servers": "server", "cpus": "CPU", "nics": "NIC",
             "switches": "switch", "storage": "storage option"}


def _row_dict(row: pd.Series) -> dict[str, Any]:
    """A DataFrame row as a plain dict: NaN/NA as None, numpy scalars as Python numbers."""
    import pandas as pd

    out: dict[str, Any] = {}
    for k, v in row.items():
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            out[k] = None
        elif hasattr(v, "item"):  # numpy scalar
            out[k] = v.item()
        else:
            out[k] = v
    return out


def _check_refs(index: Mapping[str, Mapping[str, Mapping[str, Any]]], lines: Mapping[str, list[int]],
                files: Mapping[str, str]) -> None:
    for table, schema in SCHEMAS.items():
        if table not in index:
            continue
        for col in schema:
            if col.kind != "ref" or col.ref not in index:
                continue
            valid = index[col.ref]
            for i, row in enumerate(index[table].values()):
                value = row.get(col.name)
                if value is not None and value not in valid:
                    err = UnknownIdError(_SINGULAR[col.ref], value, valid)
                    table_lines = lines.get(table)
                    line = table_lines[i] if table_lines is not None else i + 2
                    raise CatalogError(files[table], line, col.name,
                                       f"refers to {err.message.removeprefix('unknown ')}")


def load_catalog(extra: Iterable[str | os.PathLike] = (), *, data_dir: str | os.PathLike | None = None,
                 override: bool = False) -> Catalog:
    """Load the shipped catalogue plus user CSV files, validated.

    Parameters
    ----------
    extra : paths of user CSVs. The table is taken from the file name
        (``my_accelerators.csv`` -> ``accelerators``; the name must end with a table name).
    data_dir : folder with the shipped tables (default :data:`DATA_DIR`).
    override : let a user row replace a shipped row with the same id (default: refuse).
    """
    # Cached by content, not by path: a CSV edited in place (in one app or notebook session) is
    # read and checked again; the same bytes give the same Catalog object (Design.evolve keeps stages).
    files = tuple((Path(p).name, _read_bytes(Path(p), Path(p).name)) for p in extra)
    folder = Path(data_dir or DATA_DIR)
    shipped = tuple((t, _stamp(folder / f"{t}.csv")) for t in TABLES)
    return _load_catalog(files, str(folder), shipped, override)


def _stamp(path: Path) -> tuple[int, int]:
    """(modification time [ns], size [B]) of a shipped table, so an edited data folder is re-read."""
    try:
        st = path.stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _load_catalog(extra: tuple[tuple[str, bytes], ...], data_dir: str, shipped: tuple, override: bool) -> Catalog:
    rows: dict[str, list[dict[str, Any]]] = {}
    lines: dict[str, list[int]] = {}
    files: dict[str, str] = {}
    for table in TABLES:
        path = Path(data_dir) / f"{table}.csv"
        rows[table] = _read_rows(table, path, None)
        lines[table], files[table] = list(range(2, len(rows[table]) + 2)), path.name
    for name, content in extra:
        stem = Path(name).stem.lower()
        table = next((t for t in TABLES if stem == t or stem.endswith(("_" + t, "-" + t))), None)
        if table is None:
            raise CatalogError(name, None, None,
                               f"cannot tell which table this is: the file name must end with one of {', '.join(TABLES)}")
        rows[table], lines[table] = _merge_rows(rows[table], lines[table],
                                                _read_rows(table, io.BytesIO(content), name), name,
                                                override=override)
        files[table] = f"{files[table]} + {name}"
    cat = Catalog._from_rows(rows, lines)
    _check_refs(cat._index, cat._lines, files)
    return cat


def _merge_rows(base: list[dict[str, Any]], base_lines: list[int], user: list[dict[str, Any]], user_file: str,
                *, override: bool = False) -> tuple[list[dict[str, Any]], list[int]]:
    """Append user rows to a shipped table; a clashing id is refused unless ``override``.

    Returns the merged rows and their line numbers (shipped lines, then the user file's).
    """
    user_ids = [r["id"] for r in user]
    clash = sorted({r["id"] for r in base} & set(user_ids))
    if clash and not override:
        line = user_ids.index(clash[0]) + 2
        raise CatalogError(user_file, line, "id",
                           f"duplicate id {clash[0]!r}: already in the shipped catalogue (rename it, or pass override)")
    drop = set(clash)
    kept = [(r, ln) for r, ln in zip(base, base_lines, strict=True) if r["id"] not in drop]
    return [r for r, _ in kept] + list(user), [ln for _, ln in kept] + list(range(2, len(user) + 2))


def merge_tables(base: pd.DataFrame, user: pd.DataFrame, user_file: str, *, override: bool = False) -> pd.DataFrame:
    """DataFrame form of the merge (tables from :func:`read_table`); a clashing id is refused unless ``override``."""
    table = base.attrs.get("table") or user.attrs.get("table")
    rows, lines = _merge_rows([_row_dict(s) for _, s in base.iterrows()],
                              list(base.attrs.get("lines") or range(2, len(base) + 2)),
                              [_row_dict(s) for _, s in user.iterrows()], user_file, override=override)
    merged = _frame(table, rows, lines)
    merged.attrs.update({k: v for k, v in base.attrs.items() if k != "lines"})
    return merged


def catalog_from_bytes(table: str, content: bytes, name: str, base: Catalog | None = None,
                       override: bool = False) -> Catalog:
    """Merge an uploaded CSV (bytes, as the app receives it) into a copy of ``base``."""
    base = base or load_catalog()
    name = Path(str(name)).name[:100] or f"{table}.csv"
    user = _read_rows(table, io.BytesIO(bytes(content)), name)
    rows = {t: list(r.values()) for t, r in base._index.items()}
    lines = {t: list(base._lines.get(t) or range(2, len(rows[t]) + 2)) for t in rows}
    rows[table], lines[table] = _merge_rows(rows[table], lines[table], user, name, override=override)
    cat = Catalog._from_rows(rows, lines)
    _check_refs(cat._index, cat._lines, {t: f"{t}.csv" if t != table else f"{table}.csv + {name}" for t in rows})
    return cat
