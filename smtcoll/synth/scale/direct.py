"""Alltoall on machines of several nodes whose NICs link every GPU to every GPU of the other nodes
(MI250: a NIC per GCD, one rail): the chunks between nodes go straight over the NICs, the chunks inside
a node over its own links, in the same rounds.

Between nodes, round t of the (N - 1) * P * C rounds moves, for m = 1 + t // (P*C) and k = (t // C) % P,
the chunk of every rank (n, g) for (n + m mod N, g + k mod P): a Latin square, so every NIC sends one
chunk and receives one each round, which is what the NIC bound counts (mi250 x 3: 32 chunks into each
GCD's NIC, 32 rounds). Inside the nodes: the schedule the engine finds for the Alltoall of one node (its
links and switch groups only), the same in every node, in the first rounds. The two share no link and
no switch group (checked), so the rounds are the larger of the two; the whole schedule is checked before
it is returned, and None where the machine is not of this shape.
"""

from __future__ import annotations

from collections.abc import Callable

from smtcoll.bounds.entry import node_of
from smtcoll.check.schedule import check_schedule
from smtcoll.model import Collective, Schedule, Send, Step, SwitchGroup, Topology
from smtcoll.synth.scale.translate import allgather_shape, alltoall_shape


def direct_alltoall(topo: Topology, coll: Collective, max_steps: int,
                    inner: Callable[[Topology, Collective], Schedule | None]) -> Schedule | None:
    """The schedule (module docstring), `inner` giving the one-node Alltoall; or None."""
    from smtcoll import library

    pairs = alltoall_shape(coll)
    nodes = node_of(topo)
    if pairs is None or nodes is None:
        return None
    n = max(nodes) + 1
    p = topo.ranks // n
    if nodes != [r // p for r in range(topo.ranks)] or p < 2:
        return None
    per = len(next(iter(pairs.values())))
    if (n - 1) * p * per > max_steps:
        return None
    linked = {(l.src, l.dst) for l in topo.links}
    if any((u, v) not in linked for u in range(topo.ranks) for v in range(topo.ranks) if u // p != v // p):
        return None
    # no switch group may bound both a link inside a node and one between nodes
    inside: list[SwitchGroup] = []
    for g in topo.switches:
        kinds = {u // p == v // p for u in g.srcs for v in g.dsts if (u, v) in linked}
        if len(kinds) > 1:
            return None
        if kinds == {True}:
            if any(r // p != 0 for r in (*g.srcs, *g.dsts)):
                continue  # another node's copy
            inside.append(g)
    node = Topology(f"{topo.name}-node", p, [l for l in topo.links if l.src < p and l.dst < p], inside)
    ncoll = library.collective("alltoall", p, None, per)
    npairs = alltoall_shape(ncoll)
    if npairs is None:
        return None
    sched = inner(node, ncoll)
    if sched is None or any(s.rounds != 1 for s in sched.steps):
        return None
    rounds = max((n - 1) * p * per, len(sched.steps))
    steps: list[list[Send]] = [[] for _ in range(rounds)]
    for t in range((n - 1) * p * per):
        m, k, j = 1 + t // (p * per), (t // per) % p, t % per
        for r in range(topo.ranks):
            dst = ((r // p + m) % n) * p + (r % p + k) % p
            steps[t].append(Send(pairs[(r, dst)][j], r, dst))
    local = {c: (s, d, i) for (s, d), cs in npairs.items() for i, c in enumerate(cs)}
    for t, step in enumerate(sched.steps):
        for send in step.sends:
            s, d, i = local[send.chunk]
            for b in range(0, topo.ranks, p):
                steps[t].append(Send(pairs[(b + s, b + d)][i], b + send.src, b + send.dst))
    out = Schedule(topo, coll, [Step(1, sorted(s)) for s in steps if s])
    return out if check_schedule(out).verdict == "ok" else None


def switch_direct(topo: Topology, coll: Collective, max_steps: int) -> Schedule | None:
    """Allgather or Alltoall where every ordered pair of ranks is a link and switch groups bound what the
    ranks send (a switch domain: DGX-2, NVL72, hub-and-spoke:N): in round t, for k = 1 + t // C and
    j = t % C (C chunks per rank, or per pair), every rank r sends its j-th chunk (Allgather) or its j-th
    chunk for r + k (Alltoall) to r + k mod P. A Latin square: every rank sends one chunk and receives one
    each round, (P - 1) * C rounds, which is the port bound where a port carries one chunk per round.
    Checked before it is returned; None where the shape or the links do not fit, or the checker refuses
    (a switch group that cannot carry one chunk per port per round)."""
    p = topo.ranks
    # the links first: cheap, and most machines of many ranks fail it (the shapes cost a pass over chunks)
    if not topo.switches or p < 3 or len(topo.links) < p * (p - 1):
        return None
    linked = {(l.src, l.dst) for l in topo.links}
    if any((u, v) not in linked for u in range(p) for v in range(p) if u != v):
        return None
    own = allgather_shape(coll)
    pairs = alltoall_shape(coll) if own is None else None
    if own is None and pairs is None:
        return None
    per = len(own[0]) if own is not None else len(next(iter(pairs.values()))) if pairs else 0
    if per < 1 or (p - 1) * per > max_steps:
        return None
    steps = []
    for t in range((p - 1) * per):
        k, j = 1 + t // per, t % per
        sends = []
        for r in range(p):
            d = (r + k) % p
            sends.append(Send(own[r][j] if own is not None else pairs[(r, d)][j], r, d))  # type: ignore[index]
        steps.append(Step(1, sorted(sends)))
    out = Schedule(topo, coll, steps)
    return out if check_schedule(out).verdict == "ok" else None
