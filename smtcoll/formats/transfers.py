"""The timed transfer log (docs/formats.md): what any event-driven tool can write, one row per link transfer.

JSON: `{"format": "smtcoll.transfers", "version": 1, "collective": NAME, "ranks": N, "topology": NAME,
"unit": "us", "chunk_bytes": B, "claimed_time": T, "transfers": [{"chunk", "src", "dst", "start", "end"}]}`
(a transfer may also be `[chunk, src, dst, start, end]`). CSV: `# key: value` lines with the same keys,
then a header row `chunk,src,dst,start,end` and one row per transfer.

`chunk` is the collective's chunk id (for a combining collective, the sender's value at that chunk's
address moves). Cost model: a transfer occupies its link for [start, end); a link carries at most as
many transfers at once as its bandwidth (chunks per round: 1 unless the topology says more), and a
switch group as many as its bandwidth. With `chunk_bytes`, a time unit (ns, us, ms, s) and link speeds
(`gbps`), a transfer moves chunk_bytes at chunk_bytes / (end - start): at any instant the rates of the
transfers on a link add up to at most its speed, and those through a switch group (a shared NIC or
switch) to at most the group's (`group_gbps`: its bandwidth times its fastest link's per-unit speed).
The link's latency is not charged: [start, end) is the time the transfer occupies the link.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from smtcoll import library, specs
from smtcoll.errors import ModelError, SmtcollError
from smtcoll.formats.numbers import ascii_int, finite_float
from smtcoll.formats.source import Source, json_claim
from smtcoll.limits import max_transfers, transfers_exceeded
from smtcoll.model import Link, Topology
from smtcoll.model.timed import Limit, Quantity, TimedSchedule, Transfer, Use, group_gbps
from smtcoll.text import count

FORMAT = "smtcoll.transfers"
VERSION = 1
KEYS = {"format", "version", "name", "collective", "ranks", "root", "chunks", "topology", "unit", "chunk_bytes",
        "claimed_time", "transfers"}
US_PER = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
UNITS = [*sorted(US_PER), "rounds", "cycles"]
COLUMNS = ("chunk", "src", "dst", "start", "end")
T = TypeVar("T")
_META = re.compile(r"^#\s*([A-Za-z_]+)\s*:\s*(.*)$")


class LogError(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def is_transfer_log_json(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


def is_transfer_log_csv(text: str) -> bool:
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return [c.strip().lower() for c in line.split(",")][:5] == list(COLUMNS)
    return False


def _number(v: Any, where: str) -> float:
    x = finite_float(v)
    if x is None:
        raise LogError(where, f"expected a finite number, got {str(v)[:60]!r}")
    return x


def _speed_uses(topology: Topology, link: Link, start: float, end: float, speed: float,
                limits: dict[str, Limit]) -> list[Use]:
    """The transfer's rate (GB/s) on its link and on the switch groups it crosses, where they have a speed."""
    duration = end - start
    if duration < 0:
        return []  # reported as `bad-time`
    rate = speed / duration if duration > 0 else math.inf
    out = []
    where = [(f"speed of link {link.src}->{link.dst}", link.gbps)]
    for g in topology.switches_of(link.src, link.dst):
        grp = topology.switches[g]
        where.append((f"speed of switch group {grp.name or g}", group_gbps(topology, grp)))
    for res, gbps in where:
        if gbps:
            limits.setdefault(res, Limit(res, gbps, "concurrent", 1, f"{gbps:g} GB/s; a transfer moves chunk_bytes "
                                         "in end - start", "GB/s"))
            out.append(Use(res, start, end, rate))
    return out


def _integer(v: Any, where: str) -> int:
    x = ascii_int(v)
    if x is None:
        raise LogError(where, f"expected an integer (ASCII digits), got {str(v)[:60]!r}")
    return x


def _beside(log: str, key: str, ref: str, load: Callable[[str], T], builtin: Callable[[str], T]) -> T:
    """The topology or collective a log names: a built-in name, or the name of a .toml file in the log's own
    folder. A log never makes the checker read a file elsewhere (docs/formats.md): a path, a name starting
    with `.`, or a file that is not a .toml is refused, whatever the current folder holds."""
    try:
        if ref.endswith(".toml"):
            if Path(ref).name != ref or ref.startswith(".") or "\\" in ref:
                raise LogError(key, f"{ref[:100]!r}: expected a built-in name or the name of a .toml file in "
                                    "the log's folder (or give --topology/--collective)")
            return load(str(Path(log).parent / ref))
        return builtin(ref)  # never a file: only a name ending in .toml is read, and only beside the log
    except SmtcollError as e:
        raise LogError(key, str(e)) from None


def _rows(reader: Any, first: int) -> Any:
    """The CSV rows; a malformed row (a field over csv's 128 KiB limit, a NUL byte) is bad input at its line."""
    import csv
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise LogError(f"line {first + reader.line_num}", f"not a CSV row: {e}") from None


def parse_csv(text: str) -> dict[str, Any]:
    """The CSV form as the JSON form's dictionary, with each row's line number as its place."""
    meta: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    lines = text.splitlines()
    body_start = 0
    for n, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        if not s.startswith("#"):
            body_start = n
            break
        m = _META.match(s)
        if m:  # `# key: value`; any other comment line is free text
            key, value = m.groups()
            if key not in KEYS - {"format", "transfers"}:
                raise LogError(f"line {n + 1}", f"unknown key {key!r} (known: collective, ranks, root, chunks, "
                                                "topology, unit, chunk_bytes, claimed_time, name)")
            meta[key] = value.strip()
    rows: list[tuple[dict[str, str], dict[str, int]]] = []
    import csv  # here: only a CSV log pays for it

    reader = csv.reader(io.StringIO("\n".join(lines[body_start:])))
    header = None
    for k, row in enumerate(_rows(reader, body_start)):
        lineno = body_start + k + 1
        if not row or all(not c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = [c.strip().lower() for c in row]
            if header[:5] != list(COLUMNS):
                raise LogError(f"line {lineno}", f"expected the header {','.join(COLUMNS)}")
            continue
        if len(row) < 5:
            raise LogError(f"line {lineno}", f"expected {len(COLUMNS)} columns: {','.join(COLUMNS)}")
        if len(rows) >= max_transfers():  # before the rest of a huge file is split into rows
            raise LogError(f"line {lineno}", transfers_exceeded(f"more than {max_transfers()}"))
        rows.append(({c: row[i].strip() for i, c in enumerate(COLUMNS)}, {"line": lineno}))
    meta["transfers"] = rows
    return meta


def read_transfer_log(data: dict, topology: Topology | None, name: str = "") -> TimedSchedule:
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise LogError(unknown[0], "unknown key")
    if data.get("version", VERSION) not in (VERSION, str(VERSION)):
        raise LogError("version", f"= {data.get('version')!r}: this smtcoll reads version {VERSION}")
    if topology is None:
        if not data.get("topology"):
            raise LogError("topology", "the log names no topology: give one with --topology or a `topology` key")
        topology = _beside(name, "topology", str(data["topology"]),
                           lambda f: specs.load_topology(f), lambda n: library.topology(n))
    ranks = _integer(data.get("ranks", topology.ranks), "ranks")
    if ranks != topology.ranks:
        raise LogError("ranks", f"= {ranks}, but topology {topology.name!r} has {topology.ranks} ranks")
    coll_name = data.get("collective")
    if not isinstance(coll_name, str) or not coll_name:
        raise LogError("collective", "expected a collective name (allgather, alltoall, allreduce, ...) or a .toml")
    root = _integer(data["root"], "root") if data.get("root") not in (None, "") else None
    chunks = _integer(data.get("chunks", 1), "chunks")
    coll = _beside(name, "collective", coll_name, lambda f: specs.load_collective(f, ranks, root, chunks),
                   lambda n: library.collective(n, ranks, root, chunks))
    unit = str(data.get("unit", "us"))
    if unit not in UNITS:
        raise LogError("unit", f"= {unit!r}: expected one of {', '.join(UNITS)}")
    chunk_bytes = _number(data["chunk_bytes"], "chunk_bytes") if data.get("chunk_bytes") not in (None, "") else None
    rows = data.get("transfers")
    if not isinstance(rows, list):
        raise LogError("transfers", "expected a list of transfers")
    if len(rows) > max_transfers():
        raise LogError("transfers", transfers_exceeded(len(rows)))
    transfers: list[Transfer] = []
    limits: dict[str, Limit] = {}
    # GB/s that moving one chunk in one time unit takes (no physical time unit or no chunk size: not checked)
    speed = chunk_bytes / (US_PER[unit] * 1e3) if chunk_bytes and unit in US_PER else None
    for i, item in enumerate(rows):
        row, place = item if isinstance(item, tuple) else (item, {"transfer": i})
        w = f"line {place['line']}" if "line" in place else f"transfers[{i}]"
        if isinstance(row, list):
            if len(row) != 5:
                raise LogError(w, "expected [chunk, src, dst, start, end]")
            row = dict(zip(COLUMNS, row))
        if not isinstance(row, dict):
            raise LogError(w, "expected an object with chunk, src, dst, start, end")
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise LogError(w, f"missing {', '.join(missing)}")
        c, s, d = (_integer(row[k], f"{w}: {k}") for k in ("chunk", "src", "dst"))
        start, end = (_number(row[k], f"{w}: {k}") for k in ("start", "end"))
        if not 0 <= c < coll.chunks:
            raise LogError(f"{w}: chunk", f"= {c}: collective {coll.name!r} has chunks 0..{coll.chunks - 1}")
        uses = []
        link = topology.link(s, d)
        if link is not None and speed is not None:
            uses += _speed_uses(topology, link, start, end, speed, limits)
        if link is not None:
            res = f"link {s}->{d}"
            limits.setdefault(res, Limit(res, link.bandwidth, "concurrent", 1,
                                         f"{count(link.bandwidth, 'transfer')} at a time"))
            uses.append(Use(res, start, end))
            for g in topology.switches_of(s, d):
                grp = topology.switches[g]
                gres = f"switch group {grp.name or g}"
                limits.setdefault(gres, Limit(gres, grp.bandwidth, "concurrent", 1,
                                              f"{count(grp.bandwidth, 'transfer')} at a time"))
                uses.append(Use(gres, start, end))
        transfers.append(Transfer(coll.address[c], s, d, start, end, place, 1.0, (), uses))
    claimed = None
    if data.get("claimed_time") not in (None, ""):
        claimed = Quantity(_number(data["claimed_time"], "claimed_time"), unit, "the log's claimed_time")
    try:
        return TimedSchedule(FORMAT, "transfer log: one transfer per link at a time", coll, topology, transfers, unit,
                             US_PER.get(unit), list(limits.values()), claimed, chunk_bytes,
                             name=str(data.get("name", name)))
    except ModelError as e:
        raise LogError(e.where, e.detail) from None


# The `Format` protocol (smtcoll.formats.registry): the JSON log; the CSV log is `transfers_csv`.
NAME = "transfers-json"
SUFFIXES: tuple[str, ...] = ()
ERRORS: tuple[type[Exception], ...] = (LogError,)


def detect(source: Source) -> bool:
    head = source.head
    return head.startswith("{") and ('"smtcoll.transfers"' in head or is_transfer_log_json(source.json_or_none()))


_MARKER = re.compile(r'"format"\s*:\s*"smtcoll\.transfers"')


def claims(source: Source) -> bool:
    """The transfer log as JSON: `"format": "smtcoll.transfers"`."""
    return json_claim(source, lambda d: d.get("format") == "smtcoll.transfers", _MARKER)


def read(source: Source, topology: Topology | None) -> TimedSchedule:
    data = source.json()
    if not isinstance(data, dict):
        raise LogError("", "expected a JSON object")
    return attrs.evolve(read_transfer_log(data, topology, source.name), format=NAME)
