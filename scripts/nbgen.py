"""Write notebooks from a list of cells with stable cell ids (clean diffs when regenerated).

Usage from a generator script::

    from nbgen import md, code, write
    write("notebooks/01_hardware.ipynb", [md("# Title"), code("x = 1", tags=["parameters"])])
"""

from __future__ import annotations

from pathlib import Path

import nbformat


def md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip("\n"))


def code(text: str, tags: list[str] | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(text.strip("\n"))
    if tags:
        cell.metadata["tags"] = tags
    return cell


def write(path: str | Path, cells: list[nbformat.NotebookNode]) -> Path:
    nb = nbformat.v4.new_notebook()
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:02d}"
    nb.cells = cells
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    path = Path(path)
    nbformat.write(nb, path)
    return path
