"""Where the shipped data lives: one root for the catalogue, presets and example scenarios.

The data ships inside the package (``gpucluster_lib/data/``), so an installed wheel finds it.
``GPUCLUSTER_DATA`` names another folder of the same layout (a site's own catalogue).

Example scenarios are ``data/scenarios/NAME.yaml``; :func:`scenario_path` lets every front end
take either a path or such a NAME (``gpucluster budget gpt3-175b-1024-a100``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

from gpucluster_lib.errors import UnknownIdError, closest

#: The package's own data folder.
PACKAGE_DATA = Path(__file__).resolve().parent / "data"

#: File endings of scenario files.
SCENARIO_SUFFIXES = (".yaml", ".yml")


def data_root() -> Path:
    """The data folder in force: ``GPUCLUSTER_DATA`` when set, else the package's."""
    env = os.environ.get("GPUCLUSTER_DATA")
    return Path(env) if env else PACKAGE_DATA


def data_path(*parts: str) -> Path:
    """A file under the data root, e.g. ``data_path("models.yaml")``."""
    return data_root().joinpath(*parts)


def examples_dir() -> Path:
    """The shipped example scenarios."""
    return data_path("scenarios")


def example_paths() -> dict[str, Path]:
    """The example scenarios by name (the file name without ``.yaml``), sorted by name."""
    folder = examples_dir()
    if not folder.is_dir():
        return {}
    found = {p.stem: p for p in folder.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file()}
    return dict(sorted(found.items()))


def example_path(name: str) -> Path:
    """The file of the example scenario ``name``; :class:`UnknownIdError` names the closest ones."""
    paths = example_paths()
    if name in paths:
        return paths[name]
    err = UnknownIdError("example scenario", name, paths)
    near = closest(name, paths) or [n for n in paths if name.lower() in n.lower()][:3]
    if near:  # "gpt3" is too short for difflib but clearly means gpt3-175b-1024-a100
        err.message = f"unknown example scenario {name!r}; did you mean {', '.join(map(repr, near))}?"
    err.message += " (`gpucluster examples` lists them)"
    raise err


def scenario_path(ref: str | os.PathLike[str]) -> Path:
    """A scenario file from a path or the name of a shipped example.

    An existing file wins, so a local ``gpt3-175b-1024-a100.yaml`` shadows the example of that
    name. A bare word (no folder, no ``.yaml``) that is not a file is looked up among the
    examples (:func:`example_path`); a bare ``NAME.yaml`` that is not a file but names an example
    gives that example. Anything else is returned as is, so that the loader reports the missing
    file by its path.
    """
    p = Path(ref)
    text = os.fspath(ref)
    in_folder = os.sep in text or bool(os.altsep and os.altsep in text)
    if p.is_file() or in_folder or not text:
        return p
    if p.suffix in SCENARIO_SUFFIXES:
        return example_paths().get(p.stem, p)
    return example_path(p.name)


def load_yaml(stream: str | bytes | IO) -> Any:
    """A shipped data file's YAML (``yaml.safe_load``), read with libyaml's C parser when PyYAML
    has it: the same safe schema, about 20 times faster (every app kernel reads some fifteen
    data files at start, 0.3 s with the Python parser on two busy cores). Scenario files keep
    their own stricter loader (:mod:`gpucluster_lib.scenario`)."""
    import yaml

    return yaml.load(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - safe
