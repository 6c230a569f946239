"""Calibration from measurements: nccl-tests parsing, alpha-beta fits, profiles, the CLI, the design."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from gpucluster_lib.calibration.gemm import GemmCurve
from gpucluster_lib.calibration.nccl import (
    CalibrationError,
    fit_alpha_beta,
    parse_nccl_tests,
    read_nccl_tests,
)
from gpucluster_lib.calibration.profile import (
    CalibrationProfile,
    load_profile,
    profile_from_dict,
    shipped_profiles,
)
from gpucluster_lib.calibration.run import calibrate, dense_peaks, gemm_frame, read_gemm_table
from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.scenario import from_dict, loads

DATA = Path(__file__).parent / "data"


# ----------------------------------------------------------------- nccl-tests in its printed format

def nccl_text(sizes, times_us, *, ranks, collective="all_reduce", hosts=1, dtype="float"):
    """Rows exactly as nccl-tests prints them (src/common.cu: '%12li  %12li  %8s  %6s  %6i', then time as
    %7.0f from 10 ms, %7.1f from 100 us, else %7.2f, and '%6.2f' bandwidths), with rank lines."""
    factor = {"all_reduce": 2 * (ranks - 1) / ranks}.get(collective, (ranks - 1) / ranks)
    op = "none" if collective == "all_gather" else "sum"
    per_host = ranks // hosts
    lines = [f"# Collective test starting: {collective}_perf", "#", "# Using devices"]
    for r in range(ranks):
        lines.append(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on node{r // per_host:03d} device "
                     f"{r % per_host:2d} [0000:{r:02x}:00] NVIDIA H100 80GB HBM3")
    lines += ["#", "#                                                              out-of-place                       "
              "in-place",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
              "busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
              "(GB/s)"]

    def tstr(t):
        return f"{t:7.0f}" if t >= 10000 else f"{t:7.1f}" if t >= 100 else f"{t:7.2f}"

    for s, t in zip(sizes, times_us, strict=True):
        alg = s / (t * 1e-6) / 1e9
        cell = f"  {tstr(t)}  {alg:6.2f}  {alg * factor:6.2f}  {0:5d}"
        lines.append(f"{s:12d}  {s // 4:12d}  {dtype:>8s}  {op:>6s}  {-1:6d}{cell}{cell}")
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.0", "#",
              f"# Collective test concluded: {collective}_perf"]
    return "\n".join(lines) + "\n"


def test_real_all_reduce_two_nodes():
    t = read_nccl_tests(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt")
    assert (t.collective, t.ranks, t.ranks_per_host, t.level) == ("all_reduce", 16, 8, "fabric")  # 16 rank lines, 2 hosts
    assert len(t.rows) == 31  # 8 B to 8 GB, factor 2
    last = t.rows[-1]
    assert (last.size_bytes, last.time_us, last.busbw_gb_per_s) == (8589934592, 47535.0, 338.82)  # last printed row
    assert t.devices[0] == "NVIDIA H100 80GB HBM3"
    f = fit_alpha_beta(t)
    assert f.latency_s == pytest.approx(123.3e-6)        # median of the three smallest: 135.8, 123.2, 123.3 us
    assert f.alpha_s == pytest.approx(123.3e-6 / 30)     # ring all-reduce steps 2 (n - 1) = 30
    assert 263.69 < f.bus_bandwidth_gb_per_s < 338.82    # between the busbw printed at 512 MB and at 8 GB


def test_real_all_gather_without_rank_lines_or_comment_marks():
    t = read_nccl_tests(DATA / "nccl_all_gather_2x8_h100_a3high.txt")
    assert t.collective == "all_gather"   # redop 'none'
    assert t.ranks == 16                   # 50.17 / 53.52 = 0.9374 = (n-1)/n -> n = 16 (2 nodes x 8, dstack README)
    assert len(t.rows) == 11 and t.rows[0].time_us == 784.9
    assert any("inferred" in n for n in t.notes)
    f = fit_alpha_beta(t, level="fabric", gpus_per_node=8)   # 2 nodes x 8 (dstack README)
    assert 40 < f.bus_bandwidth_gb_per_s < 60  # the printed busbw plateaus at 49.3-50.2 GB/s
    assert f.ranks_per_host == 8


def test_old_format_without_root_column():
    t = read_nccl_tests(DATA / "nccl_all_reduce_2x1_a100_old_format.txt")
    assert (t.collective, t.ranks, t.level) == ("all_reduce", 2, "nvlink")   # file name; 2 rank lines on one host
    assert [r.time_us for r in t.rows] == [10.14, 10.14]                     # the 'time' column, not 'redop'
    # the fixture is an excerpt: the header's 'maxBytes 1073741824', but the rows stop at 64 B
    with pytest.raises(CalibrationError, match="the output ends at 64 B, but the run went to 1 GiB .* cut short"):
        fit_alpha_beta(t)
    t.last_size_bytes = None   # without the header line: only the latency-bound rows are left
    with pytest.raises(CalibrationError, match=r"even the largest message \(64 B\) is latency-bound"):
        fit_alpha_beta(t)


def test_single_size_gives_bandwidth_only():
    f = fit_alpha_beta(read_nccl_tests(DATA / "nccl_all_reduce_8_a100_single_size.txt"))
    # 10737418240 B x 2 x 7/8 / 80922 us = 232.2 GB/s, as printed
    assert f.bus_bandwidth_gb_per_s == pytest.approx(10737418240 * 1.75 / 80922e-6 / 1e9)
    assert f.bus_bandwidth_gb_per_s == pytest.approx(232.20, abs=0.01)
    assert f.alpha_s is None and f.level == "nvlink"


@pytest.mark.parametrize(("collective", "steps", "factor"), [
    ("all_reduce", 14, 1.75),        # 2 (n-1), 2 (n-1)/n for n = 8
    ("reduce_scatter", 7, 0.875),    # n - 1, (n-1)/n
    ("all_gather", 7, 0.875),
])
def test_fit_recovers_known_alpha_beta(collective, steps, factor):
    alpha, bw = 2.0e-6, 360e9                       # known: 2 us per step, 360 GB/s bus bandwidth
    sizes = [2 ** i for i in range(3, 34)]          # 8 B .. 8 GB
    times = [(steps * alpha + factor * s / bw) * 1e6 for s in sizes]
    t = parse_nccl_tests(nccl_text(sizes, times, ranks=8, collective=collective))
    assert (t.collective, t.ranks, t.level) == (collective, 8, "nvlink")
    f = fit_alpha_beta(t)
    assert f.alpha_s == pytest.approx(alpha, rel=0.01)
    assert f.bus_bandwidth_gb_per_s == pytest.approx(360.0, rel=0.01)
    assert f.rms_error < 0.01


def test_fit_without_small_messages_uses_one_line():
    alpha, bw = 20e-6, 50e9
    sizes = [2 ** i for i in range(23, 34)]          # 8 MB .. 8 GB: no latency plateau
    times = [(15 * alpha + 15 / 16 * s / bw) * 1e6 for s in sizes]
    f = fit_alpha_beta(parse_nccl_tests(nccl_text(sizes, times, ranks=16, collective="all_gather", hosts=2)))
    assert f.level == "fabric" and f.ranks_per_host == 8
    assert f.bus_bandwidth_gb_per_s == pytest.approx(50.0, rel=0.01)
    # the intercept recovers the latency of this exact model (15 steps x 20 us), but from 8 MiB up it is an
    # extrapolation: it fits B and sets no alpha
    assert f.latency_s == pytest.approx(15 * alpha, rel=0.05)
    assert f.alpha_s is None and "extrapolated (the smallest size is 8 MiB)" in f.method


def test_mpi_prefixes_and_log_lines_are_skipped():
    text = nccl_text([1 << 20, 1 << 30], [20.0, 3000.0], ranks=8)
    noisy = "\n".join(f"[1,0]<stdout>:{line}" if i % 2 else line for i, line in enumerate(text.splitlines()))
    noisy = "node1:123:456 [0] NCCL INFO Init COMPLETE\n" + noisy
    t = parse_nccl_tests(noisy)
    assert [r.size_bytes for r in t.rows] == [1 << 20, 1 << 30] and t.ranks == 8


def test_bad_nccl_input_names_the_file():
    with pytest.raises(CalibrationError, match="mine.txt: no result rows found"):
        parse_nccl_tests("hello\nworld\n", source="mine.txt")
    with pytest.raises(CalibrationError, match="cannot read the nccl-tests output"):
        read_nccl_tests(DATA / "missing.txt")
    text = nccl_text([1 << 20, 1 << 30], [20.0, 3000.0], ranks=8).replace("all_reduce_perf", "alltoall_perf")
    with pytest.raises(CalibrationError, match="the alltoall test is not supported"):
        parse_nccl_tests(text.replace("sum", "sum"), collective="alltoall")
    assert issubclass(CalibrationError, GpuClusterError)


# ----------------------------------------------------------------- profiles

def small_profile() -> CalibrationProfile:
    curve = GemmCurve(eff_max=0.7, m_half=100, n_half=100, k_half=100, peak_tflops=989.4)
    t = parse_nccl_tests(nccl_text([8, 16, 32, 1 << 30, 1 << 31], [28.0, 28.0, 28.0, 5000.0, 10000.0], ranks=8))
    return CalibrationProfile("mine", "2026-11-30", device="NVIDIA H100", gemm={"bf16": curve},
                              links={"nvlink": fit_alpha_beta(t)})


def test_profile_round_trip(tmp_path):
    p = small_profile()
    path = p.save(tmp_path / "mine.yaml")
    back = load_profile(path)
    assert back.name == "mine" and back.date == "2026-11-30"
    assert back.gemm["bf16"].eff_max == 0.7
    assert back.links["nvlink"].bus_bandwidth_gb_per_s == pytest.approx(p.links["nvlink"].bus_bandwidth_gb_per_s,
                                                                        rel=1e-6)
    assert yaml.safe_load(path.read_text())["version"] == 1


def test_a_profile_reads_the_same_when_a_fit_differs_in_its_last_digits():
    # numpy's sums take other SIMD paths on other CPUs, so a fit can end 214.094188 on one machine
    # and 214.094189 on another (seen: the calibration notebook between two CI machines); the saved
    # profile keeps six significant digits, so both write 214.094
    a, b = small_profile(), small_profile()
    a.gemm["bf16"] = GemmCurve(eff_max=0.7, m_half=214.0941884, n_half=100, k_half=100, peak_tflops=989.4)
    b.gemm["bf16"] = GemmCurve(eff_max=0.7, m_half=214.0941886, n_half=100, k_half=100, peak_tflops=989.4)
    assert a.to_yaml() == b.to_yaml()
    assert yaml.safe_load(a.to_yaml())["gemm"]["bf16"]["m_half"] == 214.094


def test_the_fit_chart_is_the_same_when_a_fit_differs_in_its_last_digits():
    from gpucluster_lib.charts.calibration import gemm_fit
    table = pd.DataFrame({"m": [256, 4096], "n": [256, 4096], "k": [256, 4096], "dtype": "bf16",
                          "tflops": [6.45277538462, 783.328793548], "predicted_tflops": [5.61715614793, 790.635823011],
                          "error": [-0.1295, 0.0093]})
    nudged = table.assign(predicted_tflops=table["predicted_tflops"] * (1 + 3e-9))
    assert gemm_fit(table).to_dict() == gemm_fit(nudged).to_dict()
    # four significant digits: 5.617 and 790.6 TFLOP/s
    values = [v for d in gemm_fit(table).to_dict()["datasets"].values() for v in d]
    assert sorted(r["predicted_tflops"] for r in values if "predicted_tflops" in r) == [5.617, 790.6]


def test_efficiency_overrides_by_hand():
    p = small_profile()
    nv = p.links["nvlink"]
    # bus bandwidth over the nominal 450 GB/s per direction; alpha = 28 us / 14 steps = 2 us
    o = p.efficiency_overrides(nvlink_bw_bytes_per_s=450e9, nic_bw_bytes_per_s=50e9)
    assert o["nvlink_efficiency"] == pytest.approx(nv.bus_bandwidth_gb_per_s / 450)
    assert o["alpha_nvlink_s"] == pytest.approx(2e-6)
    assert "network_efficiency" not in o


@pytest.mark.parametrize(("data", "message"), [
    ({"date": "2026-01-01"}, "name: a profile needs a name"),
    ({"name": "x"}, "date: a profile needs the date"),
    ({"name": "x", "date": "yesterday"}, "date: must be a date like 2026-12-01"),
    ({"name": "x", "date": "2026-01-01", "colour": 1}, "colour: unknown key"),
    ({"name": "x", "date": "2026-01-01", "gemm": {"fp64": {}}}, "gemm.fp64: unknown GEMM dtype"),
    ({"name": "x", "date": "2026-01-01", "gemm": {"bf16": {"eff_max": 2, "m_half": 1, "n_half": 1, "k_half": 1}}},
     "gemm.bf16: eff_max must be at most 1"),
    ({"name": "x", "date": "2026-01-01", "links": {"pcie": {}}}, "links.pcie: unknown link level"),
    ({"name": "x", "date": "2026-01-01",
      "links": {"fabric": {"collective": "all_reduce", "ranks": 16, "bus_bandwidth_gb_per_s": -3}}},
     "links.fabric.bus_bandwidth_gb_per_s: must be a positive number"),
    ({"name": "x", "date": "2026-01-01", "version": 7}, "version: 7 is not supported"),
    # the audit's profile that crashed the plan search and printed a step time of nan (x^100 overflows)
    ({"name": "x", "date": "2026-01-01",
      "gemm": {"bf16": {"eff_max": 0.5, "m_half": 1, "n_half": 1, "k_half": 1, "exponent": 100}}},
     "gemm.bf16: exponent must be between 0.25 and 8"),
])
def test_bad_profiles_name_the_key(data, message):
    with pytest.raises(CalibrationError, match=message):
        profile_from_dict(data, where="p.yaml")


def test_shipped_example_profile_is_marked_and_reproducible():
    path = shipped_profiles()["example-h100-public-data"]
    prof = load_profile(path)
    assert prof.example is True and "EXAMPLE" in prof.source
    redo = calibrate("x", gemm=read_gemm_table(DATA / "xla_sm90_gemm_subset.csv"),
                     nccl=[(read_nccl_tests(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"), None)],
                     peaks=dense_peaks("h100-sxm5-80gb"), date="2026-12-01").profile
    assert redo.gemm["bf16"].eff_max == pytest.approx(prof.gemm["bf16"].eff_max, rel=1e-5)
    assert redo.links["fabric"].bus_bandwidth_gb_per_s == pytest.approx(prof.links["fabric"].bus_bandwidth_gb_per_s,
                                                                        rel=1e-5)


# ----------------------------------------------------------------- GEMM tables

def test_gemm_table_checks_name_row_and_column():
    good = pd.DataFrame({"m": [1], "n": [1], "k": [1], "dtype": ["bf16"], "TFLOP/s": [1.0]})
    assert list(gemm_frame(good).columns) == ["m", "n", "k", "dtype", "tflops"]
    with pytest.raises(CalibrationError, match="missing column 'k'"):
        gemm_frame(good.drop(columns="k"), "t.csv")
    with pytest.raises(CalibrationError, match="t.csv, row 2, column 'tflops': must be a positive number"):
        gemm_frame(good.assign(**{"TFLOP/s": [-1.0]}), "t.csv")
    with pytest.raises(CalibrationError, match="row 2, column 'dtype': unknown GEMM dtype"):
        gemm_frame(good.assign(dtype=["fp64"]), "t.csv")
    with pytest.raises(CalibrationError, match="no dense bf16 peak"):
        calibrate("x", gemm=good, peaks={})
    with pytest.raises(CalibrationError, match="nothing to calibrate"):
        calibrate("x")


def test_calibrate_recovers_a_known_gemm_curve():
    known = GemmCurve(eff_max=0.78, m_half=250.0, n_half=120.0, k_half=300.0, exponent=2.0, fixed_time_s=3e-6,
                      peak_tflops=1978.9)
    dims = np.array([128, 512, 1024, 4096, 16384])
    m, n, k = (a.ravel() for a in np.meshgrid(dims, dims, dims, indexing="ij"))
    table = pd.DataFrame({"m": m, "n": n, "k": k, "dtype": "fp8", "tflops": known.efficiency(m, n, k) * 1978.9})
    r = calibrate("fp8-box", gemm=table, peaks={"fp8": 1978.9}, date="2026-12-01")
    c = r.profile.gemm["fp8"]
    for name in ("eff_max", "m_half", "n_half", "k_half", "fixed_time_s"):
        assert getattr(c, name) == pytest.approx(getattr(known, name), rel=0.01), name
    assert r.gemm_quality["fp8"]["max_abs_error"] < 0.01


def test_gemm_tables_without_rows_or_with_fractional_dimensions_are_refused(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("m,n,k,dtype,tflops\n")
    with pytest.raises(CalibrationError, match="empty.csv: no rows; a GEMM table has one row per measured shape"):
        read_gemm_table(empty)
    assert main(["calibrate", "--name", "z", "--accelerator", "h100-sxm5-80gb", "--gemm", str(empty),
                 "-o", str(tmp_path / "z.yaml")]) == 2
    assert not (tmp_path / "z.yaml").exists()   # no empty profile written
    half = tmp_path / "half.csv"
    half.write_text("m,n,k,dtype,tflops\n# a comment\n4096,4096,4096,bf16,780\n4096.5,4096,4096,bf16,780\n")
    with pytest.raises(CalibrationError, match="half.csv, line 4, column 'm': a GEMM dimension is a whole number of "
                                               "elements, got 4096.5"):
        read_gemm_table(half)


def test_an_unknown_data_type_in_a_peak_is_one_line(tmp_path, capsys):
    rc = main(["calibrate", "--name", "z", "--gemm", str(DATA / "xla_sm90_gemm_subset.csv"), "--peak", "bf99=1",
               "-o", str(tmp_path / "z.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "--peak: unknown data type 'bf99'; use bf16, fp16, tf32, fp8 or int8" in err
    with pytest.raises(CalibrationError, match="dense peaks: unknown GEMM dtype 'bf99'"):
        calibrate("z", gemm=read_gemm_table(DATA / "xla_sm90_gemm_subset.csv"), peaks={"bf99": 1.0})


def test_ranks_given_must_agree_with_the_rank_lines(tmp_path, capsys):
    # the A3 Mega output lists 16 ranks (Rank 0 .. Rank 15 on 2 hosts)
    rc = main(["calibrate", "--name", "z", "--nccl", str(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"), "--ranks", "4",
               "-o", str(tmp_path / "z.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and "4 ranks given, but the output lists 16 ranks" in err
    assert read_nccl_tests(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt", ranks=16).ranks == 16   # agreeing is fine
    # output without rank lines: the count given is used, with a note when busbw / algbw points elsewhere
    # (50.17 / 53.52 = 0.9374 = (n-1)/n -> 16)
    t = read_nccl_tests(DATA / "nccl_all_gather_2x8_h100_a3high.txt", ranks=8)
    assert t.ranks == 8 and any("8 ranks as given, though busbw / algbw points to 16" in n for n in t.notes)
    assert not read_nccl_tests(DATA / "nccl_all_gather_2x8_h100_a3high.txt", ranks=16).notes


def test_the_bandwidth_is_no_higher_than_the_large_messages_measured():
    # A3 High all-gather, 8 MB - 8 GB, no small sizes: B is fitted on 512 MiB - 8 GiB (>= 8 GiB / 16), where the
    # printed busbw is 49.27-50.19 GB/s; the one line over every size gave 54.6 GB/s, above all of them
    ag = read_nccl_tests(DATA / "nccl_all_gather_2x8_h100_a3high.txt")
    f = fit_alpha_beta(ag, level="fabric", gpus_per_node=8)
    big = [r for r in ag.rows if r.size_bytes >= 2 ** 29]
    assert [r.busbw_gb_per_s for r in big] == [50.19, 49.27, 50.01, 49.77, 50.17]
    # capped at the highest measured there, 512 MiB x 15/16 in 10,028 us = 50.19 GB/s
    assert f.bus_bandwidth_gb_per_s == pytest.approx(2 ** 29 * 15 / 16 / 10028e-6 / 1e9, rel=1e-9)
    assert f.large_sizes_from_bytes == 2 ** 29
    # the worst large size is 512 MiB, where the bandwidth term alone is the measured time: error = latency / time
    assert f.large_sizes_max_abs_error == pytest.approx(f.latency_s / 10028e-6, rel=1e-9)
    assert f.large_sizes_max_abs_error < 0.06   # the one line missed these sizes by 6.8-8.1%
    # A3 Mega all-reduce: latency 123.3 us (plateau), B 316.2 GB/s below the 338.8 measured at 8 GB; its
    # worst large size is 512 MiB: 123.3 us + 2^29 x 2 x 15/16 / 316.2 GB/s = 3306.8 us against 3817.5 us
    ar = fit_alpha_beta(read_nccl_tests(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"))
    assert ar.bus_bandwidth_gb_per_s == pytest.approx(316.2, abs=0.05) and ar.bus_bandwidth_gb_per_s < 338.82
    by_hand = (123.3e-6 + 2 ** 29 * 2 * 15 / 16 / (ar.bus_bandwidth_gb_per_s * 1e9)) / 3817.5e-6 - 1
    assert by_hand == pytest.approx(-0.1338, abs=5e-4)
    assert ar.large_sizes_max_abs_error == pytest.approx(abs(by_hand), rel=1e-9)
    # a profile keeps both, and older profiles without them still load
    back = profile_from_dict({"name": "x", "date": "2026-01-01", "links": {"fabric": ar.to_dict()}})
    assert back.links["fabric"].large_sizes_max_abs_error == ar.large_sizes_max_abs_error
    old = {k: v for k, v in ar.to_dict().items() if not k.startswith("large_")}
    assert profile_from_dict({"name": "x", "date": "2026-01-01", "links": {"fabric": old}}).links[
        "fabric"].large_sizes_max_abs_error is None


# ----------------------------------------------------------------- the CLI

def test_cli_writes_a_dated_profile_and_a_chart(tmp_path, capsys):
    out = tmp_path / "lab.yaml"
    rc = main(["calibrate", "--name", "lab", "--gemm", str(DATA / "xla_sm90_gemm_subset.csv"), "--accelerator",
               "h100-sxm5-80gb", "--nccl", f"fabric={DATA / 'nccl_all_reduce_2x8_h100_a3mega.txt'}",
               "--date", "2026-11-02", "-o", str(out), "--chart", str(tmp_path / "fit.html"), "--json"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["written"] == str(out) and doc["profile"]["date"] == "2026-11-02"
    prof = load_profile(out)
    assert set(prof.gemm) == {"bf16", "tf32"} and set(prof.links) == {"fabric"}
    assert (tmp_path / "fit.html").stat().st_size > 1000


def test_cli_errors_are_one_line(tmp_path, capsys):
    rc = main(["calibrate", "--name", "lab", "--nccl", str(tmp_path / "nope.txt")])
    assert rc == 2
    assert "cannot read the nccl-tests output" in capsys.readouterr().err
    rc = main(["calibrate", "--name", "lab", "--gemm", str(DATA / "xla_sm90_gemm_subset.csv"), "--peak", "bf16"])
    assert rc == 2
    assert "--peak: expected DTYPE=TFLOPS" in capsys.readouterr().err


# ----------------------------------------------------------------- the scenario and the design

SCENARIO = """
name: served
model: {preset: llama3-70b}
hardware: {server: dgx-h100, nodes: 2}
inference: {precision: fp8, tensor_parallel: 8, input_tokens: 1024, output_tokens: 256, requests_per_s: 5}
"""


def test_scenario_selects_a_profile_relative_to_its_file(tmp_path):
    small_profile().save(tmp_path / "mine.yaml")
    s = loads(SCENARIO + "calibration: mine.yaml\n", base_dir=tmp_path)
    d = Design(s)
    assert d.calibration.name == "mine"
    plain = Design(loads(SCENARIO)).serving
    cal = d.serving
    assert cal.calibration == "mine" and plain.calibration is None
    nv = d.calibration.links["nvlink"]
    # link efficiency = measured bus bandwidth / 450 GB/s per direction (DGX H100 NVLink 4: 900 GB/s total)
    assert cal.efficiency["link_bandwidth_efficiency"] == pytest.approx(nv.bus_bandwidth_gb_per_s / 450)
    assert cal.efficiency["allreduce_latency_s"] == pytest.approx(14 * nv.alpha_s)   # 2 (TP - 1) alpha
    assert cal.step_time_breakdown_s["communication"] != plain.step_time_breakdown_s["communication"]


def test_shipped_profile_by_name_and_missing_file(tmp_path):
    d = Design(loads(SCENARIO + "calibration: example-h100-public-data\n", base_dir=tmp_path))
    assert d.calibration.example is True
    with pytest.raises(ScenarioError, match="calibration: no calibration profile at"):
        Design(loads(SCENARIO + "calibration: nope.yaml\n", base_dir=tmp_path)).stage("calibration")
    (tmp_path / "bad.yaml").write_text("name: [\n")
    with pytest.raises(ScenarioError, match="calibration: bad.yaml: not valid YAML"):
        Design(loads(SCENARIO + "calibration: bad.yaml\n", base_dir=tmp_path)).stage("calibration")


def test_gemm_curve_scales_serving_gemm_efficiency(tmp_path):
    prof = small_profile()
    # the same curve as the default FP8 one: the serving efficiency must not move
    from gpucluster_lib.calibration.gemm import DEFAULT_CURVES

    same = CalibrationProfile("same", "2026-11-30", gemm={"fp8": DEFAULT_CURVES["fp8"]})
    same.save(tmp_path / "same.yaml")
    d = Design(loads(SCENARIO + "calibration: same.yaml\n", base_dir=tmp_path))
    assert d.serving.efficiency["gemm_efficiency_used"] == pytest.approx(0.45)   # efficiency.py default, 8-bit
    half = CalibrationProfile("half", "2026-11-30",
                              gemm={"fp8": DEFAULT_CURVES["fp8"].replace(
                                  eff_max=DEFAULT_CURVES["fp8"].eff_max / 2,
                                  fixed_time_s=2 * DEFAULT_CURVES["fp8"].fixed_time_s)})
    half.save(tmp_path / "half.yaml")
    d2 = Design(loads(SCENARIO + "calibration: half.yaml\n", base_dir=tmp_path))
    # half e_max and twice t_0: 1 / (2 / e + 2 P t_0 / F) is exactly half the default curve -> 0.45 / 2
    assert d2.serving.efficiency["gemm_efficiency_used"] == pytest.approx(0.225)
    assert prof.gemm_efficiency(4096, 4096, 4096) < 0.7


def test_chart_of_the_fit():
    from gpucluster_lib.charts.calibration import calibration_charts, gemm_fit, link_fit

    r = calibrate("x", gemm=read_gemm_table(DATA / "xla_sm90_gemm_subset.csv"), peaks={"bf16": 989.4, "tf32": 494.7},
                  nccl=[(read_nccl_tests(DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"), None)], date="2026-12-01")
    spec = calibration_charts(r).to_dict()
    assert len(spec["hconcat"]) == 2
    g = gemm_fit(r.gemm_tables["bf16"]).to_dict()
    assert g["layer"][1]["encoding"]["x"]["scale"]["type"] == "log"
    lf = link_fit(r.tests["fabric"], r.profile.links["fabric"]).to_dict()
    assert "fabric: all-reduce on 16 GPUs" in lf["title"]
    assert math.isfinite(r.gemm_quality["bf16"]["rms_error"])


def test_hostile_inputs_raise_only_calibration_errors():
    """Random nccl-like text, profile mappings and GEMM tables: a result or a CalibrationError, nothing else."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    words = st.sampled_from(["#", "Rank", "0", "1", "16", "-1", "float", "sum", "none", "N/A", "nan", "1e999",
                             "123.4", "-5", "size", "count", "busbw", "root", "all_reduce_perf", "on", "device",
                             "Group", "Pid", "host", "[0x1]", "99999999999999999999"])
    lines = st.lists(st.lists(words, max_size=14).map("  ".join), max_size=12).map("\n".join)

    @settings(max_examples=50, derandomize=True, deadline=None)
    @given(lines)
    def parse(text):
        try:
            fit_alpha_beta(parse_nccl_tests(text))
        except CalibrationError:
            pass

    values = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                       st.text(max_size=5), st.lists(st.integers(), max_size=2))
    link = st.dictionaries(st.sampled_from(["collective", "ranks", "ranks_per_host", "bus_bandwidth_gb_per_s",
                                            "alpha_s", "latency_s", "sizes", "source", "peak_busbw_gb_per_s"]),
                           values, max_size=6)

    @settings(max_examples=50, derandomize=True, deadline=None)
    @given(link, st.dictionaries(st.sampled_from(["eff_max", "m_half", "n_half", "k_half", "exponent",
                                                  "fixed_time_s", "peak_tflops"]), values, max_size=7))
    def profile(link_data, curve_data):
        data = {"name": "x", "date": "2026-01-01", "links": {"fabric": link_data}, "gemm": {"bf16": curve_data}}
        try:
            p = profile_from_dict(data)
            p.efficiency_overrides(450e9, 50e9)
            p.gemm_efficiency(1024, 1024, 1024)
        except CalibrationError:
            pass

    parse()
    profile()


# ----------------------------------------------------------------- the profile in the training engine

#: GPT-3 175B (96 layers, h 12288, FFN 4h, vocab 51,200, 2,048 tokens; Brown et al. 2020 Table 2.1, models.yaml)
#: on 64 H100 SXM: TP1, PP1, no recomputation, micro-batch 1, 128 sequences a step = 2 micro-batches per GPU
TRAIN = {"name": "g1", "model": {"preset": "gpt3-175b"}, "hardware": {"accelerator": "h100-sxm5-80gb", "nodes": 8},
         "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 128,
                         "recompute": "none"}}


def train_estimate(tmp_path, **extra):
    from gpucluster_lib.training import estimate

    return estimate(loads(yaml.safe_dump({**TRAIN, **extra}), base_dir=tmp_path))


def gemm_seconds_by_hand():
    """The GEMM part of the compute of TRAIN at the default curve, by hand.

    One (M x K) @ (K x N) GEMM takes 2MKN / (P e_g s) with s = e(M, N, K) / e_max the default curve's
    shape factor (calibration/gemm.py) and e = 1 / (1 / (e_max g(M) g(N) g(K)) + P t0 / 2MKN), so
    2MKN / (P e_g e_max g g g) x e_max + t0 e_max / e_g = 2MKN / (P e_g g g g) + t0 e_max / e_g."""
    P = 989.4e12       # H100 SXM dense BF16 [FLOP/s] (accelerators.csv)
    e_g = 0.58         # hopper gemm_efficiency (data/efficiency.yaml)
    e_max, t0 = 0.832, 5.8e-6   # default BF16 curve (calibration/gemm.py): e_max, fixed time [s]

    def g(x, half):
        return x * x / (x * x + half * half)   # Hill curve, p = 2

    def t(m, k, n):
        return 2 * m * k * n / (P * e_g * g(m, 159) * g(n, 188) * g(k, 200)) + t0 * e_max / e_g

    M, h = 2048, 12288                          # tokens per micro-batch; hidden size
    layer = t(M, h, 3 * h) + t(M, h, h) + t(M, h, 4 * h) + t(M, 4 * h, h)   # QKV, projection, FC1, FC2
    logits = t(M, h, 51200)
    return 2 * (96 * 3 * layer + 3 * logits)    # 2 micro-batches x (96 layers + logits) x (forward + 2 backward)


def test_a_profile_at_half_the_gemm_level_doubles_the_training_gemm_time(tmp_path):
    from gpucluster_lib.calibration.gemm import DEFAULT_CURVES

    d = DEFAULT_CURVES["bf16"]
    CalibrationProfile("same", "2026-12-01", gemm={"bf16": d}).save(tmp_path / "same.yaml")
    # half e_max and twice t0: the efficiency 1 / (2 / (e_max ggg) + 2 P t0 / F) is half the default at every shape
    CalibrationProfile("half", "2026-12-01", gemm={"bf16": d.replace(eff_max=d.eff_max / 2,
                                                                      fixed_time_s=2 * d.fixed_time_s)}
                       ).save(tmp_path / "half.yaml")
    plain = train_estimate(tmp_path)
    same = train_estimate(tmp_path, calibration="same.yaml")
    half = train_estimate(tmp_path, calibration="half.yaml")
    assert plain.assumptions["peak_tflops"] == 989.4 and plain.assumptions["efficiency"]["gemm_efficiency"] == 0.58
    gemm = gemm_seconds_by_hand()
    compute = plain.time_breakdown_s["compute"]
    assert 0.8 < gemm / compute < 1    # the GEMMs are most of the compute (the rest: attention, element-wise)
    # half the level: compute = rest + 2 x GEMM, so it grows by exactly the GEMM part
    assert half.time_breakdown_s["compute"] - compute == pytest.approx(gemm, rel=1e-9)
    assert half.assumptions["efficiency"]["gemm_efficiency"] == pytest.approx(0.29)   # 0.58 x 0.416 / 0.832
    # the default level changes nothing
    assert same.time_breakdown_s["compute"] == pytest.approx(compute, rel=1e-12)
    assert same.step_time_s == pytest.approx(plain.step_time_s, rel=1e-12)
    # the scenario's own matrix-multiply efficiency wins over the profile's level (the shape factor is the same)
    own = train_estimate(tmp_path, calibration="half.yaml", training={"gemm_efficiency": 0.58})
    assert own.time_breakdown_s["compute"] == pytest.approx(compute, rel=1e-12)
    rec = half.assumptions["calibration"]
    assert rec == {"name": "half", "date": "2026-12-01", "example": False, "device": None,
                   "terms": ["gemm_efficiency", "gemm_curve"]}
    assert own.assumptions["calibration"]["terms"] == ["gemm_curve"]
    assert plain.assumptions["calibration"] is None


def test_fp8_training_takes_the_measured_fp8_level(tmp_path):
    from gpucluster_lib.calibration.gemm import DEFAULT_CURVES

    d = DEFAULT_CURVES["bf16"]
    CalibrationProfile("both", "2026-12-01", gemm={"bf16": d.replace(eff_max=0.416),
                                                   "fp8": DEFAULT_CURVES["fp8"].replace(eff_max=0.5)}
                       ).save(tmp_path / "both.yaml")
    CalibrationProfile("fp8", "2026-12-01", gemm={"fp8": DEFAULT_CURVES["fp8"].replace(eff_max=0.5)}
                       ).save(tmp_path / "fp8.yaml")
    fp8 = {"precision": "fp8"}
    both = train_estimate(tmp_path, calibration="both.yaml", training=fp8).assumptions["efficiency"]
    only = train_estimate(tmp_path, calibration="fp8.yaml", training=fp8).assumptions["efficiency"]
    # the 16-bit level scales gemm_efficiency: 0.58 x 0.416 / 0.832 = 0.29; the FP8 rate over it is measured:
    # 0.5 / 0.416; so the FP8 GEMMs run at 0.29 x 0.5 / 0.416 = 0.58 x 0.5 / 0.832 = 0.3486 of the FP8 peak
    assert both["gemm_efficiency"] == pytest.approx(0.29)
    assert both["fp8_gemm_factor"] == pytest.approx(0.5 / 0.416)
    assert only["gemm_efficiency"] == 0.58 and only["fp8_gemm_factor"] == pytest.approx(0.5 / 0.832)
    for eff in (both, only):
        assert eff["gemm_efficiency"] * eff["fp8_gemm_factor"] == pytest.approx(0.58 * 0.5 / 0.832)


def test_a_link_above_its_nominal_rate_is_capped_with_a_warning():
    from gpucluster_lib.training import estimate

    # the A3 Mega fabric (316.2 GB/s of bus bandwidth on 2 x 8 H100) on the A100 example with 200 Gb/s per GPU:
    # nominal 8 GPUs x 25 GB/s = 200 GB/s, so 316.2 / 200 = 1.58 -> capped at 1
    s = from_dict({**yaml.safe_load((shipped_dir() / "gpt3-175b-1024-a100.yaml").read_text()),
                   "calibration": "example-h100-public-data"})
    est = estimate(s)
    assert est.assumptions["fabric_gbps_per_gpu"] == 200
    assert est.assumptions["efficiency"]["network_efficiency"] == 1.0
    codes = {f.code: f for f in est.findings}
    above = codes["calibration-link-above-nominal"]
    assert above.severity == "warning" and above.field == "calibration"
    assert "316.2 GB/s" in above.message and "nominal 200.0 GB/s" in above.message
    mismatch = codes["calibration-device-mismatch"]   # measured on H100, used for A100
    assert mismatch.severity == "warning" and "NVIDIA H100 80GB HBM3" in mismatch.message
    assert "NVIDIA A100 SXM4 80GB" in mismatch.message
    assert codes["calibration-example-profile"].severity == "info"
    # the scenario's own network efficiency is used: nothing is capped
    own = estimate(s.replace(training__efficiency={"network_efficiency": 0.7}))
    assert own.assumptions["efficiency"]["network_efficiency"] == 0.7
    assert "calibration-link-above-nominal" not in {f.code for f in own.findings}


def test_serving_caps_an_nvlink_measured_above_its_nominal_rate(tmp_path):
    # 8 ranks on one host: 2 GiB in 8 ms is 2^31 x 1.75 / 8e-3 = 469.8 GB/s of bus bandwidth, above the
    # 450 GB/s per direction of NVLink 4 (DGX H100: 900 GB/s in total)
    t = parse_nccl_tests(nccl_text([8, 16, 32, 1 << 30, 1 << 31], [28.0, 28.0, 28.0, 4000.0, 8000.0], ranks=8))
    prof = CalibrationProfile("fast", "2026-11-30", device="NVIDIA H100 80GB HBM3", links={"nvlink": fit_alpha_beta(t)})
    assert prof.links["nvlink"].bus_bandwidth_gb_per_s > 450
    prof.save(tmp_path / "fast.yaml")
    d = Design(loads(SCENARIO + "calibration: fast.yaml\n", base_dir=tmp_path))
    assert d.serving.efficiency["link_bandwidth_efficiency"] == 1.0
    above = [f for f in d.serving.findings if f.code == "calibration-link-above-nominal"]
    assert len(above) == 1 and "nominal 450.0 GB/s" in above[0].message
    assert not [f for f in d.findings if f.code in ("calibration-device-mismatch", "calibration-example-profile")]
    # the profile also sets the training engine's NVLink efficiency the same way: capped at 1
    assert prof.efficiency_overrides(450e9)["nvlink_efficiency"] == 1.0
    assert prof.links_above_nominal(450e9) == [("nvlink", prof.links["nvlink"].bus_bandwidth_gb_per_s, 450.0)]


@pytest.mark.parametrize(("device", "accelerator", "same"), [
    ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb", True),     # nvidia-smi's name of the SXM part
    ("NVIDIA H100 80GB HBM3", "h100-pcie-80gb", False),    # another form factor: other clocks and power
    ("NVIDIA H100 PCIe", "h100-pcie-80gb", True),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-80gb", True),     # same GPU, more memory
    ("NVIDIA H100 80GB HBM3", "h200-sxm-141gb", False),
    ("NVIDIA H100 80GB HBM3", "a100-sxm4-80gb", False),
    ("my lab box", "h100-sxm5-80gb", None),                # no model named: not compared
])
def test_device_names_are_compared_by_model_and_form_factor(device, accelerator, same):
    from gpucluster_lib.calibration.profile import device_matches
    from gpucluster_lib.catalog import load_catalog

    assert device_matches(device, load_catalog().accelerator(accelerator)) is same


def test_a_step_time_that_is_not_a_number_is_refused(monkeypatch):
    from gpucluster_lib.training import core, estimate

    s = from_dict(yaml.safe_load((shipped_dir() / "gpt3-175b-1024-a100.yaml").read_text()))
    monkeypatch.setattr(core.GemmCurve, "shape_factor", lambda self, *a, **k: np.float64("nan"))
    with pytest.raises(GpuClusterError, match="the training step time is not a finite number: compute, .* came "
                                              "out as not a number"):
        estimate(s)
    with pytest.raises(GpuClusterError, match="not a finite number"):
        estimate(s.replace(parallelism__auto=True))


def shipped_dir():
    from gpucluster_lib.resources import data_path

    return data_path("scenarios")
