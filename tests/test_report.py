"""Batch reports: papermill runs the report notebook; HTML without code; failures recorded."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpucluster_lib.report.render import BatchResult, expand_inputs, index_html, render_batch

pytestmark = pytest.mark.notebook


def test_single_report_is_html_without_code(tmp_path, root):
    out = tmp_path / "r.html"
    proc = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report",
                           str(root / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    # only our own messages: no "[IPKernelApp] WARNING | Kernel is running over TCP without
    # encryption" from the kernel (report/kernel.py puts it on Unix sockets), nothing else either
    assert "without encryption" not in proc.stderr and proc.stderr == ""
    html = out.read_text()
    assert "GPT-3 175B on 1024 A100" in html
    assert "Hardware" in html and "A100" in html
    assert "report_sections(" not in html and "import altair" not in html  # code cells excluded
    assert "Traceback" not in html
    # the design document: page 1, one chapter per stage with its chart, the appendix
    from tests.test_report_document import identifier_leaks

    assert identifier_leaks(html) == []  # every text node of the exported notebook
    assert "Executive summary" in html and "The three most important findings" in html
    for title in ("Network", "Power, cooling and space", "Training", "Reliability and spares", "Cost and carbon",
                  "Bill of materials", "Findings and fixes", "Appendix: assumptions and sources"):
        assert f"<h2>{title}</h2>" in html, title
    assert html.count("<svg") >= 12  # the stages' charts, inline vectors


def test_batch_reports_folder_with_one_bad_scenario(tmp_path, root):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(root / "gpucluster_lib/data/scenarios/reference-8x-a100.yaml", src / "a-good.yaml")
    (src / "b-bad.yaml").write_text("name: bad\nhardware: {nodes: -4}\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report", str(src), "-o", str(out), "--json",
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1  # one scenario failed, the other was still written
    data = json.loads(proc.stdout)
    by_name = {r["scenario"].rsplit("/", 1)[-1]: r for r in data["reports"]}
    assert by_name["a-good.yaml"]["ok"] and (out / "a-good.html").exists()
    assert not by_name["b-bad.yaml"]["ok"]
    assert "hardware.nodes: must be a positive integer, got -4" in by_name["b-bad.yaml"]["error"]
    index = (out / "index.html").read_text()
    assert "1 of 2 scenarios reported" in index and "a-good.html" in index and "failed" in index


def test_batch_progress_and_order_with_fake_renderer(tmp_path, root):
    calls = []

    def fake(path, target, timeout_s):
        calls.append(path.name)
        if "llama" in path.name:
            raise RuntimeError("kernel died")
        target.write_text("ok")
        return target

    results = render_batch([root / "gpucluster_lib/data/scenarios"], tmp_path, progress=False, render=fake)
    assert calls == sorted(calls) and len(calls) >= 3
    assert [r.ok for r in results].count(False) == 1
    assert re.search(r"RuntimeError: kernel died", (tmp_path / "index.html").read_text())


def test_expand_inputs_errors(tmp_path):
    from gpucluster_lib import ScenarioError

    with pytest.raises(ScenarioError, match="not found"):
        expand_inputs([tmp_path / "missing.yaml"])
    with pytest.raises(ScenarioError, match=r"no scenario files \(\*\.yaml\)"):
        expand_inputs([tmp_path])


def test_index_html_escapes_names(tmp_path):
    r = BatchResult(tmp_path / "<x>.yaml", None, 0.1, "ScenarioError: bad <value>")
    assert "&lt;x&gt;.yaml" in index_html([r]) and "<value>" not in index_html([r])


def test_key_figures_come_from_the_design_summary():
    from pathlib import Path

    from gpucluster_lib.design import Design
    from gpucluster_lib.report.render import key_figures_html, report_sections

    root = Path(__file__).resolve().parent.parent
    d = Design.from_yaml(root / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml")
    out = key_figures_html(report_sections(d))
    assert "<td>GPUs</td><td class='num'>1,024</td>" in out  # 128 DGX A100 x 8 GPUs (the scenario)
    assert "<td>Hot-spare nodes</td><td class='num'>4</td>" in out
    mfu = d.training.mfu
    assert f"{mfu:.1%}" in out  # MFU as a percentage
    errors = sum(f.severity == "error" for f in d.findings)
    warnings = sum(f.severity == "warning" for f in d.findings)
    assert (f"{errors} error(s)" in out) if errors or warnings else "No errors or warnings" in out
    assert f"{warnings} warning(s)" in out or not (errors or warnings)
    assert key_figures_html(d) == out  # the same table from the design itself


def test_report_reads_a_catalogue_outside_the_folder_only_with_allow_paths(tmp_path):
    """The report's notebook kernel loads the scenario again: --allow-paths must reach it."""
    from tests.test_catalog import one_row
    from tests.test_paths import cli

    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "my_accelerators.csv").write_text(one_row("accelerators", name="Acme X1 Test"))
    (tmp_path / "designs").mkdir()
    scenario = tmp_path / "designs" / "s.yaml"
    scenario.write_text("name: Overlay design\ncatalog: ['../parts/my_accelerators.csv']\n"
                        "hardware: {accelerator: x1, nodes: 2}\ncosts: {accelerator_price: 20000}\n")
    out = tmp_path / "r.html"
    rc, _, err = cli("report", str(scenario), "-o", str(out))
    assert rc == 2 and "outside the scenario's folder" in err and "--allow-paths" in err
    assert not out.exists()  # refused before a kernel was started
    rc, _, err = cli("report", str(scenario), "-o", str(out), "--allow-paths")
    assert rc == 0, err
    html = out.read_text()
    assert "Traceback" not in html and "outside the scenario" not in html
    # 2 nodes x 8 GPUs (the default per node) of the overlay's accelerator, named as in its CSV
    assert "16 × Acme X1 Test" in html


def test_a_stage_that_fails_inside_the_report_kernel_is_a_one_line_message(tmp_path):
    """An accelerator without a price (the cost stage refuses it) fails in the notebook's kernel:
    the command says why in one line (exit 2), with no traceback. Run as its own process, so that
    its standard error holds the kernel's as well: the real error reaches it, and nothing else
    (no kernel transport warning)."""
    from tests.test_catalog import one_row

    (tmp_path / "my_accelerators.csv").write_text(one_row("accelerators"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text("catalog: [my_accelerators.csv]\nhardware: {accelerator: x1, nodes: 2}\n")
    proc = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report", str(scenario), "-o",
                           str(tmp_path / "r.html")], capture_output=True, text=True, timeout=600)
    err = proc.stderr
    assert proc.returncode == 2 and proc.stdout == ""
    assert "costs.accelerator_price" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "without encryption" not in err


def test_kernel_sockets_are_unix_sockets_in_a_short_folder(tmp_path, monkeypatch):
    """The kernel listens on Unix sockets in a folder made for the run under /tmp, whatever TMPDIR
    is, and falls back to TCP (jupyter_client's default) where a socket's path would not fit in
    sockaddr_un."""
    from gpucluster_lib.report import kernel

    cfg = kernel.kernel_config(tmp_path)
    assert cfg.KernelManager.transport == "ipc"
    assert cfg.KernelManager.ip == str(tmp_path.resolve() / "kernel")
    deep = tmp_path / ("d" * 120)  # longer than the 104 bytes macOS allows for a socket path
    assert "KernelManager" not in kernel.kernel_config(deep)
    long_tmp = tmp_path / ("t" * 90)
    long_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(long_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR again
    folder = kernel._socket_dir()
    assert folder is not None and Path(folder).parent == Path("/tmp")
    assert kernel.kernel_config(Path(folder)).KernelManager.transport == "ipc"
    Path(folder).rmdir()


def test_a_report_cell_past_the_timeout_is_one_line_with_a_long_tmpdir(tmp_path, root):
    """``--timeout 1`` stops the report in its first design cell (importing the library and
    designing takes longer than a second): exit 2, as for any bad input, and one line on standard
    error naming the timeout and the option. The kernel is interrupted before it is shut down, so
    no ZMQError traceback of a kernel answering on a closed socket follows it. TMPDIR is 90+
    characters, too long for a Unix socket's path: the run still works (its sockets are under /tmp,
    see the test above) and leaves nothing in TMPDIR."""
    long_tmp = tmp_path / ("t" * 90)
    long_tmp.mkdir()
    assert len(str(long_tmp)) > 85
    proc = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report",
                           str(root / "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"), "-o",
                           str(tmp_path / "x.html"), "--timeout", "1"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TMPDIR": str(long_tmp)})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "gpucluster report: error: the report of 'Reference 8x A100 rack' could not be written: "
        "a cell ran longer than the 1 s timeout; raise --timeout"]
    assert not (tmp_path / "x.html").exists()
    assert list(long_tmp.iterdir()) == []  # the run's temporary folders are gone


def _one_cell_notebook(path: Path, source: str) -> Path:
    """A notebook of one code cell, ``source``, for the python3 kernel, written to ``path``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_kernel_that_dies_is_a_report_error(tmp_path, capfd):
    """A kernel that exits in a cell (as one killed for memory does) is a ReportError saying so,
    not nbclient's DeadKernelError; nothing of the kernel's reaches standard error."""
    from gpucluster_lib.report.kernel import ReportError, execute_notebook

    _one_cell_notebook(tmp_path / "dies.ipynb", "import os\nos._exit(1)")
    with pytest.raises(ReportError, match=r"^the test report could not be written: the notebook's Python kernel died"):
        execute_notebook(tmp_path / "dies.ipynb", tmp_path / "out.ipynb", {}, cwd=tmp_path, timeout_s=60,
                         what="the test report")
    assert capfd.readouterr().err == ""


def test_the_report_kernel_is_killed_at_the_end_without_an_interrupt_or_a_shutdown_request(tmp_path, monkeypatch):
    """jupyter_client's kernel manager sends SIGINT before every shutdown; landing while ipykernel
    still handles its last message it logs "KeyboardInterrupt caught in kernel." on standard error
    (seen in 1 of 15 plain runs). Asked to shut down, ipykernel 7.4's control thread still publishes
    on IOPub while its main thread's exit closes the pipes to it: a "ZMQError: Socket operation on
    non-socket" traceback (seen in 2 of 67 runs of the failing sweep report). The report's kernel
    gets neither the interrupt nor the request: it is killed once the notebook has run."""
    from jupyter_client.manager import KernelManager
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    from gpucluster_lib.report.kernel import execute_notebook

    sent: list[int] = []
    asked: list[bool] = []
    killed: list[bool] = []
    real_signal, real_request, real_kill = (KernelManager._async_signal_kernel, KernelManager._async_request_shutdown,
                                            LocalProvisioner.kill)

    async def record_signal(self, signum):
        sent.append(signum)
        await real_signal(self, signum)

    async def record_request(self, restart=False):
        asked.append(restart)
        await real_request(self, restart)

    async def record_kill(self, restart=False):
        killed.append(restart)
        await real_kill(self, restart)

    monkeypatch.setattr(KernelManager, "_async_signal_kernel", record_signal)  # the manager of any class
    monkeypatch.setattr(KernelManager, "_async_request_shutdown", record_request)
    monkeypatch.setattr(LocalProvisioner, "kill", record_kill)
    nb = _one_cell_notebook(tmp_path / "ok.ipynb", "x = 1 + 1")
    execute_notebook(nb, tmp_path / "out.ipynb", {}, cwd=tmp_path, timeout_s=60, what="the test report")
    assert sent == [] and asked == []  # no SIGINT, no shutdown request
    assert killed == [False]  # SIGKILL to the kernel's process group, once


def test_the_report_kernel_logs_its_warnings_and_errors(tmp_path, capfd):
    """The kernel's own log keeps its normal level (warnings and up): an error ipykernel logs, as
    its message handlers do on a failure, reaches standard error; a critical-only log hid it."""
    from gpucluster_lib.report.kernel import execute_notebook

    nb = _one_cell_notebook(tmp_path / "logs.ipynb", "k = get_ipython().kernel\n"
                            "k.log.warning('a kernel warning for the test')\n"
                            "k.log.error('a kernel error for the test')")
    execute_notebook(nb, tmp_path / "out.ipynb", {}, cwd=tmp_path, timeout_s=60, what="the test report")
    err = capfd.readouterr().err
    assert "a kernel warning for the test" in err and "a kernel error for the test" in err, err
    assert len(err.strip().splitlines()) == 2, err  # those two lines, nothing else
