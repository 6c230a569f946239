"""The bill of materials: SKU, description, quantity, unit price with its source, extended price.

One source of truth: the rows are the priced lines of the cost stage
(:attr:`gpucluster_lib.economics.cost.CostResult.lines`), so the BOM total is the CapEx of
``gpucluster cost`` to the cent. Lines of the same item, category, unit price and source are
merged (the management cables of several tiers, for example). CSV, or XLSX through openpyxl.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from gpucluster_lib.design import Design

COLUMNS = ("category", "sku", "description", "quantity", "unit_price", "currency", "price_source", "extended_price")
HEADERS = ("Category", "SKU", "Description", "Quantity", "Unit price", "Currency", "Price source", "Extended price")


def bom_rows(design: Design) -> list[dict[str, Any]]:
    """One row per item bought, in the cost stage's order; the extended prices add up to the CapEx."""
    cost = design.cost
    merged: dict[tuple, dict[str, Any]] = {}
    for line in cost.lines:
        key = (line["category"], line["sku"], line["unit_price"], line["source"])
        if key in merged:
            row = merged[key]
            row["quantity"] += line["quantity"]
            row["extended_price"] += line["extended"]
            if line["description"] not in row["description"]:
                row["description"] += "; " + line["description"]
            continue
        merged[key] = {"category": line["category"], "sku": line["sku"], "description": line["description"],
                       "quantity": line["quantity"], "unit_price": line["unit_price"], "currency": cost.currency,
                       "price_source": line["source"], "extended_price": line["extended"]}
    rows = list(merged.values())
    for r in rows:
        q = r["quantity"]
        if isinstance(q, float) and q.is_integer():
            r["quantity"] = int(q)
    return rows


def bom_total(rows: list[dict[str, Any]]) -> float:
    """Sum of the extended prices [currency]."""
    return sum(r["extended_price"] for r in rows)


def bom_csv(design: Design) -> str:
    """The BOM as CSV text with a header row and a final total row."""
    rows = bom_rows(design)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADERS)
    for r in rows:
        w.writerow([r[c] for c in COLUMNS])
    w.writerow(["total", "", "CapEx", "", "", design.cost.currency, "cost stage", bom_total(rows)])
    return buf.getvalue()


def bom_xlsx(design: Design) -> bytes:
    """The BOM as an XLSX workbook (one sheet, a total row with a SUM formula)."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    rows = bom_rows(design)
    wb = Workbook()
    ws = wb.active
    ws.title = "Bill of materials"
    ws.append(list(HEADERS))
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for r in rows:
        ws.append([r[c] for c in COLUMNS])
    last = len(rows) + 1
    ws.append(["total", "", "CapEx", "", "", design.cost.currency, "cost stage", f"=SUM(H2:H{last})"])
    for col, width in zip("ABCDEFGH", (10, 28, 60, 10, 14, 9, 60, 16), strict=True):
        ws.column_dimensions[col].width = width
    for row in ws.iter_rows(min_row=2, min_col=5, max_col=8):
        row[0].number_format = row[3].number_format = "#,##0.00"
    buf = io.BytesIO()
    wb.save(buf)
    return _fixed_timestamps(buf.getvalue())


def _fixed_timestamps(xlsx: bytes) -> bytes:
    """The workbook with fixed document and ZIP timestamps (openpyxl stamps the save time), so
    the same design gives the same bytes."""
    import re
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(xlsx))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "docProps/core.xml":
                data = re.sub(rb"(<dcterms:(created|modified)[^>]*>)[^<]*", rb"\g<1>2020-01-01T00:00:00Z", data)
            info = zipfile.ZipInfo(item.filename, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(info, data)
    return out.getvalue()
