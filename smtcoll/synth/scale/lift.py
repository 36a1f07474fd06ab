"""One-address Allreduce on 2n identical nodes from a schedule on n: two copies, one NIC exchange inserted.

Nodes 0..n-1 and n..2n-1 each run the n-node schedule (every rank of a copy ends with its copy's total).
Each rank also exchanges its value once with its twin, the same GPU n nodes away (a NIC link: the same rail),
in a round inserted into its own timeline: its sends and arrivals of the n-node schedule from that round on
come one round later. The twins' values are disjoint (one copy each), and from then on every value the rank
sends or takes is its n-node value summed over both copies, so the schedule stays sound as long as a send
finds its sender on the same side of its insertion as its receiver; which insertion rounds achieve that is
left to the checker: one round per position of a GPU behind its NIC (the twins' exchanges of the GPUs that
share a NIC go in different rounds), every combination tried, the first that the checker accepts kept.

nvl36 x 4: the symmetric search's 6 steps on 2 nodes (side 0 of each GPU pair through the NIC in rounds 2 and
5, side 1 in round 4), lifted with the exchanges in rounds 3 (side 0) and 4 (side 1): 7 steps, 1.4x the bound
of 5, where the search on 4 nodes is too large to build and the engine's lanes take 9. One more step than the
n-node schedule, so it helps where the n-node schedule is good and the 2n-node search is out of reach.
"""

from __future__ import annotations

import itertools
import re

from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, SwitchGroup, Topology
from smtcoll.synth.scale.nodes_allreduce import _named_nodes

MAX_TRIALS = 100  # combinations of insertion rounds checked (nvl36: 7 x 7)


def half_machine(topo: Topology) -> Topology | None:
    """The first half of the nodes of a machine of an even number (4 or more) of identical nodes of
    consecutive ranks, with its links and its switch groups restricted to them (the machine composed of
    half the nodes); None otherwise."""
    nodes = node_of(topo) or _named_nodes(topo)
    if nodes is None:
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    if n < 4 or n % 2 or nodes != [r // p for r in range(topo.ranks)]:
        return None
    h = n // 2 * p
    links = [l for l in topo.links if l.src < h and l.dst < h]
    groups = []
    for g in topo.switches:
        srcs, dsts = [x for x in g.srcs if x < h], [x for x in g.dsts if x < h]
        if srcs and dsts:
            groups.append(SwitchGroup(srcs, dsts, g.bandwidth, g.name))
    m = re.search(r"-(\d+)nodes(-reversed)?$", topo.name)
    name = (topo.name[:m.start()] + f"-{n // 2}nodes" + (m.group(2) or "")) if m else f"{topo.name}-half"
    return Topology(name, h, links, groups)


def half_collective(coll: Collective, ranks: int) -> Collective:
    """A one-address Allreduce on `ranks` ranks: rank r contributes chunk r, every rank needs all."""
    return Collective(f"{coll.name}-half", ranks, ranks, [(r, r) for r in range(ranks)],
                      [(r, c) for r in range(ranks) for c in range(ranks)], [0] * ranks)


def lift_nodes(topo: Topology, coll: Collective, half: Schedule) -> Schedule | None:
    """The schedule of the module docstring on `topo` (2n nodes) from `half` (one round a step, on its first
    n nodes), checked; None where no combination of insertion rounds passes the checker (or too many)."""
    h = half.topology.ranks
    if topo.ranks != 2 * h or any(st.rounds != 1 for st in half.steps) or len(coll.addresses) != 1:
        return None
    nodes = node_of(topo) or _named_nodes(topo)
    if nodes is None:
        return None
    p = topo.ranks // (max(nodes) + 1)
    pos = _positions(topo, p)
    kinds = max(pos) + 1
    rounds = [[(s.src, s.dst) for s in st.sends] for st in half.steps]
    last = len(rounds) + 1
    if last ** kinds > MAX_TRIALS:
        return None
    a = coll.addresses[0]
    for at in itertools.product(range(1, last + 1), repeat=kinds):
        steps: list[list[tuple[int, int]]] = [[] for _ in range(last)]
        for base in (0, h):
            for s, sends in enumerate(rounds, start=1):
                for u, v in sends:
                    steps[s - (s < at[pos[v % p]])].append((base + u, base + v))
            for v in range(h):
                steps[at[pos[v % p]] - 1].append((h - base + v, base + v))
        sched = Schedule(topo, coll, [Step(1, [Send(a, u, v) for u, v in sorted(st)]) for st in steps if st])
        if check_schedule(sched).verdict == "ok":
            return sched
    return None


def _positions(topo: Topology, p: int) -> list[int]:
    """Each GPU of a node: its place among the senders of the NIC it sends through (the switch group of
    node 0 that bounds its traffic to other nodes), 0 where it has a NIC of its own."""
    pos = [0] * p
    for g in topo.switches:
        srcs = sorted(g.srcs)
        if len(srcs) > 1 and max(srcs) < p and min(g.dsts) >= p:
            for i, x in enumerate(srcs):
                pos[x] = max(pos[x], i)
    return pos
