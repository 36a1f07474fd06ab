"""The time model that ranks candidates: the LOWERED program (the MSCCL XML the sweep writes) run as the
runtime runs it, every thread block on its own, every chunk on its link (docs/sweep.md, "The cost model").

The run is the checker's own execution (`smtcoll.check.topology_cost.program_makespan`): a chunk leaves when
its thread block is ready and every resource it crosses is free (its link, its channel, the switch groups of
the link), holds each for `chunk bytes / (GB/s x protocol efficiency)`, and arrives that plus the hop's
latency later; a thread block waits for the chunks it receives and for its dependencies. NIC and NVLink
traffic thus overlap as on the machine. The call adds NCCL's base latency once.

With `B` the buffer size (the runtime's nBytes), a chunk is `B / nchunksperloop` bytes, so every time in the
run is `a + b * B`. The order in which the run serves its thread blocks is chosen once, the same for every
size (`serving_order`: the queue's choices as at the largest sizes), and replayed at each size: every time
is then built by sums and maxima of such lines in a fixed order, and the program's time `T(B)` is a maximum
of lines: convex and piecewise linear. (A queue that chose by the times at each size, as this one did until
session 10, picks a maximum's term by its value at that size; T is then only piecewise convex, and the
pieces below undercut the run by up to 6%.) `predict` recovers its pieces exactly: it runs the
program with affine numbers (`Affine`: the value at one size and the slope there, compared as the value
just above that size), takes the supporting line at both ends of the range and, where two supporting
lines cross above T, the supporting line at the crossing, until every crossing lies on T (convexity makes
that exact). Everything is a Fraction: the same pieces on every machine.

The parameters come from a TOML knob file (`Model.load`; the defaults: `specs/models/default.toml`, printed
by `smtcoll sweep --print-model`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from smtcoll import collectives
from smtcoll.bounds.throughput import addresses  # noqa: F401  (B / addresses is one chunk: one rule for both)
from smtcoll.errors import InputError, ModelError
from smtcoll.model import Schedule, Topology

PROTOCOL_NAMES = ("LL", "LL128", "Simple")
LINK_KINDS = ("nvlink", "pci", "net")



def default_model_path() -> Path:
    """The shipped defaults: `specs/models/default.toml` (in a wheel: `smtcoll/specs_data/models/`)."""
    from smtcoll.specs import spec_files_dir

    folder = spec_files_dir()
    if folder is None:
        raise InputError("specs/models/default.toml", "the built-in spec files are not installed")
    return folder / "models" / "default.toml"


def _dec(value: Any, where: str, positive: bool = True) -> Fraction:
    """A TOML number as the decimal written (0.47 is 47/100), checked."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelError(where, f"expected a number, got {value!r}")
    f = Fraction(repr(float(value))) if isinstance(value, float) else Fraction(value)
    if f < 0 or (positive and f == 0):
        raise ModelError(where, f"must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return f


@attrs.frozen
class Model:
    """The cost model's knobs (docs/sweep.md). Times in µs, speeds in GB/s (1 GB/s = 1000 bytes/µs)."""

    protocols: tuple[str, ...]
    instances: tuple[int, ...]
    call_latency_us: Mapping[str, Fraction]  # per call, by protocol (NCCL's baseLat, ring)
    hop_latency_us: Mapping[str, Mapping[str, Fraction]]  # per message, by link kind and protocol (hwLat, ring)
    efficiency: Mapping[str, Fraction]  # data bytes per byte sent, by protocol
    channel_gbps: Fraction  # what one channel (one thread block pair) drives at most
    intra_node: str  # the kind of the links inside a node: nvlink or pci
    link_alpha: bool  # add the topology's per-link alpha_us to each hop's protocol latency
    default_alpha_us: Fraction  # links without timing
    default_gbps: Fraction

    @classmethod
    def load(cls, path: Path | None = None) -> Model:
        """The knob file `path` (default: the shipped defaults); a wrong file is an InputError naming it."""
        path = path or default_model_path()
        try:
            data = tomllib.loads(path.read_text())
        except OSError as e:
            raise InputError(str(path), f"cannot read the cost model: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise InputError(str(path), f"not TOML: {e}") from None
        try:
            return cls.from_dict(data.get("model", data))
        except ModelError as e:
            raise InputError(str(path), str(e)) from None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Model:
        known = {"protocols", "instances", "call_latency_us", "hop_latency_us", "efficiency", "channel_gbps",
                 "intra_node", "link_alpha", "default_alpha_us", "default_gbps"}
        extra = sorted(set(d) - known)
        if extra:
            raise ModelError(f"model.{extra[0]}", f"unknown key (known: {', '.join(sorted(known))})")
        missing = sorted(known - set(d))
        if missing:
            raise ModelError(f"model.{missing[0]}", "missing")
        protocols = tuple(d["protocols"])
        if not protocols or any(p not in PROTOCOL_NAMES for p in protocols) or len(set(protocols)) != len(protocols):
            raise ModelError("model.protocols", f"give distinct names from {', '.join(PROTOCOL_NAMES)}")
        instances = tuple(d["instances"])
        if not instances or any(not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= 32 for i in instances):
            raise ModelError("model.instances", "give whole numbers from 1 to 32")

        def per_proto(table: Any, where: str, positive: bool) -> dict[str, Fraction]:
            if not isinstance(table, dict):
                raise ModelError(where, "expected a table of protocol = number")
            for p in protocols:
                if p not in table:
                    raise ModelError(f"{where}.{p}", "missing")
            for p in table:
                if p not in PROTOCOL_NAMES:
                    raise ModelError(f"{where}.{p}", f"unknown protocol (known: {', '.join(PROTOCOL_NAMES)})")
            return {p: _dec(table[p], f"{where}.{p}", positive) for p in PROTOCOL_NAMES if p in table}

        hops = d["hop_latency_us"]
        if not isinstance(hops, dict) or sorted(hops) != sorted(LINK_KINDS):
            raise ModelError("model.hop_latency_us", f"expected the tables {', '.join(LINK_KINDS)}")
        eff = per_proto(d["efficiency"], "model.efficiency", True)
        if any(v > 1 for v in eff.values()):
            raise ModelError("model.efficiency", "an efficiency is at most 1")
        if d["intra_node"] not in ("nvlink", "pci"):
            raise ModelError("model.intra_node", "nvlink or pci")
        if not isinstance(d["link_alpha"], bool):
            raise ModelError("model.link_alpha", "true or false")
        return cls(protocols, tuple(sorted(set(instances))),
                   per_proto(d["call_latency_us"], "model.call_latency_us", False),
                   {k: per_proto(hops[k], f"model.hop_latency_us.{k}", False) for k in LINK_KINDS}, eff,
                   _dec(d["channel_gbps"], "model.channel_gbps"), d["intra_node"], d["link_alpha"],
                   _dec(d["default_alpha_us"], "model.default_alpha_us", False),
                   _dec(d["default_gbps"], "model.default_gbps"))

    def to_json(self) -> dict[str, Any]:
        """The knobs as the manifest records them (floats of the exact values)."""
        def table(m: Mapping[str, Fraction]) -> dict[str, float]:
            return {k: float(v) for k, v in m.items()}

        return {"protocols": list(self.protocols), "instances": list(self.instances),
                "call_latency_us": table(self.call_latency_us),
                "hop_latency_us": {k: table(v) for k, v in self.hop_latency_us.items()},
                "efficiency": table(self.efficiency), "channel_gbps": float(self.channel_gbps),
                "intra_node": self.intra_node, "link_alpha": self.link_alpha,
                "default_alpha_us": float(self.default_alpha_us), "default_gbps": float(self.default_gbps)}


@attrs.frozen
class Line:
    """T(B) = fixed + slope * B, in µs."""

    fixed: Fraction
    slope: Fraction

    def at(self, size: int | Fraction) -> Fraction:
        return self.fixed + self.slope * size


@attrs.frozen
class Piecewise:
    """A convex piecewise linear time: `lines[i]` holds from `starts[i]` (real) to the next start."""

    starts: tuple[Fraction, ...]
    lines: tuple[Line, ...]

    def line_at(self, size: int | Fraction) -> Line:
        i = 0
        while i + 1 < len(self.starts) and self.starts[i + 1] <= size:
            i += 1
        return self.lines[i]

    def at(self, size: int | Fraction) -> Fraction:
        return self.line_at(size).at(size)

    @staticmethod
    def of(line: Line) -> Piecewise:
        return Piecewise((Fraction(0),), (line,))

    def to_json(self) -> list[dict[str, Any]]:
        return [{"from_bytes": float(s), "fixed_us": round(float(ln.fixed), 6), "us_per_byte": float(ln.slope)}
                for s, ln in zip(self.starts, self.lines)]


class Affine:
    """`v + s * (B - B0)` near one size B0: added like numbers, ordered by the value at B0 and then by the
    slope (the larger just above B0): the run's maximum is then the supporting line to the right of B0.
    Hand-written: the run needs a number type, and no library offers one that orders this way."""

    __slots__ = ("s", "v")

    def __init__(self, v: Any, s: Any) -> None:
        self.v, self.s = v, s

    def __add__(self, o: Any) -> Affine:
        if isinstance(o, Affine):
            return Affine(self.v + o.v, self.s + o.s)
        if o == 0:  # the run starts its clocks at 0.0: no float may creep in
            return self
        return Affine(self.v + Fraction(o), self.s)

    __radd__ = __add__

    def _key(self) -> tuple[Fraction, Fraction]:
        return self.v, self.s

    @staticmethod
    def _other(o: Any) -> tuple[Any, Any]:
        return (o.v, o.s) if isinstance(o, Affine) else (o, 0)

    def __lt__(self, o: Any) -> bool:
        return self._key() < self._other(o)

    def __le__(self, o: Any) -> bool:
        return self._key() <= self._other(o)

    def __gt__(self, o: Any) -> bool:
        return self._key() > self._other(o)

    def __ge__(self, o: Any) -> bool:
        return self._key() >= self._other(o)

    def __eq__(self, o: object) -> bool:
        return self._key() == self._other(o)

    __hash__ = None  # type: ignore[assignment]


Occupy = Callable[[tuple[int, int, int]], tuple[Any, tuple[tuple[Hashable, Any], ...]]]


@attrs.frozen
class Machine:
    """What the run needs of the topology: per link (data µs per byte, latency), switch groups per link."""

    per_byte: Mapping[tuple[int, int], Fraction]  # link -> µs per byte at efficiency 1
    kind: Mapping[tuple[int, int], str]
    alpha: Mapping[tuple[int, int], Fraction]
    groups: Mapping[tuple[int, int], tuple[tuple[int, Fraction], ...]]  # link -> (group, µs per byte)


def machine(topo: Topology, nodes: int, model: Model) -> Machine:
    """Link speeds, kinds and switch groups of `topo` (`nodes` nodes of equal size, node-major ranks: a link
    between nodes goes through a NIC)."""
    from smtcoll.model.timed import group_gbps

    per_node = max(1, topo.ranks // max(1, nodes, topo.node_count))  # a file's own nodes (`Topology.node_count`)
    per_byte: dict[tuple[int, int], Fraction] = {}
    kind: dict[tuple[int, int], str] = {}
    alpha: dict[tuple[int, int], Fraction] = {}
    groups: dict[tuple[int, int], tuple[tuple[int, Fraction], ...]] = {}
    for lk in topo.links:
        key = (lk.src, lk.dst)
        gbps = Fraction(repr(float(lk.gbps))) if lk.gbps else model.default_gbps * lk.bandwidth
        per_byte[key] = 1 / (gbps * 1000)
        kind[key] = "net" if lk.src // per_node != lk.dst // per_node else model.intra_node
        alpha[key] = Fraction(repr(float(lk.alpha_us))) if lk.alpha_us is not None else model.default_alpha_us
        gs = []
        for g in topo.switches_of(lk.src, lk.dst):
            # a group over links without speeds runs at the links' default per unit, as they do (and as the
            # bound charges it): untimed, it let a hub-and-spoke rank send 7 chunks at once (7x its bound)
            rate = group_gbps(topo, topo.switches[g])
            speed = Fraction(repr(float(rate))) if rate else model.default_gbps * topo.switches[g].bandwidth
            gs.append((g, 1 / (speed * 1000)))
        groups[key] = tuple(gs)
    return Machine(per_byte, kind, alpha, groups)


def holds(m: Machine, model: Model, protocol: str
          ) -> Callable[[tuple[int, int, int]], tuple[Fraction, tuple[tuple[Hashable, Fraction], ...]]]:
    """Per connection: its hop latency (µs) and, per resource a chunk on it holds, µs held per byte."""
    eff = model.efficiency[protocol]
    chan_per_byte = 1 / (model.channel_gbps * 1000 * eff)

    def per_byte(conn: tuple[int, int, int]) -> tuple[Fraction, tuple[tuple[Hashable, Fraction], ...]]:
        src, dst, chan = conn
        link = (src, dst)
        if link not in m.per_byte:  # the checker reports a missing link; the run still needs a number
            return Fraction(0), (((src, dst), Fraction(0)),)
        lat = model.hop_latency_us[m.kind[link]][protocol] + (m.alpha[link] if model.link_alpha else 0)
        held: list[tuple[Hashable, Fraction]] = [(link, m.per_byte[link] / eff), ((src, dst, chan), chan_per_byte)]
        held += [(("group", g), c / eff) for g, c in m.groups[link]]
        return Fraction(lat), tuple(held)

    return per_byte


def occupancy(m: Machine, model: Model, protocol: str, chunk: Affine | Fraction) -> Occupy:
    """The resources a chunk of `chunk` bytes holds on each connection, and its hop latency."""
    per_byte = holds(m, model, protocol)

    def occupy(conn: tuple[int, int, int]) -> tuple[Any, tuple[tuple[Hashable, Any], ...]]:
        lat, held = per_byte(conn)
        if isinstance(chunk, Affine):
            return Affine(lat, Fraction(0)), tuple((k, Affine(chunk.v * c, chunk.s * c)) for k, c in held)
        return lat, tuple((k, chunk * c) for k, c in held)

    return occupy


MAX_PIECES = 64


def predict(program: Any, m: Machine, model: Model, low: int, high: int,
            dominated: Callable[[Line, Line], bool] | None = None,
            memo: dict[Hashable, dict[Any, Any]] | None = None, packed: bool = True) -> Piecewise | None:
    """The exact time of the lowered `program` (an `msccl.program.Program`) for every buffer size in
    [low, high] (module docstring); None when the program does not run to its end (deadlock), or when
    `dominated(first, last)` says the supporting lines at both ends already show it loses everywhere.

    `memo` (one per machine and model) keeps the serving order and every supporting line by `timing_key`,
    so a program that runs as an earlier one did (the in-place program of an Allgather is its out-of-place
    one without the copy thread blocks) is not run again. `packed` runs on integers (below); False runs on
    `Affine` numbers, the same result (the tests compare the two)."""
    from smtcoll.check.topology_cost import program_makespan, program_thread_blocks

    tbs = program_thread_blocks(program)
    n = Fraction(program.nchunksperloop)
    proto = program.proto
    base = model.call_latency_us[proto]
    # the program's lines by size (the key is hashed once here, not at every line)
    # (without a memo, a local one: the serving order and a size's line are still computed once)
    known = (memo if memo is not None else {}).setdefault(timing_key(program, tbs), {})

    conns = sorted({(t.rank, t.send, t.chan) for t in tbs if t.send >= 0})
    # chunks each connection sends: bounds every slope of the run (below)
    sent: dict[tuple[int, int, int], int] = {}
    for t in tbs:
        if t.send >= 0:
            c = (t.rank, t.send, t.chan)
            sent[c] = sent.get(c, 0) + sum(tr.cnt for tr in t.trans if tr.sends)

    def tangent(size: Fraction) -> Line | None:
        if size not in known:
            known[size] = _tangent(size)
        return known[size]

    # each connection's latency and per-byte holds; a run's numbers are these times the chunk (below), and
    # the few distinct values are scaled once per run rather than once per connection
    per_byte = holds(m, model, proto)
    table = {c: per_byte(c) for c in conns}
    lats = sorted({lat for lat, _ in table.values()})
    coefs = sorted({h for _, held in table.values() for _, h in held})

    # the order names thread blocks by their index in `tbs`, which the timing key does not fix: a program of the
    # same key may hold other copy-only thread blocks (the out-of-place Allgather's), so it is kept per layout
    layout = ("order", tuple((t.rank, t.tb_id, len(t.trans)) for t in tbs))

    def served() -> list[int] | None:
        if layout not in known:
            known[layout] = serving_order(program, m, model, tbs)
        return known[layout]

    def _tangent(size: Fraction) -> Line | None:
        order = served()
        if order is None:
            return None
        # the chunk is Affine(size / n, 1 / n): a hold h is h * size / n at this size, growing by h / n
        scaled = {h: (h * size / n, h / n) for h in coefs}
        # every number of the run is a sum of these: in units of 1/d they are whole numbers, which add and
        # compare many times faster than fractions (and as exactly)
        d = 1
        for x in lats:
            d = math.lcm(d, x.denominator)
        for v, sl in scaled.values():
            d = math.lcm(d, v.denominator, sl.denominator)
        lat_d = {x: int(x * d) for x in lats}
        v_d = {h: int(v * d) for h, (v, _) in scaled.items()}
        s_d = {h: int(sl * d) for h, (_, sl) in scaled.items()}
        if packed:
            # every time of the run is a sum along one chain of events, each chunk's hold at most once and
            # latencies (slope 0): its slope is at most `top`. So (v, s) is the one integer v * 2^bits + s,
            # which adds like the pair and orders like it (v first, then s): plain ints, no method calls
            top = sum(sent[c] * max((s_d[h] for _, h in held), default=0) for c, (_, held) in table.items())
            bits = top.bit_length() + 1
            ints = {c: (lat_d[lat] << bits, tuple((k, (v_d[h] << bits) + s_d[h]) for k, h in held))
                    for c, (lat, held) in table.items()}
            t = program_makespan(program, ints.__getitem__, tbs, zero=0, replay=order)
            if t is None:
                return None
            v, sl = Fraction(t >> bits, d), Fraction(t & ((1 << bits) - 1), d)
        else:
            affine = {c: (Affine(lat_d[lat], 0), tuple((k, Affine(v_d[h], s_d[h])) for k, h in held))
                      for c, (lat, held) in table.items()}
            t = program_makespan(program, affine.__getitem__, tbs, replay=order)
            if t is None:
                return None
            if not isinstance(t, Affine):  # nothing is sent (one rank)
                t = Affine(Fraction(0), Fraction(0))
            v, sl = Fraction(t.v, d), Fraction(t.s, d)
        return Line(v + base - sl * size, sl)

    lo, hi = Fraction(low), Fraction(high)
    # one supporting line is already a lower bound everywhere (T is convex): when it alone loses, so do
    # both, and the run at the other end is saved (the same decision, one run fewer)
    last = tangent(hi)
    if last is None or (dominated is not None and dominated(last, last)):
        return None
    first = tangent(lo)
    if first is None or (dominated is not None and dominated(first, last)):
        return None
    found: dict[Fraction, Line] = {lo: first}
    work = [(lo, first, hi, last)]
    while work:
        a, la, b, lb = work.pop()
        if la == lb or la.slope == lb.slope or len(found) > MAX_PIECES:
            continue
        x = (lb.fixed - la.fixed) / (la.slope - lb.slope)
        if not a < x < b or x in found:  # cannot happen for a convex T: a guard, not a case
            continue
        lx = tangent(x)
        if lx is None:
            return None
        if lx.at(x) == la.at(x):
            found[x] = lb
            continue
        found[x] = lx
        work += [(a, la, x, lx), (x, lx, b, lb)]
    # `found` maps a start to the line from there; keep the starts where the line changes
    starts: list[Fraction] = []
    lines: list[Line] = []
    for s in sorted(found):
        if not lines or found[s] != lines[-1]:
            starts.append(s)
            lines.append(found[s])
    return Piecewise(tuple(starts), tuple(lines))


def serving_order(program: Any, m: Machine, model: Model, tbs: Sequence[Any] | None = None) -> list[int] | None:
    """The order the timed run serves `program`'s thread blocks in (their indices in `tbs`), the same at
    every buffer size; None when it deadlocks. It is the run on times that compare by their growth with the
    size first, then by their value at size 0: every maximum takes its fastest growing term, every choice
    of the queue is the one of the largest sizes (`check.execution._StepOrder`). Replayed at a size, the
    order gives that size's time, a maximum of lines in the size (module docstring). The pairs are packed
    into one integer, growth in the high bits: plain ints that add like the pairs and compare growth first."""
    from smtcoll.check.topology_cost import program_makespan, program_thread_blocks

    tbs = program_thread_blocks(program) if tbs is None else tbs
    n = Fraction(program.nchunksperloop)
    per_byte = holds(m, model, program.proto)
    table = {c: per_byte(c) for c in sorted({(t.rank, t.send, t.chan) for t in tbs if t.send >= 0})}
    sent: dict[tuple[int, int, int], int] = {}
    for t in tbs:
        if t.send >= 0:
            c = (t.rank, t.send, t.chan)
            sent[c] = sent.get(c, 0) + sum(tr.cnt for tr in t.trans if tr.sends)
    grow = {h: h / n for _, held in table.values() for _, h in held}
    g = a = 1
    for x in grow.values():
        g = math.lcm(g, x.denominator)
    for lat, _ in table.values():
        a = math.lcm(a, lat.denominator)
    # every time is a sum along one chain of events, each chunk's latency at most once
    top = sum(sent[c] * int(lat * a) for c, (lat, _) in table.items())
    bits = top.bit_length() + 1
    ints = {c: (int(lat * a), tuple((k, int(grow[h] * g) << bits) for k, h in held))
            for c, (lat, held) in table.items()}
    trace: list[int] = []
    return trace if program_makespan(program, ints.__getitem__, tbs, zero=0, trace=trace) is not None else None


def timing_key(program: Any, tbs: Sequence[Any]) -> Hashable:
    """What the timed run of a program depends on, and nothing else: its protocol, channels, chunks per
    loop and, per thread block in order, its connections and each transmission's type, count, waits, flag
    and place. A thread block that neither sends, receives, waits nor is waited for (local copies only)
    changes no time and is left out; the others are renumbered in order (thread block ids shift when one is
    left out), so two programs with the same key have the same run."""
    targets = {(t.rank, dep) for t in tbs for tr in t.trans for dep, _ in tr.deps}
    keep = [t for t in tbs if t.send >= 0 or t.recv >= 0 or (t.rank, t.tb_id) in targets
            or any(tr.deps or tr.hasdep for tr in t.trans)]
    ids = {(t.rank, t.tb_id): i for i, t in enumerate(keep)}
    return (program.proto, program.nchannels, program.nchunksperloop, program.coll, program.ngpus,
            tuple((t.rank, t.send, t.recv, t.chan,
                   tuple((tr.type, tr.cnt, tuple((ids.get((t.rank, dep), ("none", dep)), k) for dep, k in tr.deps),
                          tr.hasdep, tr.counter, tr.first) for tr in t.trans))
                  for t in keep))


def chord(curve: Piecewise, low: int, high: int) -> Line:
    """The line through the curve's ends: above the (convex) curve everywhere between them."""
    a, b = curve.at(low), curve.at(high)
    slope = (b - a) / (high - low) if high > low else Fraction(0)
    return Line(a - slope * low, slope)


def beaten(first: Line, last: Line, uppers: Sequence[Line], low: int, high: int) -> bool:
    """True when some candidate is at least as fast at every size of [low, high]: the candidate is at
    least max(first, last) (its supporting lines), each of `uppers` at most its line (a chord). The
    difference of the two is convex and piecewise linear, so checking at its breakpoints is exact."""
    if not uppers:
        return False
    points = {Fraction(low), Fraction(high)}
    if first.slope != last.slope:
        points.add((last.fixed - first.fixed) / (first.slope - last.slope))
    points |= _envelope_breaks(uppers, Fraction(low), Fraction(high))
    return all(max(first.at(x), last.at(x)) >= min(u.at(x) for u in uppers)
               for x in points if low <= x <= high)


def _envelope_breaks(lines: Sequence[Line], low: Fraction, high: Fraction) -> set[Fraction]:
    """Where the minimum of `lines` changes line inside (low, high): walking right from `low`, the next
    change is the first crossing of the current lowest line by a flatter one (a steeper one only grows
    away). These are the only breakpoints of the minimum, so checking there is as exact as checking every
    pairwise crossing (which cost the sweep O(k^3) per candidate)."""
    out: set[Fraction] = set()
    x = low
    cur = min(lines, key=lambda ln: (ln.at(x), ln.slope))
    while True:
        nxt: tuple[Fraction, Line] | None = None
        for ln in lines:
            if ln.slope < cur.slope:
                cx = (ln.fixed - cur.fixed) / (cur.slope - ln.slope)
                if cx > x and (nxt is None or cx < nxt[0] or (cx == nxt[0] and ln.slope < nxt[1].slope)):
                    nxt = (cx, ln)
        if nxt is None or nxt[0] >= high:
            return out
        x, cur = nxt
        out.add(x)


def bus_bandwidth(kind: str, ranks: int, size: int, micros: Fraction) -> float | None:
    """nccl-tests' bus bandwidth in GB/s for a call of `size` bytes taking `micros`."""
    factor = collectives.bus_factor(kind, ranks)  # nccl-tests' factor, from the table of collectives
    if factor is None or micros <= 0:
        return None
    return float(Fraction(size) / micros / 1000 * factor)



def schedule_time(schedule: Schedule, protocol: str, instances: int, size: int, model: Model | None = None,
                  nodes: int = 1, mode: str = "outofplace") -> Fraction | None:
    """The modelled time (µs) of `schedule` lowered as the sweep lowers it (`protocol`, `instances`, the
    executor, `mode`) at `size` bytes; None where the lowered program does not run to its end, or where the
    schedule cannot be lowered with these options (the sweep rejects that candidate: too many thread blocks
    for the runtime, ...). For benchmarks and tests that rank a schedule without a sweep."""
    from smtcoll.lower import CannotLower, LowerOptions, lower

    model = Model.load() if model is None else model
    try:
        lowered = lower(schedule, LowerOptions(instances, protocol, "executor", mode, size, size, True))
    except CannotLower:
        return None
    curve = predict(lowered.program, machine(schedule.topology, nodes, model), model, size, size)
    return None if curve is None else curve.at(size)
