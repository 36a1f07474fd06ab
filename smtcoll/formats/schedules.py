"""Reading and writing step schedules.

smtcoll's own format (`"format": "smtcoll.schedule"`, `"version": 1`) is lossless: it embeds the
topology and collective in the explicit form of the spec files. SCCL's `*.msccl.json` and TACCL's
`*.sccl.json` algorithm files are read into the same `Schedule` so their algorithms can be checked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs

from smtcoll import specs
from smtcoll.errors import InputError, ModelError
from smtcoll.formats.numbers import ascii_int, loads_json
from smtcoll.formats.source import Source, json_claim
from smtcoll.model import Collective, Link, Schedule, Send, Step, SwitchGroup, Topology

FORMAT = "smtcoll.schedule"
VERSION = 1
MAX_SCHEDULE_BYTES = 64 * 1024 * 1024


class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def schedule_to_dict(schedule: Schedule) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": schedule.name,
        "topology": specs.topology_to_dict(schedule.topology),
        "collective": specs.collective_to_dict(schedule.collective),
        "steps": [{"rounds": s.rounds, "sends": [[x.chunk, x.src, x.dst] for x in s.sends]} for s in schedule.steps],
    }


def dumps_schedule(schedule: Schedule) -> str:
    """Indented JSON with every list of numbers (a send, a pair of the pre- and postconditions) and
    every list of such lists (a step's sends) on one line: 4 to 5 times smaller than `indent=1` at
    1024 ranks (a million sends), so what `synth -o` writes stays within the readers' size limits."""
    return _compact(schedule_to_dict(schedule), "") + "\n"


def _flat(x: Any) -> bool:
    return not isinstance(x, (dict, list)) or (isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x))


def _compact(x: Any, pad: str) -> str:
    # json.dumps has no per-list layout option: this writes its indent=1 layout, lists of flat items inline
    if isinstance(x, list) and all(_flat(y) for y in x):
        return json.dumps(x, separators=(", ", ": "))
    inner = pad + " "
    if isinstance(x, dict):
        if not x:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {_compact(v, inner)}" for k, v in x.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(x, list):
        return "[\n" + ",\n".join(inner + _compact(v, inner) for v in x) + "\n" + pad + "]"
    return json.dumps(x)


def save_schedule(schedule: Schedule, path: Path | str) -> None:
    from smtcoll.files import write_text

    write_text(path, dumps_schedule(schedule))


def load_schedule(path: Path | str) -> Schedule:
    """Read any supported schedule file; errors name the file and the field."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_SCHEDULE_BYTES:
            raise InputError(str(path), f"file is {size} bytes; schedule files are limited to {MAX_SCHEDULE_BYTES} "
                                        "here (smtcoll verify reads larger ones with --max-bytes N)")
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise InputError(str(path), f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(str(path), f"not UTF-8 text (byte {e.start})") from None
    return parse_schedule(text, str(path))


def parse_schedule(text: str, name: str = "<string>") -> Schedule:
    data = loads_json(text, name)
    try:
        if not isinstance(data, dict):
            raise _Bad("", "expected a JSON object at the top level")
        if data.get("format") == FORMAT:
            return _ours(data)
        if data.get("msccl_type") == "algorithm" or data.get("sccl_type") == "algorithm" or (
                "steps" in data and "collective" in data):
            return _sccl(data)
        raise _Bad("", "not a schedule: expected smtcoll's format (\"format\": \"smtcoll.schedule\"), "
                       "an SCCL *.msccl.json or a TACCL *.sccl.json algorithm")
    except _Bad as e:
        raise InputError(name, f"{e.where}: {e.message}" if e.where else e.message) from None
    except ModelError as e:
        raise InputError(name, str(e)) from None


def _steps(data: dict, key: str = "steps") -> list[Step]:
    steps = data.get(key)
    if not isinstance(steps, list):
        raise _Bad(key, "expected an array of steps")
    out = []
    for i, s in enumerate(steps):
        if not isinstance(s, dict):
            raise _Bad(f"{key}[{i}]", "expected an object with rounds and sends")
        rounds = s.get("rounds")
        if not isinstance(rounds, int) or isinstance(rounds, bool):
            raise _Bad(f"{key}[{i}].rounds", f"expected an integer, got {rounds!r}")
        sends = s.get("sends")
        if not isinstance(sends, list):
            raise _Bad(f"{key}[{i}].sends", "expected an array of [chunk, src, dst] sends")
        parsed = []
        for j, x in enumerate(sends):
            # SCCL: [addr, src, dst]; TACCL adds [time, link] (and an operator) after them.
            if (not isinstance(x, list) or len(x) not in (3, 4, 5, 6)
                    or not all(isinstance(v, int) and not isinstance(v, bool) for v in x[:3])):
                raise _Bad(f"{key}[{i}].sends[{j}]", f"expected [chunk, src, dst], got {json.dumps(x)[:80]}")
            parsed.append(Send(x[0], x[1], x[2]))
        out.append(Step(rounds, parsed))
    return out


def _ours(data: dict) -> Schedule:
    if data.get("version") != VERSION:
        raise _Bad("version", f"= {data.get('version')!r}: this smtcoll reads version {VERSION}")
    unknown = sorted(set(data) - {"format", "version", "name", "topology", "collective", "steps"})
    if unknown:
        raise _Bad(unknown[0], "unknown key")
    try:
        topo = specs.topology_from_dict(data.get("topology"))
    except ModelError as e:
        raise _Bad(f"topology.{e.where}" if e.where else "topology", e.detail) from None
    try:
        coll = specs.collective_from_dict(data.get("collective"))
    except ModelError as e:
        raise _Bad(f"collective.{e.where}" if e.where else "collective", e.detail) from None
    name = data.get("name", "")
    if not isinstance(name, str):
        raise _Bad("name", "expected a string")
    return Schedule(topo, coll, _steps(data), name)


Bad = _Bad  # raised by the readers with the place in the file


def sccl_collective(data: dict) -> Collective:
    """The collective of an SCCL/TACCL algorithm file on `ranks` = the embedded topology's ranks (TACCL:
    `copies` x `ngpus_per_node`; else `collective.nodes`), with the instance's chunk multiplier."""
    t = data.get("topology")
    if not isinstance(t, dict):
        t = {}
    c = data.get("collective")
    ranks = c.get("nodes") if isinstance(c, dict) else None
    if isinstance(t.get("copies"), int) and isinstance(t.get("ngpus_per_node"), int):
        ranks = t["copies"] * t["ngpus_per_node"]
    if not isinstance(ranks, int) or isinstance(ranks, bool) or not 1 <= ranks <= 4096:
        raise _Bad("collective.nodes", f"expected the number of ranks, got {ranks!r}")
    if isinstance(c, dict) and "chunks" not in c and "input_map" in data and "output_map" in data:
        return _collective_from_maps(c, data, ranks)
    coll = _sccl_collective(c, data, ranks)
    if "(" in coll.name:  # TACCL names the collective like `Alltoall(n=8)`
        coll = attrs.evolve(coll, name=coll.name.split("(")[0].lower())
    return _chunked(coll, data)


def _sccl(data: dict) -> Schedule:
    """SCCL (msccl-tools) and TACCL algorithm files: `links[dst][src]`, chunks with pre/post/addr,
    and an instance whose `chunks` multiplies every base chunk (address a becomes a*C + j)."""
    topo = _sccl_topology(data.get("topology"))
    c = data.get("collective")
    if isinstance(c, dict) and "chunks" not in c and "input_map" in data and "output_map" in data:
        coll = _collective_from_maps(c, data, topo.ranks)  # TACCL files without a chunk list
        return Schedule(topo, coll, _steps(data), str(data.get("name", "")))
    coll = _chunked(_sccl_collective(c, data, topo.ranks), data)
    name = data.get("name", "")
    return Schedule(topo, coll, _steps(data), name if isinstance(name, str) else "")


def _chunked(coll: Collective, data: dict) -> Collective:
    """The collective of the file's `instance.chunks` = C. SCCL (msccl-tools) lists the base collective's
    chunks and its sends name the split addresses (a*C + j): split here. TACCL builds its collectives with
    the chunk factor already applied (`Allgather(n, chunk_factor, ...)`) and lists the split chunks: do not
    split again. The file's own `input_map`/`output_map` name the buffer slots of the split collective, so
    they decide: as many slots as listed addresses means already split, C times as many means split. Without
    usable maps, a TACCL file (topology with `copies` and `node_links`) is taken as split, any other not."""
    instance = data.get("instance") or {}
    factor = instance.get("chunks", 1) if isinstance(instance, dict) else 1
    if not isinstance(factor, int) or isinstance(factor, bool) or not 1 <= factor <= 4096:
        raise _Bad("instance.chunks", f"expected an integer between 1 and 4096, got {factor!r}")
    if factor == 1:
        return coll
    listed = 1 + max(coll.address, default=-1)
    slots = _map_slots(data)
    topo = data.get("topology")
    already = slots == listed if slots in (listed, listed * factor) else \
        isinstance(topo, dict) and "node_links" in topo and "copies" in topo
    return attrs.evolve(coll, chunk_factor=factor) if already else coll.with_chunks(factor)


def _map_slots(data: dict) -> int | None:
    """Buffer slots named by `input_map` and `output_map` (1 + the largest index), None without both."""
    top = -1
    for key in ("input_map", "output_map"):
        m = data.get(key)
        if not isinstance(m, dict):
            return None
        for slots in m.values():
            if not isinstance(slots, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in slots):
                return None
            top = max([top, *slots])
    return top + 1 if top >= 0 else None


def _sccl_topology(t: Any) -> Topology:
    if not isinstance(t, dict):
        raise _Bad("topology", "missing or not an object")
    links = t.get("links")
    if not isinstance(links, list) or not links or len(links) > 4096:
        raise _Bad("topology.links", "expected a square matrix links[dst][src] of bandwidths")
    n = len(links)
    out = []
    for dst, row in enumerate(links):
        if not isinstance(row, list) or len(row) != n:
            raise _Bad(f"topology.links[{dst}]", f"expected {n} bandwidths (the matrix must be square)")
        for src, bw in enumerate(row):
            if not isinstance(bw, int) or isinstance(bw, bool) or bw < 0:
                raise _Bad(f"topology.links[{dst}][{src}]", f"expected an integer >= 0, got {bw!r}")
            if bw and src != dst:
                out.append(Link(src, dst, bw))
    out.sort(key=lambda l: (l.src, l.dst))
    groups = []
    for i, s in enumerate(t.get("switches") or []):
        if isinstance(s, dict):
            s = [s.get("srcs"), s.get("dsts"), s.get("bandwidth", s.get("bw")), s.get("name", "")]
        if not isinstance(s, list) or len(s) < 3 or not isinstance(s[0], list) or not isinstance(s[1], list):
            raise _Bad(f"topology.switches[{i}]", "expected [srcs, dsts, bandwidth, name]")
        groups.append(SwitchGroup(s[0], s[1], s[2], str(s[3]) if len(s) > 3 else ""))
    name = t.get("name", "sccl")
    try:
        return Topology(str(name), n, out, groups)
    except ModelError as e:
        raise _Bad(f"topology.{e.where}", e.detail) from None


def _sccl_collective(c: Any, data: dict, ranks: int) -> Collective:
    if not isinstance(c, dict):
        raise _Bad("collective", "missing or not an object")
    chunks = c.get("chunks")
    if not isinstance(chunks, list) or not chunks:
        raise _Bad("collective.chunks", "expected an array of chunks with pre, post and addr")
    pre: list[tuple[int, int]] = []
    post: list[tuple[int, int]] = []
    addr: list[int] = []
    for i, ch in enumerate(chunks):
        if not isinstance(ch, dict):
            raise _Bad(f"collective.chunks[{i}]", "expected an object with pre, post and addr")
        for key, rel in (("pre", pre), ("post", post)):
            ranks_of = ch.get(key)
            if not isinstance(ranks_of, list) or not all(isinstance(r, int) and not isinstance(r, bool)
                                                         for r in ranks_of):
                raise _Bad(f"collective.chunks[{i}].{key}", "expected an array of ranks")
            rel.extend((r, i) for r in ranks_of)
        a = ch.get("addr", i)
        if not isinstance(a, int) or isinstance(a, bool):
            raise _Bad(f"collective.chunks[{i}].addr", f"expected an integer, got {a!r}")
        addr.append(a)
    name = c.get("runtime_name") or c.get("name") or "custom"
    try:
        return Collective(str(name), ranks, len(chunks), pre, post, addr)
    except ModelError as e:
        raise _Bad(f"collective.{e.where}", e.detail) from None


def _collective_from_maps(c: dict, data: dict, ranks: int) -> Collective:
    """Pre- and postconditions from `input_map`/`output_map` (rank -> chunks); every chunk is its own
    address, as in TACCL's Allgather and Alltoall (its combining collectives are reversals of these)."""
    rel: dict[str, list[tuple[int, int]]] = {}
    for key in ("input_map", "output_map"):
        m = data.get(key)
        if not isinstance(m, dict):
            raise _Bad(key, "expected an object rank -> chunks")
        pairs = []
        for r, chunks in m.items():
            if ascii_int(r) is None or not isinstance(chunks, list) or not all(
                    isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 24 for x in chunks):
                raise _Bad(f"{key}.{r}", "expected a rank and an array of chunk ids")
            pairs += [(int(r.strip()), x) for x in chunks]
        rel[key] = pairs
    count = 1 + max((x for _, x in rel["input_map"] + rel["output_map"]), default=-1)
    if count < 1:
        raise _Bad("input_map", "no chunks")
    name = c.get("runtime_name") or c.get("name") or "custom"
    try:
        return Collective(str(name).split("(")[0].lower(), ranks, count, rel["input_map"], rel["output_map"],
                          list(range(count)))
    except ModelError as e:
        raise _Bad(f"collective.{e.where}", e.detail) from None


# The `Format` protocol (smtcoll.formats.registry): the last row, read when nothing else matches.
NAME = "schedule-json"
SUFFIXES: tuple[str, ...] = (".json",)
ERRORS: tuple[type[Exception], ...] = (_Bad,)


def detect(source: Source) -> bool:
    return source.head.startswith("{")


_MARKER = re.compile(r'"format"\s*:\s*"smtcoll\.schedule"|"(?:msccl|sccl)_type"\s*:\s*"algorithm"')


def claims(source: Source) -> bool:
    """smtcoll's schedule JSON (`"format": "smtcoll.schedule"`) or SCCL/MSCCL's (`"msccl_type"` or
    `"sccl_type": "algorithm"`)."""
    return json_claim(source, lambda d: d.get("format") == "smtcoll.schedule" or d.get("msccl_type") == "algorithm"
                      or d.get("sccl_type") == "algorithm", _MARKER)


def read(source: Source, topology: Topology | None) -> Schedule:
    source.json()  # a JSON error is reported as for every JSON format
    return parse_schedule(source.text(), source.name)
