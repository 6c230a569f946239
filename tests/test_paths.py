"""Catalogue paths in scenarios: an upload names no server file; a CLI scenario file names CSVs
inside its own folder unless --allow-paths; messages never quote file contents or server paths."""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os

import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import catalog_files, load_scenario, loads
from tests.test_catalog import one_row

HW = "hardware: {accelerator: x1, nodes: 2}\n"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def site(tmp_path):
    """A scenario folder with an overlay CSV, and a secret CSV outside it."""
    folder = tmp_path / "designs"
    folder.mkdir()
    (folder / "parts").mkdir()
    (folder / "parts" / "my_accelerators.csv").write_text(one_row("accelerators"))
    outside = tmp_path / "secret"
    outside.mkdir()
    # a file whose first header cell is a secret: it must never appear in a message
    (outside / "x_accelerators.csv").write_text("TOPSECRET-7731,b\n1,2\n")
    (outside / "my_accelerators.csv").write_text(one_row("accelerators"))
    return folder, outside


def test_relative_path_inside_the_folder_is_read_against_the_scenario_file(site, monkeypatch):
    folder, _ = site
    (folder / "s.yaml").write_text("catalog: [parts/my_accelerators.csv]\n" + HW)
    monkeypatch.chdir(folder.parent)  # not the scenario's folder: the path resolves against the file
    rc, out, err = cli("budget", str(folder / "s.yaml"), "--json")
    assert rc == 0, err
    assert json.loads(out)["gpus"] == 16  # 2 nodes x 8 GPUs (the default per node)
    assert catalog_files(load_scenario(folder / "s.yaml")) == [folder / "parts" / "my_accelerators.csv"]


@pytest.mark.parametrize("entry", ["../secret/my_accelerators.csv", "parts/../../secret/my_accelerators.csv",
                                   "ABSOLUTE", "~/my_accelerators.csv", "C:\\\\data\\\\my_accelerators.csv"])
def test_paths_outside_the_folder_are_refused_without_allow_paths(site, entry):
    folder, outside = site
    if entry == "ABSOLUTE":
        entry = str(outside / "my_accelerators.csv")
    (folder / "s.yaml").write_text(f"catalog: ['{entry}']\n" + HW)
    rc, out, err = cli("budget", str(folder / "s.yaml"))
    assert rc == 2 and out == ""
    assert "catalog[0]:" in err and "outside the scenario's folder" in err and "--allow-paths" in err
    assert str(outside.parent) not in err.replace(entry, "")  # no resolved server path beyond the entry itself


def test_allow_paths_reads_a_file_outside_the_folder(site):
    folder, outside = site
    (folder / "s.yaml").write_text(f"catalog: ['{outside / 'my_accelerators.csv'}']\n" + HW)
    rc, out, err = cli("budget", str(folder / "s.yaml"), "--json", "--allow-paths")
    assert rc == 0, err
    assert json.loads(out)["gpus"] == 16


def test_a_symbolic_link_out_of_the_folder_is_refused(site):
    folder, outside = site
    os.symlink(outside, folder / "link")
    (folder / "s.yaml").write_text("catalog: [link/my_accelerators.csv]\n" + HW)
    rc, _, err = cli("budget", str(folder / "s.yaml"))
    assert rc == 2 and "leads outside the scenario's folder" in err
    assert str(outside) not in err


def test_an_upload_names_no_server_file(site):
    folder, outside = site
    for entry in (str(outside / "x_accelerators.csv"), "../secret/x_accelerators.csv", "parts/my_accelerators.csv"):
        text = f"catalog: ['{entry}']\n{HW}".encode()
        with pytest.raises(ScenarioError, match=r"^catalog\[0\]: a scenario read from an upload cannot name") as e:
            loads(text, source="upload.yaml", allow_paths=False)
        assert "TOPSECRET" not in str(e.value) and str(outside) not in str(e.value)


def test_the_policy_survives_edits_and_is_checked_again_when_the_catalogue_is_read(site):
    folder, outside = site
    s = loads(HW.replace("x1", "h100-sxm5-80gb"), source="upload.yaml")
    assert s.path_policy == "none"
    edited = s.replace(hardware__nodes=4)  # what the app's widgets do
    assert edited.path_policy == "none"
    with pytest.raises(ScenarioError, match="cannot name catalogue files"):
        edited.replace(catalog=[str(outside / "x_accelerators.csv")])
    (folder / "s.yaml").write_text("catalog: [parts/my_accelerators.csv]\n" + HW)
    inside = load_scenario(folder / "s.yaml")
    with pytest.raises(ScenarioError, match="outside the scenario's folder"):
        inside.replace(catalog=["../secret/my_accelerators.csv"])


def test_file_contents_and_server_paths_stay_out_of_messages(site):
    folder, outside = site
    (folder / "s.yaml").write_text(f"catalog: ['{outside / 'x_accelerators.csv'}']\n" + HW)
    rc, _, err = cli("budget", str(folder / "s.yaml"), "--allow-paths")
    assert rc == 2
    assert "TOPSECRET" not in err  # the unknown header cell is not quoted
    (folder / "t.yaml").write_text("catalog: [parts/none_accelerators.csv]\n" + HW)
    rc, _, err = cli("budget", str(folder / "t.yaml"))
    assert rc == 2 and "none_accelerators.csv: file not found" in err
    assert str(folder) not in err  # the path as written, not resolved


def test_design_of_a_python_scenario_keeps_any_path(site):
    """A Python caller's own data (from_dict) names any file: the policy is for files and uploads."""
    from gpucluster_lib.scenario import from_dict

    _, outside = site
    s = from_dict({"catalog": [str(outside / "my_accelerators.csv")], "hardware": {"accelerator": "x1"}})
    assert Design(s).hardware.accelerator_id == "x1"


def test_the_app_upload_refuses_paths_binaries_and_empty_files_with_a_message(site):
    """The app's upload callback (as the FileUpload widget calls it): messages, no server file read."""
    from gpucluster_lib.ui.app import App

    _, outside = site
    app = App()
    before = app.state.scenario
    cases = [
        (f"catalog: ['{outside / 'x_accelerators.csv'}']\n{HW}".encode(), "cannot name catalogue files"),
        (bytes(range(256)), "holds NUL bytes"),  # was UnicodeDecodeError
        ("name: x\n".encode("utf-16"), "is UTF-16 text; save it as UTF-8"),
        (b"", "empty scenario: give at least hardware"),
    ]
    for content, message in cases:
        app.upload.value = ({"name": "up.yaml", "type": "", "size": len(content), "content": memoryview(content),
                             "last_modified": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)},)
        assert message in app.msg.value, app.msg.value
        assert "TOPSECRET" not in app.msg.value and str(outside) not in app.msg.value
        assert "Unexpected" not in app.msg.value
        assert app.state.scenario is before  # a refused upload leaves the design as it was
        app.upload.value = ()
    bom_csv = b"\xef\xbb\xbf" + one_row("accelerators").encode()  # Excel's "CSV UTF-8"
    app.csv_upload.value = ({"name": "mine.csv", "type": "", "size": len(bom_csv), "content": memoryview(bom_csv),
                             "last_modified": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)},)
    assert app.state.catalog.has("accelerators", "x1"), app.msg.value
