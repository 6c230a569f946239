"""``gpucluster budget SCENARIO.yaml``: node, rack and hall power, cooling and space budget."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design

NAME = "budget"
ORDER = 20
HELP = "node power and checks, nodes per rack, racks, IT/facility power, cooling, floor area, energy"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)
    p.add_argument("--nodes", type=int, default=None, help="override hardware.nodes")


def _text(d: dict) -> str:
    n = d["node"]
    psu = f"PSU usable {n['psu_usable_w']:,.0f} W" if n["psu_usable_w"] else "PSU usable not given"
    if d.get("rack_layout") == "rack-scale":
        fit = f"a rack-scale system in {d['racks_per_node']} rack(s) each"
    else:
        fit = f"{d['nodes_per_rack']} per rack (limited by {d['binding_constraint']}" + (
            ", the vendor's rack layout)" if d.get("rack_layout") == "vendor" else ")")
    lines = [
        f"node        {n['name']}",
        f"            peak {n['peak_power_w']:,.0f} W, typical {n['typical_power_w']:,.0f} W, "
        f"{psu}, {n['rack_units']}U",
        f"nodes       {d['nodes']} ({d['gpus']} GPUs) + {d['spare_nodes']} hot spares, {fit}",
        f"racks       {d['racks']} ({d['compute_racks']} compute + {d['infra_racks']} network/storage), "
        f"{d['rows']} row(s), {d['floor_area_m2']:,.1f} m2",
        f"IT power    {d['it_power_kw']:,.1f} kW (typical {d['it_typical_kw']:,.1f} kW); "
        f"facility {d['facility_power_kw']:,.1f} kW at PUE {d['pue']}",
        f"heat        {d['heat_load_btu_per_h']:,.0f} BTU/h = {d['cooling_tons']:,.1f} tons; "
        f"airflow {d['airflow_cfm']:,.0f} CFM at dT {d['delta_t_c']} K",
        f"UPS         {d['ups_kw']:,.0f} kW; generator {d['generator_kva']:,.0f} kVA ({d['power_redundancy']}, "
        f"+{d['growth_headroom']:.0%} growth)",
        f"energy      {d['annual_energy_mwh']:,.1f} MWh/year, {d['annual_energy_cost']:,.0f} per year",
    ]
    cp = d.get("cooling_plant")
    if cp and (cp["cdus"] or cp["rear_doors"]):
        plant = (f"{cp['cdus']} {cp['cdu_kind']} CDUs of {cp['cdu_capacity_kw']:,.0f} kW" if cp["cdus"]
                 else f"{cp['rear_doors']} rear doors")
        lines.append(f"liquid      {cp['liquid_kw'] + cp['rear_door_kw']:,.1f} kW to water ({plant}), "
                     f"{cp['secondary_flow_l_per_min']:,.0f} l/min at dT {cp['coolant_delta_t_c']:g} K; "
                     f"residual air {cp['air_kw']:,.1f} kW")
    st = d.get("storage")
    if st and st.get("units"):
        tier = st.get("capacity_tier") or {}
        lines.append(f"storage     {st['units']} x {st['system']}: {st['read_gb_per_s']:,.0f} GB/s read, "
                     f"{st['write_gb_per_s']:,.0f} GB/s write, {st.get('total_capacity_tb') or 0:,.0f} TB"
                     + (f" ({tier['units']} x {tier['system']} capacity tier)" if tier.get("units") else ""))
    for f in d["findings"]:
        lines.append(f"{f['severity']:<8}    {f['code']}: {f['message']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    d = read_design(args, nodes=args.nodes).facility.to_dict()
    if args.json:
        print_json(d)
    else:
        print(_text(d))
    return 0
