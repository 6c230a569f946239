"""Resolve a scenario's ``hardware`` section against the catalogue.

Every calculation that needs "which accelerator, how many per node, how many nodes"
goes through :func:`resolve_hardware`, so the rules live in one place:

* ``hardware.server`` names a complete system (its GPU and count come with it) or a
  chassis (then ``hardware.accelerator`` and ``gpus_per_node`` fill it);
* ``hardware.accelerator`` alone means a generic node of ``gpus_per_node`` (default 8);
* the size is ``nodes``, or ``gpus`` (which must be a multiple of ``gpus_per_node``); 1 node by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpucluster_lib.catalog import Catalog, load_catalog
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import Scenario, catalog_files

DEFAULT_GPUS_PER_NODE = 8
DEFAULT_ACCELERATOR = "h100-sxm5-80gb"


@dataclass(frozen=True)
class ClusterHardware:
    """The resolved compute hardware of a scenario (catalogue rows as dicts)."""

    accelerator: dict[str, Any]
    server: dict[str, Any] | None
    gpus_per_node: int
    nodes: int

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def accelerator_id(self) -> str:
        return self.accelerator["id"]

    @property
    def nvlink_domain_gpus(self) -> int:
        """GPUs that share one NVLink (scale-up) domain [GPUs]: :func:`nvlink_domain_gpus`."""
        return nvlink_domain_gpus(self.accelerator, self.gpus_per_node, self.server)

    @property
    def racks_per_node(self) -> int:
        """Racks one node occupies [count]: a rack-scale system's ``racks_count`` (NVL72 1,
        NVL36x2 2); 0 for a rack-mount server, which the rack fit packs."""
        return int((self.server or {}).get("racks_count") or 0)

    @property
    def rack_scale(self) -> bool:
        """Whether one node is a whole rack-scale system (one catalogue row = one rack or rack pair)."""
        return self.racks_per_node > 0

    @property
    def server_id(self) -> str | None:
        return self.server["id"] if self.server else None


def nvlink_domain_gpus(acc: dict[str, Any], gpus_per_node: int, server: dict[str, Any] | None = None) -> int:
    """GPUs that share the scale-up (NVLink) fabric [GPUs].

    The server row's ``nvlink_domain_gpus`` (GB200 NVL72: 72, one rack; NVL36x2: 72 across its
    two racks; NVIDIA GB200 NVL72 product page), else an ``N-GPU domain`` in the accelerator's
    ``scaleup_link``, else the node. An ``NVLink bridge (2 GPUs)`` limits it to the pair; a domain
    is never smaller than one GPU.
    """
    if server and server.get("nvlink_domain_gpus"):
        return int(server["nvlink_domain_gpus"])
    link = str(acc.get("scaleup_link") or "")
    m = re.search(r"(\d+)-GPU domain", link)
    if m:
        return int(m[1])
    m = re.search(r"bridge \((\d+)", link)
    if m:
        return max(1, min(int(m[1]), gpus_per_node))
    return gpus_per_node


def catalog_for(scenario: Scenario) -> Catalog:
    """The catalogue plus the scenario's own CSV files (paths relative to the scenario file)."""
    if not scenario.catalog:
        return load_catalog()
    return load_catalog(catalog_files(scenario))


def resolve_hardware(scenario: Scenario, catalog: Catalog | None = None) -> ClusterHardware:
    cat = catalog or catalog_for(scenario)
    hw = scenario.hardware
    server = cat.server(hw.server, path="hardware.server") if hw.server else None
    if hw.accelerator:
        acc = cat.accelerator(hw.accelerator, path="hardware.accelerator")
        if server and server["kind"] != "chassis" and server["gpu_id"] and server["gpu_id"] != acc["id"]:
            raise ScenarioError("hardware.accelerator",
                                f"server {server['id']!r} comes with {server['gpu_id']!r}, not {acc['id']!r}; "
                                "drop hardware.accelerator or pick a chassis (kind 'chassis') to fill")
    elif server and server["gpu_id"]:
        acc = cat.accelerator(server["gpu_id"])
    elif server:
        raise ScenarioError("hardware.accelerator",
                            f"{server['id']!r} is an empty chassis: name the accelerator to put in it")
    else:
        acc = cat.accelerator(DEFAULT_ACCELERATOR)
    if hw.gpus_per_node is not None:
        gpn = hw.gpus_per_node
        if server and server["kind"] != "chassis" and server["gpu_count"] and gpn != server["gpu_count"]:
            raise ScenarioError("hardware.gpus_per_node",
                                f"server {server['id']!r} has {server['gpu_count']} GPUs, not {gpn}")
    elif server and server["gpu_count"]:
        gpn = int(server["gpu_count"])
    else:
        gpn = DEFAULT_GPUS_PER_NODE
    if hw.nodes is not None:
        nodes = hw.nodes
    elif hw.gpus is not None:
        if hw.gpus % gpn:
            raise ScenarioError("hardware.gpus", f"{hw.gpus} GPUs is not a multiple of {gpn} GPUs per node; "
                                f"use {hw.gpus - hw.gpus % gpn or gpn} or {hw.gpus + gpn - hw.gpus % gpn}")
        nodes = hw.gpus // gpn
    else:
        nodes = 1
    return ClusterHardware(accelerator=acc, server=server, gpus_per_node=gpn, nodes=nodes)
