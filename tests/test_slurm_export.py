"""The SLURM files of a design, read back by the real controller (Debian slurmctld 22.05).

Each test writes slurm.conf, gres.conf and topology.conf into a temporary folder, starts
``slurmctld -D -i`` in the foreground with SLURM_CONF pointing there (node names do not
resolve, so NodeAddr=127.0.0.1; no slurmd runs, nodes stay UNKNOWN), waits for
``scontrol ping`` and asks ``scontrol show nodes|partition|topology`` what it read.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from gpucluster_lib.design import Design
from gpucluster_lib.exports.slurm import SlurmSite, hostlist, slurm_files, switch_tree

EXAMPLES = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios"
INSTALL = "apt-get install -y slurmctld slurm-client (Debian/Ubuntu, as root)"


def _tool(name: str) -> str:
    path = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
    if path is None:
        pytest.fail(f"{name} is not installed: {INSTALL}")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _site(tmp: Path, controllers: tuple[str, ...]) -> SlurmSite:
    return SlurmSite(controllers=controllers, node_addr="127.0.0.1", auth_type="auth/none", cred_type="cred/none",
                     slurm_user=getpass.getuser(), state_save_location=str(tmp / "state"),
                     slurmd_spool_dir=str(tmp / "spool"), slurmctld_pid_file=str(tmp / "slurmctld.pid"),
                     slurmd_pid_file=str(tmp / "slurmd.pid"), slurmctld_log_file=str(tmp / "slurmctld.log"),
                     slurmd_log_file=str(tmp / "slurmd.log"), slurmctld_port=_free_port(),
                     slurmd_port=_free_port(), accounting="accounting_storage/none")


class Controller:
    """slurmctld in the foreground on the files of one design; ``show(...)`` runs scontrol."""

    def __init__(self, design: Design, tmp: Path, controllers: tuple[str, ...]):
        self.ctld, self.scontrol = _tool("slurmctld"), _tool("scontrol")
        (tmp / "state").mkdir()
        (tmp / "spool").mkdir()
        self.files = slurm_files(design, _site(tmp, controllers))
        for name, text in self.files.items():
            (tmp / name).write_text(text)
        self.env = {**os.environ, "SLURM_CONF": str(tmp / "slurm.conf")}
        self.log = tmp / "slurmctld.log"
        self.proc = subprocess.Popen([self.ctld, "-D", "-i"], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def show(self, *args: str) -> str:
        out = subprocess.run([self.scontrol, *args], env=self.env, capture_output=True, text=True, timeout=10)
        return out.stdout + out.stderr

    def wait(self, timeout_s: float = 30.0) -> str:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                pytest.fail("slurmctld exited: " + (self.log.read_text()[-2000:] if self.log.exists() else ""))
            try:
                ping = self.show("ping")
            except subprocess.TimeoutExpired:
                ping = ""
            if "(primary)" in ping and "is UP" in ping.split("\n")[0]:
                return ping
            time.sleep(0.5)
        pytest.fail("slurmctld did not answer scontrol ping: " + (self.log.read_text()[-2000:]
                                                                  if self.log.exists() else ""))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _nodes(text: str) -> list[dict[str, str]]:
    return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.startswith("NodeName=")]


def test_hostlist_ranges():
    assert hostlist(["node0001", "node0002", "node0003", "node0007"]) == "node[0001-0003,0007]"
    assert hostlist(["head01"]) == "head01"
    assert hostlist(["su01", "su02"]) == "su[01-02]"


def test_rail_optimised_cluster_round_trip(tmp_path):
    # Llama 3 70B example: 64 DGX H100 (8 H100, 2 x Xeon 8480C of 56 cores, 2 threads each,
    # 2048 GB: servers.csv / cpus.csv), rail-optimised in scalable units of 32 nodes
    d = Design.from_yaml(EXAMPLES / "llama3-70b-512-h100.yaml")
    conf = slurm_files(d)["slurm.conf"]
    # two head nodes and a redundant head node: primary and backup controller
    assert re.findall(r"^SlurmctldHost=(\S+)$", conf, re.M) == ["head01", "head02"]
    c = Controller(d, tmp_path, ("localhost", "head02(127.0.0.2)"))
    try:
        ping = c.wait()
        assert "(backup) at head02" in ping
        nodes = _nodes(c.show("show", "nodes", "-o"))
        assert len(nodes) == 64  # hardware.nodes of the scenario
        assert {n["Gres"] for n in nodes} == {"gpu:h100:8"}
        assert {n["CPUTot"] for n in nodes} == {"224"}  # 2 sockets x 56 cores x 2 threads
        assert {n["RealMemory"] for n in nodes} == {"1953125"}  # 2048e9 B / 2^20 = 1,953,125 MiB
        parts = c.show("show", "partition")
        # 5 replicas for 100 requests/s + 1 spare (N+1) = 6 replicas of TP 8 = 6 nodes serve
        assert re.search(r"PartitionName=serving.*?TotalNodes=6\b", parts, re.S)
        assert re.search(r"PartitionName=training.*?TotalNodes=58\b", parts, re.S)  # 64 - 6
        topo = c.show("show", "topology")
        # each scalable unit of 32 nodes is one leaf to SLURM, every spine reaches both units
        assert "SwitchName=su01 Level=0" in topo and "Nodes=node[0001-0032]" in topo
        assert "SwitchName=su02 Level=0" in topo and "Nodes=node[0033-0064]" in topo
        spines = re.findall(r"SwitchName=(\S+) Level=1 .*Switches=su\[01-02\]", topo)
        assert len(spines) == d.network.switches["spine"]
    finally:
        c.stop()


def test_three_tier_fat_tree_round_trip(tmp_path):
    # GPT-3 example: 128 DGX A100 x 8 HDR ports on 40-port QM8700 switches, non-blocking:
    # 20 ports down per leaf = 2 nodes (16 ports) per leaf -> 128 / 2 = 64 leaves; two tiers
    # reach 40 x 20 = 800 endpoints < 1024, so the fabric has spines and cores
    d = Design.from_yaml(EXAMPLES / "gpt3-175b-1024-a100.yaml")
    tree = switch_tree(d)
    assert sum(1 for _, kind, _ in tree if kind == "Nodes") == 64
    c = Controller(d, tmp_path, ("localhost",))
    try:
        c.wait()
        nodes = _nodes(c.show("show", "nodes", "-o"))
        assert len(nodes) == 128
        assert {n["Gres"] for n in nodes} == {"gpu:a100:8"}
        assert {n["CPUTot"] for n in nodes} == {"256"}  # 2 x EPYC 7742 of 64 cores, 2 threads
        topo = c.show("show", "topology")
        leaves = re.findall(r"SwitchName=(leaf\d+) Level=0 .*Nodes=(\S+)", topo)
        assert len(leaves) == 64 and ("leaf001", "node[0001-0002]") in leaves
        assert ("leaf064", "node[0127-0128]") in leaves
        assert len(re.findall(r"Level=1 ", topo)) == d.network.switches["spine"]
        cores = re.findall(r"SwitchName=(core\d+) Level=2 \S+ Nodes=(\S+)", topo)
        assert len(cores) == d.network.switches["core"]
        assert {n for _, n in cores} == {"node[0001-0128]"}  # every core reaches every node
        assert "PartitionName=training" in c.show("show", "partition")
    finally:
        c.stop()
