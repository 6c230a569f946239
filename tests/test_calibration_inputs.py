"""Calibration inputs as people save them: nccl-tests logs in other layouts, with launcher prefixes,
several runs, cut short or without rank lines; GEMM tables with odd spellings; hand-edited profiles.

Every expected figure is worked out by hand from the model each text is generated from (said on the line).
"""

from __future__ import annotations

import math
import re
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from gpucluster_lib.calibration.gemm import GemmCurve, normalise_dtype
from gpucluster_lib.calibration.nccl import (
    CalibrationError,
    fit_alpha_beta,
    parse_nccl_tests,
    read_nccl_tests,
)
from gpucluster_lib.calibration.profile import profile_from_dict
from gpucluster_lib.calibration.run import calibrate, check_gemm_fit, read_gemm_table
from gpucluster_lib.cli import main
from tests.test_calibration import nccl_text

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent
A3HIGH = DATA / "nccl_all_gather_2x8_h100_a3high.txt"   # all-gather, 16 ranks on 2 nodes, no rank lines
A3MEGA = DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"   # all-reduce, 16 rank lines on 2 hosts

STEPS = {"all_reduce": lambda n: 2 * (n - 1), "all_gather": lambda n: n - 1, "reduce_scatter": lambda n: n - 1}
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n}


def model_times(collective, ranks, alpha_us, bus_gb_per_s, sizes):
    """Times [us] of the ring model t = h alpha + F S / B (Thakur et al. 2005; nccl-tests PERFORMANCE.md)."""
    return [STEPS[collective](ranks) * alpha_us + FACTOR[collective](ranks) * s / (bus_gb_per_s * 1e3) for s in sizes]


def tstr(t):
    """nccl-tests' time format (src/common.cu): %7.0f from 10 ms, %7.1f from 100 us, else %7.2f."""
    return f"{t:7.0f}" if t >= 10000 else f"{t:7.1f}" if t >= 100 else f"{t:7.2f}"


def header_line(lo, hi):
    return (f"# nThread 1 nGpus 1 minBytes {lo} maxBytes {hi} step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0")


SIZES = [2 ** i for i in range(3, 34)]   # 8 B .. 8 GiB, -b 8 -e 8G -f 2


# ----------------------------------------------------------------- the fabric needs its GPUs per node

def test_a_fabric_run_without_rank_lines_needs_its_gpus_per_node():
    ag = read_nccl_tests(A3HIGH)
    with pytest.raises(CalibrationError, match="no rank lines .* give them with --gpus-per-node"):
        fit_alpha_beta(ag, level="fabric")
    f = fit_alpha_beta(ag, level="fabric", gpus_per_node=8)
    assert f.ranks_per_host == 8
    # the bus bandwidth is capped at the highest printed at >= 512 MiB: 50.19 GB/s; the nominal fabric rate of
    # 8 GPUs x 400 Gb/s (50 GB/s) each is 400 GB/s, so the network efficiency is 50.19 / 400 = 12.5%, not 100%
    eff = calibrate("x", nccl=[(ag, "fabric")], gpus_per_node=8, date="2026-12-01").profile.efficiency_overrides(
        450e9, 50e9)
    assert eff["network_efficiency"] == pytest.approx(50.19 / 400, rel=1e-3)
    # 16 ranks at 16 per node is one node, not a fabric run; 16 at 3 per node is no whole number of nodes
    with pytest.raises(CalibrationError, match="16 ranks at 16 GPUs per node is one node"):
        fit_alpha_beta(ag, level="fabric", gpus_per_node=16)
    with pytest.raises(CalibrationError, match="16 ranks at 3 GPUs per node is 5.33333 nodes"):
        fit_alpha_beta(ag, level="fabric", gpus_per_node=3)
    # with rank lines (8 per host on 2 hosts) a different count is refused
    with pytest.raises(CalibrationError, match="4 GPUs per node given, but the rank lines put 8 ranks on each of 2"):
        fit_alpha_beta(read_nccl_tests(A3MEGA), gpus_per_node=4)


def test_the_cli_records_the_gpus_per_node_and_a_profile_without_them_is_refused(tmp_path, capsys):
    out = tmp_path / "ag.yaml"
    assert main(["calibrate", "--name", "ag", "--nccl", f"fabric={A3HIGH}", "-o", str(out)]) == 2
    assert "--gpus-per-node" in capsys.readouterr().err and not out.exists()
    assert main(["calibrate", "--name", "ag", "--nccl", f"fabric={A3HIGH}", "--gpus-per-node", "8",
                 "-o", str(out), "--date", "2026-12-01"]) == 0
    data = yaml.safe_load(out.read_text())
    assert data["links"]["fabric"]["ranks_per_host"] == 8
    del data["links"]["fabric"]["ranks_per_host"]   # a profile written before the check
    with pytest.raises(CalibrationError, match="links.fabric.ranks_per_host: missing; a fabric link needs the GPUs "
                                               "per node"):
        profile_from_dict(data, where="ag.yaml")


# ----------------------------------------------------------------- the link level

def test_the_link_level_is_given_or_read_from_the_rank_lines():
    times = model_times("all_reduce", 8, 2.0, 400.0, SIZES)   # alpha 2 us, B 400 GB/s
    one_host = parse_nccl_tests(nccl_text(SIZES, times, ranks=8))
    bare = parse_nccl_tests("\n".join(line for line in nccl_text(SIZES, times, ranks=8).splitlines()
                                      if "Rank" not in line))
    assert bare.ranks == 8 and bare.level is None        # ranks from busbw / algbw = 1.75, level unknown
    with pytest.raises(CalibrationError, match="no rank lines .* give the level: --nccl nvlink=FILE"):
        fit_alpha_beta(bare)
    assert fit_alpha_beta(bare, "nvlink").level == "nvlink"
    with pytest.raises(CalibrationError, match=r"all 8 ranks ran on one host \(node000\), so this run measured the "
                                               "links inside a node, not the fabric"):
        fit_alpha_beta(one_host, "fabric")
    four = parse_nccl_tests(nccl_text(SIZES, model_times("all_reduce", 32, 5.0, 180.0, SIZES), ranks=32, hosts=4))
    r = calibrate("x", nccl=[(four, "nvlink")], date="2026-12-01")
    assert any("on 4 hosts; taken as NVLink, as given" in n for n in r.notes)


# ----------------------------------------------------------------- rows of size 0

ZERO_ROWS = """# Collective test starting: all_gather_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
           0             2     float    none      -1     4.61    0.00    0.00      0     4.55    0.00    0.00      0
           0             4     float    none      -1     4.58    0.00    0.00      0     4.55    0.00    0.00      0
           0             8     float    none      -1     4.60    0.00    0.00      0     4.55    0.00    0.00      0
           0            16     float    none      -1     4.59    0.00    0.00      0     4.55    0.00    0.00      0
         128            32     float    none      -1    21.00    0.01    0.01      0    21.00    0.01    0.01      0
        1024           256     float    none      -1    21.00    0.05    0.04      0    21.00    0.05    0.04      0
       16384          4096     float    none      -1    21.04    0.78    0.68      0    21.04    0.78    0.68      0
    67108864      16777216     float    none      -1    188.8  355.45  311.02      0    188.8  355.45  311.02      0
   268435456      67108864     float    none      -1    692.1  387.86  339.38      0    692.1  387.86  339.38      0
  1073741824     268435456     float    none      -1   2705.4  396.89  347.28      0   2705.4  396.89  347.28      0
"""


def test_rows_of_size_zero_are_skipped_and_the_chart_draws(tmp_path, capsys):
    from gpucluster_lib.charts.calibration import calibration_charts

    t = parse_nccl_tests(ZERO_ROWS, ranks=8)
    assert [r.size_bytes for r in t.rows][:2] == [128, 1024]
    assert any("4 rows of size 0 skipped" in n for n in t.notes)
    f = fit_alpha_beta(t, "nvlink")
    assert f.latency_s == pytest.approx(21.0e-6)          # the plateau: 21.00, 21.00, 21.04 us (not 4.6 us)
    assert f.alpha_s == pytest.approx(21.0e-6 / 7)        # 7 ring steps on 8 ranks: 3.00 us
    r = calibrate("x", nccl=[(t, "nvlink")], date="2026-12-01")
    assert calibration_charts(r).to_dict()["title"].startswith("nvlink: all-gather on 8 GPUs")
    path = tmp_path / "zero.txt"
    path.write_text(ZERO_ROWS)
    rc = main(["calibrate", "--name", "z", "--nccl", f"nvlink={path}", "--ranks", "8", "-o", str(tmp_path / "z.yaml"),
               "--chart", str(tmp_path / "z.svg")])
    assert rc == 0 and (tmp_path / "z.svg").stat().st_size > 1000


# ----------------------------------------------------------------- several runs in one file

def test_several_runs_in_one_file_are_refused_naming_them():
    ar = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8)
    ag = nccl_text(SIZES, model_times("all_gather", 8, 2.0, 350.0, SIZES), ranks=8, collective="all_gather")
    with pytest.raises(CalibrationError, match=r"the file holds 2 nccl-tests runs: all-reduce \(all_reduce_perf\) "
                                               r"from line 1 and all-gather \(all_gather_perf\) from line \d+; .* "
                                               "put each run in its own file"):
        parse_nccl_tests(ar + ag)
    with pytest.raises(CalibrationError, match="2 runs of the same test"):
        parse_nccl_tests(ar + ar)
    # each run alone recovers its model: B 400 and 350 GB/s (capped at the busbw printed at 8 GiB)
    assert fit_alpha_beta(parse_nccl_tests(ar)).bus_bandwidth_gb_per_s == pytest.approx(400, rel=0.002)
    assert fit_alpha_beta(parse_nccl_tests(ag)).bus_bandwidth_gb_per_s == pytest.approx(350, rel=0.002)
    # one size printed twice in one run (-d all or -o all)
    rows = ar.splitlines()
    first_row = next(i for i, line in enumerate(rows) if line.strip().startswith("8 "))
    doubled = "\n".join(rows[:first_row + 1] + [rows[first_row].replace("float", " half")] + rows[first_row + 1:])
    with pytest.raises(CalibrationError, match="the size 8 B appears 2 times"):
        parse_nccl_tests(doubled)


# ----------------------------------------------------------------- the all-gather layout before nccl-tests 2.13

def test_the_old_all_gather_layout_is_read_by_its_header():
    # nccl-tests src/all_gather.cu before 2.13: 'size count type time algbw busbw error' (no redop, no root);
    # known model: 8 ranks, alpha 2 us per step, B 350 GB/s
    times = model_times("all_gather", 8, 2.0, 350.0, SIZES)
    lines = ["# Collective test starting: all_gather_perf", header_line(8, 8589934592),
             "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error"]
    for s, t in zip(SIZES, times, strict=True):
        alg = s / (t * 1e-6) / 1e9
        cell = f"  {tstr(t)}  {alg:6.2f}  {alg * 7 / 8:6.2f}  0e+00"
        lines.append(f"{s:12d}  {s // 32:12d}     float{cell}{cell}")
    lines.append("# Avg bus bandwidth    : 100.0")
    t = parse_nccl_tests("\n".join(lines), ranks=8)
    assert t.collective == "all_gather" and t.rows[-1].time_us == pytest.approx(times[-1], rel=1e-4)
    f = fit_alpha_beta(t, "nvlink")
    assert f.bus_bandwidth_gb_per_s == pytest.approx(350, rel=0.002)   # not 2,063 or 12,922 GB/s
    assert f.alpha_s == pytest.approx(2.0e-6, rel=0.01)
    # the same rows under the newer header are misread by two columns: refused, not fitted
    shifted = "\n".join(lines).replace("type     time", "type   redop    root     time")
    with pytest.raises(CalibrationError, match="columns are not where the header puts them|above every busbw"):
        fit_alpha_beta(parse_nccl_tests(shifted, ranks=8), "nvlink")


# ----------------------------------------------------------------- launcher prefixes

@pytest.mark.parametrize("prefix", ["0: ", "node-a: ", "12: [1,0]<stdout>:"])
def test_launcher_prefixes_are_stripped(prefix):
    text = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8)
    plain = parse_nccl_tests(text)
    labelled = parse_nccl_tests("\n".join(prefix + line for line in text.splitlines()))
    assert labelled.rows == plain.rows and labelled.ranks == 8 and labelled.hosts == ["node000"]


# ----------------------------------------------------------------- cut short

def test_a_file_cut_short_is_refused():
    lines = A3MEGA.read_text().splitlines()
    end = next(i for i, line in enumerate(lines) if line.split()[:1] == ["67108864"])
    cut = "\n".join(lines[:end + 1])   # up to the 64 MiB row: no 128 MiB - 8 GiB rows, no 'Avg bus bandwidth' line
    t = parse_nccl_tests(cut, source="cut.txt")
    assert t.rows[-1].size_bytes == 64 * 2 ** 20 and t.last_size_bytes == 8 * 2 ** 30   # -b 8 -e 8G -f 2
    with pytest.raises(CalibrationError, match="cut.txt: the output ends at 64 MiB, but the run went to 8 GiB .* "
                                               "'Avg bus bandwidth' line .* missing: the file looks cut short"):
        fit_alpha_beta(t)
    # maxBytes 10 GB with -f 2 stops at 8 GiB (the next step, 16 GiB, is above it): not cut short
    whole = A3MEGA.read_text().replace("maxBytes 8589934592", "maxBytes 10000000000")
    assert parse_nccl_tests(whole).last_size_bytes == 8 * 2 ** 30
    assert fit_alpha_beta(parse_nccl_tests(whole)).bus_bandwidth_gb_per_s == pytest.approx(316.2, abs=0.05)
    # linear steps (-i): 1 MiB + 3 x 3 MiB = 10 MiB is the last size at or below 10,485,760
    text = A3MEGA.read_text().replace("minBytes 8 maxBytes 8589934592 step: 2(factor)",
                                      "minBytes 1048576 maxBytes 10485760 step: 3145728(bytes)")
    assert parse_nccl_tests(text).last_size_bytes == 10 * 2 ** 20


# ----------------------------------------------------------------- an extrapolated latency

def test_a_latency_extrapolated_from_large_sizes_sets_no_alpha():
    r = calibrate("x", nccl=[(read_nccl_tests(A3HIGH), "fabric")], gpus_per_node=8, date="2026-12-01")
    f = r.profile.links["fabric"]
    assert f.alpha_s is None and f.latency_s > 0           # the intercept still fits B, as before
    assert any("latency not measured: the smallest size is 8 MiB" in n for n in r.notes)
    assert "latency not measured" in r.summary()
    assert "alpha_network_s" not in r.profile.efficiency_overrides(450e9, 50e9)   # the engine's default stays
    # from 8 B the plateau is measured: 2 x 15 = 30 steps of 4.11 us on the A3 Mega run (123.3 us / 30)
    mega = calibrate("y", nccl=[(read_nccl_tests(A3MEGA), None)], date="2026-12-01")
    assert mega.profile.links["fabric"].alpha_s == pytest.approx(123.3e-6 / 30)
    # 123.3 us reads 0.123 ms (format_duration: three significant figures, ms from 0.1 ms)
    assert "alpha 4.11 µs per ring step (0.123 ms per all-reduce on 16 GPUs: 30 steps)" in mega.summary()


# ----------------------------------------------------------------- a build without MPI

def test_a_build_without_mpi_is_named():
    one = nccl_text(SIZES, model_times("all_reduce", 2, 2.0, 100.0, SIZES), ranks=2)
    rank0 = [line for line in one.splitlines() if "Rank  1" not in line]
    text = "\n".join(line if "Rank" not in line else line + "\n" + line.replace("node000", "node001")
                     for line in rank0)
    with pytest.raises(CalibrationError, match=r"every process printed Rank 0 on a different host \(node000 and "
                                               r"node001\): nccl-tests was built without MPI"):
        parse_nccl_tests(text)


# ----------------------------------------------------------------- GEMM tables

def known_table(dims, curve, dtype="bf16", peak=989.4):
    m, n, k = (a.ravel() for a in np.meshgrid(dims, dims, dims, indexing="ij"))
    return pd.DataFrame({"m": m, "n": n, "k": k, "dtype": dtype, "tflops": curve.efficiency(m, n, k) * peak})


CURVE = GemmCurve(eff_max=0.7, m_half=159.0, n_half=188.0, k_half=200.0, fixed_time_s=5.8e-6, peak_tflops=989.4)


def test_a_gemm_fit_that_misses_its_measurements_is_refused():
    tiny = pd.DataFrame({"m": [16, 32, 64, 16, 32], "n": [16, 32, 64, 64, 16], "k": [16, 32, 64, 32, 64],
                         "dtype": "bf16", "tflops": [0.001, 0.010, 0.080, 0.020, 0.020]})
    # the rate climbs 80x from 16^3 to 64^3 (0.001 to 0.080 TFLOP/s): no level within the shapes measured
    with pytest.raises(CalibrationError, match="the bf16 rates .* do not level off within the shapes measured "
                                               r"\(the largest m, n and k: 64, 64 and 64\)") as e:
        calibrate("x", gemm=tiny, peaks={"bf16": 989.4})
    assert "k_half" not in str(e.value) and "e+" not in str(e.value)
    falling = pd.DataFrame({"m": [256, 512, 1024, 2048, 4096, 8192], "n": [256, 512, 1024, 2048, 4096, 8192],
                            "k": [256, 512, 1024, 2048, 4096, 8192], "dtype": "bf16",
                            "tflops": [900.0, 700.0, 500.0, 300.0, 200.0, 100.0]})
    with pytest.raises(CalibrationError, match="the bf16 GEMM curve misses the measured rates by"):
        calibrate("x", gemm=falling, peaks={"bf16": 989.4})
    # the known curve from 128 to 8192 is recovered and passes; up to 1024 only it passes with a note
    ok = calibrate("x", gemm=known_table(np.array([128, 512, 1024, 4096, 8192]), CURVE), peaks={"bf16": 989.4})
    assert ok.profile.gemm["bf16"].eff_max == pytest.approx(0.7, rel=0.01) and not ok.notes
    small = calibrate("x", gemm=known_table(np.array([64, 128, 256, 512, 1024]), CURVE), peaks={"bf16": 989.4})
    assert any("reach only m 1,024, n 1,024 and k 1,024" in n for n in small.notes)
    large = calibrate("x", gemm=known_table(np.array([4096, 8192, 16384]), CURVE), peaks={"bf16": 989.4})
    assert any("start at m 4,096, n 4,096 and k 4,096" in n for n in large.notes)


def test_the_gemm_gate_refuses_a_clamped_level_and_a_half_rate_beyond_the_shapes():
    table = known_table(np.array([256, 1024, 4096]), CURVE)
    q = {"median_abs_error": 0.01, "max_abs_error": 0.02}
    with pytest.raises(CalibrationError, match="puts the large-GEMM level at the dense peak"):
        check_gemm_fit(CURVE.replace(eff_max=1.0), table, q, "bf16", "t.csv")
    with pytest.raises(CalibrationError, match="still below half its level at the largest k measured \\(4,096; the "
                                               "fit puts half rate at k = 5,000\\)"):
        check_gemm_fit(CURVE.replace(k_half=5000.0), table, q, "bf16", "t.csv")
    assert check_gemm_fit(CURVE, table, q, "bf16", "t.csv") == []


def test_gemm_csv_spellings(tmp_path):
    rows = [(256, 5.624), (512, 42.234), (1024, 233.227), (2048, 500.0), (4096, 650.0)]
    comma = tmp_path / "comma.csv"
    comma.write_text("m,n,k,dtype,tflops\n" + "".join(f"{d},{d},{d},bf16,{t},\n" for d, t in rows))
    t = read_gemm_table(comma)
    assert list(t.m) == [256, 512, 1024, 2048, 4096] and list(t.tflops) == [t for _d, t in rows]
    extra = tmp_path / "extra.csv"
    extra.write_text("m,n,k,dtype,tflops\n256,256,256,bf16,5.6\n512,512,512,bf16,42.2,7\n")
    with pytest.raises(CalibrationError, match="extra.csv, line 3: 6 values, but the header \\(line 1\\) names 5"):
        read_gemm_table(extra)
    semi = tmp_path / "semi.csv"
    semi.write_text("m;n;k;dtype;tflops\n256;256;256;bf16;5.6\n")
    with pytest.raises(CalibrationError, match="semi.csv, line 1: the columns are separated by semicolons"):
        read_gemm_table(semi)
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes(comma.read_text().encode("utf-16"))    # PowerShell's '>': UTF-16 with a byte-order mark
    assert list(read_gemm_table(utf16).tflops) == [t for _d, t in rows]
    neg = tmp_path / "neg.csv"
    neg.write_text("m,n,k,dtype,tflops\n256,256,256,bf16,-3\n")
    with pytest.raises(CalibrationError, match="neg.csv, line 2, column 'tflops': must be a positive number, got -3$"):
        read_gemm_table(neg)


@pytest.mark.parametrize(("name", "dtype"), [
    ("FP8_E5M2", "fp8"), ("float8_e4m3fn", "fp8"), ("torch.float8_e5m2", "fp8"), ("torch.bfloat16", "bf16"),
    ("torch.float16", "fp16"),
])
def test_gemm_dtype_spellings(name, dtype):
    assert normalise_dtype(name) == dtype


# ----------------------------------------------------------------- hand-edited profiles

BASE_LINK = {"collective": "all_reduce", "ranks": 8, "bus_bandwidth_gb_per_s": 360.0}
BASE_CURVE = {"eff_max": 0.8, "m_half": 159, "n_half": 188, "k_half": 200}


@pytest.mark.parametrize(("change", "message"), [
    ({"links": {"nvlink": {**BASE_LINK, "level": "fabric"}}}, "links.nvlink.level: the text 'fabric' under links.nvlink"),
    ({"links": {"nvlink": {**BASE_LINK, "bus_bandwidth_gb_per_s": 1e308}}},
     "bus_bandwidth_gb_per_s: must be a positive number of GB/s, at most 10,000, got 1e\\+308"),
    ({"gemm": {"bf16": {**BASE_CURVE, "fixed_time_s": 1e300}}}, "gemm.bf16: fixed_time_s must be a non-negative "
                                                                "number of seconds, at most 0.01"),
    ({"gemm": {"bf16": {**BASE_CURVE, "measured": "no"}}}, "gemm.bf16: measured must be true or false, got the text"),
    ({"gemm": {"bf16": {**BASE_CURVE, "source": 5}}}, "gemm.bf16: source must be text, got 5"),
    ({"gemm": {"bf16": {**BASE_CURVE, "eff_max": None}}}, "gemm.bf16: eff_max must be at most 1 and above 0 .*got "
                                                          "nothing"),
    ({"gemm": {"bf16": BASE_CURVE, "BF16": BASE_CURVE}}, "gemm.BF16: the same data type as gemm.bf16"),
    ({"device": [1]}, "device: must be text, got a list of 1 item"),
    ({"links": {"fabric": {**BASE_LINK, "level": "fabric", "ranks": None, "ranks_per_host": 8}}},
     "links.fabric.ranks: missing"),                                    # "ranks:" written with no value
    ({"links": {"nvlink": {**BASE_LINK, "level": "nvlink", "collective": [1]}}}, "links.nvlink.collective: .* is not"),
    ({"links": {"nvlink": {**BASE_LINK, "level": "nvlink", "collective": {"a": 1}}}}, "links.nvlink.collective: .* is not"),
])
def test_hand_edited_profiles_are_checked(change, message):
    with pytest.raises(CalibrationError, match=message):
        profile_from_dict({"name": "x", "date": "2026-01-01", **change}, where="p.yaml")


def test_the_cli_names_its_options(tmp_path, capsys):
    assert main(["calibrate", "--name", "x", "--nccl", str(A3MEGA), "--accelerator", "nope"]) == 2
    assert capsys.readouterr().err.startswith("gpucluster calibrate: error: --accelerator: ")
    assert main(["calibrate", "--name", "x", "--nccl", str(A3MEGA), "-o", str(tmp_path / "x.json")]) == 2
    assert "-o: a profile is a YAML file; end the file name in .yaml" in capsys.readouterr().err
    assert main(["calibrate", "--name", "x", "--nccl", str(A3MEGA), "--ranks", "4"]) == 2
    assert "4 ranks given, but the output lists 16 ranks" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------- the notebook's parameters

def run_notebook(tmp_path, monkeypatch, **params):
    """notebooks/08_calibration.py with some parameters replaced, run as a script from the notebooks folder."""
    source = (ROOT / "notebooks" / "08_calibration.py").read_text()
    for key, value in params.items():
        source, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", source, count=1, flags=re.MULTILINE)
        assert n == 1, key
    script = tmp_path / "nb.py"
    script.write_text(source)
    monkeypatch.chdir(ROOT / "notebooks")
    return runpy.run_path(str(script))


@pytest.mark.parametrize("params", [
    {"nccl_files": []},                                                     # GEMM only
    {"gemm_csv": None, "nccl_files": [f"fabric={A3HIGH}"], "gpus_per_node": 8},   # links only
], ids=["gemm-only", "links-only"])
def test_the_notebook_runs_with_only_some_inputs(tmp_path, monkeypatch, params):
    ns = run_notebook(tmp_path, monkeypatch, **params)
    result = ns["result"]
    assert bool(result.gemm_tables) == (params.get("gemm_csv", "x") is not None)
    assert bool(result.tests) == bool(params["nccl_files"])


def test_the_notebook_runs_with_an_fp8_table_only(tmp_path, monkeypatch):
    csv = tmp_path / "fp8.csv"
    curve = CURVE.replace(peak_tflops=1978.9)
    known_table(np.array([128, 512, 1024, 4096, 8192]), curve, "fp8_e4m3", 1978.9).to_csv(csv, index=False)
    ns = run_notebook(tmp_path, monkeypatch, gemm_csv=str(csv))
    assert set(ns["result"].gemm_tables) == {"fp8"}
    assert math.isclose(ns["result"].profile.gemm["fp8"].eff_max, 0.7, rel_tol=0.01)



def test_rows_with_wrong_values_are_noted():
    text = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8)
    assert not parse_nccl_tests(text).notes
    lines = text.splitlines()
    last = max(i for i, line in enumerate(lines) if line.strip().startswith("8589934592"))
    cells = lines[last].split()
    cells[8] = "3"   # the out-of-place #wrong column (after size count type redop root time algbw busbw)
    lines[last] = "  ".join(cells)
    t = parse_nccl_tests("\n".join(lines).replace("0 OK", "1 FAILED"))
    assert any(n.startswith("1 row with wrong values") for n in t.notes)


# ----------------------------------------------------------------- counts, units and encodings in the messages

def test_counts_of_one_read_in_the_singular(tmp_path):
    text = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8)
    with pytest.raises(CalibrationError, match=r"1 rank given, but the output lists 8 ranks \(its"):
        parse_nccl_tests(text, ranks=1)
    two = parse_nccl_tests(nccl_text(SIZES, model_times("all_reduce", 16, 2.0, 400.0, SIZES), ranks=16, hosts=2))
    with pytest.raises(CalibrationError, match="1 GPU per node given, but the rank lines put 8 ranks on each of 2 "
                                               "hosts"):
        fit_alpha_beta(two, gpus_per_node=1)
    one_column = tmp_path / "one.csv"
    one_column.write_text("m\n256,512\n")
    with pytest.raises(CalibrationError, match=r"one.csv, line 2: 2 values, but the header \(line 1\) names 1 column;"):
        read_gemm_table(one_column)
    # a run parsed from text has no file name: its notes name the output, not an empty name before a colon
    notes = calibrate("x", nccl=[(two, None)], date="2026-12-01").notes
    assert notes[0].startswith("the nccl-tests output: fabric measured on 2 nodes;")


def test_times_read_in_microseconds_with_the_ring_model():
    # alpha 2 us on 8 ranks: an all-reduce takes 2 (8 - 1) = 14 ring steps, 14 x 2 = 28 us at small sizes
    t = parse_nccl_tests(nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8))
    r = calibrate("x", nccl=[(t, "nvlink")], gemm=known_table(np.array([128, 512, 1024, 4096, 8192]), CURVE),
                  peaks={"bf16": 989.4}, date="2026-12-01")
    text = r.summary()
    assert "alpha 2 µs per ring step (28 µs per all-reduce on 8 GPUs: 14 steps)" in text
    assert "fixed time 5.8 µs;" in text                        # CURVE's fixed time, 5.8e-6 s, fitted back
    assert not re.search(r"\bus\b", text)
    # a row whose time is not its algbw: 1 GiB at 28 + 1.75 x 2^30 / 400e3 = 4,725.6 us prints algbw 2^30 / 4725.6e-6
    # = 227.22 GB/s; written as 9,451.2 us it is 2^30 / 9451.2e-6 = 113.6 GB/s
    lines = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8).splitlines()
    i = next(i for i, line in enumerate(lines) if line.split()[:1] == ["1073741824"])
    cells = lines[i].split()
    assert cells[5] == "4725.6"
    cells[5] = "9451.2"
    lines[i] = "  ".join(cells)
    with pytest.raises(CalibrationError, match=rf"line {i + 1}: 1 GiB in 9,451.2 µs is 113.6 GB/s, but the row's algbw "
                                               "column says 227.22 GB/s"):
        parse_nccl_tests("\n".join(lines))


def test_a_file_that_is_not_utf8_is_named_with_the_fix(tmp_path):
    fix = r"save the file as UTF-8 \(PowerShell: Out-File -Encoding utf8\)"
    table = "m,n,k,dtype,tflops\n" + "".join(f"{d},{d},{d},bf16,{d / 10}\n" for d in (256, 512, 1024, 2048, 4096))
    bare16 = tmp_path / "gemm16.csv"
    bare16.write_bytes(table.encode("utf-16-le"))            # UTF-16 without a byte-order mark
    bare = "the file is UTF-16 text without a byte-order mark"
    with pytest.raises(CalibrationError, match=f"^gemm16.csv: {bare} .*; {fix}$"):
        read_gemm_table(bare16)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(table.replace("512,512,512,bf16", "512,512,512,bf16\xe9").encode("latin-1"))
    with pytest.raises(CalibrationError, match=f"^latin.csv, line 3: the file is not UTF-8 text .*; {fix}$"):
        read_gemm_table(latin)
    text = nccl_text(SIZES, model_times("all_reduce", 8, 2.0, 400.0, SIZES), ranks=8)
    log16 = tmp_path / "ar16.txt"
    log16.write_bytes(text.encode("utf-16-be"))
    with pytest.raises(CalibrationError, match=f"^ar16.txt: {bare} .*; {fix}$"):
        read_nccl_tests(log16)
    assert read_nccl_tests_bytes(tmp_path, text.encode("utf-16")).ranks == 8   # with its byte-order mark: read
    with pytest.raises(CalibrationError, match=f"^odd.txt: no result rows found, and the file is not UTF-8 text .*; "
                                               f"{fix}$"):
        read_nccl_tests_bytes(tmp_path, "# r\xe9sultats du test\n".encode("latin-1"))


def read_nccl_tests_bytes(folder, data):
    path = folder / "odd.txt"
    path.write_bytes(data)
    return read_nccl_tests(path)


def test_fp32_rows_are_said_to_be_fitted_as_tf32(tmp_path):
    # 5 sizes in each of m, n and k: 125 rows of fp32, the known curve against the dense TF32 peak 494.7 TFLOP/s
    table = known_table(np.array([128, 512, 1024, 4096, 8192]), CURVE.replace(peak_tflops=494.7), "fp32", 494.7)
    csv = tmp_path / "fp32.csv"
    table.to_csv(csv, index=False)
    r = calibrate("x", gemm=read_gemm_table(csv), peaks={"tf32": 494.7}, date="2026-12-01")
    assert r.profile.gemm["tf32"].eff_max == pytest.approx(0.7, rel=0.01)      # the behaviour is unchanged
    assert any(n.startswith("fp32.csv: the fp32 rows (125 rows) are fitted as TF32 tensor-core rows, against the dense "
                            "TF32 peak of 494.7 TFLOP/s") for n in r.notes)
    with pytest.raises(CalibrationError, match=r"no dense tf32 peak for the measured device \(the fp32 rows are "
                                               r"fitted as TF32 tensor-core rows\)"):
        calibrate("x", gemm=table, peaks={"bf16": 989.4})
    tf32 = calibrate("x", gemm=table.assign(dtype="tf32"), peaks={"tf32": 494.7}, date="2026-12-01")
    assert not any("fp32" in n for n in tf32.notes)


def test_a_calibration_file_named_without_its_suffix_or_by_its_full_path(tmp_path):
    from gpucluster_lib.calibration.profile import scenario_profile
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.scenario import loads
    from tests.test_calibration import SCENARIO

    folder = tmp_path / "designs"
    folder.mkdir()
    profile = calibrate("fast", nccl=[(read_nccl_tests(A3MEGA), None)], date="2026-12-01").profile
    profile.save(folder / "fast.yaml")
    profile.save(tmp_path / "outside.yaml")
    with pytest.raises(ScenarioError, match=r"^calibration: no calibration profile at 'fast'; did you mean "
                                            r"'fast.yaml'\?$"):
        scenario_profile(loads(SCENARIO + "calibration: fast\n", base_dir=folder))
    with pytest.raises(ScenarioError, match="no calibration profile at 'slow'; write one with 'gpucluster calibrate'"):
        scenario_profile(loads(SCENARIO + "calibration: slow\n", base_dir=folder))
    # an absolute path inside the scenario's folder is read; one outside it is still refused (no --allow-paths)
    inside = loads(SCENARIO + f"calibration: '{folder / 'fast.yaml'}'\n", base_dir=folder)
    assert scenario_profile(inside).name == "fast"
    for outside in (tmp_path / "outside.yaml", folder / ".." / "outside.yaml"):
        with pytest.raises(ScenarioError, match="^calibration: .* is outside the scenario's folder: give a path "
                                                r"relative to the scenario file, inside its folder \(or pass "
                                                r"--allow-paths\)$"):
            scenario_profile(loads(SCENARIO + f"calibration: '{outside}'\n", base_dir=folder))
    assert scenario_profile(loads(SCENARIO + f"calibration: '{tmp_path / 'outside.yaml'}'\n", base_dir=folder,
                                  allow_paths=True)).name == "fast"


def test_calibration_hints_and_encodings_of_a_profile(tmp_path):
    import os

    from gpucluster_lib.calibration.profile import load_profile, scenario_profile
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.scenario import loads
    from tests.test_calibration import SCENARIO

    folder = tmp_path / "designs"
    (folder / "prof").mkdir(parents=True)
    profile = calibrate("fast", nccl=[(read_nccl_tests(A3MEGA), None)], date="2026-12-01").profile
    profile.save(folder / "prof.v2.yaml")
    profile.save(tmp_path / "outside.yaml")
    os.symlink(tmp_path / "outside.yaml", folder / "pw.yaml")
    # a dotted profile name still gets its suffix suggested
    with pytest.raises(ScenarioError, match=r"did you mean 'prof.v2.yaml'\?$"):
        scenario_profile(loads(SCENARIO + "calibration: prof.v2\n", base_dir=folder))
    # a folder-like name and a link out of the folder get no suggestion (the link would be refused)
    for ref in ("./prof/", "pw"):
        with pytest.raises(ScenarioError) as e:
            scenario_profile(loads(SCENARIO + f"calibration: '{ref}'\n", base_dir=folder))
        assert "did you mean" not in str(e.value)
    # the root and the current folder are no profile: a message, no traceback
    with pytest.raises(ScenarioError, match="no calibration profile at"):
        scenario_profile(loads(SCENARIO + "calibration: '/'\n", base_dir=folder, allow_paths=True))
    # a profile saved as UTF-16 with its byte-order mark reads; Latin-1 bytes get the UTF-8 advice
    text = (folder / "prof.v2.yaml").read_text(encoding="utf-8")
    (folder / "u16.yaml").write_bytes(text.encode("utf-16"))
    assert load_profile(folder / "u16.yaml").name == "fast"
    (folder / "latin.yaml").write_bytes(text.replace("source:", "# caf\xe9\nsource:").encode("latin-1"))
    with pytest.raises(CalibrationError, match=r"latin.yaml: the file has bytes that are not UTF-8 text; save the "
                                               r"file as UTF-8"):
        load_profile(folder / "latin.yaml")


def test_a_gemm_csv_with_a_utf8_byte_order_mark_and_a_comment(tmp_path):
    # PowerShell 5.1's Out-File -Encoding utf8 writes a byte-order mark; the comment line must still read as one
    rows = "# measured 2026-12-01\nm,n,k,dtype,tflops\n" + "".join(
        f"{s},{s},{s},bf16,{t}\n" for s, t in ((1024, 400.0), (2048, 600.0), (4096, 750.0), (8192, 800.0),
                                               (16384, 810.0)))
    (tmp_path / "bom.csv").write_bytes(rows.encode("utf-8-sig"))
    table = read_gemm_table(tmp_path / "bom.csv")
    assert len(table) == 5 and list(table["m"])[:2] == [1024, 2048]


def test_rebuilt_scenarios_keep_the_path_rules(tmp_path):
    # the inverse design and the sweeps rebuild the scenario: its calibration path must stay inside its folder
    from gpucluster_lib.calibration.profile import scenario_profile
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.explore.solve import fit_scenario
    from gpucluster_lib.explore.sweep import apply, parse_sweep
    from gpucluster_lib.scenario import loads
    from tests.test_calibration import SCENARIO

    folder = tmp_path / "designs"
    folder.mkdir()
    calibrate("fast", nccl=[(read_nccl_tests(A3MEGA), None)], date="2026-12-01").profile.save(tmp_path / "out.yaml")
    base = loads(SCENARIO + f"calibration: '{tmp_path / 'out.yaml'}'\n", base_dir=folder)
    outside = "is outside the scenario's folder"
    for rebuilt in (fit_scenario(base, rack_kw=40), apply(base, {"hardware.nodes": 2})):
        assert rebuilt.path_policy == "inside"
        with pytest.raises(ScenarioError, match=outside):
            scenario_profile(rebuilt)
    # a sweep's inline base names paths inside the sweep file's folder only
    sweep = parse_sweep({"base": {**{"hardware": {"server": "dgx-h100", "nodes": 1}},
                                  "calibration": str(tmp_path / "out.yaml")},
                         "axes": {"hardware.nodes": [1, 2]}}, base_dir=folder)
    with pytest.raises(ScenarioError, match=outside):
        scenario_profile(sweep.base)
