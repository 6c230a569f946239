"""No "issue N" in the package, docs, tests, benchmarks or scripts.

Tracker numbers mean nothing to a reader of the code, the docs or the app's text: say what
is meant instead ("the facility budget", "the topology design"). Tracked files only (``git
ls-files``), so build outputs and virtual environments are never read.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("gpucluster_lib", "docs", "tests", "benchmarks", "scripts", "README.md")
ISSUE_REF = re.compile(r"issue ?#?[0-9]|\(issue|issues? [0-9]", re.IGNORECASE)
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()


def _tracked() -> list[str]:
    if shutil.which("git") is None:
        pytest.fail("git is missing: install it with `sudo apt-get install -y git`")
    if not (ROOT / ".git").exists():  # an unpacked source archive: nothing is missing, there is nothing to read
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(["git", "ls-files", "-z", "--", *PATHS], cwd=ROOT, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p and p != THIS]


def test_no_issue_numbers_in_tracked_files():
    files = _tracked()
    assert any(f.startswith("gpucluster_lib/") for f in files)  # the listing worked
    hits = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file():
            continue  # deleted in the work tree, not yet committed
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (images)
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            m = ISSUE_REF.search(line)
            if m:
                hits.append(f"{rel}:{n}: ...{line[max(0, m.start() - 40):m.end() + 40].strip()}...")
    assert not hits, (
        "'issue N' found; say what it means instead (e.g. 'the facility budget', 'the topology design') "
        "or delete it:\n" + "\n".join(hits))
