"""Chart labels that do not overlap: positions computed in Python from the data.

Vega-Lite draws every text mark where it is told, so labels of nearby points or of thin
rack devices pile up. The charts place them here instead, in pixels of the chart's own
scales, and leave out a label that finds no free spot (its point keeps its tooltip):

* :func:`place_point_labels`: for scatter points, the first of a few candidate spots
  around each point (right-above, right-below, left-above, left-below, above, below) whose
  box overlaps no label already placed, no other point and stays inside the plot; points
  earlier in the given order (the picked one, the largest) are labelled first. This is the
  greedy fixed-candidate scheme of map labelling (Christensen, Marks and Shieber, "An
  empirical study of algorithms for point-feature label placement", ACM TOG 14(3), 1995).
* :func:`dodge_labels`: for a column of labels beside a drawing (the rack elevation),
  each label as near its anchor height as the ones below it allow, then pushed back down
  from the top; labels that still do not fit are dropped.

Text boxes are estimated, not measured: :data:`CHAR_WIDTH` of the font size per character
(sans-serif digits and lower case average about 0.55-0.6 em), one font size high.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: estimated width of one character [fraction of the font size]
CHAR_WIDTH = 0.62
#: free space kept between two label boxes [px]
PAD_PX = 2.0


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in pixels (x to the right, y downwards)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


def text_width_px(text: str, font_size: float) -> float:
    """Estimated width of ``text`` [px] at ``font_size`` [px]."""
    return len(text) * font_size * CHAR_WIDTH


def label_box(x: float, y: float, text: str, font_size: float) -> Box:
    """The box of a left-aligned, vertically centred label anchored at (x, y) [px]."""
    return Box(x, y - font_size / 2, x + text_width_px(text, font_size), y + font_size / 2)


def log_pixel(value: float, domain: tuple[float, float], length: float, *, flip: bool = False) -> float:
    """Pixel position of ``value`` on a log scale over ``domain`` spanning ``length`` px
    (``flip``: a y axis, 0 at the top)."""
    lo, hi = math.log10(domain[0]), math.log10(domain[1])
    t = (math.log10(value) - lo) / (hi - lo) if hi > lo else 0.5
    return length * (1 - t) if flip else length * t


def log_value(px: float, domain: tuple[float, float], length: float, *, flip: bool = False) -> float:
    """Inverse of :func:`log_pixel`: the data value at pixel ``px``."""
    lo, hi = math.log10(domain[0]), math.log10(domain[1])
    t = 1 - px / length if flip else px / length
    return 10 ** (lo + t * (hi - lo))


def place_point_labels(points: Sequence[tuple[float, float, float]], texts: Sequence[str], width: float,
                       height: float, font_size: float = 10.0, gap: float = 4.0) -> list[tuple[float, float] | None]:
    """Label anchors (x, y) [px] of left-aligned labels for ``points`` (x, y, radius) [px], or
    None where no candidate spot is free. Points are taken in the given order."""
    placed: list[Box] = []
    discs = [Box(x - r, y - r, x + r, y + r) for x, y, r in points]
    out: list[tuple[float, float] | None] = []
    for i, ((x, y, r), text) in enumerate(zip(points, texts, strict=True)):
        w = text_width_px(text, font_size)
        d = r + gap
        h = font_size / 2 + 1
        candidates = [(x + d, y - h), (x + d, y + h), (x - d - w, y - h), (x - d - w, y + h),
                      (x - w / 2, y - d - h), (x - w / 2, y + d + h)]
        spot = None
        for cx, cy in candidates:
            box = label_box(cx, cy, text, font_size)
            padded = Box(box.x0 - PAD_PX, box.y0 - PAD_PX, box.x1 + PAD_PX, box.y1 + PAD_PX)
            if box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height:
                continue
            if any(padded.overlaps(b) for b in placed):
                continue
            if any(padded.overlaps(c) for j, c in enumerate(discs) if j != i):
                continue
            spot = (cx, cy)
            placed.append(box)
            break
        out.append(spot)
    return out


def dodge_labels(anchors: Sequence[float], height: float, font_size: float = 10.0) -> list[float | None]:
    """Label centres [px, y downwards] for a column of labels at ``anchors`` [px]: no two
    closer than the font size plus :data:`PAD_PX`, all inside [0, height]; None for a label
    that does not fit (the lowest on the page are kept)."""
    step = font_size + PAD_PX
    order = sorted(range(len(anchors)), key=lambda i: anchors[i], reverse=True)  # from the bottom up
    keep = order[: max(0, int((height - font_size) // step) + 1)] if height >= font_size else []
    ys: dict[int, float] = {}
    prev = None
    for i in keep:  # upwards from the bottom: each at or above the one below it
        y = min(anchors[i], height - font_size / 2)
        if prev is not None:
            y = min(y, prev - step)
        ys[i] = y
        prev = y
    nxt = None
    for i in reversed(keep):  # then downwards from the top: none above the chart
        y = max(ys[i], font_size / 2)
        if nxt is not None:
            y = max(y, nxt + step)
        ys[i] = y
        nxt = y
    return [ys.get(i) for i in range(len(anchors))]
