"""Cable and transceiver data for the topology module (``data/cabling.yaml``), validated.

The file lists length classes (in-rack / in-row / hall), pluggable transceivers (power,
reach, links per module) and the medium used for each (link speed, length class): DAC,
AOC or fibre with a transceiver at each end. Every entry carries a ``source``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import CatalogError
from gpucluster_lib.resources import data_path, load_yaml

CABLING_PATH = data_path("cabling.yaml")
CABLE_TYPES = ("DAC", "AOC", "fibre-mmf", "fibre-smf", "copper-rj45")


@dataclass(frozen=True)
class LengthClass:
    id: str
    max_m: float
    typical_m: float
    doc: str


@dataclass(frozen=True)
class Transceiver:
    id: str
    name: str
    links: int
    speed_gbps: float
    reach_m: float
    power_w: float
    price_usd_estimate: float | None
    source: str


@dataclass(frozen=True)
class Medium:
    speed_gbps: float
    length_class: str
    cable: str
    part: str
    links_per_cable: int
    switch_end: str | None
    node_end: str | None
    node_end_twin: str | None
    power_w_per_cable: float
    source: str


@dataclass(frozen=True)
class Cabling:
    length_classes: dict[str, LengthClass]
    transceivers: dict[str, Transceiver]
    media: tuple[Medium, ...]
    twin_port_servers: frozenset[str]
    rack_width_m: float
    row_pitch_m: float
    slack_m: float

    def medium(self, speed_gbps: float, length_class: str) -> Medium:
        """The medium for a link: the smallest listed speed >= ``speed_gbps`` in that class."""
        rows = [m for m in self.media if m.length_class == length_class and m.speed_gbps >= speed_gbps - 1e-9]
        if not rows:
            rows = [m for m in self.media if m.length_class == length_class]
            return max(rows, key=lambda m: m.speed_gbps)
        return min(rows, key=lambda m: m.speed_gbps)

    def length_class_for(self, length_m: float) -> str:
        """The shortest inter-rack class whose reach covers ``length_m`` [m] (in-rack excluded)."""
        classes = sorted((c for c in self.length_classes.values() if c.id != "in-rack"), key=lambda c: c.max_m)
        for c in classes:
            if length_m <= c.max_m:
                return c.id
        return classes[-1].id

    def span_m(self, racks: int, racks_per_row: int) -> float:
        """Worst-case cable run [m] from a central network rack to any of ``racks`` racks.

        Half a row plus half the span of the rows plus slack; see ``layout`` in cabling.yaml.
        """
        racks = max(1, racks)
        rows = math.ceil(racks / racks_per_row)
        row_len = min(racks, racks_per_row) * self.rack_width_m
        return row_len / 2 + (rows - 1) / 2 * self.row_pitch_m + self.slack_m


def _need(entry: dict, key: str, where: str, kind: type | tuple = (int, float)) -> Any:
    if key not in entry or entry[key] is None:
        raise CatalogError("cabling.yaml", None, key, f"{where}: required value is missing")
    v = entry[key]
    if kind == (int, float) and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
        raise CatalogError("cabling.yaml", None, key, f"{where}: expected a number >= 0, got {v!r}")
    if kind is str and not isinstance(v, str):
        raise CatalogError("cabling.yaml", None, key, f"{where}: expected text, got {v!r}")
    return v


def parse_cabling(data: dict) -> Cabling:
    """Validate the YAML data of ``cabling.yaml`` (raises :class:`CatalogError`)."""
    if not isinstance(data, dict):
        raise CatalogError("cabling.yaml", None, None, "the top level must be a mapping")
    lcs = {}
    for e in data.get("length_classes") or []:
        where = f"length class {e.get('id')!r}"
        _need(e, "source", where, str)
        lcs[e["id"]] = LengthClass(_need(e, "id", where, str), float(_need(e, "max_m", where)),
                                   float(_need(e, "typical_m", where)), e.get("doc", ""))
    for req in ("in-rack", "in-row", "hall"):
        if req not in lcs:
            raise CatalogError("cabling.yaml", None, "length_classes", f"length class {req!r} is missing")
    txs = {}
    for e in data.get("transceivers") or []:
        where = f"transceiver {e.get('id')!r}"
        links = _need(e, "links", where)
        if links not in (1, 2, 4, 8):
            raise CatalogError("cabling.yaml", None, "links", f"{where}: links per module must be 1, 2, 4 or 8")
        price = e.get("price_usd_estimate")
        if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0):
            raise CatalogError("cabling.yaml", None, "price_usd_estimate", f"{where}: expected a price >= 0")
        txs[e["id"]] = Transceiver(_need(e, "id", where, str), _need(e, "name", where, str), int(links),
                                   float(_need(e, "speed_gbps", where)), float(_need(e, "reach_m", where)),
                                   float(_need(e, "power_w", where)), price, _need(e, "source", where, str))
    media = []
    for e in data.get("media") or []:
        where = f"medium {e.get('speed_gbps')} Gb/s {e.get('length_class')}"
        _need(e, "source", where, str)
        if e.get("length_class") not in lcs:
            raise CatalogError("cabling.yaml", None, "length_class", f"{where}: unknown length class")
        if e.get("cable") not in CABLE_TYPES:
            raise CatalogError("cabling.yaml", None, "cable", f"{where}: cable must be one of {', '.join(CABLE_TYPES)}")
        for end in ("switch_end", "node_end", "node_end_twin"):
            if e.get(end) is not None and e[end] not in txs:
                raise CatalogError("cabling.yaml", None, end, f"{where}: unknown transceiver {e[end]!r}")
        media.append(Medium(float(_need(e, "speed_gbps", where)), e["length_class"], e["cable"], e.get("part", ""),
                            int(e.get("links_per_cable", 1)), e.get("switch_end"), e.get("node_end"),
                            e.get("node_end_twin") or e.get("node_end"), float(e.get("power_w_per_cable", 0.0)),
                            e["source"]))
    for lc in lcs:
        if not any(m.length_class == lc for m in media):
            raise CatalogError("cabling.yaml", None, "media", f"no medium for length class {lc!r}")
    lay = data.get("layout") or {}
    _need(lay, "source", "layout", str)
    twin = data.get("twin_port_osfp_servers") or {}
    return Cabling(lcs, txs, tuple(media), frozenset(twin.get("ids") or ()),
                   float(_need(lay, "rack_width_m", "layout")), float(_need(lay, "row_pitch_m", "layout")),
                   float(_need(lay, "slack_m", "layout")))


@lru_cache(maxsize=4)
def load_cabling(path: str | None = None) -> Cabling:
    """Load and validate ``data/cabling.yaml`` (cached)."""
    p = Path(path) if path else CABLING_PATH
    try:
        data = load_yaml(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogError(p.name, None, None, "cable data file not found") from None
    return parse_cabling(data)
