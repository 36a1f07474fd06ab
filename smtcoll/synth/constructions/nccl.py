"""NCCL's own algorithms in the step model: the baselines the sweep compares against, built as NCCL
builds them (src/graph/search.cc for the rings, src/device/*.h for the per-step data movement).

- `ring`: every ring NCCL's search finds (one channel each): Allgather and ReduceScatter around each
  ring, Allreduce as ReduceScatter then Allgather on each ring, Broadcast and Reduce as pipelined chains.
- `direct`: Alltoall as NCCL's p2p sends, every pair at once (src/device/sendrecv.h); where two ranks
  have no link, along a shortest path, the pairs spread over the links least loaded so far.
"""

from __future__ import annotations

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.msccl.runtime import MAX_STEPS
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, kind

CHAIN_PIECES = 8  # Broadcast/Reduce pieces per ring: NCCL pipelines a chain over slices of the buffer


def ring_steps(what: str, ranks: int) -> int:
    """Steps of the ring algorithm for `what` on `ranks` ranks (every ring runs them in parallel)."""
    return {"allgather": ranks - 1, "reducescatter": ranks - 1, "allreduce": 2 * (ranks - 1),
            "broadcast": CHAIN_PIECES + ranks - 2, "reduce": CHAIN_PIECES + ranks - 2}.get(what, 0)


def lowerable_rings(topo: Topology, base: Collective) -> tuple[ringlib.Ring, ...]:
    """The rings, at most as many through one link as keep a thread block within the executor's steps:
    the lowering gives each peer one sending thread block per channel, which runs every ring's sends to
    that peer in turn (NCCL itself gives each ring its own channel)."""
    steps = ring_steps(kind(base), topo.ranks)
    if not steps:
        raise NotApplicable(f"no ring algorithm for {kind(base)}")
    return ringlib.find_rings(topo, per_link=max(1, MAX_STEPS["executor"] // steps))


def ring_schedule(topo: Topology, base: Collective, rings: tuple[ringlib.Ring, ...], name: str) -> Schedule:
    if not rings:
        raise NotApplicable(f"{topo.name} has no directed Hamiltonian ring")
    what, k, n = kind(base), len(rings), topo.ranks
    if what == "allgather":
        coll = base.with_chunks(k)
        steps = ringlib.allgather_steps(rings, coll)
    elif what == "reducescatter":
        coll = base.with_chunks(k)
        steps = ringlib.reducescatter_steps(rings, coll)
    elif what == "allreduce":
        coll = base.with_chunks(n * k)
        steps = ringlib.allreduce_steps(rings, coll)
    elif what in ("broadcast", "reduce"):
        root = base.root or 0
        coll = base.with_chunks(k * CHAIN_PIECES)
        steps = ringlib.chain_steps(rings, coll, root, CHAIN_PIECES, toward_root=what == "reduce")
    else:
        raise NotApplicable(f"no ring algorithm for {what}")
    return Schedule(topo, coll, steps, name=name)


def ring(topo: Topology, base: Collective) -> Schedule:
    """NCCL's ring algorithm over the rings its search finds."""
    return ring_schedule(topo, base, lowerable_rings(topo, base), "nccl_ring")


def direct(topo: Topology, base: Collective) -> Schedule:
    """Alltoall as direct sends: hop h of every pair's shortest path in step h; a step's rounds are the
    most chunks any link or switch group carries in it, divided by its bandwidth (rounded up)."""
    if kind(base) != "alltoall":
        raise NotApplicable("direct sends are NCCL's Alltoall (p2p)")
    n = topo.ranks
    dist = topo.distances
    if any(len(dist[s]) < n for s in range(n)):
        raise NotApplicable(f"{topo.name} is not strongly connected")
    load: dict[tuple[int, int], int] = {}
    hops: dict[int, list[Send]] = {}
    # longest paths first, each hop onto the least loaded link that stays on a shortest path
    pairs = sorted(((s, d) for s in range(n) for d in range(n) if s != d), key=lambda p: (-dist[p[0]][p[1]], p))
    for s, d in pairs:
        u, h = s, 0
        while u != d:
            nxt = [v for v in topo.out_neighbors(u) if dist[v].get(d, n + 1) == dist[u][d] - 1]
            v = min(nxt, key=lambda v: (load.get((u, v), 0) / topo.bandwidth(u, v), v))
            load[(u, v)] = load.get((u, v), 0) + 1
            hops.setdefault(h, []).append(Send(s * n + d, u, v))
            u, h = v, h + 1
    coll = base.with_chunks(1)
    steps = [Step(_rounds(topo, sends), sorted(sends)) for _, sends in sorted(hops.items())]
    return Schedule(topo, coll, steps, name="nccl_direct")


def _rounds(topo: Topology, sends: list[Send]) -> int:
    """The fewest rounds in which the links and switch groups carry `sends`."""
    per_link: dict[tuple[int, int], int] = {}
    for x in sends:
        per_link[(x.src, x.dst)] = per_link.get((x.src, x.dst), 0) + 1
    need = max(-(-c // topo.bandwidth(u, v)) for (u, v), c in per_link.items())
    for g in topo.switches:
        used = sum(c for (u, v), c in per_link.items() if u in g.srcs and v in g.dsts)
        need = max(need, -(-used // g.bandwidth))
    return max(1, need)
