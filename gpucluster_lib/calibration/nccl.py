"""nccl-tests output: parse what ``all_reduce_perf`` / ``all_gather_perf`` / ``reduce_scatter_perf``
print, and fit an alpha-beta model per link level.

Public API:

* :func:`parse_nccl_tests` ``(text, collective=None, ranks=None, source="")`` -> :class:`NcclTest`
* :func:`read_nccl_tests` ``(path, ...)`` -> :class:`NcclTest` (the same, from a file)
* :func:`fit_alpha_beta` ``(test, level=None)`` -> :class:`LinkFit`
* :class:`LinkFit` -- ``alpha_s``, ``bus_bandwidth_gb_per_s``, ``latency_s``, the test's shape, the
  fit quality; ``to_dict()`` / ``LinkFit.from_dict(d)`` (the profile's YAML), ``predict_time_s``.

The printed format (nccl-tests ``src/common.cu``; every version since 2.0): a header
``size count type redop [root] time algbw busbw #wrong|error`` twice (out-of-place, in-place),
one row per message size, times in microseconds, bandwidths in GB/s (10^9 B/s); rank lines
``Rank N [Group G] Pid P on HOST device D [BUS] NAME``. Lines may carry an MPI prefix
(``[1,0]<stdout>:``) or miss the ``#`` marks; interleaved log lines are skipped. The
out-of-place columns are used.

Bus bandwidth (nccl-tests ``doc/PERFORMANCE.md``): ``algbw = S / t`` and
``busbw = algbw x F`` with ``F = 2 (n-1)/n`` for all-reduce and ``(n-1)/n`` for all-gather and
reduce-scatter (``S`` the total size printed, ``n`` ranks), so that busbw is comparable with
the link's bandwidth whatever the rank count.

Model fitted (Hockney's alpha-beta, as the ring formulas of Thakur, Rabenseifner and Gropp 2005,
IJHPCA 19(1), that ``training/comm.py`` evaluates)::

    t(S) = t_lat + F S / B          t_lat = h alpha,   h = 2 (n-1) (all-reduce), n - 1 (others)

``B`` [B/s] is the bus bandwidth and ``alpha`` [s] the latency per ring step. ``t_lat`` is the
small-message plateau (the median of the three smallest sizes) when the run has one, else the
intercept of one least-squares line over every size (relative errors, clamped at 0). ``B`` is
fitted on the large sizes only (at least 1/16 of the largest: the sizes gradient buckets reach)
with ``t_lat`` fixed, and capped at the highest bus bandwidth measured there, so it never claims
more than the large messages reached. With one message size only ``B`` is measured (``alpha`` is
None). NCCL switches algorithm and protocol with the size (LL, LL128, Simple; ring, tree, NVLS),
so the two numbers are a straight line through a curve: ``rms_error`` says how well it holds over
every size and ``large_sizes_max_abs_error`` over the large ones.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.units import GB


class CalibrationError(GpuClusterError, ValueError):
    """A measurement file or profile that cannot be read; the message names the file and the fix."""


#: collectives with their bus-bandwidth factor F(n) and ring steps h(n) (PERFORMANCE.md; Thakur 2005).
COLLECTIVES: dict[str, tuple[Any, Any]] = {
    "all_reduce": (lambda n: 2.0 * (n - 1) / n, lambda n: 2.0 * (n - 1)),
    "all_gather": (lambda n: (n - 1) / n, lambda n: float(n - 1)),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: float(n - 1)),
}
LEVELS = ("nvlink", "fabric")

_PREFIX = re.compile(r"^\s*(\[[0-9,]+\](<stdout>|<stderr>)?:|\[\d+\])")
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?:(\S+)\s+)?device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$")
_COLL_NAME = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv)_perf")
_VERSION = re.compile(r"NCCL version\s+(\S+)")
_NUM = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


@dataclass(frozen=True)
class NcclRow:
    """One message size: size [B], time [us], algbw and busbw [GB/s] (out-of-place)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    time_us: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float


@dataclass
class NcclTest:
    """One nccl-tests run: the collective, the ranks and hosts, the rows."""

    collective: str
    ranks: int
    hosts: list[str]
    devices: list[str]
    rows: list[NcclRow]
    source: str = ""
    nccl_version: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ranks_per_host(self) -> int | None:
        return self.ranks // len(self.hosts) if self.hosts and self.ranks % len(self.hosts) == 0 else None

    @property
    def level(self) -> str:
        """``nvlink`` when every rank is on one host, else ``fabric`` (no rank lines: fabric)."""
        return "nvlink" if len(self.hosts) == 1 else "fabric"

    def frame(self):
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.rows])


def _strip(line: str) -> str:
    line = _PREFIX.sub("", line.rstrip("\n"))
    return line.strip()


def _row(tokens: list[str], has_root: bool | None) -> NcclRow | None:
    if len(tokens) < 7 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    root = has_root if has_root is not None else len(tokens) in (9, 13)
    i = 5 if root else 4
    try:
        t, alg, bus = (float(tokens[i + j]) for j in range(3))
    except (ValueError, IndexError):
        return None
    if not all(math.isfinite(v) for v in (t, alg, bus)) or t <= 0:
        return None
    return NcclRow(int(tokens[0]), int(tokens[1]), tokens[2], tokens[3], t, alg, bus)


def _infer_ranks(collective: str, rows: list[NcclRow]) -> int | None:
    """Ranks from busbw / algbw = F(n) on the row with the largest algbw (least rounding)."""
    good = [r for r in rows if r.algbw_gb_per_s >= 1.0]
    if not good:
        return None
    r = max(good, key=lambda x: x.algbw_gb_per_s)
    ratio = r.busbw_gb_per_s / r.algbw_gb_per_s
    if collective == "all_reduce":
        n = 2.0 / (2.0 - ratio) if ratio < 2 else None
    else:
        n = 1.0 / (1.0 - ratio) if ratio < 1 else None
    return int(round(n)) if n is not None and n >= 1.5 else None


def parse_nccl_tests(text: str, collective: str | None = None, ranks: int | None = None,
                     source: str = "") -> NcclTest:
    """Parse nccl-tests output as printed (see the module doc).

    ``collective`` (``all_reduce``, ``all_gather``, ``reduce_scatter``) is read from the text
    (``all_gather_perf`` in the command or the ``Collective test`` lines) when not given;
    ``ranks`` from the rank lines, else from the busbw / algbw ratio. A ``ranks`` given for output
    with rank lines must agree with them (else :class:`CalibrationError`); for output without them
    it is used, with a note when the busbw / algbw ratio points to another count. Raises
    :class:`CalibrationError` naming ``source`` when nothing usable is found.
    """
    where = source or "the nccl-tests output"
    rows: list[NcclRow] = []
    hosts: list[str] = []
    devices: list[str] = []
    rank_ids: set[int] = set()
    names: list[str] = []
    version = None
    has_root: bool | None = None
    for raw in text.splitlines():
        line = _strip(raw)
        body = line.lstrip("#").strip()
        if not body:
            continue
        m = _RANK.search(body)
        if m:
            rank_ids.add(int(m.group(1)))
            host = m.group(2) or "localhost"
            if host not in hosts:
                hosts.append(host)
            devices.append(m.group(4).strip())
            continue
        names += _COLL_NAME.findall(body)
        v = _VERSION.search(body)
        if v:
            version = v.group(1)
        tokens = body.split()
        if "size" in tokens and "busbw" in tokens:
            has_root = "root" in tokens
            continue
        if not line.startswith("#"):
            r = _row(tokens, has_root)
            if r is not None:
                rows.append(r)
    if not rows:
        raise CalibrationError(f"{where}: no result rows found; expected nccl-tests lines such as "
                               "'1048576  262144  float  sum  -1  203.2  5.16  9.68  0 ...' "
                               "(the output of all_reduce_perf, all_gather_perf or reduce_scatter_perf)")
    notes: list[str] = []
    coll = collective
    if coll is None:
        found = [n for n in names if n in COLLECTIVES]
        if found:
            coll = found[-1]
        elif rows[0].redop == "none":
            coll = "all_gather"
            notes.append("collective not named in the output: all_gather (no reduction operator)")
        else:
            big = max(rows, key=lambda x: x.algbw_gb_per_s)
            scatter = big.algbw_gb_per_s >= 1.0 and big.busbw_gb_per_s < 0.95 * big.algbw_gb_per_s
            coll = "reduce_scatter" if scatter else "all_reduce"
            notes.append(f"collective not named in the output: {coll} inferred from busbw / algbw")
    if coll not in COLLECTIVES:
        raise CalibrationError(f"{where}: collective {coll!r} is not supported; use one of "
                               f"{', '.join(COLLECTIVES)} (all_reduce_perf, all_gather_perf, reduce_scatter_perf)")
    if ranks is not None and rank_ids and ranks != len(rank_ids):
        raise CalibrationError(f"{where}: {ranks} ranks given, but the output lists {len(rank_ids)} ranks (its 'Rank N "
                               "... on HOST' lines); leave the rank count out for output with rank lines (it is "
                               "for output without them)")
    inferred = None if rank_ids else _infer_ranks(coll, rows)
    n = ranks if ranks is not None else (len(rank_ids) if rank_ids else inferred)
    if not n or n < 2:
        raise CalibrationError(f"{where}: the number of ranks is unknown (no 'Rank N ... on HOST' lines and no "
                               "busbw/algbw ratio to infer it from); give it (gpucluster calibrate --ranks)")
    if not rank_ids and ranks is None:
        notes.append(f"{n} ranks inferred from busbw / algbw (no rank lines)")
    elif not rank_ids and inferred is not None and inferred != ranks:
        notes.append(f"{ranks} ranks as given, though busbw / algbw points to {inferred}: check the rank count")
    rows.sort(key=lambda r: r.size_bytes)
    return NcclTest(collective=coll, ranks=int(n), hosts=hosts, devices=devices, rows=rows, source=source,
                    nccl_version=version, notes=notes)


def read_nccl_tests(path: str | Path, collective: str | None = None, ranks: int | None = None) -> NcclTest:
    """:func:`parse_nccl_tests` of a file; a missing file is a :class:`CalibrationError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CalibrationError(f"{p}: cannot read the nccl-tests output ({exc.strerror or exc})") from exc
    if collective is None:
        named = _COLL_NAME.findall(p.name + "_perf") or [c for c in COLLECTIVES if c in p.name]
        names_in_text = [n for n in _COLL_NAME.findall(text) if n in COLLECTIVES]
        if not names_in_text and named and named[0] in COLLECTIVES:
            collective = named[0]
    return parse_nccl_tests(text, collective=collective, ranks=ranks, source=p.name)


@dataclass(frozen=True)
class LinkFit:
    """Alpha-beta of one link level, fitted to one nccl-tests run (units in the names)."""

    level: str
    collective: str
    ranks: int
    ranks_per_host: int | None
    bus_bandwidth_gb_per_s: float
    latency_s: float | None
    alpha_s: float | None
    peak_busbw_gb_per_s: float
    sizes: int
    rms_error: float | None
    max_abs_error: float | None
    source: str = ""
    device: str | None = None
    method: str = ""
    #: the smallest of the large message sizes ``B`` is fitted on [B] (>= 1/16 of the largest), and the
    #: fit's largest relative time error over them [-]: the sizes gradient buckets reach
    large_sizes_from_bytes: int | None = None
    large_sizes_max_abs_error: float | None = None

    def predict_time_s(self, size_bytes: Any) -> Any:
        """The fitted time of the same collective on the same ranks [s] for message sizes [B]."""
        f_bus = COLLECTIVES[self.collective][0](self.ranks)
        t = f_bus * np.asarray(size_bytes, dtype=float) / (self.bus_bandwidth_gb_per_s * GB) + (self.latency_s or 0.0)
        return float(t) if np.ndim(t) == 0 else t

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "links") -> LinkFit:
        names = {f for f in cls.__dataclass_fields__}
        bad = sorted(set(data) - names)
        if bad:
            raise CalibrationError(f"{where}.{bad[0]}: unknown key; valid: {', '.join(sorted(names))}")
        for key in ("level", "collective", "ranks", "bus_bandwidth_gb_per_s"):
            if key not in data:
                raise CalibrationError(f"{where}.{key}: missing")
        if data["collective"] not in COLLECTIVES:
            raise CalibrationError(f"{where}.collective: {data['collective']!r} is not one of {', '.join(COLLECTIVES)}")
        bw = data["bus_bandwidth_gb_per_s"]
        if not isinstance(bw, (int, float)) or isinstance(bw, bool) or not math.isfinite(bw) or bw <= 0:
            raise CalibrationError(f"{where}.bus_bandwidth_gb_per_s: must be a positive number, got {bw!r}")
        def whole(key: str, low: int) -> None:
            v = data.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < low):
                raise CalibrationError(f"{where}.{key}: must be a whole number of at least {low}, got {v!r}")

        whole("ranks", 2)
        whole("ranks_per_host", 1)
        whole("sizes", 0)
        whole("large_sizes_from_bytes", 1)
        for key in ("peak_busbw_gb_per_s", "rms_error", "max_abs_error", "large_sizes_max_abs_error"):
            v = data.get(key)
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)
                                  or v < 0):
                raise CalibrationError(f"{where}.{key}: must be a non-negative number, got {v!r}")
        for key in ("source", "device", "method"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise CalibrationError(f"{where}.{key}: must be text, got {data[key]!r}")
        for key in ("alpha_s", "latency_s"):
            v = data.get(key)
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)
                                  or v < 0):
                raise CalibrationError(f"{where}.{key}: must be a non-negative number of seconds, got {v!r}")
        defaults = {"ranks_per_host": None, "latency_s": None, "alpha_s": None, "peak_busbw_gb_per_s": float(bw),
                    "sizes": 0, "rms_error": None, "max_abs_error": None, "large_sizes_from_bytes": None,
                    "large_sizes_max_abs_error": None}
        return cls(**{**defaults, **data})


def fit_alpha_beta(test: NcclTest, level: str | None = None) -> LinkFit:
    """Fit ``t = t_lat + F S / B`` to a run (module doc); ``level`` defaults to ``test.level``."""
    lvl = level or test.level
    if lvl not in LEVELS:
        raise CalibrationError(f"link level {lvl!r} is not one of {', '.join(LEVELS)}")
    f_bus, steps = COLLECTIVES[test.collective]
    n = test.ranks
    sizes = np.array([r.size_bytes for r in test.rows], dtype=float)
    t = np.array([r.time_us for r in test.rows], dtype=float) * 1e-6
    x = f_bus(n) * sizes  # bus bytes
    peak = max(r.busbw_gb_per_s for r in test.rows)
    if len(sizes) == 1 or np.ptp(sizes) == 0:
        bw = float(np.max(x / t)) / GB
        return LinkFit(lvl, test.collective, n, test.ranks_per_host, bw, None, None, peak, int(len(sizes)), None,
                       None, test.source, test.devices[0] if test.devices else None,
                       "one message size: bandwidth only (no latency)")
    t_lat, c, big, how = _fit_line(sizes, t, x)
    if x[-1] * c < 0.1 * t[-1]:
        raise CalibrationError(
            f"{test.source or 'the nccl-tests output'}: even the largest message ({int(sizes[-1])} B) is latency-"
            "bound, so the bandwidth cannot be measured; run up to large messages (-e 1G or more)")
    # the bandwidth no higher than the large messages measured: B <= max(busbw) over them
    c = max(c, 1.0 / float(np.max(x[big] / t[big])))
    pred = t_lat + x * c
    err = pred / t - 1.0
    return LinkFit(level=lvl, collective=test.collective, ranks=n, ranks_per_host=test.ranks_per_host,
                   bus_bandwidth_gb_per_s=float(1.0 / c / GB), latency_s=float(t_lat),
                   alpha_s=float(t_lat / steps(n)), peak_busbw_gb_per_s=float(peak), sizes=int(len(sizes)),
                   rms_error=float(np.sqrt(np.mean(err ** 2))), max_abs_error=float(np.max(np.abs(err))),
                   source=test.source, device=test.devices[0] if test.devices else None, method=how,
                   large_sizes_from_bytes=int(sizes[big].min()),
                   large_sizes_max_abs_error=float(np.max(np.abs(err[big]))))


def _fit_line(sizes: np.ndarray, t: np.ndarray, x: np.ndarray) -> tuple[float, float, np.ndarray, str]:
    """``(t_lat [s], 1/B [s/B], large sizes (a mask), method)``.

    Latency: the median of the three smallest sizes when they form a plateau (the run covers the
    latency end), else one weighted least-squares line over every size (clamped at 0; without small
    sizes an extrapolation). Bandwidth: the relative least-squares fit over the large sizes (at least
    1/16 of the largest) with that latency fixed, so that ``B`` describes the sizes gradient
    buckets reach rather than the middle, where NCCL's protocol changes bend the curve (a line over
    every size overstated the A3 High all-gather's bandwidth: 54.6 GB/s against 49.3-50.2 measured).
    The caller caps ``B`` at the highest bus bandwidth measured at those sizes.
    """
    idx = np.arange(len(t))
    flat = (len(t) >= 4 and t[:3].max() <= 1.2 * t[:3].min() and sizes[2] >= 4 * sizes[0])
    if flat:
        t_lat = float(np.median(t[:3]))
        big = (sizes >= sizes[-1] / 16) & (idx >= 3)
        how = "latency from the small-message plateau"
    else:
        a = np.column_stack([1.0 / t, x / t])
        (t_lat, _), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        t_lat = max(float(t_lat), 0.0)
        big = sizes >= sizes[-1] / 16
        how = "latency from one weighted least-squares line over every size (no small-message plateau)"
    if big.sum() < 2:
        big = idx >= len(t) - 2
    u = x[big] / t[big]
    c = float(np.sum(u * (1.0 - t_lat / t[big])) / np.sum(u * u))  # <= 0: latency-bound (the caller refuses)
    return t_lat, c, big, how + ", bandwidth from sizes >= 1/16 of the largest (at most their highest bus bandwidth)"


__all__ = ["COLLECTIVES", "LEVELS", "CalibrationError", "LinkFit", "NcclRow", "NcclTest", "fit_alpha_beta",
           "parse_nccl_tests", "read_nccl_tests"]
