"""The sweep report: papermill on a sweep's folder, HTML with the front, the table, the best per objective."""

from __future__ import annotations

import re

import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.report.sweep import render_sweep_report, sweep_sections
from gpucluster_lib.resources import PACKAGE_DATA

HALL = PACKAGE_DATA / "sweeps" / "hall-dgx-h100.yaml"


def _sweep(tmp_path, constraints="['facility.racks <= 12']"):
    f = tmp_path / "s.yaml"
    f.write_text(f"name: Small hall\nbase: {HALL}\naxes:\n  hardware.nodes: [8, 16, 32]\n"
                 f"  facility.pue: [1.2, 1.4]\nconstraints: {constraints}\n"
                 "objectives: {cost.tco_usd: min, hardware.gpus: max}\n")
    return f


def test_sections_front_best_and_table(tmp_path):
    out = tmp_path / "out"
    assert main(["sweep", str(_sweep(tmp_path)), "-o", str(out), "--workers", "1", "--no-progress"]) == 0
    rep = sweep_sections(out)
    titles = [t for t, _, _ in rep.sections]
    assert titles == ["The front", "The best design per objective", "Every design"]
    front_html = rep.sections[0][1]
    # 32 DGX H100 need 12 compute racks alone (32 + 2 spares at 3 per rack), so only 8 and 16 nodes are
    # inside 12 racks; at each, PUE 1.2 costs less energy for the same GPUs: points 0 and 2 form the front
    points = [int(p) for p in re.findall(r"<tr><td class=\"num\">(\d+)</td>", front_html)]
    assert points == [0, 2]
    assert "Lowest TCO (USD)" in rep.sections[1][1] and "Highest GPUs" in rep.sections[1][1]
    assert len(rep.sections[0][2]) == 1  # the Pareto chart
    assert "6 designs" in rep.summary_html and "Racks at most 12" in rep.summary_html


def test_report_html_via_papermill(tmp_path, capfd):
    out = tmp_path / "out"
    assert main(["sweep", str(_sweep(tmp_path)), "-o", str(out), "--workers", "1", "--no-progress",
                 "--report"]) == 0
    # capfd reads file descriptor 2, which the kernel's process shares: no transport warning on it
    assert "without encryption" not in capfd.readouterr().err
    text = (out / "report.html").read_text()
    assert "Small hall" in text and "The front" in text and "The best design per objective" in text
    assert "data:image/svg+xml" in text  # the chart, rendered offline as SVG
    assert "Traceback" not in text and "import " not in text  # no code cells


def test_infeasible_sweep_report_names_the_constraint(tmp_path):
    out = tmp_path / "out"
    main(["sweep", str(_sweep(tmp_path, "['facility.racks <= 2']")), "-o", str(out), "--workers", "1",
          "--no-progress"])
    rep = sweep_sections(out)
    assert [f.code for f in rep.findings] == ["explore-infeasible"]  # 8 DGX H100 need 4 racks by hand (8+1)/3
    assert rep.findings[0].field == "constraints[0]"


def test_report_of_an_empty_folder(tmp_path):
    with pytest.raises(ScenarioError, match="no sweep results"):
        render_sweep_report(tmp_path)


def test_a_failed_sweep_report_leaves_no_file_or_folder_it_made(tmp_path, monkeypatch):
    from gpucluster_lib.report import sweep

    out = tmp_path / "out"
    assert main(["sweep", str(_sweep(tmp_path)), "-o", str(out), "--workers", "1", "--no-progress"]) == 0
    before = sorted(p.name for p in tmp_path.iterdir())

    def fail(*args):
        raise RuntimeError("the notebook failed")

    monkeypatch.setattr(sweep, "_execute", fail)
    with pytest.raises(RuntimeError, match="the notebook failed"):
        render_sweep_report(out, tmp_path / "new" / "deeper" / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # neither "new" nor "new/deeper" is left
    with pytest.raises(RuntimeError):
        render_sweep_report(out)  # the default, OUTDIR/report.html: the results stay, the empty file goes
    assert not (out / "report.html").exists() and (out / "results.csv").exists()


def test_a_cell_that_fails_in_the_sweep_report_is_a_one_line_report_error(tmp_path, capfd):
    """A sweep folder whose sweep.json was edited by hand (an objective neither min nor max) passes
    the quick check before the kernel starts and fails in the notebook: a ReportError (a
    GpuClusterError, so the CLI's exit 2) with the kernel's message in one line, as the design report."""
    import json

    from gpucluster_lib.report.kernel import ReportError

    out = tmp_path / "out"
    assert main(["sweep", str(_sweep(tmp_path)), "-o", str(out), "--workers", "1", "--no-progress"]) == 0
    meta = json.loads((out / "sweep.json").read_text("utf-8"))
    meta["objectives"] = {"cost.tco_usd": "sideways"}
    (out / "sweep.json").write_text(json.dumps(meta), "utf-8")
    with pytest.raises(ReportError) as err:
        render_sweep_report(out)
    text = str(err.value)
    assert text.startswith("the sweep report of ") and "could not be written: " in text
    assert "sideways" in text and "\n" not in text and "Traceback" not in text
    assert not (out / "report.html").exists()
    err = capfd.readouterr().err  # file descriptor 2, shared with the kernel's process
    assert "Traceback" not in err and "ZMQError" not in err
