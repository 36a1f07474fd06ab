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

`lift_groups` (session 15) takes k >= 3 copies: the nodes in k groups of m consecutive nodes, each running the
m-node schedule (every GPU of group a then holds T_a, its group's total), then windows of groups W_w(a) = T_a +
T_(a-1) + ... + T_(a-w+1) grown across the NICs by every GPU at once (windows_allreduce's direct plan, over
groups instead of nodes: every GPU of a group is a receiver, so every GPU ends with the total and no copies
follow): ceil(log2 k) steps more. mi250 x 9 / x 12 from the symmetric search's 4 steps on 3 nodes: 4 + 2 = 6
(the engine's 7; bound 4), x 15 4 + 3 = 7 (8).
"""

from __future__ import annotations

import itertools
import re

from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, SwitchGroup, Topology
from smtcoll.synth.scale.nodes_allreduce import _named_nodes
from smtcoll.synth.scale.windows_allreduce import Round, _build

MAX_TRIALS = 100  # combinations of insertion rounds checked (nvl36: 7 x 7)


def half_machine(topo: Topology) -> Topology | None:
    """The first half of the nodes of a machine of an even number (4 or more) of identical nodes of
    consecutive ranks, with its links and its switch groups restricted to them (the machine composed of
    half the nodes); None otherwise."""
    n = node_count(topo)
    return None if n is None or n < 4 or n % 2 else sub_machine(topo, n // 2)


def node_count(topo: Topology) -> int | None:
    """The number of nodes of a machine of identical nodes of consecutive ranks, None if it is not one."""
    nodes = node_of(topo) or _named_nodes(topo)
    if nodes is None:
        return None
    n = max(nodes) + 1
    return n if nodes == [r // (topo.ranks // n) for r in range(topo.ranks)] else None


def sub_machine(topo: Topology, m: int) -> Topology | None:
    """The first m nodes of a machine of identical nodes of consecutive ranks (1 <= m < its node count), with
    its links and switch groups restricted to them: the machine composed of m nodes; None otherwise."""
    n = node_count(topo)
    if n is None or not 1 <= m < n:
        return None
    h = m * (topo.ranks // n)
    links = [l for l in topo.links if l.src < h and l.dst < h]
    groups = []
    for g in topo.switches:
        srcs, dsts = [x for x in g.srcs if x < h], [x for x in g.dsts if x < h]
        if srcs and dsts:
            groups.append(SwitchGroup(srcs, dsts, g.bandwidth, g.name))
    named = re.search(r"-(\d+)nodes(-reversed)?$", topo.name)
    if named:
        name = topo.name[:named.start()] + f"-{m}nodes" + (named.group(2) or "")
    else:
        name = f"{topo.name}-half" if 2 * m == n else f"{topo.name}-{m}of{n}"
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


def insertions_checked(topo: Topology, half_steps: int) -> bool:
    """Whether `lift_nodes` checks its combinations of insertion rounds for a schedule of `half_steps` steps on
    half of `topo` (at most MAX_TRIALS of them); it tries none otherwise."""
    n = node_count(topo)
    if n is None:
        return False
    kinds = max(_positions(topo, topo.ranks // n)) + 1
    return (half_steps + 1) ** kinds <= MAX_TRIALS


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


def group_rounds(topo: Topology, m: int) -> list[Round] | None:
    """The windows rounds (windows_allreduce's direct plan) over the k = n / m groups of m consecutive nodes
    of `topo` as (receiving GPU, GPU whose window it adds, from group a - offset), GPUs numbered inside a group;
    None where k < 3, where a GPU is no receiver of its twin in every other node (its NIC lane), where GPUs
    share a NIC (the plan has every GPU send and receive across the NICs in every round) or no plan exists."""
    n = node_count(topo)
    if n is None or m < 1 or n % m or n // m < 3:
        return None
    p = topo.ranks // n
    for g in topo.switches:
        if len(g.srcs) > 1 and len(g.dsts) > 1 and {x // p for x in g.srcs}.isdisjoint({x // p for x in g.dsts}):
            return None
    linked = {(l.src, l.dst) for l in topo.links if l.bandwidth > 0}
    # GPU h reaches g of every other node: every GPU of a group reaches g's places in every other group
    into = {g: [h for h in range(p) if all((b * p + h, a * p + g) in linked for a in range(n) for b in range(n)
                                            if a != b)] for g in range(p)}
    if any(g not in into[g] for g in range(p)):
        return None
    places = {i * p + g: [j * p + h for j in range(m) for h in into[g]] for i in range(m) for g in range(p)}
    return _build(n // m, sorted(places), places)


def lift_groups(topo: Topology, coll: Collective, base: Schedule) -> Schedule | None:
    """The schedule of the module docstring (`lift_groups`) on `topo` from `base` (one round a step, on its
    first m nodes, m dividing the node count into 3 or more groups), checked; None where it does not apply
    or the checker refuses it."""
    n, h = node_count(topo), base.topology.ranks
    if n is None or len(coll.addresses) != 1 or any(st.rounds != 1 for st in base.steps) or topo.ranks % h:
        return None
    p = topo.ranks // n
    if h % p:
        return None
    rounds = group_rounds(topo, h // p)
    if rounds is None:
        return None
    k, a = topo.ranks // h, coll.addresses[0]
    steps = [sorted((g * h + x.src, g * h + x.dst) for g in range(k) for x in st.sends) for st in base.steps]
    for rnd in rounds:
        steps.append(sorted((((g - w) % k) * h + src, g * h + dst) for g in range(k) for dst, src, w in rnd))
    sched = Schedule(topo, coll, [Step(1, [Send(a, u, v) for u, v in st]) for st in steps if st])
    return sched if check_schedule(sched).verdict == "ok" else None
