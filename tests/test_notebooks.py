"""Every notebook executes headless under papermill, with each example scenario where it takes one.

The report template is ``gpucluster_lib/report/report.ipynb`` (it ships in the package); the
others are ``notebooks/*.ipynb``. ``make test`` also runs ``pytest --nbval notebooks`` to compare
the committed outputs.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import papermill as pm
import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT_TEMPLATE = ROOT / "gpucluster_lib" / "report" / "report.ipynb"  # ships in the package
NOTEBOOKS = sorted([*(ROOT / "notebooks").glob("*.ipynb"), REPORT_TEMPLATE])
EXAMPLES = sorted((ROOT / "gpucluster_lib" / "data" / "scenarios").glob("*.yaml"))
pytestmark = pytest.mark.notebook


def _takes_scenario(nb_path: Path) -> bool:
    nb = nbformat.read(nb_path, as_version=4)
    return any("parameters" in c.metadata.get("tags", []) and "scenario_path" in c.source for c in nb.cells)


CASES = [
    pytest.param(nb, ex, id=f"{nb.stem}[{ex.stem}]" if ex else nb.stem)
    for nb in NOTEBOOKS
    for ex in (EXAMPLES if _takes_scenario(nb) else [None])
]


def test_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    assert {"01_hardware.ipynb", "app.ipynb", "report.ipynb"} <= names
    assert REPORT_TEMPLATE.exists()


@pytest.mark.parametrize(("notebook", "scenario"), CASES)
def test_notebook_executes(notebook: Path, scenario: Path | None, tmp_path: Path):
    params = {"scenario_path": str(scenario)} if scenario else {}
    out = tmp_path / notebook.name
    pm.execute_notebook(str(notebook), str(out), parameters=params, cwd=str(notebook.parent),
                        kernel_name="python3", execution_timeout=600, progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    text = out.read_text()
    assert "gc-msg gc-error" not in text, "a panel showed an error message with an example scenario"
