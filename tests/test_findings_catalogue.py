"""Every finding code the library can report is kebab-case and listed in docs/findings.md.

The codes are collected from the source with ``ast`` (no import, no scenario run): the first
positional argument of every ``Finding(...)`` call that is a string constant (or its
``code=`` keyword), with the severity of the call when that is a constant too, plus every
module-level table of codes (a tuple, list or set of strings assigned to a name ending in
``_CODES``, such as ``hardware.node.CHECK_CODES``). docs/findings.md lists each code in a
table row ``| `code` | severity[/severity] | meaning | fix |``.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpucluster_lib"
DOC = ROOT / "docs" / "findings.md"
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|")
SEVERITIES = {"error", "warning", "info"}


def _const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _called_name(call: ast.Call) -> str | None:
    fn = call.func
    return fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None


def library_codes() -> tuple[dict[str, set[str]], dict[str, list[str]], dict[str, list[str]]]:
    """({code: severities}, {code: where it is raised}, {code: code tables naming it})."""
    severities: dict[str, set[str]] = defaultdict(set)
    where: dict[str, list[str]] = defaultdict(list)
    tables: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) == "Finding":
                kw = {k.arg: k.value for k in node.keywords}
                code = _const_str(node.args[0] if node.args else kw.get("code"))
                if code is None:
                    continue  # Finding(**dict): a finding passed through, not a new code
                sev = _const_str(node.args[1] if len(node.args) > 1 else kw.get("severity"))
                if sev is not None:
                    severities[code].add(sev)
                else:
                    severities.setdefault(code, set())
                where[code].append(f"{rel}:{node.lineno}")
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name) and t.id.endswith("_CODES")]
            if names and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
                for elt in node.value.elts:
                    code = _const_str(elt)
                    if code is not None:
                        tables[code].append(f"{rel}:{names[0]}")
    return dict(severities), dict(where), dict(tables)


def documented_codes() -> dict[str, set[str]]:
    """{code: severities} from the table rows of docs/findings.md."""
    out: dict[str, set[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = DOC_ROW.match(line)
        if m and m.group(1) != "code":
            out[m.group(1)] = {s.strip() for s in m.group(2).split("/") if s.strip()}
    return out


SEVERITIES_BY_CODE, WHERE, TABLES = library_codes()
CODES = sorted(set(SEVERITIES_BY_CODE) | set(TABLES))


def test_the_library_has_codes():
    # a broken collector (nothing found) must not pass the checks below vacuously
    assert len(SEVERITIES_BY_CODE) > 50
    assert {"node-psu-capacity", "facility-rack-power", "training-no-plan-fits"} <= set(SEVERITIES_BY_CODE)
    assert "node-psu-capacity" in TABLES  # hardware/node.py CHECK_CODES


@pytest.mark.parametrize("code", CODES)
def test_code_is_kebab_case(code):
    where = ", ".join(WHERE.get(code, []) + TABLES.get(code, []))
    assert KEBAB.match(code), (
        f"finding code {code!r} ({where}) is not kebab-case: use lower-case words joined by '-' and "
        "prefixed by its topic (node-, facility-, storage-, topology-, training-, inference-, rel-, cost-), "
        "e.g. 'facility-rack-power'; then rename it in tests and docs/findings.md")


@pytest.mark.parametrize("code", sorted(TABLES))
def test_code_tables_name_codes_that_exist(code):
    assert code in SEVERITIES_BY_CODE, (
        f"{', '.join(TABLES[code])} lists {code!r} but no Finding(...) in gpucluster_lib uses that code: "
        "rename the entry to the code the check reports, or drop it")


@pytest.mark.parametrize("code", CODES)
def test_code_is_documented(code):
    documented = documented_codes()
    where = ", ".join(WHERE.get(code, []) + TABLES.get(code, []))
    assert code in documented, (
        f"finding code {code!r} ({where}) is not in docs/findings.md: add a row "
        f"'| `{code}` | {'/'.join(sorted(SEVERITIES_BY_CODE.get(code, set()))) or 'severity'} | what it means | "
        "the usual fix |' under its topic")
    used = SEVERITIES_BY_CODE.get(code, set())
    want = used or documented[code] & SEVERITIES  # severity not a constant: any valid one
    assert documented[code] == want, (
        f"docs/findings.md gives {code!r} the severities {'/'.join(sorted(documented[code])) or '(none)'}; the "
        f"library reports it as {'/'.join(sorted(want))} ({where}): list exactly those, joined by '/'")


def test_docs_list_no_code_that_no_longer_exists():
    stale = sorted(set(documented_codes()) - set(CODES))
    assert not stale, (
        f"docs/findings.md lists {', '.join(stale)}, which no Finding(...) in gpucluster_lib reports any more: "
        "remove those rows (or rename them to the code that replaced them)")


#: A message or fix the app and the report show as it is: no dotted scenario key ("facility.cooling"), no
#: snake_case key ("rack_power_limit_kw"), no YAML setting (": true", "backup: offsite") and no
#: Python (True / None, a list, "==" or "costs.*"). The ``field`` beside it keeps the key path.
MESSAGE_NOT_WORDS = re.compile(r"\b[a-z][a-z_]+\.(?:[a-z][a-z_]+\b|\*)|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
                               r"|\b(?:True|False|None)\b|[\[\]]|==|!=")
#: a fix is an action, so a "word: value" in it is a YAML setting (a message may say "no backup: ...")
FIX_NOT_WORDS = re.compile(MESSAGE_NOT_WORDS.pattern + r"|\b[a-z_]+:\s+[a-z0-9'-]+")
#: Where others word the fixes: serving (inference/, checked by tests/test_inference.py).
FIX_TEXTS_ELSEWHERE = ("gpucluster_lib/inference/",)


def _literal_text(node: ast.AST) -> str:
    """The literal parts of a string expression (an f-string's values as "{}")."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join("{}" if isinstance(v, ast.FormattedValue) else _literal_text(v) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _literal_text(node.left) + _literal_text(node.right)
    if isinstance(node, ast.IfExp):
        return _literal_text(node.body) + " " + _literal_text(node.orelse)
    return "{}"


def test_every_fix_and_message_is_written_in_words():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(FIX_TEXTS_ELSEWHERE):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _called_name(node) == "Finding":
                # the fix is the fourth argument or the keyword (Finding(code, severity, message, fix, field))
                fixes = [k.value for k in node.keywords if k.arg == "fix"] + node.args[3:4]
                texts = [("fix", value, FIX_NOT_WORDS) for value in fixes]
                texts += [("message", m, MESSAGE_NOT_WORDS) for m in node.args[2:3]]
                for what, value, rule in texts:
                    if rule.search(text := _literal_text(value)):
                        bad.append(f"{rel}:{node.lineno}: {what} {text}")
    assert bad == []


def test_the_words_test_reads_a_fix_given_by_position():
    """Finding(code, severity, message, fix, field): the fix as the fourth argument is read too (it let
    'set network.mgmt_ports_per_node: 2' through when only fix= was read)."""
    call = ast.parse('Finding("a-b", "warning", "one port", "set network.mgmt_ports_per_node: 2", "f")').body[0]
    fixes = [k.value for k in call.value.keywords if k.arg == "fix"] + call.value.args[3:4]
    assert [FIX_NOT_WORDS.search(_literal_text(v)) is not None for v in fixes] == [True]
    assert FIX_NOT_WORDS.search("give each node 2 management ports") is None


def test_estimated_prices_are_named_in_words():
    """The list of estimated prices is built at run time, so the source scan cannot see it: the
    priced items of the largest shipped scenario (fibre, transceivers, storage) read as words."""
    from gpucluster_lib import design
    from gpucluster_lib.economics.cost import price_name
    from gpucluster_lib.scenario import load_scenario

    # hand-read from data/cabling.yaml (fibre-mmf, length class in-row) and data/switches.csv (qm9700)
    assert price_name("cable:fibre-mmf:in-row:400G") == "400G multimode fibre in the row"
    assert price_name("cable:fibre-smf:hall:400G") == "400G single-mode fibre across the hall"
    assert price_name("transceiver:mma4z00-ns") == "MMA4Z00-NS transceiver"  # NVIDIA's part number
    assert price_name("storage_capacity_per_tb") == "capacity-tier storage per TB"
    d = design(load_scenario(PACKAGE / "data" / "scenarios" / "roce-24k-h100.yaml"))
    assert price_name("switch:qm9700", d.catalog) == "NVIDIA Quantum-2 QM9700 NDR InfiniBand switch (managed)"
    (f,) = [f for f in d.cost.findings if f.code == "cost-estimated-prices"]
    assert "400G single-mode fibre across the hall" in f.message and "head node" in f.message
    assert MESSAGE_NOT_WORDS.search(f.message) is None, f.message
    assert f.field == "costs.prices"
