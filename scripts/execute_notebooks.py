"""Execute notebooks in place with papermill and store clean, comparable outputs.

    python scripts/execute_notebooks.py notebooks/01_hardware.ipynb [more.ipynb ...]
    python scripts/execute_notebooks.py --all

Strips what changes from run to run or bloats the file: ``metadata.widgets`` (about
0.9 MB per chart model), papermill's timing metadata, and execution timestamps.
Run it from the repository root inside the project's venv.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
import papermill as pm

ROOT = Path(__file__).resolve().parent.parent


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        # papermill tags the injected cell; we execute with defaults, so there is none
    nb.cells = [c for c in nb.cells if "injected-parameters" not in c.metadata.get("tags", [])]
    return nb


def execute(path: Path, timeout: int = 600) -> None:
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
    ap.add_argument("notebooks", nargs="*", type=Path)
    ap.add_argument("--all", action="store_true", help="every notebooks/*.ipynb")
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args(argv)
    paths = sorted((ROOT / "notebooks").glob("*.ipynb")) if args.all else args.notebooks
    for p in paths:
        print(f"executing {p} ...", flush=True)
        execute(p.resolve(), args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
