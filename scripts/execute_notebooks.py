"""Notebooks from plain sources: sync the jupytext sources to .ipynb, then execute them in place.

    python scripts/execute_notebooks.py                     # every notebook: sync, then execute
    python scripts/execute_notebooks.py 01_hardware report  # only these (names, sources or .ipynb)
    python scripts/execute_notebooks.py --sync-only         # update the .ipynb inputs, keep outputs
    python scripts/execute_notebooks.py --check             # exit 1 if a notebook differs from its source

The sources are ``notebooks/NAME.py`` (jupytext ``py:percent``: edit these, never the .ipynb).
Each one's notebook is ``notebooks/NAME.ipynb``, except the report template, which ships inside
the package as ``gpucluster_lib/report/report.ipynb`` (``gpucluster report`` executes it).

Syncing keeps the outputs of cells that jupytext can match (stale until executed), numbers the
cells ``cell-00``, ``cell-01``, ... (stable ids, clean diffs) and sets a fixed kernelspec.
Executing uses papermill with the notebook's defaults and strips what changes from run to run or
bloats the file: ``metadata.widgets`` (about 0.9 MB per chart model), papermill's metadata and
execution timestamps. ``make notebooks`` runs this inside the project's venv.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
import nbformat
from jupytext.combine import combine_inputs_with_outputs

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = ROOT / "notebooks"
#: Notebooks that do not live next to their source.
TARGETS = {"report": ROOT / "gpucluster_lib" / "report" / "report.ipynb",
           "sweep_report": ROOT / "gpucluster_lib" / "report" / "sweep_report.ipynb"}
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


# ---------------------------------------------------------------- which source makes which notebook

def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def sources() -> list[Path]:
    """Every jupytext source, sorted."""
    return sorted(SOURCE_DIR.glob("*.py"))


def notebook_for(source: Path) -> Path:
    return TARGETS.get(source.stem, source.with_suffix(".ipynb"))


def notebooks() -> list[Path]:
    """Every committed notebook: those in notebooks/ and the relocated ones."""
    found = set(SOURCE_DIR.glob("*.ipynb")) | {p for p in TARGETS.values() if p.exists()}
    return sorted(p for p in found if ".executing." not in p.name)


def source_for(notebook: Path) -> Path:
    for stem, target in TARGETS.items():
        if notebook.resolve() == target.resolve():
            return SOURCE_DIR / f"{stem}.py"
    return notebook.with_suffix(".py")


def resolve(ref: str) -> Path:
    """A source from a name (``01_hardware``), a source path or a notebook path."""
    p = Path(ref)
    if p.suffix == ".ipynb":
        return source_for(p)
    src = p if p.suffix == ".py" else SOURCE_DIR / f"{p.name}.py"
    if not src.exists():
        names = ", ".join(s.stem for s in sources())
        raise SystemExit(f"no notebook source {src} (sources: {names})")
    return src


# ---------------------------------------------------------------- comparing

def _cell_key(cell: nbformat.NotebookNode) -> tuple[str, str, tuple[str, ...]]:
    return cell.cell_type, cell.source, tuple(cell.get("metadata", {}).get("tags", []))


def differences(source: Path, notebook: Path) -> list[str]:
    """How ``notebook`` differs from ``jupytext.read(source)``: cell types, sources and tags."""
    if not notebook.exists():
        return [f"{_rel(notebook)} is missing"]
    want = [_cell_key(c) for c in jupytext.read(source).cells]
    have = [_cell_key(c) for c in nbformat.read(notebook, as_version=4).cells]
    out = []
    if len(want) != len(have):
        out.append(f"{len(have)} cells in the notebook, {len(want)} in the source")
    for i, (w, h) in enumerate(zip(want, have, strict=False)):
        if w[0] != h[0]:
            out.append(f"cell {i}: a {h[0]} cell in the notebook, {w[0]} in the source")
        if w[1] != h[1]:
            a, b = w[1].splitlines(), h[1].splitlines()
            n = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            out.append(f"cell {i}: source differs from line {n + 1}")
        if w[2] != h[2]:
            out.append(f"cell {i}: tags {list(h[2])} in the notebook, {list(w[2])} in the source")
    return out


def check() -> list[str]:
    """Every problem: notebooks that differ from their source, sources or notebooks without a partner."""
    problems = []
    for src in sources():
        nb = notebook_for(src)
        diffs = differences(src, nb)
        if diffs:
            problems.append(f"{_rel(nb)} differs from {_rel(src)}: " + "; ".join(diffs))
    for nb in notebooks():
        src = source_for(nb)
        if not src.exists():
            problems.append(f"{_rel(nb)} has no source {_rel(src)}")
    return problems


# ---------------------------------------------------------------- syncing and executing

def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Stable ids and metadata; no widget state, papermill metadata or timestamps."""
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("jupytext", None)
    # papermill tags the injected cell; we execute with defaults, so there is none
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    return nb


def sync(source: Path) -> Path:
    """Write the source's cells into its notebook, keeping the outputs jupytext can match."""
    notebook = notebook_for(source)
    text_nb = jupytext.read(source)
    language_info = {"name": "python"}
    if notebook.exists():
        old = nbformat.read(notebook, as_version=4)
        language_info = old.metadata.get("language_info", language_info)  # the kernel's, once executed
        nb = combine_inputs_with_outputs(text_nb, old, fmt="py:percent")
    else:
        nb = text_nb
    for cell, src_cell in zip(nb.cells, text_nb.cells, strict=True):
        # the source's tags win (jupytext would restore the old ones over an empty list)
        cell.metadata["tags"] = list(src_cell.metadata.get("tags", []))
    nb.metadata = {"kernelspec": text_nb.metadata.get("kernelspec", KERNELSPEC), "language_info": language_info}
    nb = clean(nb)
    nbformat.validate(nb)
    new_text = nbformat.writes(nb) + "\n"  # as nbformat.write
    if not notebook.exists() or notebook.read_text(encoding="utf-8") != new_text:
        notebook.parent.mkdir(parents=True, exist_ok=True)
        notebook.write_text(new_text, encoding="utf-8")
        print(f"synced {_rel(source)} -> {_rel(notebook)}", flush=True)
    return notebook


def execute(path: Path, timeout: int = 600) -> None:
    """Execute a notebook in place (cwd: its folder) with papermill and clean the result."""
    import papermill as pm

    tmp = path.with_suffix(".executing.ipynb")
    try:
        pm.execute_notebook(str(path), str(tmp), cwd=str(path.parent), kernel_name="python3",
                            execution_timeout=timeout, progress_bar=False)
        nb = clean(nbformat.read(tmp, as_version=4))
        nbformat.write(nb, path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebooks", nargs="*", help="names, sources or .ipynb paths (default: all)")
    ap.add_argument("--sync-only", action="store_true", help="sync the .ipynb inputs, do not execute")
    ap.add_argument("--check", action="store_true", help="only report notebooks that differ from their source")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = ap.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        if problems:
            print("edit the sources (notebooks/*.py), then run `make notebooks` "
                  "(NB=name for one; SYNC_ONLY=1 to skip executing)", file=sys.stderr)
        return 1 if problems else 0
    chosen = [resolve(r) for r in args.notebooks] if args.notebooks else sources()
    for src in chosen:
        notebook = sync(src)
        if not args.sync_only:
            print(f"executing {_rel(notebook)} ...", flush=True)
            execute(notebook, args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
