"""Widget layer: the only package that imports ipywidgets.

Panels link widgets to an :class:`~gpucluster_lib.ui.common.AppState`; all numbers
come from the library. ``tab_*.py`` modules are discovered by :mod:`.app`.
"""

import sys

# Every app kernel imports altair, which imports jsonschema, whose format checker imports the
# optional ``rfc3987_syntax`` package when it is installed (Jupyter's event schemas pull it in);
# that builds an Earley parser for RFC 3987 at import: measured 1.5-7 s of each kernel's start on
# 2 shared cores. It only checks the "iri"/"iri-reference" string formats, which the Vega-Lite
# schema altair validates against never uses ("uri", "uri-reference", "color-hex" only), so the
# app's kernels go without it (jsonschema then leaves those two formats unchecked).
if "rfc3987_syntax" not in sys.modules:
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # import raises ImportError
