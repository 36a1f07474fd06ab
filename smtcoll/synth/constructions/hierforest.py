"""The exact tree packing inside each node, fed through the NICs: a two-level pipeline for nodes whose
every GPU has its own NIC lane to the GPU of the same local rank in every other node (MI250, A100).

Allgather: each rank's share is cut into C pieces, and one node's `forest` Allgather (the exact packing of
the node's links, list-scheduled and packed at its end) is built with n C trees per root, so that every
local root broadcasts n C pieces: its own C, and C of each peer (same local rank) in the other n - 1
nodes, which the peer sends it over the NIC. The pieces a root starts broadcasting last in that schedule
are the peers' (their data crosses the NIC first), its earliest its own; each NIC sends its pieces in the
order the receiving root needs them, from step 0. Every node runs the same schedule, so the NICs of all
nodes carry (n - 1) C pieces each way while the node's links run the one-node schedule from its first
step: on mi250 x2 the NIC is busy about 2/3 of the time, so a peer's piece arrives before its root's
trees need it, and the time is the one-node Allgather's on n times the data.

ReduceScatter is the transpose (the same on the reversed links, turned round: a node reduces a peer's
pieces first and sends the partial sums through the NIC while it reduces its own), and Allreduce that
ReduceScatter followed by that Allgather.

What it loses against the bound: every piece enters a node once, so a pair of ranks receives n - 1 of
its missing shares over its own NICs and the rest over the node's links, where the cut bound lets the NICs
deliver a little more (mi250 x2: 28 shares through 300 GB/s of xGMI for a pair of GCDs against the bound's
30 through 332 GB/s: 0.968 of it in link load). Its gain against `forest` over all 32 ranks: the NICs are
not the busiest links, so no tree still has 2-4 hops to run after the last NIC chunk arrives.
"""

from __future__ import annotations

import math
from fractions import Fraction

from smtcoll import library
from smtcoll.bounds.throughput import rates
from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.constructions import forest as forestlib
from smtcoll.synth.constructions import hierforest_nic as nicx
from smtcoll.synth.constructions import rings as ringlib
from smtcoll.synth.constructions.common import NotApplicable, kind, send_key
from smtcoll.synth.constructions.forest_wide import lane_rates
from smtcoll.synth.constructions.pipeline import Plan, _list_schedule, backward, link_time, list_orders, turn
from smtcoll.synth.constructions.trees import node_ranks


def hierforests(topo: Topology, base: Collective) -> list[Schedule]:
    """`hierforest`'s schedule, then the finer one (the sweep's candidates): pieces of 1 / (n C) share where
    the first takes 1 / C (ReduceScatter takes them already), each rank's NIC lane also bringing the extras
    of `hierforest_nic` (mi250 x2 Allgather at 1 GiB, 4 instances: 0.954 of the sweep's bound, the first 0.942 at 8)."""
    return [hierforest(topo, base), hierforest(topo, base, fine=True)]


def hierforest(topo: Topology, base: Collective, fine: bool = False) -> Schedule:
    what = kind(base)
    if what not in ("allgather", "reducescatter", "allreduce"):
        raise NotApplicable("the two-level tree packing covers Allgather, ReduceScatter and Allreduce")
    members, sub = _nodes(topo)
    n = len(members)
    # C: the one-node `forest`'s trees per root, shared by the n nodes' pieces, so that a connection carries
    # what that one-node program carries at 8 instances. ReduceScatter's program waits for more thread
    # blocks than depid names at 8 instances (the NIC's channels come on top), so it takes twice the pieces:
    # at 2 instances a connection of more messages spreads over more channels (mi250 x2 at 1 GiB, 2
    # instances: 0.76 of the bound with 12 trees per root, 0.92 with 24); Allreduce has that many in its two
    # halves
    most = forestlib.forest(sub, library.collective("allgather", len(members[0]))).collective.chunk_factor
    c = max(1, most // n) if what != "reducescatter" and not fine else most
    if what == "allgather":
        return Schedule(topo, base.with_chunks(c), _allgather(topo, sub, members, c, fine), name="hierforest")
    # ReduceScatter: the Allgather of the reversed links, run backwards (reduce sends carry partial sums)
    # (the ReduceScatter alone spares no NIC piece, `hierforest_nic`; in the Allreduce the Allgather half's
    # start fills that idle time: one spare there, 0.927 / 0.952 at 256 MiB / 1 GiB against 0.921 / 0.950)
    spare = 0 if what == "reducescatter" else 1
    scatter = turn(_allgather(topo.reversed(), sub.reversed(), members, c, fine, spare))
    if what == "reducescatter":
        return Schedule(topo, base.with_chunks(c), scatter, name="hierforest")
    gather = _allgather(topo, sub, members, c, fine)
    k = topo.ranks
    # Allreduce: rank r's piece j is address j * k + r (`forest`'s numbering), reduced to r, then broadcast

    def address(st: Step) -> Step:
        return Step(st.rounds, sorted((Send((x.chunk % c) * k + x.chunk // c, x.src, x.dst) for x in st.sends),
                                      key=send_key))
    return Schedule(topo, base.with_chunks(k * c), [address(st) for st in [*scatter, *gather]], name="hierforest")


def _nodes(topo: Topology) -> tuple[list[list[int]], Topology]:
    """Each node's ranks and one node's links (renumbered 0..P-1); NotApplicable unless there are several
    nodes with the same links inside and a link from every rank to the rank of the same local index in
    every other node."""
    node = ringlib.nodes_of(topo)
    n = max(node) + 1
    if n < 2:
        raise NotApplicable("two-level schedules are for several nodes (--nodes N)")
    members = node_ranks(node)
    p = len(members[0])
    if any(len(m) != p for m in members):
        raise NotApplicable("nodes of unequal size")
    subs = [ringlib.node_topology(topo, m) for m in members]
    inner = sorted((l.src, l.dst, l.bandwidth, l.gbps) for l in subs[0].links)
    if any(sorted((l.src, l.dst, l.bandwidth, l.gbps) for l in s.links) != inner for s in subs[1:]):
        raise NotApplicable("the nodes' links differ")
    if subs[0].switches:
        raise NotApplicable("switch groups inside a node (the packing covers links)")
    for x in range(n):
        for y in range(n):
            for b in range(p):
                if x != y and not topo.has_link(members[x][b], members[y][b]):
                    raise NotApplicable(f"no link from rank {members[x][b]} to rank {members[y][b]} "
                                        "(a NIC lane per local rank)")
    return members, subs[0]


def _allgather(topo: Topology, sub: Topology, members: list[list[int]], c: int, fine: bool = False,
               spare: int = 1) -> list[Step]:
    """The steps of the two-level Allgather on `topo` with `c` pieces per rank (module docstring); `fine`:
    with the NIC's extras (`hierforest_nic`), `spare` NIC pieces' times kept free."""
    n, p = len(members), len(members[0])
    trees = n * c
    cap = forestlib.units(sub)
    roots = list(range(p))
    per_unit = math.ceil(trees * forestlib.cut_ratio(p, cap, roots))
    packed = forestlib.pack_caps(p, cap, roots, trees, per_unit)
    # tree j of root b carries b's own piece j (j < c), else piece (j - c) % c of its peer in node
    # x - 1 - (j - c) // c, which the NIC brings: the k-th piece a NIC lane carries is no earlier than
    # k + 1 NIC chunk times, in rounds of one chunk per lane inside the node
    inside = rates(sub).link
    lane = min(v / l.bandwidth for v, l in zip(inside, sub.links))
    nic = min(v for (u, w), v in lane_rates(topo).items() if u // p != w // p)
    plan = Plan()
    firsts: list[tuple[int, int]] = []  # (a transfer out of a peer's piece's root, the piece's place k on its NIC lane)
    for j in range(trees):
        for b in range(p):
            at = plan.broadcast(b * trees + j, packed[b][j], b)
            if j >= c:
                firsts += [(t, (j - c) % c) for t in at.values() if plan.transfers[t].src == b]
    lag = nicx.FORWARD_LAG if fine else 1
    inner = _paced(sub, plan, firsts, lane / nic, lag)
    # The run lasts about the busiest lane's pieces, not the steps: where that lane idles in some steps
    # (mi250 x2: 56 pieces in 60 steps) a step is shorter than a piece and a NIC piece takes lane / nic times
    # steps / pieces steps, so the NIC's pieces are paced again at that count; kept if no longer in steps
    # (where the NIC is nearly as busy as the lanes, later releases lengthen the schedule: mi250 x3, 36 -> 44)
    load: dict[tuple[int, int], int] = {}
    for st in inner:
        for send in st.sends:
            load[(send.src, send.dst)] = load.get((send.src, send.dst), 0) + 1
    busiest = max(Fraction(v, sub.bandwidth(*e)) for e, v in load.items())
    if len(inner) > busiest:
        paced = _paced(sub, plan, firsts, lane / nic * len(inner) / busiest, lag)
        if len(paced) <= len(inner):
            inner = paced
    moved = nicx.extras(sub, inner, trees, c, lane / nic, spare) if fine else {}
    steps: list[list[Send]] = [[] for _ in inner]
    def owner(x: int, chunk: int) -> tuple[int, int]:
        """(the rank whose piece tree `chunk` carries in node x, the piece's index)"""
        b, j = divmod(chunk, trees)
        y = x if j < c else (x - 1 - (j - c) // c) % n
        return members[y][b], j % c

    for x in range(n):
        for s, st in enumerate(inner):
            for snd in st.sends:
                if (snd.chunk, snd.dst) in moved:
                    continue  # its NIC lane brings it
                r, i = owner(x, snd.chunk)
                steps[s].append(Send(r * c + i, members[x][snd.src], members[x][snd.dst]))
        for (chunk, v), step in sorted(moved.items()):  # from the peer of the same local rank in the owner's node
            r, i = owner(x, chunk)
            y = (x - 1 - (chunk % trees - c) // c) % n
            steps[step].append(Send(r * c + i, members[y][v], members[x][v]))
        for b in range(p):
            for j in range(c, trees):  # the NIC: the peers' pieces in the order their root needs them
                r, i = owner(x, b * trees + j)
                steps[(j - c) % c].append(Send(r * c + i, r, members[x][b]))
    return _rounds(topo, steps)


def _paced(sub: Topology, plan: Plan, firsts: list[tuple[int, int]], per_piece: Fraction, lag: int) -> list[Step]:
    """One node's list schedule of `plan` with the k-th piece a NIC lane brings released after k + 1 NIC
    pieces of `per_piece` steps each, packed at its end (`pipeline.backward`) unless that moves a peer's
    piece before the NIC brings it."""
    release = {t: math.ceil((k + 1) * per_piece) + 1 for t, k in firsts}  # + 1: the NIC's latency
    found = [_list_schedule(sub, plan, o, release, keep_empty=True, lag=lag) for o in list_orders(plan, True)]
    inner = min(found, key=lambda st: (link_time(sub, st), len(st)))
    late = backward(sub, plan, inner, lag)
    when = {(x.chunk, x.src, x.dst): s for s, st in enumerate(late) for x in st.sends}
    if len(late) <= len(inner) and all(when[(plan.transfers[t].chunk, plan.transfers[t].src,
                                             plan.transfers[t].dst)] >= r for t, r in release.items()):
        return late
    return inner


def _rounds(topo: Topology, steps: list[list[Send]]) -> list[Step]:
    return forestlib._rounds(topo, [Step(1, sorted(sends, key=send_key)) for sends in steps if sends])
