"""Exports from one design: Kubernetes YAML against the OpenAPI schemas, the BOM against the
cost stage's CapEx, the NetBox import against its formats' required fields, rack SVGs, the CLI."""

from __future__ import annotations

import contextlib
import csv
import io
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import kubernetes_validate
import pytest
import yaml

from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.exports import export_files, zip_bytes
from gpucluster_lib.exports.bom import bom_csv, bom_rows, bom_total, bom_xlsx
from gpucluster_lib.exports.k8s import KUBERNETES_OBJECT_FILES, k8s_files
from gpucluster_lib.exports.netbox import DEVICE_TYPE_REQUIRED, REQUIRED, netbox_files
from gpucluster_lib.exports.racks import rack_layout
from gpucluster_lib.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios"
LLAMA = EXAMPLES / "llama3-70b-512-h100.yaml"
REF = EXAMPLES / "reference-8x-a100.yaml"
K8S_VERSION = "1.30.0"

#: Keys of a device type in the community device-type library (schema/devicetype.json,
#: "additionalProperties": false) and of an interface (schema/components.json).
DEVICE_TYPE_KEYS = {"manufacturer", "model", "slug", "part_number", "u_height", "is_full_depth", "airflow",
                    "weight", "weight_unit", "front_image", "rear_image", "subdevice_role", "is_powered",
                    "console-ports", "console-server-ports", "power-ports", "power-outlets", "interfaces",
                    "front-ports", "rear-ports", "module-bays", "device-bays", "inventory-items", "description",
                    "comments"}
INTERFACE_KEYS = {"name", "label", "type", "enabled", "mgmt_only", "description", "bridge", "poe_mode", "poe_type",
                  "rf_role"}


@pytest.fixture(scope="module")
def llama():
    return Design.from_yaml(LLAMA)


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# --------------------------------------------------------------------------- Kubernetes


def test_kubernetes_objects_validate_against_the_openapi_schemas(llama):
    files = k8s_files(llama)
    kinds, shapes = [], set()
    for name in KUBERNETES_OBJECT_FILES:
        for doc in yaml.safe_load_all(files[name]):
            kinds.append(doc["kind"])
            # nodes of one role differ only in label values: validate each shape once (the schema
            # load per call costs about 0.2 s)
            shape = (doc["kind"], tuple(sorted(doc["metadata"].get("labels", {}))), yaml.safe_dump(doc.get("spec", {}))
                     if doc["kind"] != "Node" else tuple(t["key"] for t in doc["spec"]["taints"]))
            if shape not in shapes:
                shapes.add(shape)
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises on any schema error
    assert len(shapes) >= 8
    # 64 compute nodes + up to 3 control-plane nodes (2 head nodes in this design)
    assert kinds.count("Node") == 64 + 2
    assert {"PriorityClass", "Deployment", "Service", "PodDisruptionBudget", "Namespace"} <= set(kinds)


def test_the_validator_rejects_a_broken_object():
    bad = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}, "spec": {"taints": [{"effect": "NoSchedule"}]}}
    with pytest.raises(kubernetes_validate.ValidationError, match="'key' is a required property"):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_control_plane_of_three_with_stacked_etcd():
    s = load_scenario(LLAMA).replace(operations__scheduler="both", hardware__head_nodes=5)
    files = k8s_files(Design(s))
    nodes = list(yaml.safe_load_all(files["nodes.yaml"]))
    cp = [n for n in nodes if "node-role.kubernetes.io/control-plane" in n["metadata"]["labels"]]
    assert [n["metadata"]["name"] for n in cp] == ["head01", "head02", "head03"]
    assert all(n["spec"]["taints"][0]["effect"] == "NoSchedule" for n in cp)
    cluster, init = yaml.safe_load_all(files["control-plane.yaml"])
    assert cluster["kind"] == "ClusterConfiguration" and "local" in cluster["etcd"]  # stacked etcd
    assert cluster["etcd"]["local"]["peerCertSANs"] == ["head01", "head02", "head03"]
    assert init["nodeRegistration"]["name"] == "head01"
    values = yaml.safe_load(files["gpu-operator-values.yaml"])
    assert values["driver"]["version"] == "550.127.08" and values["dcgmExporter"]["enabled"] is True
    assert yaml.safe_load(files["network-operator-values.yaml"])["ibKubernetes"]["deploy"] is True  # QM9700 is IB


def test_serving_replicas_are_n_plus_one(llama):
    docs = {d["kind"]: d for d in yaml.safe_load_all(k8s_files(llama)["serving.yaml"])}
    # 5 replicas serve 100 requests/s (serving stage); one spare: 6 replicas, 5 must stay up
    assert docs["Deployment"]["spec"]["replicas"] == 6
    assert docs["PodDisruptionBudget"]["spec"]["minAvailable"] == 5
    limits = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 8  # tensor parallel 8
    assert docs["Service"]["spec"]["type"] == "LoadBalancer"


# --------------------------------------------------------------------------- bill of materials


@pytest.mark.parametrize("path", [LLAMA, REF, EXAMPLES / "gpt3-175b-1024-a100.yaml"], ids=["llama", "ref", "gpt3"])
def test_bom_total_is_the_cost_stage_capex(path):
    d = Design.from_yaml(path)
    rows = bom_rows(d)
    assert bom_total(rows) == pytest.approx(d.cost.capex["total"], rel=1e-12)
    assert all(r["price_source"] for r in rows)
    assert all(r["extended_price"] == pytest.approx(r["quantity"] * r["unit_price"]) for r in rows)


def test_bom_of_the_reference_rack_by_hand():
    rows = {r["sku"]: r for r in bom_rows(Design.from_yaml(REF))}
    # one 8-GPU node: 8 x A100 price x (1 + 0.35 chassis overhead) = 124,200 (cost_defaults)
    assert rows["reference-a100-4u"]["quantity"] == 1
    assert rows["reference-a100-4u"]["unit_price"] == pytest.approx(124_200)
    # one head node at the 25,000 default; one rack with PDUs at 6,000
    assert rows["head-node"]["extended_price"] == pytest.approx(25_000)
    assert rows["rack"]["extended_price"] == pytest.approx(6_000)
    # the compute switch: 40 ports x 600 per 200G port = 24,000
    assert rows["qm8700"]["unit_price"] == pytest.approx(24_000)


def test_bom_csv_and_xlsx_carry_the_same_total(llama):
    from openpyxl import load_workbook

    total = llama.cost.capex["total"]
    last = list(csv.reader(io.StringIO(bom_csv(llama))))[-1]
    assert last[0] == "total" and float(last[-1]) == pytest.approx(total)
    wb = load_workbook(io.BytesIO(bom_xlsx(llama)))
    ws = wb.active
    header = [c.value for c in ws[1]]
    assert header[:4] == ["Category", "SKU", "Description", "Quantity"]
    values = [row[7] for row in ws.iter_rows(min_row=2, max_row=ws.max_row - 1, values_only=True)]
    assert sum(values) == pytest.approx(total)
    assert ws.cell(ws.max_row, 8).value == f"=SUM(H2:H{ws.max_row - 1})"
    assert bom_xlsx(llama) == bom_xlsx(llama)  # fixed timestamps: the same bytes every time


# --------------------------------------------------------------------------- NetBox


def test_netbox_files_have_the_import_forms_required_fields(llama):
    files = netbox_files(llama)
    for name, required in REQUIRED.items():
        rows = _rows(files[name])
        assert rows, name
        for r in rows:
            missing = [k for k in required if not r.get(k)]
            assert not missing, f"{name}: {missing} empty in {r}"
    devices = _rows(files["devices.csv"])
    # every device sits in a rack at a position with a face (NetBox requires the face with a position)
    assert all(r["rack"] and r["position"] and r["face"] == "front" for r in devices)
    assert sum(1 for r in devices if r["role"] == "compute") == 64
    racks = {r["name"] for r in _rows(files["racks.csv"])}
    assert {r["rack"] for r in devices} <= racks and len(racks) == llama.facility.racks


def test_netbox_storage_vendor_hides_only_an_unknown_id(llama):
    from gpucluster_lib.exports.netbox import storage_vendor

    cat = llama.catalog
    assert storage_vendor(cat, "ddn-ai400x2") == "DDN"  # storage.csv row ddn-ai400x2, column vendor
    assert storage_vendor(cat, "no-such-system") == "Generic"  # outside the catalogue: its default sizing

    class Broken:  # any other error of the lookup is a bug and must surface
        def get(self, table, id_):
            raise TypeError("broken catalogue")

    with pytest.raises(TypeError, match="broken catalogue"):
        storage_vendor(Broken(), "ddn-ai400x2")


def test_netbox_cables_end_on_interfaces_of_the_device_types(llama):
    files = netbox_files(llama)
    types = {}
    for path, text in files.items():
        if path.startswith("device-types/"):
            t = yaml.safe_load(text)
            assert set(DEVICE_TYPE_REQUIRED) <= set(t) and set(t) <= DEVICE_TYPE_KEYS, path
            assert all({"name", "type"} <= set(i) and set(i) <= INTERFACE_KEYS for i in t.get("interfaces", []))
            types[t["model"]] = {i["name"] for i in t.get("interfaces", [])}
    model_of = {r["name"]: r["device_type"] for r in _rows(files["devices.csv"])}
    cables = _rows(files["cables.csv"])
    # Llama example: 64 nodes x 8 rails = 512 node-leaf cables + the leaf-spine cables of the cable list
    assert len(cables) == len(llama.network.cable_list().query("network == 'compute'"))
    for c in cables:
        for side in ("a", "b"):
            dev = c[f"side_{side}_device"]
            assert c[f"side_{side}_name"] in types[model_of[dev]], c
            assert c[f"side_{side}_type"] == "dcim.interface"


# --------------------------------------------------------------------------- racks, CLI, zip


def test_rack_layout_matches_the_budget_and_has_no_overlap(llama):
    racks = rack_layout(llama)
    assert len(racks) == llama.facility.racks  # 17 compute + 1 infrastructure rack
    names = [d.name for r in racks for d in r.devices]
    assert len(names) == len(set(names))
    for r in racks:
        used: set[int] = set()
        for d in r.devices:
            units = set(range(d.position, d.position + d.height_u))
            assert not units & used and max(units) <= r.u_height
            used |= units
    svgs = export_files("racks", llama)
    assert len(svgs) == len(racks)
    root = ElementTree.fromstring(svgs["rack001.svg"])
    assert root.tag.endswith("svg")


def test_rack_export_and_budget_count_the_same_racks_of_whole_16u_chassis():
    # RoCE example: 3,072 DGX H100 + hot spares, 4 a rack (DGX H100 SuperPOD RA, 8U each); the
    # fabric is 360 Arista 7808R3 chassis (171 + 144 compute, 36 + 9 storage, the topology design),
    # 16U each (switches.csv, Arista 7800R3 white paper Table 1). A 42U rack keeps 2U reserved
    # (patch panel, management switch) -> 40U usable: 2 chassis a rack (3 x 16U = 48U > 40U), so
    # 180 racks hold them; the remaining 45 x 2U SN4600C, 44 x 2U DDN AI400X2, 2 x 4U capacity
    # units and 2 x 1U head nodes (188U) fit in the 180 x 8U left. Spreading 5,948U over 40U
    # racks as if devices could be split gave ceil(148.7) = 149 racks and 927 in all.
    d = Design(load_scenario(EXAMPLES / "roce-24k-h100.yaml"))
    b = d.facility
    assert b.compute_racks == -(-(3072 + b.spare_nodes) // 4)  # ceil(installed nodes / 4)
    assert b.infra_racks == 180
    assert b.racks == b.compute_racks + 180 == len(rack_layout(d))
    assert b.compute_racks == 778  # 3,111 installed / 4 = 777.75 -> 778 (39 hot spares)
    assert sum(1 for r in b.infra_layout for x in r if x.model == "arista-7808r3") == 360
    cap = min(b.rack_fit.power_limit_w, b.rack_fit.cooling_limit_w)  # 4 x 10.2 kW + 0.1 kW = 40.9 kW
    assert cap == pytest.approx(40_900)
    for rack in b.infra_layout:  # whole devices, within the rack's units and power
        assert sum(x.height_u for x in rack) <= 40 and sum(x.power_w for x in rack) <= cap + 1e-6
    # every watt of the switches (with their optics), storage and head nodes is in some rack
    assert sum(x.power_w for x in b.infra_devices) == pytest.approx(
        b.network_power_w + b.storage_power_w + b.head_power_w)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_exports_the_budgets_racks(path):
    d = Design(load_scenario(path))
    racks = rack_layout(d)
    assert len(racks) == d.facility.racks
    placed = sorted(x.name for r in racks for x in r.devices if x.kind in ("switch", "storage", "head"))
    assert len(placed) == len(set(placed)) == len(d.facility.infra_devices)
    for r in racks:  # every device inside its rack (a 48U NVL72 rack is drawn 48U high)
        assert all(1 <= x.position and x.position + x.height_u - 1 <= r.u_height for x in r.devices), r.name


def test_a_device_the_shared_rack_cannot_hold_is_refused_not_dropped():
    # reference design: one 4U DGX A100 in a 42U rack with 2U reserved -> 36U free; its
    # compute switch, management switch and head node (1U each) leave 33U. A budget that
    # (wrongly) keeps 34 more 1U devices there: 33 fit, the 34th must not vanish from the export.
    import dataclasses
    import types

    from gpucluster_lib.errors import GpuClusterError
    from gpucluster_lib.hardware.rack import RackDevice as BudgetDevice

    d = Design(load_scenario(REF))
    b = d.facility
    assert b.infra_racks == 0 and len(b.infra_devices) == 3
    extra = tuple(BudgetDevice("head", "head node", "head-node", 1, 750.0, i) for i in range(1, 35))
    fake = types.SimpleNamespace(facility=dataclasses.replace(b, infra_devices=b.infra_devices + extra),
                                 node=d.node, operations=d.operations, scenario=d.scenario, network=d.network)
    with pytest.raises(GpuClusterError, match=r"head35 \(head-node, 1U\) does not fit the one compute rack, "
                                              r"which has 0U free"):
        rack_layout(fake)
    # 33 extra devices fill the rack to its 40 usable units
    fake.facility = dataclasses.replace(b, infra_devices=b.infra_devices + extra[:33])
    (rack,) = rack_layout(fake)
    assert rack.used_u == 42


def _cli(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


def test_export_command_writes_each_kind(tmp_path):
    for kind in ("slurm", "k8s", "netbox", "racks"):
        assert _cli("export", kind, str(REF), "-o", str(tmp_path / kind)) == 0
    assert (tmp_path / "slurm" / "topology.conf").read_text().startswith("# topology.conf")
    assert (tmp_path / "k8s" / "nodes.yaml").exists() and (tmp_path / "racks" / "rack001.svg").exists()
    assert _cli("export", "bom", str(REF), "-o", str(tmp_path / "bom.csv")) == 0
    assert _cli("export", "bom", str(REF), "-o", str(tmp_path / "bom.xlsx")) == 0
    assert (tmp_path / "bom.xlsx").read_bytes()[:2] == b"PK"
    assert _cli("export", "bom", str(REF), "-o", str(tmp_path / "bom.txt")) == 2  # clear error, exit 2


def test_zip_is_deterministic(llama):
    files = export_files("slurm", llama)
    a, b = zip_bytes(files, "x"), zip_bytes(files, "x")
    assert a == b
    assert sorted(zipfile.ZipFile(io.BytesIO(a)).namelist()) == ["x/gres.conf", "x/slurm.conf", "x/topology.conf"]
