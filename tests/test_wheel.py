"""The wheel works on its own: built from the sources, installed into a fresh virtualenv outside
the repository, run from a folder outside the repository, it finds its catalogue and examples.

The wheel is built without build isolation (the project venv's setuptools, no network). The new
venv gets the project venv's third-party packages through a ``.pth`` line (``.pth`` files inside
that folder are not processed, so the editable install of the repository is not active there) and
gpucluster-lib itself from the wheel with ``--no-deps``; the tests assert that the repository is
not importable in it. ``GPUCLUSTER_WHEEL_DEPS=pypi`` installs every dependency from the index
instead (about 70 s more; a release check).

The tests at the end check the same by-name behaviour in process (fast, not ``slow``).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpucluster_lib"
#: What a build needs besides the package (pyproject.toml names README.md as the readme).
BUILD_FILES = ("pyproject.toml", "README.md")
GPT3 = "gpt3-175b-1024-a100"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    python: Path
    gpucluster: Path
    workdir: Path
    env: dict[str, str]

    def run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(a) for a in args], cwd=self.workdir, env=self.env,
                              capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            pytest.fail(f"{' '.join(map(str, args))} exited {proc.returncode}\n"
                        f"stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}")
        return proc

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(self.gpucluster, *args, check=check)


def _outside_repo(path: Path) -> Path:
    path = path.resolve()
    assert not path.is_relative_to(ROOT), f"{path} is inside the repository {ROOT}"
    return path


def _pip(*args: str | Path, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *map(str, args)]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")


def _copy_sources(dest: Path) -> None:
    """The files a build reads, without build/, *.egg-info or caches left in the work tree."""
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(PACKAGE, dest / PACKAGE.name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"))


def _package_files() -> set[str]:
    """Every file the wheel must hold: modules and data, as wheel member names."""
    out = set()
    for p in PACKAGE.rglob("*"):
        if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts \
                and p.suffix != ".pyc":
            out.add(p.relative_to(ROOT).as_posix())
    return out


slow = pytest.mark.slow


@pytest.fixture(scope="module")
def installed() -> Installed:
    top = _outside_repo(Path(tempfile.mkdtemp(prefix="gpucluster-wheel-")))
    try:
        src, dist, venv, work = (top / n for n in ("src", "dist", "venv", "work"))
        for d in (src, dist, work):
            d.mkdir()
        _copy_sources(src)
        _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", dist, src, cwd=top)
        (wheel,) = dist.glob("gpucluster_lib-*.whl")

        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        python = venv / "bin" / "python"
        if os.environ.get("GPUCLUSTER_WHEEL_DEPS") == "pypi":
            _pip("--python", python, "install", wheel, cwd=top)
        else:
            _pip("--python", python, "install", "--no-deps", "--no-index", wheel, cwd=top)
            purelib = subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True, text=True, check=True).stdout.strip()
            deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
            (Path(purelib) / "_project_venv_packages.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))

        env = {k: v for k, v in os.environ.items()
               if k not in {"GPUCLUSTER_DATA", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        yield Installed(wheel, venv, python, venv / "bin" / "gpucluster", work, env)
    finally:
        shutil.rmtree(top, ignore_errors=True)


@slow
def test_wheel_ships_every_module_and_data_file(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as z:
        names = {n for n in z.namelist() if n.startswith(f"{PACKAGE.name}/")}
    missing = sorted(_package_files() - names)
    assert not missing, f"the wheel lacks {len(missing)} file(s) (see [tool.setuptools.package-data]): {missing}"
    data = {n for n in names if n.startswith(f"{PACKAGE.name}/data/")}
    for sub in ("accelerators.csv", "models.yaml", f"scenarios/{GPT3}.yaml", "validation/training_runs.csv"):
        assert f"{PACKAGE.name}/data/{sub}" in data


@slow
def test_package_is_imported_from_the_new_venv_not_the_repository(installed: Installed) -> None:
    probe = (
        "import json, sys, gpucluster_lib\n"
        "from gpucluster_lib.resources import data_root, examples_dir\n"
        "print(json.dumps({'file': gpucluster_lib.__file__, 'path': sys.path, 'prefix': sys.prefix,"
        " 'data': str(data_root()), 'examples': str(examples_dir()),"
        " 'finders': [type(f).__name__ + ' ' + getattr(f, '__module__', '') for f in sys.meta_path]}))\n"
    )
    info = json.loads(installed.run(installed.python, "-c", probe).stdout)
    venv = installed.venv.resolve()
    assert Path(info["prefix"]).resolve() == venv
    for key in ("file", "data", "examples"):
        assert Path(info[key]).resolve().is_relative_to(venv), f"{key} = {info[key]} is not in the new venv"
    assert not any("editable" in f for f in info["finders"]), info["finders"]
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    repo_entries = [p for p in info["path"] if p and Path(p).resolve().is_relative_to(ROOT)
                    and Path(p).resolve() != site]
    assert not repo_entries, f"the repository is on sys.path in the new venv: {repo_entries}"
    # and the repository's package cannot be found by any route
    spec = installed.run(installed.python, "-c",
                         "import importlib.util as u; print(u.find_spec('gpucluster_lib').origin)").stdout
    assert Path(spec.strip()).resolve().is_relative_to(venv)


@slow
def test_catalog_accelerators_json_matches_the_shipped_csv(installed: Installed) -> None:
    rows = json.loads(installed.cli("catalog", "accelerators", "--json").stdout)
    with (PACKAGE / "data" / "accelerators.csv").open(encoding="utf-8", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert len(rows) == len(csv_rows)
    by_id = {r["id"]: r for r in rows}
    want = next(r for r in csv_rows if r["id"] == "a100-sxm4-80gb")
    got = by_id["a100-sxm4-80gb"]
    for col, text in want.items():
        if text == "":
            continue
        try:
            assert float(got[col]) == pytest.approx(float(text)), col
        except ValueError:
            assert str(got[col]) == text, col
    assert got["memory_gib"] == 80 and got["vendor"] == "NVIDIA"


@slow
def test_budget_runs_a_shipped_example_by_name(installed: Installed) -> None:
    d = json.loads(installed.cli("budget", GPT3, "--json").stdout)
    assert d["nodes"] == 128
    assert d["gpus"] == 1024
    assert d["node"]["server"] == "dgx-a100-640gb"
    assert d["node"]["accelerator"] == "a100-sxm4-80gb"
    assert d["node"]["gpus_per_node"] == 8
    assert d["racks"] >= 128 / d["nodes_per_rack"]
    # the same answer as from the repository's copy of the file, given by path
    by_path = json.loads(installed.cli("budget", str(PACKAGE / "data" / "scenarios" / f"{GPT3}.yaml"),
                                       "--json").stdout)
    assert by_path == d


@slow
def test_examples_lists_the_shipped_scenarios(installed: Installed) -> None:
    shipped = sorted(p.stem for p in (PACKAGE / "data" / "scenarios").glob("*.yaml"))
    text = installed.cli("examples").stdout
    for name in shipped:
        assert name in text
    assert "GPT-3 175B on 1024 A100" in text
    rows = json.loads(installed.cli("examples", "--json").stdout)
    assert [r["example"] for r in rows] == shipped
    gpt3 = next(r for r in rows if r["example"] == GPT3)
    assert gpt3["name"] == "GPT-3 175B on 1024 A100"
    assert gpt3["description"].startswith("128 DGX A100 640GB")
    assert Path(gpt3["path"]).resolve().is_relative_to(installed.venv.resolve())


@slow
def test_unknown_example_is_one_line_with_exit_2(installed: Installed) -> None:
    proc = installed.cli("budget", "gpt3-175b", check=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("gpucluster budget: error: unknown example scenario 'gpt3-175b'")
    assert repr(GPT3) in line and "gpucluster examples" in line


# -- in process: examples by name, paths as before ------------------------------------------------

def test_scenario_path_takes_a_path_or_an_example_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_lib.resources import examples_dir, scenario_path

    monkeypatch.delenv("GPUCLUSTER_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    example = examples_dir() / f"{GPT3}.yaml"
    assert scenario_path(GPT3) == example
    assert scenario_path(f"{GPT3}.yaml") == example  # no such file here: the example
    assert scenario_path(str(example)) == example
    assert scenario_path("sub/nope.yaml") == Path("sub/nope.yaml")  # the loader reports it by path
    (tmp_path / f"{GPT3}.yaml").write_text("name: local\n")
    assert scenario_path(f"{GPT3}.yaml") == Path(f"{GPT3}.yaml")  # a local file wins
    (tmp_path / "mine").write_text("name: mine\n")
    assert scenario_path("mine") == Path("mine")


def test_unknown_example_names_the_closest_and_the_examples_command(capsys: pytest.CaptureFixture[str]) -> None:
    from gpucluster_lib.cli import main
    from gpucluster_lib.errors import UnknownIdError
    from gpucluster_lib.resources import scenario_path

    with pytest.raises(UnknownIdError, match=f"did you mean '{GPT3}'"):
        scenario_path("gpt3")
    assert main(["estimate", "llama3-70b-512-h10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "unknown example scenario 'llama3-70b-512-h10'" in err and "'llama3-70b-512-h100'" in err
    assert "`gpucluster examples`" in err
    assert main(["budget", "no/such/file.yaml"]) == 2
    assert "scenario file not found: no/such/file.yaml" in capsys.readouterr().err


def test_relative_catalogue_paths_resolve_against_the_scenario_folder(tmp_path: Path) -> None:
    import argparse

    from gpucluster_lib.commands import read_scenario
    from gpucluster_lib.resources import examples_dir

    by_name = read_scenario(argparse.Namespace(scenario=GPT3))
    assert by_name.base_dir == examples_dir()
    site = tmp_path / "site"
    site.mkdir()
    (site / "mine.yaml").write_text((examples_dir() / f"{GPT3}.yaml").read_text() + "catalog: [extra.csv]\n")
    s = read_scenario(argparse.Namespace(scenario=str(site / "mine.yaml")))
    assert s.base_dir == site and s.catalog == ["extra.csv"]
    assert s.model == by_name.model and s.hardware == by_name.hardware


def test_examples_command_lists_and_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster_lib.cli import main
    from gpucluster_lib.resources import examples_dir

    monkeypatch.delenv("GPUCLUSTER_DATA", raising=False)
    assert main(["examples", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["example"] for r in rows} == {p.stem for p in examples_dir().glob("*.yaml")}
    assert main(["examples", GPT3]) == 0
    assert capsys.readouterr().out == (examples_dir() / f"{GPT3}.yaml").read_text(encoding="utf-8")
    # GPUCLUSTER_DATA: a site's own folder, with its own examples
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "site-a.yaml").write_text("name: Site A\ndescription: our hall\n")
    monkeypatch.setenv("GPUCLUSTER_DATA", str(tmp_path))
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "site-a" in out and "Site A" in out and "our hall" in out and GPT3 not in out
