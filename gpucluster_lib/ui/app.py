"""The stakeholder app: a scenario bar above one tab per workbook section.

Tabs are the ``tab_*.py`` modules of this package (``TITLE``, ``ORDER``,
``build(state)``), built lazily the first time they are opened so that the page
appears quickly. A tab that fails to build shows its error instead of breaking the app.
"""

from __future__ import annotations

import base64
import html
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import ipywidgets as widgets

from gpucluster_lib import scenario as scn
from gpucluster_lib.catalog import TABLES, catalog_from_bytes
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.resources import examples_dir
from gpucluster_lib.ui import common
from gpucluster_lib.ui.common import AppState, guarded, message_area, show_info
from gpucluster_lib.ui.header import Header
from gpucluster_lib.workloads.transformer import load_presets

SCENARIO_DIR = examples_dir()


def tab_modules() -> list[ModuleType]:
    from gpucluster_lib import ui

    mods = [importlib.import_module(f"{ui.__name__}.{m.name}")
            for m in pkgutil.iter_modules(ui.__path__) if m.name.startswith("tab_")]
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 99), m.__name__))


def example_scenarios() -> dict[str, Path]:
    """Shipped example scenarios: display name -> path."""
    out = {}
    for p in sorted(SCENARIO_DIR.glob("*.yaml")):
        try:
            out[scn.load_scenario(p).name] = p
        except Exception:  # noqa: BLE001 - a broken example must not break the app
            continue
    return out


def file_stem(name: str) -> str:
    """A download file name from a scenario name ("GPT-3 175B on 1024 A100" -> "gpt-3-175b-on-1024-a100")."""
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower())
    while "--" in stem:
        stem = stem.replace("--", "-")
    return stem.strip("-") or "scenario"


def download_link(scenario: scn.Scenario) -> str:
    data = base64.b64encode(scn.dumps(scenario).encode()).decode()
    return (f'<a download="{file_stem(scenario.name)}.yaml" href="data:text/yaml;base64,{data}" '
            f'style="font-weight:bold">⬇ Download scenario YAML</a>')


def describe(state: AppState) -> str:
    """What the current design is, in a few words, with the catalogue's names:
    "Llama 3 405B on 512 NVIDIA H100 SXM5 80GB"."""
    s = state.scenario
    try:
        hw = state.design.hardware
        cluster = f"{hw.gpus:,} {hw.accelerator.get('name') or hw.accelerator_id}"
    except GpuClusterError:
        part = s.hardware.server or s.hardware.accelerator
        table = "servers" if s.hardware.server else "accelerators"
        name = (state.catalog.get(table, part).get("name") or part) if part and state.catalog.has(table, part) \
            else (part or "?")
        nodes = s.hardware.nodes
        cluster = f"{nodes:,} node{'' if nodes == 1 else 's'} of {name}" if nodes else f"nodes of {name}"
    model = ""
    if s.model.preset:
        presets = load_presets()
        model = presets[s.model.preset]["name"] if s.model.preset in presets else s.model.preset
    return f"{model} on {cluster}" if model else f"Cluster of {cluster}"


def shown_scenario(state: AppState, loaded: scn.Scenario | None) -> scn.Scenario:
    """The scenario as the page names it: the loaded file's name while it is unchanged, else
    a name that says what the edited design is and where it came from (title and download)."""
    s = state.scenario
    if loaded is None or s == loaded:
        return s
    return s.replace(name=f"{describe(state)} (edited from {loaded.name})", description="")


def preparing_html(title: str) -> str:
    """What a tab shows until its widgets are built (on its first selection)."""
    return f"<p class='gc-preparing'><i>Preparing the {html.escape(title)} tab…</i></p>"


class App:
    def __init__(self, scenario_path: str | Path | None = None):
        examples = example_scenarios()
        path = Path(scenario_path) if scenario_path else next(iter(examples.values()))
        self.state = AppState.from_path(path)
        self._loaded: scn.Scenario | None = self.state.scenario  # as loaded, before any edit
        self.msg = message_area()
        self.examples = widgets.Dropdown(options=list(examples.items()), value=path if path in examples.values() else None,
                                         description="Example", layout=widgets.Layout(width="420px"))
        self.upload = widgets.FileUpload(accept=".yaml,.yml", multiple=False, description="Upload YAML")
        self.download = widgets.HTML()
        self.title = widgets.HTML()
        self.csv_table = widgets.Dropdown(options=TABLES, value="accelerators", description="Table")
        self.csv_upload = widgets.FileUpload(accept=".csv", multiple=False, description="Add CSV")
        self.yaml_view = widgets.HTML()

        self.modules = tab_modules()
        titles = tuple(getattr(m, "TITLE", m.__name__) for m in self.modules)
        # a tab is built on its first selection: until its widgets arrive it says so. The notes and
        # their holders share one layout and one style (each widget makes its own otherwise: 21
        # fewer of the page's widget models, which the browser fetches and builds before it shows)
        layout, style = widgets.Layout(), widgets.widget_string.HTMLStyle()
        self.tabs = widgets.Tab(children=[
            widgets.VBox([widgets.HTML(preparing_html(t), layout=layout, style=style)], layout=layout)
            for t in titles])
        self.tabs.titles = titles
        self.built: set[int] = set()

        self.examples.observe(guarded(self.msg)(self._on_example), names="value")
        self.upload.observe(guarded(self.msg)(self._on_upload), names="value")
        self.csv_upload.observe(guarded(self.msg)(self._on_csv), names="value")
        self.tabs.observe(lambda ch: self._on_tab(ch["new"]), names="selected_index")
        self.state.observe(lambda _ch: self._on_scenario(), names="scenario")
        self._on_scenario()
        self.header = Header(self.state)  # key figures of the current design, report download

        bar = widgets.HBox([self.examples, self.upload, self.download],
                           layout=widgets.Layout(align_items="center", flex_flow="row wrap"))
        catalog_bar = widgets.HBox([self.csv_table, self.csv_upload], layout=widgets.Layout(align_items="center"))
        self.widget = widgets.VBox([
            common.style_widget(),
            self.title, self.header.widget, bar,
            widgets.Accordion(children=[widgets.VBox([
                widgets.HTML("<p>Add your own catalogue rows: a CSV with the same columns as "
                             f"<code>data/&lt;table&gt;.csv</code> ({', '.join(TABLES)}), validated on upload.</p>"),
                catalog_bar]), self.yaml_view], titles=("Catalogue: add your own parts", "Scenario YAML")),
            self.msg, self.tabs,
        ])
        self._on_tab(0)

    # -------------------------------------------------------------- callbacks
    def _on_tab(self, index: int | None) -> None:
        self._build_tab(index)
        # the shown tab redraws on each change; the others when they are opened (ui.common.when_shown)
        self.state.shown = None if index is None else getattr(self.modules[index], "TITLE", None)

    def _build_tab(self, index: int | None) -> None:
        if index is None or index in self.built:
            return
        mod = self.modules[index]
        holder = self.tabs.children[index]
        try:
            holder.children = [mod.build(self.state)]
        except Exception as exc:  # noqa: BLE001 - show, never break the page
            holder.children = [widgets.HTML(common.error_html(exc))]
            return  # not built: tried again when the tab is opened or the scenario changes
        self.built.add(index)

    def _on_scenario(self) -> None:
        s = shown_scenario(self.state, self._loaded)
        self.title.value = (f"<p><b>Scenario:</b> {html.escape(s.name)}"
                            + (f" — {html.escape(s.description)}" if s.description else "") + "</p>")
        self.download.value = download_link(s)
        self.yaml_view.value = f"<pre style='font-size:12px'>{html.escape(scn.dumps(s))}</pre>"
        index = self.tabs.selected_index
        if index is not None and index not in self.built:  # a tab whose build failed: try again
            self._build_tab(index)

    def _on_example(self, change: dict) -> None:
        if change["new"]:
            scenario = scn.load_scenario(change["new"])
            self._loaded = scenario
            self.state.load(scenario)
            show_info(self.msg, f"Loaded example scenario '{self.state.scenario.name}'.")

    def _on_upload(self, change: dict) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        # bytes, no folder, no paths: the loader refuses non-UTF-8, oversized and hostile files,
        # and an upload names catalogue CSVs only by uploading them (docs/security.md)
        scenario = scn.loads(bytes(f["content"]), source=f["name"], allow_paths=False)
        self._loaded = scenario
        self.state.load(scenario)
        show_info(self.msg, f"Loaded '{f['name']}': scenario '{self.state.scenario.name}'.")

    def _on_csv(self, change: dict) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        cat = catalog_from_bytes(self.csv_table.value, bytes(f["content"]), f["name"], base=self.state.catalog)
        self.state.catalog = cat
        added = len(cat.tables[self.csv_table.value])
        show_info(self.msg, f"Added '{f['name']}' to {self.csv_table.value}: the table now has {added} rows.")


def build_app(scenario_path: str | Path | None = None) -> widgets.Widget:
    """The whole app as one widget (what ``notebooks/app.ipynb`` displays)."""
    try:
        return App(scenario_path).widget
    except ScenarioError as exc:
        return widgets.HTML(common.error_html(exc))
