"""Widget layer: the only package that imports ipywidgets.

Panels link widgets to an :class:`~gpucluster_lib.ui.common.AppState`; all numbers
come from the library. ``tab_*.py`` modules are discovered by :mod:`.app`.
"""
