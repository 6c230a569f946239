"""nccl-tests output: parse what ``all_reduce_perf`` / ``all_gather_perf`` / ``reduce_scatter_perf``
print, and fit an alpha-beta model per link level.

Public API:

* :func:`parse_nccl_tests` ``(text, collective=None, ranks=None, source="")`` -> :class:`NcclTest`
* :func:`read_nccl_tests` ``(path, ...)`` -> :class:`NcclTest` (the same, from a file)
* :func:`link_level` ``(test, level=None)`` -> ``"nvlink"`` or ``"fabric"`` (given, checked against the rank
  lines, or read from them)
* :func:`fit_alpha_beta` ``(test, level=None, gpus_per_node=None)`` -> :class:`LinkFit`
* :class:`LinkFit` -- ``alpha_s``, ``bus_bandwidth_gb_per_s``, ``latency_s``, the test's shape, the
  fit quality; ``to_dict()`` / ``LinkFit.from_dict(d)`` (the profile's YAML), ``predict_time_s``.

The printed format (nccl-tests ``src/common.cu``; ``src/util.cu`` in v2.19.6; every version since 2.0): a
header ``size count type [redop] [root] time algbw busbw #wrong|error`` twice (out-of-place, in-place),
one row per message size, times in microseconds, bandwidths in GB/s (10^9 B/s); rank lines
``Rank N [Group G] Pid P on HOST device D [BUS] NAME``. The columns are placed by the header: all-gather
printed neither ``redop`` nor ``root`` before nccl-tests 2.13 (``src/all_gather.cu`` before commit
51af557, 2022-08-19), the other collectives ``redop`` without ``root``. A row whose size / time is not the
algbw it prints (``algbw = S / t``) was misread and is refused. Lines may carry a launcher's prefix (Open
MPI's ``[1,0]<stdout>:``, ``srun --label``'s ``0: ``, pdsh's ``host: ``) or miss the ``#`` marks;
interleaved log lines are skipped. The out-of-place columns are used. Rows of size 0 (all-gather and
reduce-scatter print ``count x ranks x element size`` with the count per rank rounded down to 16 B,
``base = (count/nranks) & ~(16/eltSize - 1)`` in ``src/all_gather.cu``) are skipped with a note.

A file holding several runs (a new one starts at ``Collective test starting``, the ``nThread ...`` line, a
column header or a command naming a test, once the run before has rows) is refused, naming them: their
rows would pool into one line. A run whose largest size is below the last one its ``minBytes ... maxBytes
... step:`` line asks for (the size loop of ``src/common.cu``) is refused as cut short. Output without
rank lines needs its link level (and, for the fabric, its GPUs per node) to be given.

Bus bandwidth (nccl-tests ``doc/PERFORMANCE.md``): ``algbw = S / t`` and
``busbw = algbw x F`` with ``F = 2 (n-1)/n`` for all-reduce and ``(n-1)/n`` for all-gather and
reduce-scatter (``S`` the total size printed, ``n`` ranks), so that busbw is comparable with
the link's bandwidth whatever the rank count.

Model fitted (Hockney's alpha-beta, as the ring formulas of Thakur, Rabenseifner and Gropp 2005,
IJHPCA 19(1), that ``training/comm.py`` evaluates)::

    t(S) = t_lat + F S / B          t_lat = h alpha,   h = 2 (n-1) (all-reduce), n - 1 (others)

``B`` [B/s] is the bus bandwidth and ``alpha`` [s] the latency per ring step. ``t_lat`` is the
small-message plateau (the median of the three smallest sizes) when the run has one, else the
intercept of one least-squares line over every size (relative errors, clamped at 0); when the smallest
size is above 64 KiB that intercept is an extrapolation and ``alpha`` is left unset (None). ``B`` is
fitted on the large sizes only (at least 1/16 of the largest: the sizes gradient buckets reach)
with ``t_lat`` fixed, and capped at the highest bus bandwidth measured there, so it never claims
more than the large messages reached. With one message size only ``B`` is measured (``alpha`` is
None). NCCL switches algorithm and protocol with the size (LL, LL128, Simple; ring, tree, NVLS),
so the two numbers are a straight line through a curve: ``rms_error`` says how well it holds over
every size and ``large_sizes_max_abs_error`` over the large ones. A fabric fit records its ranks per
host (``ranks_per_host``), since the engines' nominal fabric rate is ranks per host x NIC rate.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_lib.errors import GpuClusterError, all_of, excerpt, one_of, shown
from gpucluster_lib.formatting import plural
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
#: the largest bus bandwidth a profile may hold [GB/s]: ten times NVLink 5's 900 GB/s per GPU and direction
MAX_BUS_BANDWIDTH_GB_PER_S = 10_000.0
#: the largest latency per ring step a profile may hold [s]: a thousand times the 1-8 us NCCL's steps take
MAX_ALPHA_S = 1e-3

#: What a launcher puts before each line: Open MPI's ``[1,0]<stdout>:`` (``--tag-output``), ``[0]``, Slurm's
#: ``0: `` (``srun --label``) and pdsh's / clush's ``host: ``.
_PREFIX = re.compile(r"^\s*(?:\[[0-9,]+\](?:<stdout>|<stderr>)?:|\[\d+\]|\d+:(?=\s|$)|[A-Za-z][\w.-]*:(?=\s|$))")
_RANK = re.compile(r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?:(\S+)\s+)?device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$")
_COLL_NAME = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv)_perf")
_VERSION = re.compile(r"NCCL version\s+(\S+)")
#: the run's size range (nccl-tests ``src/common.cu`` / ``src/util.cu``: ``minBytes %ld maxBytes %ld step: %ld(%s)``)
_RANGE = re.compile(r"minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+step:\s*(\d+)\((factor|bytes)\)")
_NUM = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
#: a line that starts a run when the current one already has rows
_START = re.compile(r"Collective test starting|\bnThread\s+\d+|\bminBytes\s+\d+")
#: the smallest size [B] whose time can still be taken for latency when the three smallest sizes form no
#: plateau: above it (the LL protocol's range, 64 KiB) the line's intercept is an extrapolation
LATENCY_MAX_SIZE_BYTES = 1 << 16


@dataclass(frozen=True)
class NcclRow:
    """One message size: size [B], time [us], algbw and busbw [GB/s] (out-of-place); ``line``: its line in the
    file (from 1)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    time_us: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float
    line: int = field(default=0, compare=False)


@dataclass
class NcclTest:
    """One nccl-tests run: the collective, the ranks and hosts, the rows.

    ``last_size_bytes``: the largest size the run's ``minBytes ... maxBytes ... step:`` line asks for (None
    without that line); ``footer``: whether the ``Avg bus bandwidth`` line that ends a run was found.
    """

    collective: str
    ranks: int
    hosts: list[str]
    devices: list[str]
    rows: list[NcclRow]
    source: str = ""
    nccl_version: str | None = None
    notes: list[str] = field(default_factory=list)
    last_size_bytes: int | None = None
    footer: bool = False

    @property
    def ranks_per_host(self) -> int | None:
        return self.ranks // len(self.hosts) if self.hosts and self.ranks % len(self.hosts) == 0 else None

    @property
    def level(self) -> str | None:
        """``nvlink`` when every rank is on one host, ``fabric`` when on several, None without rank lines
        (then the caller must say which)."""
        if not self.hosts:
            return None
        return "nvlink" if len(self.hosts) == 1 else "fabric"

    def frame(self):
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.rows])


def _strip(line: str) -> str:
    line = line.rstrip("\n").lstrip("\ufeff")
    for _ in range(3):  # a launcher's label, then MPI's tag: 'node-a: [1,0]<stdout>: ...'
        cut = _PREFIX.sub("", line, count=1)
        if cut == line:
            break
        line = cut
    return line.strip()


def _time_column(tokens: list[str]) -> int:
    """The position of the out-of-place time in a row printed without a header: after ``size count type``,
    then ``redop`` (a word) and ``root`` (``-1`` for these collectives) when present."""
    if len(tokens) > 4 and not _NUM.match(tokens[3]):
        return 5 if tokens[4] == "-1" or len(tokens) in (9, 13) else 4
    return 3   # all_gather before nccl-tests 2.13: no redop, no root


def _row(tokens: list[str], header: list[str] | None, line: int) -> NcclRow | None:
    """A result row, the columns placed by the run's header (``time`` is the first column after ``type``,
    ``redop`` and ``root``, whichever the version prints), else by :func:`_time_column`."""
    if len(tokens) < 6 or not tokens[0].isdigit() or not tokens[1].isdigit() or _NUM.match(tokens[2]):
        return None
    if header is not None:
        i = header.index("time")
        redop = tokens[3] if "redop" in header[:i] else "none"
    else:
        i = _time_column(tokens)
        redop = tokens[3] if i > 3 else "none"
    try:
        t, alg, bus = (float(tokens[i + j]) for j in range(3))
    except (ValueError, IndexError):
        return None
    if not all(math.isfinite(v) for v in (t, alg, bus)) or t <= 0 or alg < 0 or bus < 0:
        return None
    return NcclRow(int(tokens[0]), int(tokens[1]), tokens[2], redop, t, alg, bus, line)


@dataclass
class _Run:
    """The lines of one run in a file that may hold several."""

    start: int
    names: list[str] = field(default_factory=list)
    ranks: list[tuple[int, str, str]] = field(default_factory=list)   # (rank, host, device)
    rows: list[NcclRow] = field(default_factory=list)
    zero_rows: int = 0
    header: list[str] | None = None
    size_range: tuple[int, int, int, str] | None = None
    version: str | None = None
    footer: bool = False
    wrong_rows: int = 0      # rows whose out-of-place #wrong / error column is not 0
    failed: bool = False     # an 'Out of bounds values : N FAILED' line

    def collective(self) -> str | None:
        return self.names[0] if self.names else None

    def last_size(self) -> int | None:
        """The largest size the run's size range asks for [B] (the loop of nccl-tests ``src/common.cu``:
        ``size = minBytes``, times ``stepFactor`` or plus ``stepBytes`` while ``size <= maxBytes``)."""
        if self.size_range is None:
            return None
        lo, hi, step, kind = self.size_range
        if lo <= 0 or hi < lo or step <= 0:
            return None
        if kind == "bytes":
            return lo + (hi - lo) // step * step
        if step < 2:
            return None
        size = lo
        while size * step <= hi:
            size *= step
        return size


def _runs(text: str) -> list[_Run]:
    """Split the output into runs: a new one starts at ``Collective test starting``, the ``nThread ...`` line,
    a column header or a command naming a test, when the run before already has rows."""
    runs = [_Run(1)]
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip(raw)
        body = line.lstrip("#").strip()
        if not body:
            continue
        tokens = body.split()
        is_header = "size" in tokens and "busbw" in tokens and "time" in tokens
        names = _COLL_NAME.findall(body)
        starts = is_header or _START.search(body) or (names and "concluded" not in body)
        run = runs[-1]
        if starts and run.rows:
            run = _Run(number)
            runs.append(run)
        m = _RANK.search(body)
        if m:
            run.ranks.append((int(m.group(1)), m.group(2) or "localhost", m.group(4).strip()))
            continue
        run.names += names
        v = _VERSION.search(body)
        if v:
            run.version = v.group(1)
        r = _RANGE.search(body)
        if r:
            run.size_range = (int(r.group(1)), int(r.group(2)), int(r.group(3)), r.group(4))
        if "Avg bus bandwidth" in body:
            run.footer = True
        if "Out of bounds values" in body and "FAILED" in body:
            run.failed = True
        if is_header:
            run.header = [t for t in tokens]
            continue
        if not line.startswith("#"):
            row = _row(tokens, run.header, number)
            if row is not None and row.size_bytes == 0:
                run.zero_rows += 1
            elif row is not None:
                run.rows.append(row)
                if _wrong(tokens, run.header):
                    run.wrong_rows += 1
    return [r for r in runs if r.rows or r.zero_rows]


def _wrong(tokens: list[str], header: list[str] | None) -> bool:
    """Whether a row's out-of-place ``#wrong`` (or ``error``) column, right after ``busbw``, reports errors
    (``N/A`` when nccl-tests ran with ``-c 0``: not checked)."""
    i = (header.index("time") if header is not None else _time_column(tokens)) + 3
    if i >= len(tokens) or not _NUM.match(tokens[i]):
        return False
    return float(tokens[i]) != 0.0


def _name(collective: str) -> str:
    return collective.replace("_", "-")


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


def _pick_run(runs: list[_Run], collective: str | None, where: str) -> _Run:
    """The one run to fit; several runs in one file are refused (their rows would pool into one line)."""
    if collective is not None:
        named = [r for r in runs if r.collective() == collective]
        if len(named) == 1 or (len(runs) == 1 and not named):
            return named[0] if named else runs[0]
    if len(runs) == 1:
        return runs[0]
    kinds = [r.collective() for r in runs]
    listed = all_of([f"{_name(k) + ' (' + k + '_perf)' if k else 'an unnamed run'} from line {r.start}"
                     for k, r in zip(kinds, runs, strict=True)])
    if len(set(kinds)) > 1:
        raise CalibrationError(f"{where}: the file holds {len(runs)} nccl-tests runs: {listed}; a link is fitted to "
                               "one run, so put each run in its own file and give the one to fit")
    raise CalibrationError(f"{where}: the file holds {len(runs)} runs of the same test ({listed}); a link is fitted "
                           "to one run, so keep one run in the file")


def parse_nccl_tests(text: str, collective: str | None = None, ranks: int | None = None,
                     source: str = "") -> NcclTest:
    """Parse nccl-tests output as printed (see the module doc).

    ``collective`` (``all_reduce``, ``all_gather``, ``reduce_scatter``) is read from the text
    (``all_gather_perf`` in the command or the ``Collective test`` lines) when not given;
    ``ranks`` from the rank lines, else from the busbw / algbw ratio. A ``ranks`` given for output
    with rank lines must agree with them (else :class:`CalibrationError`); for output without them
    it is used, with a note when the busbw / algbw ratio points to another count. Output holding
    several runs (one test after another in one log) is refused, naming them; rows of size 0 (all-gather
    and reduce-scatter below 16 B per rank: nccl-tests ``src/all_gather.cu``, ``base = (count/nranks) &
    ~(16/eltSize - 1)``) are skipped with a note. Raises :class:`CalibrationError` naming ``source``
    when nothing usable is found.
    """
    where = source or "the nccl-tests output"
    runs = _runs(text)
    if not any(r.rows for r in runs):
        if runs:
            raise CalibrationError(f"{where}: every result row has size 0 (nccl-tests prints 0 for sizes below 16 B "
                                   "per rank); run up to large messages (-e 1G or more)")
        if "\ufffd" in text:
            raise CalibrationError(f"{where}: no result rows found, and the file is not UTF-8 text (it holds bytes "
                                   f"that UTF-8 does not allow); {SAVE_AS_UTF8}")
        raise CalibrationError(f"{where}: no result rows found; expected nccl-tests lines such as "
                               "'1048576  262144  float  sum  -1  203.2  5.16  9.68  0 ...' "
                               "(the output of all_reduce_perf, all_gather_perf or reduce_scatter_perf, saved as "
                               "text in UTF-8)")
    runs = [r for r in runs if r.rows]
    run = _pick_run(runs, collective, where)
    rows = run.rows
    hosts: list[str] = []
    rank_hosts: dict[int, set[str]] = {}
    for rank, host, _device in run.ranks:
        if host not in hosts:
            hosts.append(host)
        rank_hosts.setdefault(rank, set()).add(host)
    twice = sorted(k for k, v in rank_hosts.items() if len(v) > 1)
    if twice:
        raise CalibrationError(f"{where}: every process printed Rank {twice[0]} on a different host "
                               f"({all_of(sorted(rank_hosts[twice[0]]))}): nccl-tests was built without MPI, so "
                               "these are separate runs of one node each; rebuild it with 'make MPI=1' and launch "
                               "it with mpirun or srun")
    rank_ids = set(rank_hosts)
    notes: list[str] = []
    if run.zero_rows:
        notes.append(f"{plural(run.zero_rows, 'row')} of size 0 skipped (nccl-tests prints 0 when the size per rank "
                     "rounds down to nothing)")
    if run.wrong_rows or run.failed:
        notes.append((f"{plural(run.wrong_rows, 'row')} with wrong values (the #wrong or error column)"
                      if run.wrong_rows else "an 'Out of bounds values ... FAILED' line")
                     + ": NCCL returned wrong results in this run, so its times may not describe a healthy link; "
                       "check the cluster and measure again")
    coll = collective
    if coll is None:
        found = [n for n in run.names if n in COLLECTIVES] or run.names
        if found:
            coll = found[0]
        elif rows[0].redop == "none":
            coll = "all_gather"
            notes.append("collective not named in the output: all-gather (no reduction operator)")
        else:
            big = max(rows, key=lambda x: x.algbw_gb_per_s)
            scatter = big.algbw_gb_per_s >= 1.0 and big.busbw_gb_per_s < 0.95 * big.algbw_gb_per_s
            coll = "reduce_scatter" if scatter else "all_reduce"
            notes.append(f"collective not named in the output: {_name(coll)} inferred from busbw / algbw")
    if coll not in COLLECTIVES:
        raise CalibrationError(f"{where}: the {coll.replace('_', ' ')} test is not supported; use the output of "
                               "all_reduce_perf, all_gather_perf or reduce_scatter_perf")
    if ranks is not None and rank_ids and ranks != len(rank_ids):
        raise CalibrationError(f"{where}: {plural(ranks, 'rank')} given, but the output lists "
                               f"{plural(len(rank_ids), 'rank')} (its 'Rank N ... on HOST' lines); leave the rank "
                               "count out for output with rank lines (it is for output without them)")
    inferred = None if rank_ids else _infer_ranks(coll, rows)
    n = ranks if ranks is not None else (len(rank_ids) if rank_ids else inferred)
    if not n or n < 2:
        raise CalibrationError(f"{where}: the number of ranks is unknown (no 'Rank N ... on HOST' lines and no "
                               "busbw/algbw ratio to infer it from); give it (gpucluster calibrate --ranks)")
    if not rank_ids and ranks is None:
        notes.append(f"{plural(n, 'rank')} inferred from busbw / algbw (no rank lines)")
    elif not rank_ids and inferred is not None and inferred != ranks:
        notes.append(f"{plural(ranks, 'rank')} as given, though busbw / algbw points to {inferred}: check the rank "
                     "count")
    _check_columns(rows, where)
    sizes = [r.size_bytes for r in rows]
    dup = sorted({s for s in sizes if sizes.count(s) > 1})
    if dup:
        lines = [r.line for r in rows if r.size_bytes == dup[0]]
        raise CalibrationError(f"{where}: the size {size_text(dup[0])} appears {len(lines)} times (lines "
                               f"{all_of(lines)}): a run prints each size once; keep one run with one data type "
                               "and one operation (no -d all or -o all)")
    rows = sorted(rows, key=lambda r: r.size_bytes)
    devices = [d for _r, _h, d in run.ranks]
    return NcclTest(collective=coll, ranks=int(n), hosts=hosts, devices=devices, rows=rows, source=source,
                    nccl_version=run.version or next((r.version for r in runs if r.version), None), notes=notes,
                    last_size_bytes=run.last_size(), footer=run.footer)


def _check_columns(rows: list[NcclRow], where: str) -> None:
    """Refuse rows whose time and algbw disagree: ``algbw = S / t`` (nccl-tests ``doc/PERFORMANCE.md``), so a
    row where size / time is more than 10% from the algbw printed was read from the wrong columns. Rows where
    both are below 1 GB/s are skipped (two decimals leave them too coarse); times printed as ``%7.1e``
    (nccl-tests ``src/util.cu`` ``getFloatStr``, two significant digits) are within 4%."""
    for r in rows:
        alg = r.size_bytes / (r.time_us * 1e-6) / GB
        if max(alg, r.algbw_gb_per_s) >= 1.0:
            if not r.algbw_gb_per_s or abs(alg / r.algbw_gb_per_s - 1.0) > 0.10:
                raise CalibrationError(
                    f"{where}, line {r.line}: {size_text(r.size_bytes)} in {r.time_us:,g} µs is {alg:,.1f} GB/s, but "
                    f"the row's algbw column says {r.algbw_gb_per_s:,.2f} GB/s, so its columns are not where the "
                    "header puts them; keep the column header line ('size count type ... time algbw busbw') "
                    "above the rows, as nccl-tests prints it")


def read_nccl_tests(path: str | Path, collective: str | None = None, ranks: int | None = None) -> NcclTest:
    """:func:`parse_nccl_tests` of a file; a missing file is a :class:`CalibrationError`. UTF-8, or UTF-16
    with its byte-order mark (what PowerShell's ``>`` writes)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{p}: cannot read the nccl-tests output ({exc.strerror or exc})") from exc
    text = decode_text(data, p.name)
    if collective is None:
        named = _COLL_NAME.findall(p.name + "_perf") or [c for c in COLLECTIVES if c in p.name]
        names_in_text = [n for n in _COLL_NAME.findall(text) if n in COLLECTIVES]
        if not names_in_text and named and named[0] in COLLECTIVES:
            collective = named[0]
    return parse_nccl_tests(text, collective=collective, ranks=ranks, source=p.name)


#: What a message says to do with a file that is not UTF-8 text.
SAVE_AS_UTF8 = "save the file as UTF-8 (PowerShell: Out-File -Encoding utf8)"


def decode_text(data: bytes, where: str = "") -> str:
    """A text file's bytes as text: UTF-16 when it starts with a byte-order mark (what Windows PowerShell's
    ``>`` writes), else UTF-8 without its byte-order mark if it has one (bad bytes replaced, so that a stray byte
    in a log line costs that line only).

    UTF-16 without a byte-order mark (a NUL byte beside each ASCII character) is refused with a
    :class:`CalibrationError` naming ``where`` (the file) and the fix: read as UTF-8 it is no text at all.
    """
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    head = data[:4096]
    if head.count(0) > len(head) // 4:
        raise CalibrationError(f"{where or 'the file'}: the file is UTF-16 text without a byte-order mark (a "
                               f"zero byte beside every character), not UTF-8; {SAVE_AS_UTF8}")
    return data.decode("utf-8-sig", errors="replace")  # a UTF-8 byte-order mark (PowerShell 5.1's utf8) dropped


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

    def __post_init__(self) -> None:
        if self.level == "fabric" and self.ranks_per_host is None:
            raise CalibrationError(
                f"{self.source or 'the fabric link'}: a fabric fit needs the GPUs per node of the run (the nominal "
                "fabric rate is GPUs per node x NIC rate); fit it with the rank lines in the output, or with "
                "--gpus-per-node")

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "links") -> LinkFit:
        """Build and check a link from a profile's mapping; ``where`` (``my.yaml: links.fabric``) starts each
        message. The bounds are far beyond any real link, so only a typing slip trips them: bus bandwidth at most
        :data:`MAX_BUS_BANDWIDTH_GB_PER_S`, ``alpha_s`` at most :data:`MAX_ALPHA_S`, ``latency_s`` at most 1 s."""
        names = {f for f in cls.__dataclass_fields__}
        bad = sorted(set(data) - names)
        if bad:
            raise CalibrationError(f"{where}.{bad[0]}: unknown key; valid: {', '.join(sorted(names))}")
        for key in ("level", "collective", "ranks", "bus_bandwidth_gb_per_s"):
            if data.get(key) is None:   # absent, or written with no value
                raise CalibrationError(f"{where}.{key}: missing")
        for key, valid in (("level", LEVELS), ("collective", COLLECTIVES)):
            if not isinstance(data[key], str) or data[key] not in valid:
                raise CalibrationError(f"{where}.{key}: {shown(data[key])} is not {one_of(valid)}")

        def number(key: str, low: float, high: float, what: str, strict: bool = False) -> None:
            v = data.get(key)
            if v is None:
                return
            if (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < low
                    or (strict and v <= low) or v > high):
                raise CalibrationError(f"{where}.{key}: must be {what}, got {shown(v)}")

        number("bus_bandwidth_gb_per_s", 0, MAX_BUS_BANDWIDTH_GB_PER_S,
               f"a positive number of GB/s, at most {MAX_BUS_BANDWIDTH_GB_PER_S:,.0f}", strict=True)
        bw = data["bus_bandwidth_gb_per_s"]
        if bw is None:
            raise CalibrationError(f"{where}.bus_bandwidth_gb_per_s: missing")

        def whole(key: str, low: int) -> None:
            v = data.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < low):
                raise CalibrationError(f"{where}.{key}: must be a whole number of at least {low}, got {shown(v)}")

        whole("ranks", 2)
        whole("ranks_per_host", 1)
        whole("sizes", 0)
        whole("large_sizes_from_bytes", 1)
        for key in ("peak_busbw_gb_per_s", "rms_error", "max_abs_error", "large_sizes_max_abs_error"):
            number(key, 0, 1e6, "a non-negative number")
        for key in ("source", "device", "method"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise CalibrationError(f"{where}.{key}: must be text, got {shown(data[key])}")
        number("alpha_s", 0, MAX_ALPHA_S, f"a non-negative number of seconds, at most {MAX_ALPHA_S:g}")
        number("latency_s", 0, 1.0, "a non-negative number of seconds, at most 1")
        rph = data.get("ranks_per_host")
        if data["level"] == "fabric":
            if rph is None:
                raise CalibrationError(f"{where}.ranks_per_host: missing; a fabric link needs the GPUs per node it was "
                                       "measured with (the nominal fabric rate is GPUs per node x NIC rate): add it, "
                                       "or fit the profile again (gpucluster calibrate --gpus-per-node)")
            if data["ranks"] % rph or data["ranks"] // rph < 2:
                raise CalibrationError(f"{where}.ranks_per_host: {data['ranks']} ranks at {rph} per host is not 2 or "
                                       "more whole nodes, as a fabric measurement spans")
        defaults = {"ranks_per_host": None, "latency_s": None, "alpha_s": None, "peak_busbw_gb_per_s": float(bw),
                    "sizes": 0, "rms_error": None, "max_abs_error": None, "large_sizes_from_bytes": None,
                    "large_sizes_max_abs_error": None}
        return cls(**{**defaults, **data})



def link_level(test: NcclTest, level: str | None = None) -> str:
    """The link level a run measured: ``level`` as given, checked against the rank lines, else from them.

    Without rank lines (a table copied without the header block) the level is unknown and must be given: a
    single-node run taken for the fabric would set the network efficiency from an NVLink measurement. A fabric
    level for a run whose rank lines put every rank on one host is refused. (An NVLink level for ranks on
    several hosts is allowed: a multi-node NVLink domain such as GB200 NVL72; :func:`~.run.calibrate` notes it.)
    """
    where = test.source or "the nccl-tests output"
    if level is not None and level not in LEVELS:
        raise CalibrationError(f"link level {excerpt(level)} is not {one_of(LEVELS)}")
    if level is None:
        if test.level is None:
            raise CalibrationError(
                f"{where}: the output has no rank lines ('Rank N ... on HOST'), so it does not say whether the run "
                "stayed inside one node; give the level: --nccl nvlink=FILE for a run inside one node, or --nccl "
                "fabric=FILE for one across nodes (with --gpus-per-node)")
        return test.level
    if level == "fabric" and len(test.hosts) == 1:
        raise CalibrationError(
            f"{where}: all {test.ranks} ranks ran on one host ({test.hosts[0]}), so this run measured the links "
            "inside a node, not the fabric; give it as nvlink=FILE, and measure the fabric with a run across 4 or "
            "more nodes")
    return level


def fit_alpha_beta(test: NcclTest, level: str | None = None, gpus_per_node: int | None = None) -> LinkFit:
    """Fit ``t = t_lat + F S / B`` to a run (module doc).

    ``level``: :func:`link_level`. ``gpus_per_node``: the ranks per host of a fabric run whose output has no
    rank lines; it must agree with the rank lines when they are there. A fabric fit always records its ranks
    per host, since the engines' nominal fabric rate is ``ranks_per_host x NIC rate`` (``training/core.py``):
    without it a poor fabric would read as a fast one. Refuses a run that looks cut short (its largest size
    below the ``maxBytes`` of its header), one whose largest message is still latency-bound, and a bus
    bandwidth above every busbw printed.
    """
    where = test.source or "the nccl-tests output"
    lvl = link_level(test, level)
    f_bus, steps = COLLECTIVES[test.collective]
    n = test.ranks
    rph = _ranks_per_host(test, lvl, gpus_per_node)
    sizes = np.array([r.size_bytes for r in test.rows], dtype=float)
    largest = int(sizes.max())
    if test.last_size_bytes and largest < test.last_size_bytes - max(0.01 * test.last_size_bytes, 1 << 12):
        raise CalibrationError(
            f"{where}: the output ends at {size_text(largest)}, but the run went to {size_text(test.last_size_bytes)} "
            "(its 'maxBytes' line)" + ("" if test.footer else " and the 'Avg bus bandwidth' line that ends a run is "
                                       "missing") + ": the file looks cut short; give the whole output")
    t = np.array([r.time_us for r in test.rows], dtype=float) * 1e-6
    x = f_bus(n) * sizes  # bus bytes
    peak = max(r.busbw_gb_per_s for r in test.rows)
    device = test.devices[0] if test.devices else None
    if len(sizes) == 1 or np.ptp(sizes) == 0:
        bw = float(np.max(x / t)) / GB
        _check_bandwidth(bw, peak, where)
        return LinkFit(lvl, test.collective, n, rph, bw, None, None, peak, int(len(sizes)), None,
                       None, test.source, device, "one message size: bandwidth only (no latency)")
    t_lat, c, big, how, measured = _fit_line(sizes, t, x)
    if x[-1] * c < 0.1 * t[-1]:
        raise CalibrationError(
            f"{where}: even the largest message ({size_text(largest)}) is latency-bound, so the bandwidth cannot be "
            "measured; run up to large messages (-e 1G or more)")
    # the bandwidth no higher than the large messages measured: B <= max(busbw) over them
    c = max(c, 1.0 / float(np.max(x[big] / t[big])))
    _check_bandwidth(float(1.0 / c / GB), peak, where)
    pred = t_lat + x * c
    err = pred / t - 1.0
    return LinkFit(level=lvl, collective=test.collective, ranks=n, ranks_per_host=rph,
                   bus_bandwidth_gb_per_s=float(1.0 / c / GB), latency_s=float(t_lat),
                   alpha_s=float(t_lat / steps(n)) if measured else None, peak_busbw_gb_per_s=float(peak),
                   sizes=int(len(sizes)), rms_error=float(np.sqrt(np.mean(err ** 2))),
                   max_abs_error=float(np.max(np.abs(err))), source=test.source, device=device, method=how,
                   large_sizes_from_bytes=int(sizes[big].min()),
                   large_sizes_max_abs_error=float(np.max(np.abs(err[big]))))


def _ranks_per_host(test: NcclTest, level: str, gpus_per_node: int | None) -> int | None:
    """The ranks per host of a run: from the rank lines, else ``gpus_per_node``; required for a fabric run."""
    where = test.source or "the nccl-tests output"
    if gpus_per_node is not None and (not isinstance(gpus_per_node, int) or isinstance(gpus_per_node, bool)
                                      or gpus_per_node < 1):
        raise CalibrationError(f"--gpus-per-node: must be a whole number of at least 1, got {excerpt(gpus_per_node)}")
    if test.hosts:
        rph = test.ranks_per_host
        if rph is None and level == "fabric":
            raise CalibrationError(f"{where}: the rank lines spread {test.ranks} ranks unevenly over "
                                   f"{len(test.hosts)} hosts; measure the fabric with the same number of GPUs on "
                                   "each node")
        if gpus_per_node is not None and level == "fabric" and rph != gpus_per_node:
            raise CalibrationError(f"{where}: {plural(gpus_per_node, 'GPU')} per node given, but the rank lines put "
                                   f"{plural(rph, 'rank')} on each of {len(test.hosts)} hosts; leave --gpus-per-node "
                                   "out for output with rank lines")
        return rph
    if level != "fabric":
        return None
    if gpus_per_node is None:
        raise CalibrationError(
            f"{where}: the output has no rank lines ('Rank N ... on HOST'), so the GPUs per node of this fabric run "
            "are unknown, and the network efficiency is the bus bandwidth over (GPUs per node x NIC rate); give them "
            "with --gpus-per-node (8 on an HGX H100 node)")
    if test.ranks % gpus_per_node or test.ranks // gpus_per_node < 2:
        nodes = test.ranks / gpus_per_node
        raise CalibrationError(
            f"{where}: {plural(test.ranks, 'rank')} at {plural(gpus_per_node, 'GPU')} per node is "
            + (f"{nodes:g} nodes" if test.ranks % gpus_per_node else "one node")
            + "; a fabric run spans 2 or more whole nodes (give the run inside one node as nvlink=FILE, or check "
            "--gpus-per-node and --ranks)")
    return gpus_per_node


def _check_bandwidth(bw_gb_per_s: float, peak_printed: float, where: str) -> None:
    """Refuse a fitted bus bandwidth more than 10% above every busbw the run printed: the columns were misread
    (the cap in :func:`fit_alpha_beta` keeps a correct read at or below the highest busbw measured, give or take
    the rounding of the printed figures)."""
    if bw_gb_per_s > 1.1 * peak_printed:
        raise CalibrationError(
            f"{where}: the fit gives {bw_gb_per_s:,.1f} GB/s of bus bandwidth, above every busbw the run printed "
            f"(at most {peak_printed:,.2f} GB/s), so the rows were not read as printed; check that the column "
            "header line ('size count type ... time algbw busbw') is above the rows and that --ranks is right")


def _fit_line(sizes: np.ndarray, t: np.ndarray, x: np.ndarray) -> tuple[float, float, np.ndarray, str, bool]:
    """``(t_lat [s], 1/B [s/B], large sizes (a mask), method, latency measured)``.

    Latency: the median of the three smallest sizes when they form a plateau (the run covers the
    latency end), else one weighted least-squares line over every size (clamped at 0). That
    intercept counts as measured only when the smallest size is at most :data:`LATENCY_MAX_SIZE_BYTES`;
    from larger sizes it is an extrapolation (the A3 High all-gather from 8 MiB: 590 us, 39 us per ring step,
    5x the engine's default), which fits ``B`` but sets no ``alpha``. Bandwidth: the relative least-squares
    fit over the large sizes (at least 1/16 of the largest) with that latency fixed, so that ``B``
    describes the sizes gradient buckets reach rather than the middle, where NCCL's protocol changes
    bend the curve (a line over every size overstated the A3 High all-gather's bandwidth: 54.6 GB/s
    against 49.3-50.2 measured). The caller caps ``B`` at the highest bus bandwidth measured at those sizes.
    """
    idx = np.arange(len(t))
    flat = (len(t) >= 4 and t[:3].max() <= 1.2 * t[:3].min() and sizes[2] >= 4 * sizes[0])
    measured = True
    if flat:
        t_lat = float(np.median(t[:3]))
        big = (sizes >= sizes[-1] / 16) & (idx >= 3)
        how = "latency from the small-message plateau"
    else:
        a = np.column_stack([1.0 / t, x / t])
        (t_lat, _), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        t_lat = max(float(t_lat), 0.0)
        big = sizes >= sizes[-1] / 16
        measured = bool(sizes[0] <= LATENCY_MAX_SIZE_BYTES)
        how = ("latency from one weighted least-squares line over every size (no small-message plateau)" if measured
               else f"latency extrapolated (the smallest size is {size_text(int(sizes[0]))}): used for the bandwidth "
                    "fit only, alpha not set")
    if big.sum() < 2:
        big = idx >= len(t) - 2
    u = x[big] / t[big]
    c = float(np.sum(u * (1.0 - t_lat / t[big])) / np.sum(u * u))  # <= 0: latency-bound (the caller refuses)
    return (t_lat, c, big, how + ", bandwidth from sizes >= 1/16 of the largest (at most their highest bus bandwidth)",
            measured)


def size_text(size_bytes: int) -> str:
    """A message size in words: powers of two as nccl-tests steps them (``512 MiB``), else in MB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift and size_bytes % (1 << shift) == 0:
            return f"{size_bytes >> shift:,} {unit}"
    return f"{size_bytes:,} B" if size_bytes < 10**6 else f"{size_bytes / 1e6:,.3g} MB"


__all__ = ["COLLECTIVES", "LEVELS", "CalibrationError", "LinkFit", "NcclRow", "NcclTest", "decode_text",
           "fit_alpha_beta", "link_level", "parse_nccl_tests", "read_nccl_tests", "size_text"]
