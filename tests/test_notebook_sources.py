"""Each committed notebook matches its jupytext source (``notebooks/NAME.py``); no kernel needed.

The sources are what people edit; ``make notebooks`` writes them into the .ipynb files (and
executes those). These tests fail when someone edits one side only.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = ROOT / "notebooks"
REPORT_TEMPLATE = ROOT / "gpucluster_lib" / "report" / "report.ipynb"
FIX = "run `make notebooks` (or `make notebooks NB={name}` for this one only)"


def _load_script():
    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbscript = _load_script()
SOURCES = sorted(SOURCE_DIR.glob("*.py"))


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def _committed_notebooks() -> list[Path]:
    """Every .ipynb in notebooks/ and inside the package (found here, not through the script)."""
    found = [*SOURCE_DIR.glob("*.ipynb"), *(ROOT / "gpucluster_lib").rglob("*.ipynb")]
    return sorted(p for p in found if ".ipynb_checkpoints" not in p.parts and ".executing." not in p.name)


def test_there_are_sources():
    names = {p.stem for p in SOURCES}
    assert {"01_hardware", "app", "report", "validation"} <= names


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebook_matches_its_source(source: Path):
    notebook = nbscript.notebook_for(source)
    if not notebook.exists():
        pytest.fail(f"{_rel(source)} has no notebook {_rel(notebook)}; " + FIX.format(name=source.stem))
    want = _cells(jupytext.read(source))
    have = _cells(nbformat.read(notebook, as_version=4))
    if want == have:
        return
    details = []
    if len(want) != len(have):
        details.append(f"{len(have)} cells in the notebook, {len(want)} in the source")
    for i, (w, h) in enumerate(zip(want, have, strict=False)):
        for what, a, b in zip(("cell type", "source", "tags"), w, h, strict=True):
            if a != b:
                details.append(f"cell {i}: {what} differs")
    pytest.fail(f"{_rel(notebook)} differs from its source {_rel(source)} ({'; '.join(details)}); "
                + FIX.format(name=source.stem))


@pytest.mark.parametrize("notebook", _committed_notebooks(), ids=lambda p: _rel(p))
def test_notebook_has_a_source(notebook: Path):
    source = nbscript.source_for(notebook)
    assert source.exists(), (
        f"{_rel(notebook)} has no jupytext source {_rel(source)}: write the cells there "
        "(or delete the notebook), then run `make notebooks`")
    assert nbscript.notebook_for(source).resolve() == notebook.resolve()


@pytest.mark.parametrize("notebook", _committed_notebooks(), ids=lambda p: _rel(p))
def test_notebook_has_stable_ids_and_no_widget_state(notebook: Path):
    nb = nbformat.read(notebook, as_version=4)
    ids = [c.get("id") for c in nb.cells]
    assert ids == [f"cell-{i:02d}" for i in range(len(nb.cells))], (
        f"{_rel(notebook)}: cell ids {ids} are not cell-00, cell-01, ...; run `make notebooks`")
    assert "widgets" not in nb.metadata, f"{_rel(notebook)} stores widget state; run `make notebooks`"
    assert "papermill" not in nb.metadata, f"{_rel(notebook)} stores papermill metadata; run `make notebooks`"


def test_report_template_ships_in_the_package():
    from gpucluster_lib.report import render

    assert Path(render.REPORT_NOTEBOOK).resolve() == REPORT_TEMPLATE.resolve()
    assert REPORT_TEMPLATE.exists()
    assert nbscript.notebook_for(SOURCE_DIR / "report.py") == REPORT_TEMPLATE
    assert not (SOURCE_DIR / "report.ipynb").exists(), "one report template: gpucluster_lib/report/report.ipynb"
    nb = nbformat.read(REPORT_TEMPLATE, as_version=4)
    assert any("parameters" in c.metadata.get("tags", []) and "scenario_path" in c.source for c in nb.cells)


def test_sync_takes_cells_and_tags_from_the_source_and_keeps_outputs(tmp_path: Path):
    source = tmp_path / "01_hardware.py"
    notebook = tmp_path / "01_hardware.ipynb"
    shutil.copy(SOURCE_DIR / "01_hardware.py", source)
    shutil.copy(SOURCE_DIR / "01_hardware.ipynb", notebook)
    before = nbformat.read(notebook, as_version=4)

    text = source.read_text(encoding="utf-8")
    text = text.replace('# %% tags=["parameters"]\n', "# %%\n", 1)  # drop a tag
    text = text.replace("# %% [markdown]\n# ## The same ranking",  # add one
                        "# %% [markdown] tags=[\"note\"]\n# ## The same ranking", 1)
    text += "\n# %%\n1 + 1\n"  # a new cell
    source.write_text(text, encoding="utf-8")

    assert nbscript.differences(source, notebook)
    nbscript.sync(source)
    assert nbscript.differences(source, notebook) == []
    after = nbformat.read(notebook, as_version=4)
    assert [c.id for c in after.cells] == [f"cell-{i:02d}" for i in range(len(after.cells))]
    assert after.cells[1].metadata["tags"] == []
    assert "note" in after.cells[3].metadata["tags"]
    assert after.cells[-1].source == "1 + 1" and after.cells[-1].outputs == []
    # outputs of unchanged cells are kept (they are refreshed by executing, not by syncing)
    assert after.cells[4].outputs == before.cells[4].outputs
    assert after.metadata["kernelspec"]["name"] == "python3"
    first = notebook.read_text(encoding="utf-8")
    nbscript.sync(source)
    assert notebook.read_text(encoding="utf-8") == first, "syncing twice changes nothing"
