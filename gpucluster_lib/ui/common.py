"""Shared widget plumbing: the app state, message areas, tables, charts, guarded callbacks.

Recipes measured on this stack (docs/stack notes): tables go in ``widgets.HTML`` and
charts in one offline ``alt.JupyterChart`` per panel updated in place; nothing large is
displayed into an ``ipywidgets.Output`` (it hangs headless execution, nbclient #312).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html
import logging
import os
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import ipywidgets as widgets
import pandas as pd
import traitlets

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.findings import Finding, findings_html
from gpucluster_lib.formatting import MISSING, format_value, is_number
from gpucluster_lib.hardware.resolve import catalog_for
from gpucluster_lib.scenario import Scenario, load_scenario

log = logging.getLogger("gpucluster_lib.ui")

_OFFLINE_ENABLED = False


def bundle_cache_dir() -> Path:
    """Where the offline chart bundle is kept between kernels: ``$XDG_CACHE_HOME/gpucluster_lib``
    (``~/.cache/gpucluster_lib`` without it)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpucluster_lib"


def offline_bundle_path() -> Path:
    """The cache file of the offline chart bundle for the installed altair and vl-convert.

    The name hashes everything the bundle is made from (altair's widget source, its Vega-Lite
    version, altair's and vl-convert's versions), so an upgrade of either makes a new file."""
    from importlib.metadata import version

    from altair.jupyter.jupyter_chart import load_js_src
    from altair.utils._importers import vl_version_for_vl_convert

    key = "\n".join([alt.__version__, version("vl-convert-python"), vl_version_for_vl_convert(), load_js_src()])
    return bundle_cache_dir() / f"jupyterchart-{hashlib.sha256(key.encode()).hexdigest()[:16]}.js"


def enable_offline_charts() -> None:
    """Serve vega from the anywidget bundle, not a CDN (the app may have no internet).

    altair's ``JupyterChart.enable_offline`` makes that bundle (0.9 MB of JavaScript) with
    vl-convert's embedded JavaScript engine: measured about 3-9 s and +95 MB of resident memory
    in every kernel (2 shared cores, benchmarks/bench_app_load.py), which no session needs
    once the bundle exists. The first kernel writes it to :func:`offline_bundle_path`; later
    kernels read the file and never load vl-convert's engine. Unreadable or unwritable cache:
    altair makes the bundle itself, as before.
    """
    global _OFFLINE_ENABLED
    if _OFFLINE_ENABLED:
        return
    path = offline_bundle_path()
    try:
        bundle = path.read_text(encoding="utf-8")
    except OSError:
        bundle = ""
    if bundle:
        alt.JupyterChart._esm = bundle  # what enable_offline sets, made by the same vl-convert
        alt.JupyterChart._is_offline = True
    else:
        alt.JupyterChart.enable_offline(offline=True)
        tmp = None
        try:  # written whole or not at all: kernels starting together may race here
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(alt.JupyterChart._esm)
            os.replace(tmp, path)
        except OSError as exc:
            log.info("offline chart bundle not cached (%s)", exc)
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
    _OFFLINE_ENABLED = True


class AppState(traitlets.HasTraits):
    """The one scenario every panel edits, the catalogue it resolves against, and its Design.

    Every tab reads its numbers from :attr:`design`: one :class:`~gpucluster_lib.design.Design`
    per scenario state. When the scenario changes, the next design reuses every stage whose
    inputs did not change (:meth:`Design.evolve`), so a change recomputes exactly the stages
    downstream of it, and no tab keeps numbers of an older scenario.
    """

    scenario = traitlets.Instance(Scenario)
    catalog = traitlets.Instance(Catalog)
    #: the title of the tab on screen (set by the app); a hidden tab redraws when it is shown,
    #: not on every change. None (no app, as in tests and notebooks): every panel redraws at once.
    shown = traitlets.Unicode(None, allow_none=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._design: Design | None = None

    @property
    def design(self) -> Design:
        """The design of the current scenario and catalogue."""
        return self.design_for(self.scenario, keep=True)

    def accelerator_id(self) -> str | None:
        """The catalogue id of the accelerator the scenario resolves to (a server's GPU counts);
        the scenario's own ``hardware.accelerator`` (None if it names none) when it does not resolve."""
        try:
            return self.design.hardware.accelerator_id
        except GpuClusterError:
            return self.scenario.hardware.accelerator

    def design_for(self, scenario: Scenario, *, keep: bool = False) -> Design:
        """The design of ``scenario`` (a trial before committing it), evolved from the current one."""
        d = self._design
        if d is not None and d.scenario is scenario and d.catalog is self.catalog:
            return d
        if d is None or d.catalog is not self.catalog:
            new = Design(scenario, self.catalog)
        else:
            new = d.evolve(scenario)
        if keep or scenario is self.scenario:
            self._design = new
        return new

    def commit(self, design: Design) -> None:
        """Make ``design`` (from :meth:`design_for`) the current one and its scenario the state's."""
        self._design = design
        self.scenario = design.scenario

    @classmethod
    def from_scenario(cls, scenario: Scenario, catalog: Catalog | None = None) -> AppState:
        return cls(scenario=scenario, catalog=catalog or catalog_for(scenario))

    @classmethod
    def from_design(cls, design: Design) -> AppState:
        """The state of an existing design (a notebook's ``d = design(path)``), sharing its stages."""
        state = cls(scenario=design.scenario, catalog=design.catalog)
        state._design = design
        return state

    @classmethod
    def from_path(cls, path: str | Path) -> AppState:
        return cls.from_scenario(load_scenario(path))

    def update(self, **changes: Any) -> None:
        """Replace fields (``hardware__nodes=4``) and re-validate; raises ScenarioError on bad values."""
        self.scenario = self.scenario.replace(**changes)

    def load(self, scenario: Scenario) -> None:
        """Switch to another scenario (and its catalogue)."""
        cat = catalog_for(scenario)
        with self.hold_trait_notifications():
            self.catalog = cat
            self.scenario = scenario


def when_shown(state: AppState, title: str, redraw: Callable[[], Any]) -> Callable[..., None]:
    """A state observer that runs ``redraw`` now if the tab ``title`` is on screen, else once
    when it is next shown: a change on one tab computes that tab only (the others follow the
    same design when opened, so none shows an older scenario)."""
    dirty = False

    def on_change(_change: Any = None) -> None:
        nonlocal dirty
        if state.shown is not None and state.shown != title:
            dirty = True
            return
        dirty = False
        redraw()

    def on_shown(change: dict) -> None:
        nonlocal dirty
        if change["new"] == title and dirty:
            dirty = False
            redraw()

    state.observe(on_shown, names="shown")
    return on_change


class FieldBinding:
    """Widgets that each edit one scenario field: ``fields`` maps a widget to its scenario key
    (``"costs__years"``) and a converter of its value.

    A change of one widget writes only its own field (the others stay as the scenario has them)
    and then calls ``after`` once; while :meth:`quiet` is held (the panel showing the scenario's
    values in its widgets, or writing its own change) nothing is written back, and :attr:`busy`
    tells the panel's state observer that the change is the panel's own.
    """

    def __init__(self, state: AppState, fields: dict[widgets.Widget, tuple[str, Callable[[Any], Any]]],
                 after: Callable[[], Any]) -> None:
        self.state, self.fields, self.after = state, fields, after
        self.busy = False

    @contextlib.contextmanager
    def quiet(self):
        """Widget values set inside are not written to the scenario."""
        busy, self.busy = self.busy, True
        try:
            yield
        finally:
            self.busy = busy

    def apply(self, change: dict) -> None:
        """A widget's observer: write its field, then ``after()``."""
        if self.busy:
            return
        key, convert = self.fields[change["owner"]]
        with self.quiet():  # the panel renders once, in ``after``, not once more from the state
            self.state.update(**{key: convert(change["new"])})
        self.after()

    def observe(self, callback: Callable[[dict], Any]) -> None:
        """Call ``callback`` (``apply``, usually guarded) on every widget's value change."""
        for w in self.fields:
            w.observe(callback, names="value")


# ---------------------------------------------------------------- messages

from gpucluster_lib.report.style import STYLE  # noqa: E402  (shared with the HTML reports)


def style_widget() -> widgets.HTML:
    """Include once per page: CSS for tables and messages."""
    return widgets.HTML(STYLE)


def message_area() -> widgets.HTML:
    return widgets.HTML("", layout=widgets.Layout(width="100%"))


def error_html(exc: BaseException) -> str:
    if isinstance(exc, GpuClusterError):
        text = str(exc)
    else:  # a bug: say so plainly, keep the traceback for the log only
        text = f"Unexpected {type(exc).__name__}: {exc}. Please report this with your scenario."
    return f'<div class="gc-msg gc-error">⚠ {html.escape(text)}</div>'


def show_error(area: widgets.HTML, exc: BaseException) -> None:
    area.value = error_html(exc)


def show_info(area: widgets.HTML, text: str) -> None:
    area.value = f'<div class="gc-msg gc-info">{html.escape(text)}</div>'


def show_findings(area: widgets.HTML, findings: list[Finding], empty: str = "No findings.") -> None:
    area.value = findings_html(findings, empty=empty)


def guarded(area: widgets.HTML, clears: Sequence[widgets.Widget] = ()
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a widget callback so that no exception escapes to the page.

    Library errors (:class:`GpuClusterError`) are shown as their message; anything else
    is logged with its traceback and shown as an "unexpected" message. ``clears`` are the
    outputs the callback fills: when it fails they are emptied (tables, figures, findings)
    or hidden (charts), so no number of an earlier state stays beside the error; the next
    call that succeeds shows them again.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the whole point
                if not isinstance(exc, GpuClusterError):
                    log.error("callback %s failed:\n%s", fn.__name__, traceback.format_exc())
                invalidate(clears)
                show_error(area, exc)
                return None
            revalidate(clears)
            return result

        return wrapper

    return deco


def invalidate(outputs: Sequence[widgets.Widget]) -> None:
    """Empty the HTML outputs and hide the others (charts): they belong to a design that failed."""
    for w in outputs:
        if isinstance(w, widgets.HTML):
            w.value = ""
        elif w.layout.display != "none":
            w.layout.display = "none"
            w._gc_invalidated = True  # shown again by revalidate; a chart its panel hid stays hidden


def set_shown(w: widgets.Widget, shown: bool) -> None:
    """Show or hide a chart on purpose (hidden: nothing to draw); :func:`revalidate` keeps it so."""
    w._gc_invalidated = False
    w.layout.display = None if shown else "none"


def revalidate(outputs: Sequence[widgets.Widget]) -> None:
    """Show again what :func:`invalidate` hid (not what the panel hid itself: nothing to draw)."""
    for w in outputs:
        if getattr(w, "_gc_invalidated", False):
            w._gc_invalidated = False
            if w.layout.display == "none":
                w.layout.display = None


# ---------------------------------------------------------------- tables

def _fmt(v: Any) -> tuple[str, bool]:
    """(display text, right-align) of a table cell: :func:`gpucluster_lib.formatting.format_value`."""
    if v is pd.NA:
        return MISSING, False
    num = is_number(v)
    return (format_value(v) if num or not isinstance(v, str) else html.escape(v)), num


def html_table(df: pd.DataFrame, *, max_rows: int = 200, highlight: Callable[[dict], bool] | None = None,
               headers: dict[str, str] | None = None) -> str:
    """A compact, styled HTML table (numbers right-aligned, thousands separators).

    ``highlight`` gets each row as a dict (column -> value). The cells are the values
    ``DataFrame.iterrows`` gives (one row of ``df.values``: an all-numeric frame as floats), read
    without building a Series per row (that took about 10 ms per table).
    """
    headers = headers or {}
    head = "".join(f"<th>{html.escape(headers.get(c, str(c)))}</th>" for c in df.columns)
    shown = df.head(max_rows)
    cols = list(shown.columns)
    years = [str(c).endswith("year") for c in cols]
    rows = []
    for values in shown.values:
        row = [v.item() if hasattr(v, "item") else v for v in values]
        cls = ' class="gc-picked"' if highlight is not None and highlight(dict(zip(cols, row, strict=True))) else ""
        cells = []
        for year, v in zip(years, row, strict=True):
            if year and isinstance(v, (int, float)) and v == v:
                v = str(int(v))  # a year, not a quantity: no thousands separator
            text, num = _fmt(v)
            cells.append(f'<td class="num">{text}</td>' if num else f"<td>{text}</td>")
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    more = f"<p>… {len(df) - max_rows} more rows</p>" if len(df) > max_rows else ""
    return f'<table class="gc-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>{more}'


def table_widget(df: pd.DataFrame | None = None, **kw: Any) -> widgets.HTML:
    w = widgets.HTML(layout=widgets.Layout(max_height="420px", overflow="auto"))
    if df is not None:
        w.value = html_table(df, **kw)
    return w


def kv_html(pairs: list[tuple[str, str]]) -> str:
    """Key/value lines (label, already-formatted value)."""
    return '<div class="gc-kv">' + "".join(
        f"<div><b>{html.escape(k)}</b> {html.escape(v)}</div>" for k, v in pairs) + "</div>"


# ---------------------------------------------------------------- charts

def chart_widget(chart: alt.TopLevelMixin) -> alt.JupyterChart:
    """An offline interactive chart; update it with ``jc.chart = new_chart``."""
    enable_offline_charts()
    return alt.JupyterChart(chart, embed_options={"actions": {"export": True, "source": False,
                                                               "compiled": False, "editor": False}})


def update_chart(jc: alt.JupyterChart, chart: alt.TopLevelMixin) -> None:
    """Show ``chart`` in ``jc`` without altair's JSON-schema validation.

    ``jc.chart = chart`` validates the whole spec (about 100 ms per update on this
    machine); chart functions are validated once in the unit tests through
    ``chart.to_dict()``, so the hot path of a widget callback skips it. Only for charts
    without selection parameters (their state needs ``jc.chart``).
    """
    jc.spec = chart.to_dict(validate=False)


def section(title: str, *children: widgets.Widget) -> widgets.VBox:
    return widgets.VBox([widgets.HTML(f"<h4 style='margin:8px 0 4px'>{html.escape(title)}</h4>"), *children])
