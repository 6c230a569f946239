"""``gpucluster examples [NAME]``: the shipped example scenarios, usable by name in every command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.resources import example_path, example_paths, examples_dir

NAME = "examples"
ORDER = 5
HELP = "list the shipped example scenarios (each usable by name, e.g. gpucluster budget NAME)"
DESCRIPTION = (
    "Without NAME: one line per shipped example scenario (its name, title and description). "
    "With NAME: print that example's YAML, a starting point for your own "
    "(gpucluster examples NAME > mine.yaml). Every scenario command takes the NAME in place of "
    "a file: gpucluster budget gpt3-175b-1024-a100."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME", help="print this example's YAML")
    p.add_argument("--json", action="store_true",
                   help="a JSON list of objects: example, name, description, path")


def _header(path: Path) -> dict[str, Any]:
    """The example's name and description, read from its YAML (not validated: listing is cheap)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioError("", f"{path}: cannot read example scenario: {e}") from None
    if not isinstance(data, dict):
        data = {}
    return {
        "example": path.stem,
        "name": str(data.get("name") or path.stem),
        "description": " ".join(str(data.get("description") or "").split()),
        "path": str(path),
    }


def run(args: argparse.Namespace) -> int:
    if args.name:
        path = example_path(args.name)
        if args.json:
            _dump(_header(path) | {"yaml": path.read_text(encoding="utf-8")})
        else:
            sys.stdout.write(path.read_text(encoding="utf-8"))
        return 0
    rows = [_header(p) for p in example_paths().values()]
    if args.json:
        _dump(rows)
        return 0
    if not rows:
        print(f"no example scenarios in {examples_dir()}")
        return 0
    width = max(len(r["example"]) for r in rows)
    for r in rows:
        print(f"{r['example']:<{width}}  {r['name']}")
        if r["description"]:
            print(f"{'':<{width}}  {r['description']}")
    print(f"\n{len(rows)} example(s) in {examples_dir()}; use a name in place of a file, "
          f"e.g. gpucluster budget {rows[0]['example']}")
    return 0


def _dump(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
