"""What an app kernel does at start: the offline chart bundle comes from a cache file, and the
page's first build imports none of the optional heavy modules (benchmarks/bench_app_load.py
measures the time and memory this saves per session)."""

from __future__ import annotations

import os
import subprocess
import sys

import altair as alt

from gpucluster_lib.ui import common

# optional parts a first page never needs: each is imported where it is used
OPTIONAL = ("vl_convert", "rfc3987_syntax", "dask", "distributed", "openpyxl", "kubernetes_validate",
            "playwright", "scipy", "networkx")


def test_offline_bundle_is_written_once_then_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(common, "_OFFLINE_ENABLED", False)
    monkeypatch.setattr(alt.JupyterChart, "_esm", alt.JupyterChart._esm)
    monkeypatch.setattr(alt.JupyterChart, "_is_offline", False)
    made = []

    def fake_enable_offline(offline=True):  # stands in for vl-convert's 3-9 s bundling
        made.append(offline)
        alt.JupyterChart._esm = "// bundle made by vl-convert"
        alt.JupyterChart._is_offline = True

    monkeypatch.setattr(alt.JupyterChart, "enable_offline", fake_enable_offline)
    path = common.offline_bundle_path()
    assert path.parent == tmp_path / "gpucluster_lib"
    common.enable_offline_charts()
    assert made == [True]
    assert path.read_text(encoding="utf-8") == "// bundle made by vl-convert"
    assert not list(path.parent.glob("*.tmp"))  # the temporary file was renamed, not left behind

    # a later kernel: reads the file, never bundles
    monkeypatch.setattr(common, "_OFFLINE_ENABLED", False)
    monkeypatch.setattr(alt.JupyterChart, "_esm", "")
    monkeypatch.setattr(alt.JupyterChart, "_is_offline", False)
    common.enable_offline_charts()
    assert made == [True]
    assert alt.JupyterChart._esm == "// bundle made by vl-convert"
    assert alt.JupyterChart._is_offline


def test_unwritable_cache_still_gives_offline_charts(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the cache folder cannot be made
    monkeypatch.setattr(common, "_OFFLINE_ENABLED", False)
    monkeypatch.setattr(alt.JupyterChart, "_esm", alt.JupyterChart._esm)
    monkeypatch.setattr(alt.JupyterChart, "_is_offline", False)
    monkeypatch.setattr(alt.JupyterChart, "enable_offline",
                        lambda offline=True: setattr(alt.JupyterChart, "_esm", "// made"))
    common.enable_offline_charts()
    assert alt.JupyterChart._esm == "// made"


def test_first_page_build_imports_no_optional_module(tmp_path, monkeypatch):
    """The notebook's one cell in a fresh interpreter, as a kernel runs it once an earlier kernel
    cached the chart bundle: it loads neither vl-convert's engine nor any optional module."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cached = common.offline_bundle_path()  # the name the kernel will look for
    cached.parent.mkdir(parents=True)
    cached.write_text("// bundle cached by an earlier kernel", encoding="utf-8")
    code = ("import sys\n"
            "from gpucluster_lib.ui.app import build_app\n"  # the notebook's cell, as the kernel runs it
            "import altair as alt\n"
            "build_app()\n"
            "assert alt.JupyterChart._esm.startswith('// bundle cached'), 'the cached bundle was not used'\n"
            f"print(' '.join(m for m in {OPTIONAL!r} if sys.modules.get(m) is not None))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    assert out.stdout.split() == []
