"""``gpucluster serve``'s text: the accelerator by its catalogue name, SLOs with their units and in
words, the percentiles at the target rate with Poisson arrivals, and the exit status of an error
finding (0, as ``gpucluster estimate`` gives a plan that does not fit)."""

from __future__ import annotations

import json
import re

from gpucluster_lib.cli import main
from gpucluster_lib.resources import PACKAGE_DATA

LLAMA = PACKAGE_DATA / "scenarios" / "llama3-70b-512-h100.yaml"
PYTHON = re.compile(r"\b(?:True|False|None)\b|[\[\]{}]")


def _with(tmp_path, old: str, new: str) -> str:
    text = LLAMA.read_text()
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


def _without_severity_tags(out: str) -> str:
    """The text less the CLI's own finding tags ("[info] ", "[warning] "), which are not Python syntax."""
    return re.sub(r"^\s*\[(?:info|warning|error)\] ", "", out, flags=re.M)


def test_serve_text_in_words(capsys):
    assert main(["serve", str(LLAMA)]) == 0
    out = _without_severity_tags(capsys.readouterr().out)
    # the catalogue's name, as estimate prints it, not the id h100-sxm5-80gb
    assert out.startswith("Llama 3 70B on NVIDIA H100 SXM5 80GB, fp8")
    # the example's SLOs: ttft_slo_s 2.0 and tpot_slo_s 0.1, with their units
    assert "(SLO 2 s)" in out and "(SLO 100 ms)" in out and "meets the SLOs" in out
    assert not PYTHON.search(out), out
    assert main(["serve", str(LLAMA), "--max-rate"]) == 0
    out = _without_severity_tags(capsys.readouterr().out)
    assert out.startswith("Llama 3 70B on 512 x NVIDIA H100 SXM5 80GB, fp8") and not PYTHON.search(out)


def test_serve_text_percentiles_at_the_target_rate(tmp_path, capsys):
    path = _with(tmp_path, "  ttft_slo_s: 2.0\n", "  ttft_slo_s: 2.0\n  arrival: poisson\n  slo_percentile: 90\n")
    assert main(["serve", path, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    at = d["load"]["at_target"]
    # the example's 100 requests/s spread over the fleet's replicas
    assert at["rate_per_s"] == 100 / d["replicas"]
    assert main(["serve", path]) == 0
    out = capsys.readouterr().out
    line = [x for x in out.splitlines() if x.startswith("  at the target rate")][0]
    assert line == (f"  at the target rate, {100 / d['replicas']:,.2f} requests/s per replica: "
                    f"TTFT p50 {at['ttft_p50_s']:.3f} s, p90 {at['ttft_pct_s']:.3f} s; "
                    f"TPOT p50 {at['tpot_p50_s'] * 1e3:.1f} ms, p90 {at['tpot_pct_s'] * 1e3:.1f} ms")
    # at the target (below the max rate) the queue is shorter than at the max rate
    assert at["tpot_pct_s"] <= d["load"]["at_max_rate"]["tpot_pct_s"]


def test_serve_error_findings_exit_0_as_estimate_does(tmp_path, capsys):
    # a TPOT SLO of 1 ms that no batch of a 70B model meets on 8 H100: an error finding, printed, exit 0
    path = _with(tmp_path, "  tpot_slo_s: 0.1\n", "  tpot_slo_s: 0.001\n")
    assert main(["serve", path]) == 0
    out = capsys.readouterr().out
    assert "[error] inference-slo-unmet" in out and "does not meet the SLOs" in out
    assert main(["serve", path, "--max-rate"]) == 0
    assert "no Poisson rate meets the p99 SLOs" in capsys.readouterr().out
    # estimate with a plan that does not fit: an error finding too, exit 0 (docs/training.md)
    plan = tmp_path / "big.yaml"
    plan.write_text("model: {preset: llama2-70b}\nhardware: {accelerator: h100-sxm5-80gb, nodes: 1}\n"
                    "parallelism: {tensor: 1, pipeline: 1, micro_batch_size: 1, global_batch_size: 8}\n")
    assert main(["estimate", str(plan)]) == 0
    assert "[error] training-memory-exceeded" in capsys.readouterr().out
