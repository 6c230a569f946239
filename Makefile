# GPU Cluster Design Workbook: set-up, app, tests, reports.
# Every target creates/updates .venv/ in the repository root first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8866
STAMP  := $(VENV)/.installed

# Keep Jupyter/IPython/Chromium state inside the work tree (nothing written to $HOME).
JHOME := $(CURDIR)/.jupyter-home
export JUPYTER_CONFIG_DIR  := $(JHOME)/config
export JUPYTER_DATA_DIR    := $(JHOME)/data
export JUPYTER_RUNTIME_DIR := $(JHOME)/runtime
export IPYTHONDIR          := $(JHOME)/ipython
export XDG_CONFIG_HOME     := $(JHOME)/xdg-config
export XDG_CACHE_HOME      := $(JHOME)/xdg-cache
export MPLCONFIGDIR        := $(JHOME)/mpl
export JUPYTER_PLATFORM_DIRS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help venv app lab test test-unit test-notebooks test-browser report lint bench clean notebooks

help:
	@echo "make app     install into .venv/ and serve the Voila app on http://127.0.0.1:$(PORT)"
	@echo "make test    install into .venv/ and run every test (unit, notebook, nbval, browser)"
	@echo "make lab     JupyterLab on notebooks/"
	@echo "make report  one example batch report -> reports/"
	@echo "make bench   run the benchmarks"
	@echo "make notebooks  sync notebooks/*.py (jupytext sources) to their .ipynb and execute them in place;"
	@echo "                NB=\"01_hardware report\" for some only, SYNC_ONLY=1 to skip executing"
	@echo "make lint    ruff (package, tests, scripts, notebook sources); notebooks in sync with sources"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	@mkdir -p $(JUPYTER_CONFIG_DIR) $(JUPYTER_DATA_DIR) $(JUPYTER_RUNTIME_DIR) $(IPYTHONDIR) $(XDG_CONFIG_HOME) $(XDG_CACHE_HOME) $(MPLCONFIGDIR)
	@touch $(STAMP)

venv: $(STAMP)

app: $(STAMP)
	@echo "Serving the GPU Cluster Design Workbook on http://127.0.0.1:$(PORT)/  (Ctrl-C to stop)"
	@# kernel culling, preheated pool and kernel cap: notebooks/voila.json (docs/app.md)
	cd notebooks && ../$(PY) -m voila app.ipynb --no-browser --port=$(PORT)

lab: $(STAMP)
	$(PY) -m jupyter lab notebooks --no-browser --ip=127.0.0.1 --allow-root

test: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider --basetemp=.test-artifacts/pytest tests
	$(PY) -m pytest -p no:cacheprovider --nbval notebooks --nbval-sanitize-with tests/nbval_sanitize.cfg \
		--nbval-cell-timeout=600

test-unit: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -m "not browser and not notebook" tests

test-browser: $(STAMP)
	$(PY) -m pytest -p no:cacheprovider -m browser tests

report: $(STAMP)
	$(VENV)/bin/gpucluster report gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml -o reports/gpt3-175b-1024-a100.html
	$(VENV)/bin/gpucluster report gpucluster_lib/data/scenarios -o reports/batch
	@echo "open reports/gpt3-175b-1024-a100.html and reports/batch/index.html"

bench: $(STAMP)
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

lint: $(STAMP)
	$(PY) -m ruff check gpucluster_lib tests benchmarks scripts notebooks/*.py
	$(VENV)/bin/lint-imports --no-cache
	$(PY) scripts/execute_notebooks.py --check

# Notebooks are written from their jupytext sources (notebooks/NAME.py; the report template's
# .ipynb goes to gpucluster_lib/report/), then executed in place with papermill.
NB ?=
notebooks: $(STAMP)
	$(PY) scripts/execute_notebooks.py $(if $(SYNC_ONLY),--sync-only) $(NB)

clean:
	rm -rf $(VENV) .jupyter-home .test-artifacts reports
