"""Chart labels do not overlap: label boxes computed from the specs' data (hardware scatter,
rack elevation) must not intersect each other or the points, and stay inside the plot."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.charts import facility as fcharts
from gpucluster_lib.charts import hardware as hcharts
from gpucluster_lib.charts.labels import (
    Box,
    dodge_labels,
    label_box,
    log_pixel,
    place_point_labels,
    text_width_px,
)
from gpucluster_lib.design import Design
from gpucluster_lib.hardware.picker import PickerFilter, pick
from gpucluster_lib.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios"


def overlapping(boxes: list[tuple[str, Box]]) -> list[tuple[str, str]]:
    return [(a, b) for (a, ba), (b, bb) in combinations(boxes, 2) if ba.overlaps(bb)]


def scatter_boxes(spec: dict) -> tuple[list[tuple[str, Box]], list[tuple[str, Box]]]:
    """(label boxes, point discs as boxes) in pixels, from the spec's scales and data."""
    layer = spec["layer"]
    xs, ys = layer[0]["encoding"]["x"]["scale"], layer[0]["encoding"]["y"]["scale"]
    size = layer[0]["encoding"]["size"]["scale"]
    w, h = spec["width"], spec["height"]
    labels, discs = [], []
    for row in spec["data"]["values"]:
        px = log_pixel(row["memory_bandwidth_gb_per_s"], tuple(xs["domain"]), w)
        py = log_pixel(row["peak_tflops"], tuple(ys["domain"]), h, flip=True)
        area = size["range"][0] + (size["range"][1] - size["range"][0]) * row["memory_gib"] / size["domain"][1]
        r = math.sqrt(area / math.pi)
        discs.append((row["id"], Box(px - r, py - r, px + r, py + r)))
        if row["label_x"] is not None:
            lx = log_pixel(row["label_x"], tuple(xs["domain"]), w)
            ly = log_pixel(row["label_y"], tuple(ys["domain"]), h, flip=True)
            labels.append((row["id"], label_box(lx, ly, row["label"], hcharts.LABEL_FONT)))
    return labels, discs


@pytest.mark.parametrize("precision", ["bf16", "fp8", "fp32"])
def test_hardware_scatter_labels_do_not_overlap(precision):
    df = pick(load_catalog(), PickerFilter(precision=precision))
    spec = hcharts.accelerator_scatter_spec(df, precision, highlight="h100-sxm5-80gb")
    labels, discs = scatter_boxes(spec)
    assert len(labels) >= len(df) // 2  # most parts are named on the chart, the rest in tooltips
    assert overlapping(labels) == []
    assert [(a, b) for a, la in labels for b, d in discs if a != b and la.overlaps(d)] == []
    assert all(0 <= b.x0 and b.x1 <= spec["width"] and 0 <= b.y0 and b.y1 <= spec["height"] for _, b in labels)
    picked = next(r for r in spec["data"]["values"] if r["id"] == "h100-sxm5-80gb")
    assert picked["label_x"] is not None and picked["label"] == "H100 SXM5 80GB"  # catalogue name, no vendor


def test_the_old_fixed_offset_labels_did_overlap():
    # every id at dx=8, dy=-6 of its point (the earlier chart): the check above would catch it
    df = pick(load_catalog(), PickerFilter(precision="bf16"))
    spec = hcharts.accelerator_scatter_spec(df, "bf16")
    _, discs = scatter_boxes(spec)
    cx = {i: ((b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2) for i, b in discs}
    old = [(i, label_box(x + 8, y - 6, i, 10)) for i, (x, y) in cx.items()]
    assert overlapping(old)  # e.g. gb200-gpu-186gb and gb300-gpu-288gb share a point


def test_point_labels_skip_a_label_with_no_free_spot():
    # three points on top of each other: the first is labelled, the others keep their tooltips
    spots = place_point_labels([(100, 100, 5)] * 3, ["a-long-name"] * 3, 400, 300)
    assert spots[0] is not None and spots.count(None) <= 2
    boxes = [label_box(x, y, "a-long-name", 10) for x, y in (s for s in spots if s)]
    assert not any(a.overlaps(b) for a, b in combinations(boxes, 2))


def test_dodge_keeps_labels_a_line_apart_and_drops_what_does_not_fit():
    # three 1U devices 9 px apart with a 10 px font: moved to 12 px apart (font 10 + 2 px)
    ys = dodge_labels([100.0, 109.0, 118.0], 300)
    assert sorted(ys) == pytest.approx([94.0, 106.0, 118.0])
    assert dodge_labels([5.0] * 30, 100).count(None) == 30 - 8  # (100 - 10) // 12 + 1 = 8 fit


def elevation_boxes(b) -> list[tuple[str, Box]]:
    df = fcharts.elevation_frame(b)
    height = fcharts.elevation_height_px(b.rack_units)
    per_u = height / b.rack_units
    out = []
    for r in df.to_dict("records"):
        if r["inside"]:
            y = height - r["mid"] * per_u
            w = text_width_px(r["text"], fcharts.LABEL_PX)
            box = Box(fcharts.RACK_W_PX / 2 - w / 2, y - 5, fcharts.RACK_W_PX / 2 + w / 2, y + 5)
            # inside its own device
            assert height - r["u1"] * per_u <= box.y0 and box.y1 <= height - r["u0"] * per_u, r["text"]
            assert 0 <= box.x0 and box.x1 <= fcharts.RACK_W_PX
            out.append((r["text"], box))
        elif r["side"]:
            out.append((r["text"], label_box(fcharts.SIDE_X_PX, height - r["label_u"] * per_u, r["text"],
                                             fcharts.LABEL_PX)))
    return out


@pytest.mark.parametrize("name", ["reference-8x-a100", "gpt3-175b-1024-a100", "gb200-nvl72-superpod-su"])
def test_rack_elevation_labels_do_not_overlap(name):
    b = Design(load_scenario(EXAMPLES / f"{name}.yaml")).facility
    boxes = elevation_boxes(b)
    assert overlapping(boxes) == []
    # every device is named, on the drawing or beside it: a 42U rack has room for all of them
    assert len(boxes) == len(b.elevation)


def test_rack_elevation_of_thin_devices_moves_their_labels_aside():
    # the reference rack: 1U head node, patch panel and management switch (9 px a unit, 10 px font)
    b = Design(load_scenario(EXAMPLES / "reference-8x-a100.yaml")).facility
    df = fcharts.elevation_frame(b)
    thin = df[df["units"] == 1]
    assert len(thin) == 3 and not thin["inside"].any() and thin["side"].all()
    spec = fcharts.rack_elevation_spec(b)
    assert spec["title"].startswith("42U rack: 1 node,")
