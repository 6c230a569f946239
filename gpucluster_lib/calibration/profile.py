"""Calibration profiles: a named, dated YAML file of fitted GEMM curves and link alpha-beta terms.

A scenario selects one with the top-level key ``calibration: my-cluster.yaml`` (a path relative
to the scenario file). ``gpucluster calibrate`` writes them from the user's own measurements
(:mod:`.gemm`, :mod:`.nccl`).

Public API (for the calculation packages):

* :class:`CalibrationProfile` -- ``name``, ``date``, ``device``, ``example``, ``source``,
  ``gemm: {dtype: GemmCurve}``, ``links: {"nvlink" | "fabric": LinkFit}``;
  ``profile.link(level)`` -> :class:`~.nccl.LinkFit` or None;
  ``profile.gemm_efficiency(m, n, k, dtype, peak_tflops=None)`` (defaults for dtypes it lacks);
  ``profile.efficiency_overrides(nvlink_bw_bytes_per_s, nic_bw_bytes_per_s)`` -> the training
  engine's efficiency names (``alpha_nvlink_s``, ``nvlink_efficiency``, ``alpha_network_s``,
  ``network_efficiency``) for the levels the profile measured, efficiencies capped at 1;
  ``profile.links_above_nominal(...)`` -> the levels whose measured bus bandwidth is above the
  nominal one (the cap applied); ``profile.gemm_level(dtype)`` -> the measured large-GEMM level
  over the default curve's; ``to_dict()``, ``to_yaml()``, ``save(path)``.
* :func:`profile_findings` ``(profile, accelerator)`` -> findings on the profile as a whole (an
  example profile; a profile measured on another device).
* :func:`load_profile` ``(path)`` and :func:`profile_from_dict` ``(data, where)``: strict
  loading, :class:`~.nccl.CalibrationError` naming the key (``links.fabric.bus_bandwidth_gb_per_s``).
* :func:`scenario_profile` ``(scenario)`` -> the scenario's profile or None, the path resolved
  against the scenario's folder; errors are :class:`~gpucluster_lib.errors.ScenarioError` on
  the field ``calibration``.

In a design, the ``calibration`` stage (``d.calibration``) holds the profile; the serving
stage reads it (link bandwidth, all-reduce latency, GEMM curve). A training engine takes it
the same way: ``efficiency_overrides(...)`` maps the measured bus bandwidths onto the
engine's fractions of its nominal link rates (NVLink: ``B / nvlink_bw``; fabric:
``B / (ranks_per_host x nic_bw)``, the hierarchical bound of ``training/core.py``), and
``alpha_s`` onto its per-step latencies.

Format (``version: 1``)::

    name: my-cluster
    date: 2026-12-01
    device: NVIDIA H100 80GB HBM3
    example: false
    source: what was measured, where, with which software
    gemm:
      bf16: {eff_max: 0.83, m_half: 159, n_half: 188, k_half: 200, exponent: 2, fixed_time_s: 5.8e-06, peak_tflops: 989.4}
    links:
      nvlink: {level: nvlink, collective: all_reduce, ranks: 8, bus_bandwidth_gb_per_s: 360, alpha_s: 1.0e-06, ...}
      fabric: {level: fabric, collective: all_reduce, ranks: 16, ranks_per_host: 8, bus_bandwidth_gb_per_s: 316, ...}
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from gpucluster_lib.calibration.gemm import DEFAULT_CURVES, GemmCurve, gemm_curve, normalise_dtype
from gpucluster_lib.calibration.nccl import (
    LEVELS,
    SAVE_AS_UTF8,
    CalibrationError,
    LinkFit,
    decode_text,
)
from gpucluster_lib.errors import ScenarioError, excerpt, shown
from gpucluster_lib.findings import Finding
from gpucluster_lib.formatting import significant
from gpucluster_lib.resources import data_path
from gpucluster_lib.scenario import scenario_file
from gpucluster_lib.units import GB

FORMAT_VERSION = 1
_KEYS = ("version", "name", "date", "device", "example", "source", "gemm", "links")


@dataclass(frozen=True)
class CalibrationProfile:
    """A named, dated set of measured GEMM curves and link terms (see the module doc)."""

    name: str
    date: str
    device: str | None = None
    example: bool = False
    source: str = ""
    gemm: dict[str, GemmCurve] = field(default_factory=dict)
    links: dict[str, LinkFit] = field(default_factory=dict)
    path: str | None = field(default=None, compare=False)

    def link(self, level: str) -> LinkFit | None:
        """The fitted link of ``level`` (``nvlink`` or ``fabric``), or None when not measured."""
        return self.links.get(level)

    def gemm_efficiency(self, m: Any, n: Any, k: Any, dtype: str = "bf16", peak_tflops: float | None = None) -> Any:
        """:func:`~.gemm.gemm_efficiency` with this profile's curves."""
        return gemm_curve(dtype, self).efficiency(m, n, k, peak_tflops)

    def efficiency_overrides(self, nvlink_bw_bytes_per_s: float | None = None,
                             nic_bw_bytes_per_s: float | None = None) -> dict[str, float]:
        """The training engine's efficiency parameters implied by the measured links.

        ``nvlink_bw_bytes_per_s``: nominal scale-up bandwidth per GPU per direction [B/s];
        ``nic_bw_bytes_per_s``: nominal scale-out bandwidth per GPU per direction [B/s].
        Only levels the profile measured (and whose nominal rate is given) appear. An efficiency
        is the measured bus bandwidth over the nominal one, capped at 1: a measurement above the
        nominal rate (NVLS or tree algorithms on few nodes, or a profile of other hardware) says
        the link is at least as fast as its nominal rate, not faster; :meth:`links_above_nominal`
        names the levels capped.
        """
        out: dict[str, float] = {}
        nominal = self._nominal(nvlink_bw_bytes_per_s, nic_bw_bytes_per_s)
        for level, eff_key, alpha_key in (("nvlink", "nvlink_efficiency", "alpha_nvlink_s"),
                                          ("fabric", "network_efficiency", "alpha_network_s")):
            fit = self.link(level)
            if fit is None:
                continue
            if fit.alpha_s is not None:
                out[alpha_key] = fit.alpha_s
            if nominal.get(level):
                out[eff_key] = min(fit.bus_bandwidth_gb_per_s * GB / nominal[level], 1.0)
        return out

    def _nominal(self, nvlink_bw_bytes_per_s: float | None, nic_bw_bytes_per_s: float | None) -> dict[str, float]:
        """Nominal bus bandwidth of each measured level [B/s]: NVLink per GPU; the fabric shared by the
        ranks of a host (``ranks_per_host x nic_bw``, the hierarchical bound of ``training/core.py``)."""
        out: dict[str, float] = {}
        if nvlink_bw_bytes_per_s and self.link("nvlink") is not None:
            out["nvlink"] = float(nvlink_bw_bytes_per_s)
        fab = self.link("fabric")
        if nic_bw_bytes_per_s and fab is not None and fab.ranks_per_host:  # a fabric fit records it (LinkFit)
            out["fabric"] = fab.ranks_per_host * float(nic_bw_bytes_per_s)
        return out

    def links_above_nominal(self, nvlink_bw_bytes_per_s: float | None = None,
                            nic_bw_bytes_per_s: float | None = None) -> list[tuple[str, float, float]]:
        """``(level, measured bus bandwidth [GB/s], nominal bus bandwidth [GB/s])`` for each measured
        level whose bus bandwidth is above the nominal rate (arguments as :meth:`efficiency_overrides`)."""
        out = []
        for level, nominal in self._nominal(nvlink_bw_bytes_per_s, nic_bw_bytes_per_s).items():
            measured = self.links[level].bus_bandwidth_gb_per_s
            if measured * GB > nominal:
                out.append((level, measured, nominal / GB))
        return out

    def gemm_level(self, dtype: str) -> float | None:
        """The measured large-GEMM level of ``dtype`` over the default curve's, ``e_max / e_max_default``
        [-], or None when the profile has no curve of that dtype."""
        key = normalise_dtype(dtype)
        curve = self.gemm.get(key)
        return None if curve is None else curve.eff_max / DEFAULT_CURVES[key].eff_max

    def to_dict(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION, "name": self.name, "date": self.date, "device": self.device,
                "example": self.example, "source": self.source,
                "gemm": {k: _clean(v.to_dict()) for k, v in sorted(self.gemm.items())},
                "links": {k: _clean(v.to_dict()) for k, v in sorted(self.links.items())}}

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(self.to_yaml(), encoding="utf-8")
        return p


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """The profile's figures to six significant digits: a fit's last digits differ between CPUs (the
    SIMD paths of numpy's sums), and a saved profile should read the same wherever it was fitted."""
    return {k: (significant(v, 6) if isinstance(v, float) else v) for k, v in d.items()
            if v is not None and v != ""}


def _date(value: Any, where: str) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise CalibrationError(f"{where}date: must be a date like 2026-12-01, got {shown(value)}")


def profile_from_dict(data: Any, where: str = "") -> CalibrationProfile:
    """Build and check a profile from its YAML mapping; errors name ``where`` + the key."""
    pre = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise CalibrationError(f"{pre}a calibration profile must be a mapping with name, date, gemm and links")
    bad = sorted(set(data) - set(_KEYS))
    if bad:
        raise CalibrationError(f"{pre}{bad[0]}: unknown key; valid: {', '.join(_KEYS)}")
    version = data.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise CalibrationError(f"{pre}version: {shown(version)} is not supported (this library reads version "
                               f"{FORMAT_VERSION})")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CalibrationError(f"{pre}name: a profile needs a name (a non-empty string)")
    if "date" not in data:
        raise CalibrationError(f"{pre}date: a profile needs the date of its measurements (2026-12-01)")
    date = _date(data["date"], pre)
    gemm_in = data.get("gemm") or {}
    links_in = data.get("links") or {}
    if not isinstance(gemm_in, dict):
        raise CalibrationError(f"{pre}gemm: must map dtypes (bf16, fp8, ...) to curve parameters")
    if not isinstance(links_in, dict):
        raise CalibrationError(f"{pre}links: must map nvlink / fabric to fitted link terms")
    gemm: dict[str, GemmCurve] = {}
    spelled: dict[str, str] = {}
    for dtype, params in gemm_in.items():
        try:
            key = normalise_dtype(dtype)
            if not isinstance(params, dict):
                raise ValueError("must be a mapping of curve parameters")
            gemm[key] = GemmCurve.from_dict(params)
        except ValueError as exc:
            raise CalibrationError(f"{pre}gemm.{dtype}: {exc}") from None
        if key in spelled:
            raise CalibrationError(f"{pre}gemm.{dtype}: the same data type as gemm.{spelled[key]} ({key}); keep one")
        spelled[key] = str(dtype)
    links: dict[str, LinkFit] = {}
    for level, params in links_in.items():
        if level not in LEVELS:
            raise CalibrationError(f"{pre}links.{level}: unknown link level; valid: {', '.join(LEVELS)}")
        if not isinstance(params, dict):
            raise CalibrationError(f"{pre}links.{level}: must be a mapping (bus_bandwidth_gb_per_s, alpha_s, ...)")
        if "level" in params and params["level"] != level:
            raise CalibrationError(f"{pre}links.{level}.level: {shown(params['level'])} under links.{level}; the "
                                   f"level is the key, so write {level} or leave it out")
        links[level] = LinkFit.from_dict({**params, "level": level}, where=f"{pre}links.{level}")
    example = data.get("example", False)
    if not isinstance(example, bool):
        raise CalibrationError(f"{pre}example: must be true or false")
    device = data.get("device")
    for key in ("device", "source"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise CalibrationError(f"{pre}{key}: must be text, got {shown(data[key])}")
    return CalibrationProfile(name=name.strip(), date=date, device=device,
                              example=example, source=str(data.get("source") or ""), gemm=gemm, links=links)


@lru_cache(maxsize=16)
def _load_cached(path: str, mtime_ns: int) -> CalibrationProfile:
    p = Path(path)
    raw = p.read_bytes()
    text = decode_text(raw, p.name)  # UTF-16 with its byte-order mark, UTF-8 with or without one
    if "\ufffd" in text and "\ufffd".encode() not in raw:  # bytes UTF-8 does not allow: not a text we can read
        raise CalibrationError(f"{p.name}: the file has bytes that are not UTF-8 text; {SAVE_AS_UTF8}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CalibrationError(f"{p.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
    prof = profile_from_dict(data, where=p.name)
    return CalibrationProfile(**{**prof.__dict__, "path": str(p)})


def load_profile(path: str | Path) -> CalibrationProfile:
    """Read a profile file (cached by path and modification time)."""
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        raise CalibrationError(f"{p}: no such calibration profile; write one with 'gpucluster calibrate'") from None
    if not math.isfinite(stat.st_mtime):
        raise CalibrationError(f"{p}: cannot read the file's time stamp")
    return _load_cached(str(p.resolve()), stat.st_mtime_ns)


_MODEL = re.compile(r"^(?:[a-z]{1,3}\d{2,4}[a-z]?|mi\d{3}[a-z]?|gaudi\d?|v\d[a-z]?)$")


#: Words that name a card form factor with its own power and clocks (the SXM part is named without one).
_FORM_FACTORS = frozenset({"pcie", "nvl"})


def _device_tokens(name: str) -> tuple[set[str], frozenset[str]]:
    """The model tokens of a device name (``h100``, ``a100``, ``gb200``, ``mi300x``) and its form-factor
    words: "NVIDIA H100 80GB HBM3" -> ({"h100"}, {}); "NVIDIA H100 PCIe" -> ({"h100"}, {"pcie"})."""
    words = re.split(r"[^a-z0-9]+", name.lower())
    return ({w for w in words if _MODEL.match(w) and not w.endswith(("gb", "tb"))},
            frozenset(words) & _FORM_FACTORS)


def device_matches(device: str | None, accelerator: dict[str, Any]) -> bool | None:
    """Whether a profile's device (as nvidia-smi and nccl-tests name it) is the accelerator (a catalogue
    row): same model (H100, A100, GB200, MI300X) and the same form factor (SXM, PCIe or NVL, which run
    at other clocks and power); None when the device names no model this can compare."""
    if not device:
        return None
    mine, form = _device_tokens(device)
    if not mine:
        return None
    theirs, their_form = _device_tokens(f"{accelerator.get('name', '')} {str(accelerator.get('id', '')).replace('-', ' ')}")
    if not theirs:
        return None
    return bool(mine & theirs) and form == their_form


def profile_findings(profile: CalibrationProfile | None, accelerator: dict[str, Any]) -> list[Finding]:
    """Findings on the profile a design uses: an example profile (info), a profile measured on another
    device than the design's accelerator (warning). ``accelerator``: the catalogue row."""
    if profile is None:
        return []
    out = []
    name = accelerator.get("name") or accelerator.get("id")
    if device_matches(profile.device, accelerator) is False:
        out.append(Finding(
            "calibration-device-mismatch", "warning",
            f"the calibration profile '{profile.name}' was measured on {profile.device}, but this design's "
            f"accelerator is {name}: its GEMM rates and link bandwidths describe the other device",
            fix="select a profile measured on this accelerator, or measure one with the calibrate command",
            field="calibration"))
    if profile.example:
        out.append(Finding(
            "calibration-example-profile", "info",
            f"the calibration profile '{profile.name}' is an example built from public measurements "
            f"(dated {profile.date}), not a measurement of this cluster",
            fix="measure your own GEMMs and collectives and write a profile with the calibrate command",
            field="calibration"))
    return out


def shipped_profiles() -> dict[str, Path]:
    """The example profiles shipped in ``data/calibration/`` by name (each marked ``example: true``)."""
    folder = data_path("calibration")
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


def _with_suffix(scenario: Any, ref: str, p: Path) -> str | None:
    """``ref`` with ``.yaml`` (or ``.yml``) added when that names a profile file the scenario may read (``p``:
    ``ref`` resolved), for the "did you mean" hint; None for a folder-like ``ref`` or one that ends in a YAML suffix
    already (profile names may hold dots: ``prof.v2`` may mean ``prof.v2.yaml``)."""
    if not p.name or ref.endswith(("/", "\\")) or p.suffix.lower() in (".yaml", ".yml"):
        return None
    for suffix in (".yaml", ".yml"):
        if not p.with_name(p.name + suffix).is_file():
            continue
        try:  # the file the hint names must pass the scenario's path rules too (no link out of the folder)
            scenario_file(scenario, ref + suffix, "calibration")
        except ScenarioError:
            return None
        return ref + suffix
    return None


def scenario_profile(scenario: Any) -> CalibrationProfile | None:
    """The profile a scenario selects with ``calibration: FILE`` (relative to its folder; or the
    name of a shipped example profile, see :func:`shipped_profiles`), or None."""
    ref = getattr(scenario, "calibration", None)
    if not ref:
        return None
    name = Path(ref).stem if Path(ref).name == Path(ref).stem else None
    shipped = shipped_profiles().get(name) if name else None
    if getattr(scenario, "path_policy", "any") == "none":  # an upload reads no server file: a shipped profile
        p = shipped if shipped is not None else Path()
        if shipped is None:
            raise ScenarioError("calibration", f"no shipped calibration profile named {excerpt(ref)}; an uploaded "
                                               "scenario can name only those")
    else:
        # relative to its folder, inside it unless --allow-paths
        p = scenario_file(scenario, ref, "calibration")
        if not p.is_file() and shipped is not None:
            p = shipped
    if not p.is_file():
        near = _with_suffix(scenario, ref, p)
        hint = f"; did you mean {excerpt(near)}?" if near is not None else (
            "; write one with 'gpucluster calibrate' or give the path relative to the scenario file")
        raise ScenarioError("calibration", f"no calibration profile at {excerpt(ref)}{hint}")
    try:
        return load_profile(p)
    except CalibrationError as exc:
        raise ScenarioError("calibration", str(exc)) from None


__all__ = ["FORMAT_VERSION", "CalibrationProfile", "device_matches", "load_profile", "profile_findings",
           "profile_from_dict", "scenario_profile", "shipped_profiles"]
