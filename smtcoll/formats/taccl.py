"""TACCL algorithm JSON (`*_taccl.sccl.json`, written by `taccl solve`), read into a timed schedule.

The machine is embedded: `copies` nodes of `ngpus_per_node` GPUs (rank = node x ngpus_per_node + local),
`node_links[dst][src]` and `node_invbws[dst][src]` inside a node, and IB from local GPU i to the local GPUs
`internode_conn[i]` of every other node, costing `remote_alpha` + k x `remote_beta` for k chunks sent
together. Each send is `[chunk, src, dst, t, link]`: it starts at t / 10 (`SCALE_TIME`). TACCL's model:
a local send arrives `node_invbws` later; the k sends on one IB link at one t arrive alpha + k beta later;
beta is serialized per link and per GPU's IB send and receive side (one NIC), alpha is pipelined. The claim
is sum(`rounds`) / 10, in the topology's unit (microseconds).

For the alpha-beta replay and the bound, the file's costs become link rates for a nominal chunk of
`NOMINAL_CHUNK_BYTES`: a link of invbw w us runs at 1000 / w GB/s, so times stay in the file's units.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from smtcoll.errors import ModelError
from smtcoll.formats.numbers import ascii_int
from smtcoll.formats.source import Source, json_claim
from smtcoll.limits import max_transfers, transfers_exceeded
from smtcoll.model import Collective, Link, SwitchGroup, Topology
from smtcoll.model.timed import Limit, Quantity, Time, TimedSchedule, Transfer, Use, exact

FORMAT = "taccl-json"
SCALE_TIME = 10  # TACCL writes start times and rounds x 10
# The machine a file embeds is bounded before it is built: `copies` x `ngpus_per_node` ranks, and the links
# that implies (IB links grow with copies^2, so a 1 KB file could declare millions). TACCL's own runs go to
# 4 nodes of 16 GPUs; these bounds are 16 and 64 times that.
MAX_RANKS = 1024
MAX_LINKS = 1 << 18
NOMINAL_CHUNK_BYTES = 1e6


class TacclError(Exception):
    def __init__(self, where: str, message: str) -> None:
        self.where, self.message = where, message


def is_taccl(data: Any) -> bool:
    t = data.get("topology") if isinstance(data, dict) else None
    return isinstance(t, dict) and "node_links" in t and "copies" in t


def _int(v: Any, where: str, low: int = 0, high: int = 1 << 20) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
        raise TacclError(where, f"expected an integer in {low}..{high}, got {v!r}"[:120])
    return v


def _cost(v: Any, where: str) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
        raise TacclError(where, f"expected a number >= 0, got {v!r}"[:120])
    return float(v)


def _gbps(invbw: float) -> float:
    return 1e-3 * NOMINAL_CHUNK_BYTES / invbw if invbw > 0 else 1e9


def taccl_topology(t: dict) -> tuple[Topology, dict[tuple[int, int], float], tuple[float, float], set[tuple[int, int]]]:
    """Our topology, local invbw per link, (alpha, beta) of IB, and the IB links."""
    copies = _int(t.get("copies"), "topology.copies", 1, 4096)
    p = _int(t.get("ngpus_per_node"), "topology.ngpus_per_node", 1, 4096)
    links, invbws = t.get("node_links"), t.get("node_invbws")
    for field, m in (("node_links", links), ("node_invbws", invbws)):
        if not isinstance(m, list) or len(m) != p or not all(isinstance(r, list) and len(r) == p for r in m):
            raise TacclError(f"topology.{field}", f"expected a {p} x {p} matrix [dst][src]")
    assert isinstance(links, list) and isinstance(invbws, list)
    alpha = _cost(t.get("remote_alpha", 0), "topology.remote_alpha")
    beta = _cost(t.get("remote_beta", t.get("remote_invbw", 0)), "topology.remote_beta")
    conn = t.get("internode_conn") or {}
    if not isinstance(conn, dict):
        raise TacclError("topology.internode_conn", "expected an object: local GPU -> local GPUs of other nodes")
    if copies * p > MAX_RANKS:
        raise TacclError("topology.copies", f"{copies} copies x {p} GPUs = {copies * p} ranks, more than the "
                                            f"{MAX_RANKS} a TACCL file may declare")
    per_node = sum(1 for d in range(p) for s in range(p) if s != d and links[d][s] not in (0, None, False))
    pairs = sum(len(v) if isinstance(v, list) else 0 for v in conn.values())
    switches = t.get("local_switches")
    implied = (copies * per_node + pairs * copies * (copies - 1)
               + copies * (len(switches) if isinstance(switches, list) else 0))
    if implied > MAX_LINKS:
        raise TacclError("topology", f"declares {implied} links and switch groups ({copies} copies, {per_node} links "
                                     f"per node, {pairs} IB connections), more than the {MAX_LINKS} a TACCL file "
                                     "may declare")
    out: dict[tuple[int, int], Link] = {}
    local: dict[tuple[int, int], float] = {}
    ib: set[tuple[int, int]] = set()
    for n in range(copies):
        for d in range(p):
            for s in range(p):
                bw = _int(links[d][s], f"topology.node_links[{d}][{s}]")
                if bw and s != d:
                    w = _cost(invbws[d][s], f"topology.node_invbws[{d}][{s}]")
                    key = (n * p + s, n * p + d)
                    out[key] = Link(key[0], key[1], bw, None, _gbps(w))
                    local[key] = w
    for s_txt, dsts in sorted(conn.items()):
        s = _int(ascii_int(s_txt), f"topology.internode_conn.{str(s_txt)[:40]}", 0, p - 1)
        if not isinstance(dsts, list):
            raise TacclError(f"topology.internode_conn.{s_txt}", "expected a list of local GPUs")
        for d in dsts:
            d = _int(d, f"topology.internode_conn.{s_txt}", 0, p - 1)
            for n in range(copies):
                for m in range(copies):
                    if n != m:
                        key = (n * p + s, m * p + d)
                        out[key] = Link(key[0], key[1], 1, alpha if alpha > 0 else None, _gbps(beta))
                        ib.add(key)
    groups = []
    for side in ("send", "recv"):  # one NIC per GPU: its IB links share it
        by_gpu: dict[int, list[tuple[int, int]]] = {}
        for a, b in sorted(ib):
            by_gpu.setdefault(a if side == "send" else b, []).append((a, b))
        for g, ls in sorted(by_gpu.items()):
            if len(ls) > 1:
                srcs, dsts = sorted({a for a, _ in ls}), sorted({b for _, b in ls})
                groups.append(SwitchGroup(srcs, dsts, 1, f"ib-{side}-gpu{g}"))
    for i, sw in enumerate(t.get("local_switches") or []):
        if not (isinstance(sw, list) and len(sw) >= 3 and isinstance(sw[0], list) and isinstance(sw[1], list)):
            raise TacclError(f"topology.local_switches[{i}]", "expected [srcs, dsts, bandwidth, name]")
        for n in range(copies):
            groups.append(SwitchGroup([n * p + x for x in sw[0]], [n * p + x for x in sw[1]], _int(sw[2], f"topology."
                                      f"local_switches[{i}][2]", 1), f"{sw[3] if len(sw) > 3 else 'switch'}@node{n}"))
    try:
        topo = Topology(str(t.get("name", "taccl")), copies * p, [out[k] for k in sorted(out)], groups)
    except ModelError as e:
        raise TacclError(f"topology.{e.where}", e.detail) from None
    return topo, local, (alpha, beta), ib


def read_taccl(data: dict, collective: Collective, topology: Topology | None, name: str = "") -> TimedSchedule:
    """`collective` is read by the caller (SCCL's chunk list or TACCL's input/output maps)."""
    embedded, local, (alpha, beta), ib = taccl_topology(data["topology"])
    topo = topology or embedded
    if topo.ranks != collective.ranks:
        raise TacclError("topology", f"has {topo.ranks} ranks but the collective has {collective.ranks}")
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise TacclError("steps", "expected an array of steps")
    raw: list[tuple[int, int, int, Time, int, dict[str, Any]]] = []
    alpha_x, beta_x = exact(alpha), exact(beta)
    claim = 0
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("sends"), list):
            raise TacclError(f"steps[{i}]", "expected an object with rounds and sends")
        claim += _int(step.get("rounds"), f"steps[{i}].rounds", 0, 1 << 40)
        if len(raw) + len(step["sends"]) > max_transfers():
            raise TacclError(f"steps[{i}]", transfers_exceeded(f"more than {max_transfers()}"))
        for j, x in enumerate(step["sends"]):
            w = f"steps[{i}].sends[{j}]"
            if not isinstance(x, list) or len(x) not in (5, 6):
                raise TacclError(w, f"expected [chunk, src, dst, t, link] (and an operator), got {str(x)[:80]}")
            c, s, d = (_int(v, w) for v in x[:3])
            start = exact(_cost(x[3], f"{w}[3]")) / SCALE_TIME  # exact: a send may start as its chunk arrives
            raw.append((c, s, d, start, _int(x[4], f"{w}[4]"), {"step": i, "send": j}))
    batch = Counter((s, d, t) for _, s, d, t, _, _ in raw if (s, d) in ib)
    index: Counter[tuple[int, int, Time]] = Counter()
    transfers: list[Transfer] = []
    limits: dict[str, Limit] = {}
    for c, s, d, t, _link, place in raw:
        address = collective.address[c] if 0 <= c < collective.chunks else c
        end: Time
        if (s, d) in ib:
            k, pos = batch[(s, d, t)], index[(s, d, t)]
            index[(s, d, t)] += 1
            busy = (t + pos * beta_x, t + (pos + 1) * beta_x)
            end = t + alpha_x + k * beta_x
            uses = [Use(f"IB link {s}->{d}", *busy), Use(f"IB send side of gpu {s}", *busy),
                    Use(f"IB receive side of gpu {d}", *busy)]
        else:
            end = t + exact(local.get((s, d), 0.0))
            uses = [Use(f"link {s}->{d}", t, end)] if (s, d) in local else []
        for u in uses:
            limits.setdefault(u.resource, Limit(u.resource, 1, "concurrent", 1, "TACCL: one chunk at a time (beta "
                                                                                  "serialized, alpha pipelined)"))
        transfers.append(Transfer(address, s, d, t, end, place, 1.0, (), uses))
    claimed = Quantity(claim / SCALE_TIME, "us", "TACCL sum(rounds) / 10")
    return TimedSchedule(FORMAT, "TACCL per-send times", collective, topo, transfers, "us", 1.0,
                         list(limits.values()), claimed, NOMINAL_CHUNK_BYTES, name=name)


# The `Format` protocol (smtcoll.formats.registry).
NAME = "taccl-json"
SUFFIXES: tuple[str, ...] = ()
ERRORS: tuple[type[Exception], ...] = (TacclError,)


def detect(source: Source) -> bool:
    return source.head.startswith("{") and is_taccl(source.json_or_none())


def claims(source: Source) -> bool:
    """TACCL's algorithm JSON: `"steps"` and `"collective"` at the top level (no marker: a broken or partly
    read file is claimed by no format)."""
    return json_claim(source, lambda d: "steps" in d and "collective" in d, None)


def read(source: Source, topology: Topology | None) -> TimedSchedule:
    from smtcoll.formats.schedules import sccl_collective

    data = source.json()
    if not is_taccl(data):
        raise TacclError("", "not TACCL algorithm JSON (its topology has no copies and node_links)")
    return read_taccl(data, sccl_collective(data), topology, source.name)
