"""Allgather, ReduceScatter and Allreduce as a pairwise exchange: where every pair of ranks in a node is
linked (a switch: a100, dgx2; a full mesh), each rank's data goes straight to its destination, cut into
pieces and sent in shifted rounds (s to s + k in slot k), the order the Alltoall `exchange` uses; across
nodes each rank also crosses to its rail (the rank of the same local index in every other node).

- Allgather: each piece of rank s's block over its rails, then to every peer of its node, then the pieces
  that came over the rails relayed to every peer once they arrived.
- ReduceScatter: the shares of blocks owned in other nodes go to the owner's rail in the sender's node,
  which sends the node's partial sum over the rail once all arrived (they carry disjoint partial sums:
  the checker's combining rule); the shares of the node's own blocks go straight to their owners,
  `RS_LAG` pieces later, so that the rails' last sums are not waited for at the end.
- Allreduce: the two, address by address (owner a mod N).
- `ring`: across three or more nodes behind shared uplinks, a piece goes round the nodes on its rail (each
  rail rank forwards it to the next node's), and a partial sum collects its shares node after node on the
  owner's rail, ending at the owner (`_uplinks`).
- `grid`: across nodes whose ranks form planes (each node's groups of its fastest links), the planes of all
  nodes as the groups of an Allgather: a block crosses to its rail's plane in its own node, then over that
  plane's NIC (`_grid`, `_Layout.hop`); a ReduceScatter's partial sum, the other way, first joins its rail's
  in the owner's plane of its node, which then crosses that plane's NIC; an Allreduce sums over the nodes and
  spreads its sums over the planes.
- `direct`: some pieces of an Allgather or Allreduce cross the NICs first: every rank sends its share of a
  block owned in another node to its own rail there, which adds its own before it sends to the owner, and a
  finished piece goes to every peer of its node, each of which sends it on over its own rails. A rank then
  sends p - 1 messages in its node and p (m - 1) across per piece and block, against m (p - 1) and m - 1
  relayed (m nodes of p ranks): where the NICs have time to spare a few such pieces take work off the ports
  (`direct_pieces`; held-out h100 x 2 Allreduce at 256 MiB: 0.875 -> 0.943 of the bound at 2 instances).

Every rank's port inside a node carries the per-port share of the buffer and, in the shifted order, serves
one piece at a time. Rings reach the same load but pass each piece N-1 times, one hop after another;
through a switch port faster than one channel (a100: 300 GB/s against 40 per channel) their 8 instances
contend for the port and lose about a tenth in the sweep's model, while the direct sends, spread over two
channels per connection, keep it busy (docs/benchmarks.md, "a100 re-run (session 5)").

The piece count follows `exchange`: about 256 pieces per rank, and more than 32 messages per connection so
that the lowering spreads each connection over two channels (at 32 or fewer it fuses a receive and a send
on one thread block, which serializes an Allreduce's two phases), at most `OPS_PER_LINK`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import networkx as nx

from smtcoll.model import Collective, Schedule, Topology
from smtcoll.synth.constructions.common import NotApplicable, kind
from smtcoll.synth.constructions.exchange import OPS_PER_LINK, PIECES_PER_RANK
from smtcoll.synth.constructions.pipeline import Plan, hop_latencies, replay_time, schedule_transfers, timed_schedule
from smtcoll.synth.constructions.rings import node_order, nodes_of, uplinks
from smtcoll.synth.constructions.trees import node_ranks

MAX_MESSAGES_PER_RANK = 4 * PIECES_PER_RANK
FUSED_LIMIT = 32  # messages per connection up to which the lowering fuses two connections on a thread block


def pairwise(topo: Topology, base: Collective, fused: bool = False, planes: bool = False,
             pieces: int = PIECES_PER_RANK, ring: bool = False, direct: int = 0, grid: bool = False,
             order: str = "") -> Schedule:
    """The shifted pairwise Allgather / ReduceScatter / Allreduce (module docstring), checked by the caller.
    `fused`: at most FUSED_LIMIT messages per connection (`pairwises`); `planes`: where every pair is linked,
    the groups of the fastest links taken as nodes (`_planes`); `grid`: across nodes, each node's planes taken
    as nodes (`_grid`); `pieces`: about how many each rank sends per node or group; `direct`: how many pieces
    of an Allgather or Allreduce cross the NICs first; `order`: "rounds" or "time" (below), else the one that
    replays faster."""
    what = kind(base)
    if what not in ("allgather", "reducescatter", "allreduce"):
        raise NotApplicable("the pairwise exchange covers Allgather, ReduceScatter and Allreduce")
    if topo.ranks < 2:
        raise NotApplicable("one rank has nothing to exchange")
    # an Allreduce over the planes sums over the nodes and broadcasts over the planes (`pairwises`)
    lay = _Layout(topo, planes, ring, grid and what != "allreduce")
    spread = _Layout(topo, grid=True) if grid and what == "allreduce" else lay
    c = _piece_count(lay, what, pieces, fused)
    plan = Plan()
    if what == "allreduce":
        n = topo.ranks
        coll = base.with_chunks(n * c)
        into: dict[tuple[int, int], list[int]] = {}
        for t in range(c):  # no lag: the Allgather of piece t waits for its sums anyway
            if _is_direct(t, c, direct):
                _reduce_direct(plan, lay, t, lambda d, p: p * n + d, into)
                _gather_direct(plan, lay, t, lambda d, p: p * n + d, into)
                continue
            _reduce_remote(plan, lay, t, lambda d, p: p * n + d, into)
            _reduce_local(plan, lay, t, lambda d, p: p * n + d, into)
            _gather(plan, spread, t, lambda d, p: p * n + d, into)
    else:
        coll = base.with_chunks(c)
        if what == "allgather":
            for t in range(c):
                if _is_direct(t, c, direct):
                    _gather_direct(plan, lay, t, lambda d, p: d * c + p, {})
                else:
                    _gather(plan, spread, t, lambda d, p: d * c + p, {})
        else:
            into = {}
            for t in range(c + RS_LAG):
                if t < c:
                    _reduce_remote(plan, lay, t, lambda d, p: d * c + p, into)
                if 0 <= t - RS_LAG < c:
                    _reduce_local(plan, lay, t - RS_LAG, lambda d, p: d * c + p, into)
    # the shifted rounds (`schedule_transfers`: every port serves one piece a round) or the order in time
    # (`timed_schedule`: NICs slower than ports, message latencies), whichever replays faster (`replay_time`)
    lat = hop_latencies(topo, lay.machine_node if grid else lay.node, coll.chunk_factor)
    if order == "rounds":
        steps = schedule_transfers(topo, plan)
    elif order == "time":
        steps = timed_schedule(topo, plan, lat)
    else:
        steps = min((schedule_transfers(topo, plan), timed_schedule(topo, plan, lat)),
                    key=lambda s: replay_time(topo, s, lat))
    return Schedule(topo, coll, steps, name="pairwise")


def _piece_count(lay: _Layout, what: str, pieces: int, fused: bool) -> int:
    """The pieces of each block (`pairwise`'s c)."""
    # messages per connection inside a node: a rank's own block, plus one per other node's (relayed)
    blocks = len(lay.members)
    phases = 2 if what == "allreduce" else 1
    # across nodes a partial sum waits for all its shares before it crosses: smaller pieces shorten the wait
    # (a100 x2 ReduceScatter 0.86 -> 0.90 of the bound, Allreduce 0.59 -> 0.83; Allgather, which forwards
    # each piece as it arrives, keeps the base count: 0.96, and 0.70 with the doubled one)
    # an Allreduce, ordered in time (`timed_schedule`), gains from the most pieces its connections hold: a100 x2
    # at 256 MiB 0.94 of the bound with 18 per rank and node, 0.97 with 24 (docs/benchmarks.md, session 7)
    per_rank = pieces * (blocks if what != "allgather" else 1) * (phases if blocks > 1 else 1)
    per_conn = pieces_per_connection(len(lay.members[0]), phases * blocks, per_rank)
    if fused:
        per_conn = max(1, FUSED_LIMIT // (phases * blocks)) * phases * blocks
    return per_conn // (phases * blocks)


def pairwises(topo: Topology, base: Collective) -> list[Schedule]:
    """`pairwise`'s schedule, then, for Allgather and ReduceScatter across nodes, the one with at most
    FUSED_LIMIT messages per connection; and where every pair is linked at unlike speeds, the same over the
    groups of the fastest links as nodes (`_planes`), and across nodes made of such
    groups, the same over every node's groups (`_grid`) (the sweep's candidates). Above the limit the lowering spreads a
    connection over two channels, and across nodes a rank has so many connections (a peer in its node and a
    rail in every other node, each way) that at 8 instances it waits for more thread blocks than the
    executor's int8_t dependency ids name (a100 x3 ReduceScatter: 176): its best is 4 instances, 0.93 of the
    bound at 256 MiB. Fused, the program lowers at 8 instances: 0.95 (docs/benchmarks.md, "Unseen machines
    and sizes (session 9)"). A ReduceScatter also gets one with RS_COARSE_PIECES (below). Not for Allreduce,
    whose two phases a fused thread block would serialize: it gets the one with COARSE_PIECES instead, and
    across nodes each of the two in both orders (`order`)."""
    out = []
    # over the planes of several nodes: a partial sum waits at every hop of its way (its shares, the other plane's
    # rail, the NIC), so an Allreduce sums over the nodes and sends on over the planes (dualplane8 x 2 at 256 MiB:
    # 0.94 of the bound, 0.87 summed over the planes); a ReduceScatter over the planes loses at 256 MiB and wins
    # at 1 GiB (0.82 / 0.90 against 0.84 / 0.84 over the nodes), so the sweep gets both (one piece count: the
    # other counts and the fused one lose at both sizes)
    grid = _grid(topo) is not None
    modes: list[dict[str, Any]] = [{}, *([{"planes": True}] if _planes(topo) is not None else []),
                                   *([{"grid": True}] if grid else [])]
    for mode in modes:
        lay = _Layout(topo, **mode)
        if len(lay.members) < 2:
            out.append(pairwise(topo, base, **mode))
            continue
        variants: list[dict[str, Any]]
        if kind(base) == "reducescatter" and mode.get("grid"):
            variants = [{}]
        elif kind(base) != "allreduce":
            variants = [{}, {"fused": True}, *([{"pieces": RS_COARSE_PIECES}] if kind(base) == "reducescatter" else [])]
        elif max(lay.machine_node) == 0:
            variants = [{}, {"pieces": COARSE_PIECES}]
        else:
            # an Allreduce across nodes in both orders (the sweep times them): the replay misjudges its two phases
            # on shared connections either way (256 MiB, best instances, the order chosen first: a100 x 2 in 144
            # chunks rounds 0.83 / in time 0.965 of the bound, h100 x 2 0.75 / 0.93; dualplane8 x 2 over the
            # planes in time 0.84 / rounds 0.94)
            variants = [{"pieces": p, "order": o} for p in (PIECES_PER_RANK, COARSE_PIECES) for o in ("rounds", "time")]
        seen = set()
        for variant in variants:
            sched = pairwise(topo, base, **variant, **mode)
            if (sched.collective.chunk_factor, variant.get("order")) not in seen:
                seen.add((sched.collective.chunk_factor, variant.get("order")))
                out.append(sched)
        if _uplinks(topo, lay):
            out.append(pairwise(topo, base, ring=True, **mode))
        # some pieces across the NICs first, where the NICs have time to spare (`direct_pieces`); an Allreduce
        # also in half the pieces, each message's latency counting as well (h100 x 2 at 256 MiB, 2 instances,
        # one direct piece: 24 pieces 0.943 of the bound, 18 0.972; at 1 GiB 0.977 and 0.982)
        tried = {"allreduce": (PIECES_PER_RANK // 2, PIECES_PER_RANK),
                 "allgather": (PIECES_PER_RANK,)}.get(kind(base), ())
        counts = {_piece_count(lay, kind(base), pieces, False): pieces for pieces in tried}  # one per count
        for c, pieces in sorted(counts.items(), reverse=True):
            out += [pairwise(topo, base, pieces=pieces, direct=k, **mode)
                    for k in direct_counts(direct_pieces(topo, lay, c))]
    return out


def _uplinks(topo: Topology, lay: _Layout) -> bool:
    """Whether the rails should also run as a ring of the nodes (`rings.node_order`): three nodes or more,
    behind shared uplinks (`rings.uplinks`). The direct rail sends take each piece across such a group once
    for every node behind it, the ring once for each time it crosses (held-out fattree4x4, two nodes a leaf:
    Allgather 0.72 -> 0.99 of the bound at 1 GiB). Without such a group the two load every NIC alike, and the
    ring's longer pipeline only adds latency."""
    return len(lay.members) >= 3 and not lay.grid and bool(uplinks(topo, lay.node))


# An Allreduce over the groups of the fastest links also with fewer, larger pieces: each message pays a hop
# latency, and at 64-256 MiB that outweighs the shorter pipeline end (dualplane8, Simple, best instance count:
# 192 chunks 0.74 / 0.93 / 0.996 of the bound at 64 MiB / 256 MiB / 1 GiB, 128 chunks 0.93 / 0.985 / 0.994).
# Across NICs too (session 17): on two nodes the long pipeline wants the many pieces (a100 x2 at 256 MiB: 384
# chunks 0.987, 144 0.917), on three and more the many lower at 2 instances at most and lose (h100 x3, 256 MiB,
# Simple: 384 chunks x2 1272 us, 168 chunks x2 1078, x4 1065): the sweep takes the faster
COARSE_PIECES = 48
# A ReduceScatter's pieces count per block (its first schedule is several times finer than an Allgather's), and
# across several nodes the runtimes' readers then refuse its program at 4 instances (over MAX_NODES XML nodes per
# rank): the sweep also gets one with a quarter of them (h100 x 4, 256 MiB: 24 chunks at 2 instances 0.85 of the
# bound, 9 chunks at 4 instances 0.92)
RS_COARSE_PIECES = PIECES_PER_RANK // 4
RS_LAG = 2  # ReduceScatter: pieces by which the sums for the node's own ranks trail those sent to other nodes


def pieces_per_connection(p: int, blocks: int, per_rank: int = PIECES_PER_RANK) -> int:
    """Messages per connection inside a node of `p` ranks, a multiple of `blocks` (the blocks each piece
    index moves over one connection): about `per_rank` per rank, above the lowering's fusion limit
    while a rank sends at most MAX_MESSAGES_PER_RANK, at most OPS_PER_LINK."""
    per_block = max(1, round(per_rank / (blocks * max(1, p - 1))))
    unfused = FUSED_LIMIT // blocks + 1
    if unfused * blocks * (p - 1) <= MAX_MESSAGES_PER_RANK:  # beyond, the program's size would not pay
        per_block = max(per_block, unfused)
    per_block = max(1, min(per_block, OPS_PER_LINK // blocks))
    return per_block * blocks


Address = Callable[[int, int], int]  # (owner rank, piece index) -> address


def _planes(topo: Topology) -> list[int] | None:
    """Where every pair of ranks is linked but not at one speed: the groups joined by the fastest links (each
    rank's group), if there are two or more of one size and more than one rank; else None.

    Why: the timed run holds a switch port group for a whole message, and a message between groups also
    holds the slower group they share (held-out dualplane8: a GPU's 150 GB/s port, of which 100 GB/s
    reach the other 4-GPU half). In one exchange a GPU receives 4 such messages for 3 fast ones, so two of
    them follow each other at the slower speed every round: 14/15 of the port at best (0.93 of the bound
    in all four collectives). With the groups as nodes a block crosses once, to its rail, and is relayed
    in the group: one crossing in seven messages, 0.99 of the bound (Allgather, 256 MiB and 1 GiB)."""
    parts = _fastest_groups(topo, list(range(topo.ranks)))
    if parts is None:
        return None
    node = [0] * topo.ranks
    for i, c in enumerate(parts):
        for r in c:
            node[r] = i
    return node


def _fastest_groups(topo: Topology, ranks: list[int]) -> list[list[int]] | None:
    """`_planes` inside `ranks`: where every pair of them is linked at unlike speeds, the groups that their
    fastest links join, if two or more of one size and more than one rank; else None."""
    within = set(ranks)
    if len(ranks) < 4 or not all(topo.has_link(s, d) for s in ranks for d in ranks if s != d):
        return None
    speed = {(lk.src, lk.dst): float(lk.gbps or lk.bandwidth) for lk in topo.links
             if lk.src in within and lk.dst in within}
    top = max(speed.values())
    if min(speed.values()) == top:
        return None
    graph: nx.Graph = nx.Graph()
    graph.add_nodes_from(ranks)
    graph.add_edges_from(e for e, v in speed.items() if v == top)
    parts = sorted(sorted(c) for c in nx.connected_components(graph))
    if len(parts) < 2 or len({len(c) for c in parts}) != 1 or len(parts[0]) < 2:
        return None
    return parts


def _grid(topo: Topology) -> list[int] | None:
    """Across nodes whose ranks form planes (`_fastest_groups` inside each node, the same local ranks in every
    node): each rank's group (node, plane), numbered node by node; else None.

    Why: with the nodes as the pairwise exchange's groups, a rank of held-out dualplane8 x 2 (two planes of 4
    GPUs a node, 100 of a port's 150 GB/s reaching the other plane, a NIC per plane) relays 4 of its 7 messages
    across the planes, and the run ends on the cross-plane links with the ports two thirds busy (0.87 of the
    bound at 256 MiB). Over the planes a block crosses a plane once, to its rail, and a node once, over its
    plane's NIC (`_Layout.hop`)."""
    node = nodes_of(topo)
    members = node_ranks(node)
    if len(members) < 2:
        return None
    first = _fastest_groups(topo, members[0])
    if first is None:
        return None
    local = [[members[0].index(r) for r in part] for part in first]
    group = [0] * topo.ranks
    for b, m in enumerate(members):
        parts = _fastest_groups(topo, m)
        if parts is None or [[m.index(r) for r in part] for part in parts] != local:
            return None
        for i, part in enumerate(parts):
            for r in part:
                group[r] = b * len(parts) + i
    return group


class _Layout:
    """Nodes of equal size, every pair inside a node linked, and every rank linked to the rank of the same
    local index in every other node (its rail); one node when every pair is linked, unless `planes`
    (`_planes`' groups as nodes)."""

    def __init__(self, topo: Topology, planes: bool = False, ring: bool = False, grid: bool = False) -> None:
        n = topo.ranks
        self.ring = ring
        self.machine_node = node = nodes_of(topo)
        self.grid = grid
        if grid:
            split = _grid(topo)
            if split is None:
                raise NotApplicable("the planes of the nodes apply across nodes whose ranks form equal planes")
            node = split
        elif planes:
            split = _planes(topo)
            if split is None:
                raise NotApplicable("the groups of the fastest links apply where every pair is linked at unlike "
                                    "speeds")
            node = split
        elif all(topo.has_link(s, d) for s in range(n) for d in range(n) if s != d):
            node = [0] * n  # every pair linked: one exchange, no relays
        self.node = node
        self.members = node_ranks(node)
        self.planes = len(self.members) // (max(self.machine_node) + 1) if grid else 1  # groups a node
        self.order = node_order(topo, node) if ring else list(range(len(self.members)))
        p = len(self.members[0])
        if any(len(m) != p for m in self.members):
            raise NotApplicable("nodes of unequal size")
        self.local = {r: i for m in self.members for i, r in enumerate(m)}
        for m in self.members:
            for s in m:
                for d in m:
                    if s != d and not topo.has_link(s, d):
                        raise NotApplicable(f"no link {s} -> {d}: the pairwise exchange needs every pair of a "
                                            "node linked")
        for s in range(n):
            for b in range(len(self.members)):
                if b != node[s] and not topo.has_link(s, self.rail(s, self.hop(node[s], b))):
                    raise NotApplicable(f"no link {s} -> {self.rail(s, b)}: the pairwise exchange needs every "
                                        "rank linked to its rail (the same local rank) in every other node")

    def hop(self, g: int, b: int) -> int:
        """The group after g on the way from group g to group b: b itself, except on a grid, where a block first
        crosses to b's plane in its own node, then to b's node (each block crosses a node's NIC once)."""
        if not self.grid or g // self.planes == b // self.planes or g % self.planes == b % self.planes:
            return b
        return g - g % self.planes + b % self.planes

    def distance(self, g: int, b: int) -> int:
        """Hops from group g to group b (`hop`)."""
        out = 0
        while g != b:
            g, out = self.hop(g, b), out + 1
        return out

    def next_node(self, b: int, j: int) -> int:
        """The node j places after node b in the ring of the nodes (`rings.node_order`)."""
        return self.order[(self.order.index(b) + j) % len(self.order)]

    def rail(self, s: int, b: int) -> int:
        return self.members[b][self.local[s]]

    def peer(self, s: int, k: int) -> int:
        m = self.members[self.node[s]]
        return m[(self.local[s] + k) % len(m)]

    def others(self, s: int) -> list[int]:
        return [b for b in range(len(self.members)) if b != self.node[s]]


def _gather(plan: Plan, lay: _Layout, t: int, addr: Address, after: dict[tuple[int, int], list[int]]) -> None:
    """Piece t of every rank's block to every rank: over its rails first, then to every peer of its node in
    shifted slots, then the pieces that came over the rails, each relayed to every peer once it arrived.
    `after[(d, t)]`: the transfers that must reach owner d before it sends (an Allreduce's sums)."""
    n = len(lay.node)
    p = len(lay.members[0])
    nic: dict[tuple[int, int], int] = {}  # (origin, node) -> the transfer that brings its piece into the node
    if lay.ring:
        m = len(lay.members)
        prev = {s: after.get((s, t), []) for s in range(n)}
        for j in range(1, m):
            for s in range(n):
                b = lay.next_node(lay.node[s], j)
                nic[(s, b)] = plan.add(addr(s, t), lay.rail(s, lay.next_node(lay.node[s], j - 1)), lay.rail(s, b),
                                       prev[s])
                prev[s] = [nic[(s, b)]]
    else:  # nearest groups first: on a grid a block reaches the far plane through its rail's node
        for s in range(n):
            g = lay.node[s]
            for b in sorted(lay.others(s), key=lambda b: lay.distance(b, g)):
                x = lay.hop(b, g)  # the group b receives from: the hop back towards the owner
                src, deps = (s, after.get((s, t), [])) if x == g else (lay.rail(s, x), [nic[(s, x)]])
                nic[(s, b)] = plan.add(addr(s, t), src, lay.rail(s, b), deps)
    for k in range(1, p):
        for s in range(n):
            plan.add(addr(s, t), s, lay.peer(s, k), after.get((s, t), []))
    for k in range(1, p):
        for h in range(n):
            for b in lay.others(h):
                o = lay.rail(h, b)
                plan.add(addr(o, t), h, lay.peer(h, k), [nic[(o, lay.node[h])]])


def _reduce_remote(plan: Plan, lay: _Layout, t: int, addr: Address, into: dict[tuple[int, int], list[int]]) -> None:
    """Piece t of the blocks owned in other nodes: every rank sends its share to the owner's rail in its own
    node (shifted slots), which sends the node's partial sum over the rail once all arrived; the transfers
    into each owner are collected in `into[(owner, t)]`."""
    n = len(lay.node)
    p = len(lay.members[0])
    partial: dict[tuple[int, int], list[int]] = {}
    for k in range(1, p):
        for s in range(n):
            h = lay.peer(s, k)
            for b in lay.others(h):
                d = lay.rail(h, b)
                partial.setdefault((h, d), []).append(plan.add(addr(d, t), s, h))
    if lay.ring:  # each owner's partial sum goes round the nodes on its rail, from the node after the owner's
        m = len(lay.members)
        chain: dict[int, list[int]] = {d: [] for d in range(n)}
        for j in range(1, m):
            for d in range(n):
                h = lay.rail(d, lay.next_node(lay.node[d], j))
                x = plan.add(addr(d, t), h, lay.rail(d, lay.next_node(lay.node[d], j + 1)),
                             partial.get((h, d), []) + chain[d])
                chain[d] = [x]
        for d in range(n):
            into.setdefault((d, t), []).extend(chain[d])
        return
    # farthest groups first: on a grid a partial sum first joins the one of its rail in the owner's plane of its
    # own node, which then crosses the NIC (each partial sum crosses a node's NIC once)
    for far in sorted({lay.distance(lay.node[h], b) for h in range(n) for b in lay.others(h)}, reverse=True):
        for h in range(n):
            for b in lay.others(h):
                if lay.distance(lay.node[h], b) != far:
                    continue
                d, to = lay.rail(h, b), lay.rail(h, lay.hop(lay.node[h], b))
                x = plan.add(addr(d, t), h, to, partial.get((h, d), []))
                (into.setdefault((d, t), []) if to == d else partial.setdefault((to, d), [])).append(x)


def _reduce_local(plan: Plan, lay: _Layout, t: int, addr: Address, into: dict[tuple[int, int], list[int]]) -> None:
    """Piece t of the blocks owned in the sender's node: straight to the owner, shifted slots (collected in
    `into[(owner, t)]`)."""
    n = len(lay.node)
    p = len(lay.members[0])
    for k in range(1, p):
        for s in range(n):
            d = lay.peer(s, k)
            into.setdefault((d, t), []).append(plan.add(addr(d, t), s, d))


def _is_direct(t: int, c: int, direct: int) -> bool:
    """Whether piece t of c is one of the `direct` pieces, spread evenly (the middle of each stretch)."""
    return direct > 0 and (t * direct + c // 2) % c < direct


def _reduce_direct(plan: Plan, lay: _Layout, t: int, addr: Address, into: dict[tuple[int, int], list[int]]) -> None:
    """Piece t of every block, its shares across the NICs first: every rank sends its share of each block owned
    in another node to its own rail there, which adds it to its own share before it sends that to the owner;
    the owner's rails send theirs straight to it (collected in `into[(owner, t)]`)."""
    n = len(lay.node)
    p = len(lay.members[0])
    came: dict[tuple[int, int], list[int]] = {}
    for k in range(p):
        for s in range(n):
            for b in lay.others(s):
                r = lay.rail(s, b)
                d = lay.peer(r, k)
                x = plan.add(addr(d, t), s, r)
                (into.setdefault((d, t), []) if k == 0 else came.setdefault((r, d), [])).append(x)
    for k in range(1, p):
        for s in range(n):
            d = lay.peer(s, k)
            into.setdefault((d, t), []).append(plan.add(addr(d, t), s, d, came.get((s, d), [])))


def _gather_direct(plan: Plan, lay: _Layout, t: int, addr: Address, after: dict[tuple[int, int], list[int]]) -> None:
    """Piece t of every rank's block to every rank, across the NICs last: to every peer of its node, then every
    rank of the node sends each of the node's pieces to its rails."""
    n = len(lay.node)
    p = len(lay.members[0])
    got: dict[tuple[int, int], int] = {}
    for k in range(1, p):
        for s in range(n):
            got[(lay.peer(s, k), s)] = plan.add(addr(s, t), s, lay.peer(s, k), after.get((s, t), []))
    for k in range(p):
        for h in range(n):
            o = lay.peer(h, k)
            deps = after.get((h, t), []) if k == 0 else [got[(h, o)]]
            for b in lay.others(h):
                plan.add(addr(o, t), h, lay.rail(h, b), deps)


def direct_pieces(topo: Topology, lay: _Layout, pieces: int) -> int:
    """How many of `pieces` an Allgather or Allreduce sends across the NICs first (`_gather_direct`,
    `_reduce_direct`): the share that balances a rank's time on its node's links and on its NICs, rounded
    down. Per piece and block a rank sends m (p - 1) messages in its node and m - 1 across for the relayed
    piece, p - 1 and p (m - 1) for the direct one (m nodes of p ranks)."""
    m, p = len(lay.members), len(lay.members[0])
    if m < 2 or lay.ring or lay.grid:
        return 0
    s = lay.members[0][0]
    inside = _egress(topo, s, [d for d in lay.members[0] if d != s])
    across = _egress(topo, s, [lay.rail(s, b) for b in lay.others(s)])
    if not inside or not across:
        return 0
    relayed, direct = (m * (p - 1), m - 1), (p - 1, p * (m - 1))
    slack = relayed[0] / inside - relayed[1] / across
    gain = (relayed[0] - direct[0]) / inside + (direct[1] - relayed[1]) / across
    return int(pieces * slack / gain) if slack > 0 else 0


def direct_counts(balance: int) -> list[int]:
    """The direct piece counts offered for a balance of `balance` (`direct_pieces`): the powers of two up to half
    of it, and 1 where it is 1. The run falls off a cliff above the balance's half: the direct pieces' NIC sends
    come in bursts, where the balance assumes the NIC busy all the time (held-out dualplane8 as two planes,
    Allreduce at 256 MiB, balance 14 of 24: 4, 5 and 6 pieces 0.99 of the bound, 7 0.64-0.72; h100 x 2, balance
    1: 1 piece 0.943-0.967 against 0.875-0.900 with none, 2 pieces 0.86-0.88)."""
    out, k = [], 1
    while balance and k <= max(1, balance // 2):
        out.append(k)
        k *= 2
    return out


def _egress(topo: Topology, s: int, dsts: list[int]) -> float:
    """Bytes per microsecond that rank s can send to `dsts` at once (`throughput.rates`: every link and group in
    one unit): its links, each switch group that bounds some of them at most its own rate, shared alike by its
    senders where it has several receivers too (a NIC of several GPUs)."""
    from smtcoll.bounds.throughput import rates

    r = rates(topo)
    mine = [e for e, l_ in enumerate(topo.links) if l_.src == s and l_.dst in dsts]
    links = sum(r.link[e] for e in mine)
    total = links
    for g, sw in enumerate(topo.switches):
        bound = [e for e in mine if g in r.groups_of[e]]
        if bound:
            share = r.group[g] / (len(sw.srcs) if len(sw.dsts) > 1 else 1)
            total = min(total, links - sum(r.link[e] for e in bound) + share)
    return float(total)
