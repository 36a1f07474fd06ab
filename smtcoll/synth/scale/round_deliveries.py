"""Multicast collectives (Allgather) a round at a time: each round the most useful deliveries that the links
and switch groups allow together, chosen by an integer program (HiGHS), then a chunk per delivery.

Where every rank's in-ports must be busy in almost every round (nvl36 x 2 Allgather: a GPU pair takes at most
two chunks through its switch ports and one through its shared NIC a round, and needs 142: the set-cut bound
48), a greedy that fills link after link leaves a port idle whenever the one sender that could feed it was
given to another receiver first (56 rounds). Per round here:

- variables: per link (u, v) on which u holds a chunk v lacks, how many chunks it carries, at most its
  bandwidth and what u could give v; with `imports`, across nodes (`Topology.node_count`) only chunks v's whole
  node lacks, and a chunk crosses into a node once a round (session 22: where the NICs are the way in, a NIC
  that carries a chunk its node already holds has lost that round for good; pcie8 x 5, 8 GPUs on a switch with
  one shared NIC, 42 -> 35 rounds, the set-cut bound; pcie4slow x 4 17 -> 14, dualplane8 x 3 15 -> 11; where
  the NICs add to the ports' ingress, a GPU needs chunks its node holds through them: nvl36 x 2 48 with
  duplicates, 56 without);
- rows: every switch group (a port, a NIC) at most its bandwidth; every receiver at most what it lacks;
- objective: the most deliveries, each weighted by what its receiver still lacks (the ranks furthest from done
  are served first, so that no rank is left with more to receive than rounds to receive it);
- then per receiver, over its chosen in-links (the senders with the fewest useful chunks first), distinct
  chunks: first those the fewest of its in-neighbours hold (counted by link bandwidth: a chunk only this
  sender can give it comes now, one its other neighbours hold can come from them later), then the fewest
  copies in the machine (rare chunks spread, so later rounds have senders for them). On torus2x2x4z at C8
  (x/y links of 1, z links of 2) the machine-wide rarest alone left the x/y links to carry what the z links had
  brought to a plane-mate: 35 rounds; with the neighbours first 26 (the greedy 34, the bound 20).

The program is totally unimodular on switch machines (ports and NICs are the rows of a bipartite graph), so
HiGHS answers it at its root; it is still solved as an integer program. Deterministic: the same input gives
the same program. Nothing is trusted: the engine checks the schedule and keeps it only when it is the best.
"""

from __future__ import annotations

import functools

from smtcoll.model import Collective, Schedule, Send, Step, Topology

# links x the rounds the bound asks for: nvl36 x 2 (2,664 links, 48 rounds) 0.13 M, 1.5 CPU s; x 3 (4,212 x 72)
# 0.30 M, 3.7 s. Beyond, the engine's other methods answer
WORK_LIMIT = 400_000


def round_deliveries(topo: Topology, coll: Collective, max_steps: int, least_rounds: int, imports: bool = False,
                     ) -> Schedule | None:
    """The schedule (module docstring), or None: a combining collective, beyond WORK_LIMIT (links x
    `least_rounds`), a round that delivers nothing, or more than `max_steps` rounds (it stops as soon as some
    rank lacks more than its in-links carry in the rounds left)."""
    if coll.is_combining or len(topo.links) * max(least_rounds, 1) > WORK_LIMIT:
        return None
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    p = topo.ranks
    holds = [0] * p  # per rank, its chunks as bits
    for r, c in coll.pre:
        holds[r] |= 1 << c
    wants = [0] * p
    for r, c in coll.post:
        wants[r] |= 1 << c
    links = sorted((l.src, l.dst, l.bandwidth) for l in topo.links)
    group_links: list[list[int]] = [[] for _ in topo.switches]
    for i, (u, v, _) in enumerate(links):
        for g in topo.switches_of(u, v):
            group_links[g].append(i)
    feeders: list[list[tuple[int, int]]] = [[] for _ in range(p)]  # per rank, its in-neighbours and bandwidths
    incap = [0] * p
    for u, v, b in links:
        feeders[v].append((u, b))
        incap[v] += b
    nodes = topo.node_count if imports else 1
    node = [r * nodes // p for r in range(p)]
    steps: list[Step] = []
    while True:
        lack = [wants[v] & ~holds[v] for v in range(p)]
        inside = [0] * nodes  # per node, the chunks some rank of it holds
        for r in range(p):
            inside[node[r]] |= holds[r]
        fresh = [lack[v] & ~inside[node[v]] for v in range(p)]  # what v may take from another node
        useful = functools.partial(_useful, holds, lack, fresh, node)
        if not any(lack):
            return Schedule(topo, coll, steps)
        # what the rank furthest behind still lacks over all its in-links' bandwidth: rounds it needs at least
        if len(steps) + max(-(-x.bit_count() // incap[v]) if x else 0 for v, x in enumerate(lack)) > max_steps:
            return None
        cand = [i for i, (u, v, _) in enumerate(links) if useful(u, v)]
        if not cand:
            return None
        need = [x.bit_count() for x in lack]
        ub = np.array([min(links[i][2], useful(links[i][0], links[i][1]).bit_count()) for i in cand], float)
        pos = {e: k for k, e in enumerate(cand)}
        rows: list[int] = []
        cols: list[int] = []
        caps: list[float] = []
        for g, es in enumerate(group_links):
            ks = [pos[e] for e in es if e in pos]
            if ks and sum(ub[k] for k in ks) > topo.switches[g].bandwidth:
                rows += [len(caps)] * len(ks)
                cols += ks
                caps.append(topo.switches[g].bandwidth)
        into: dict[int, list[int]] = {}
        for k, e in enumerate(cand):
            into.setdefault(links[e][1], []).append(k)
        for v, ks in sorted(into.items()):
            if sum(ub[k] for k in ks) > need[v]:
                rows += [len(caps)] * len(ks)
                cols += ks
                caps.append(need[v])
        n = len(cand)
        matrix = coo_matrix((np.ones(len(rows)), (np.array(rows), np.array(cols))), shape=(len(caps), n)).tocsr()
        cons = [LinearConstraint(matrix, -np.inf, np.array(caps))] if caps else []
        weight = np.array([need[links[e][1]] for e in cand], float)
        # the LP first: on ports and NICs its vertex optimum is integral (a bipartite structure); else the integer
        # program (mi250 x 4: its wide links and NICs make it fractional)
        res = milp(-weight, constraints=cons, bounds=Bounds(np.zeros(n), ub))
        if res.x is not None and np.abs(res.x - np.round(res.x)).max(initial=0.0) > 1e-6:
            res = milp(-weight, constraints=cons, bounds=Bounds(np.zeros(n), ub),
                       integrality=np.ones(n, dtype=np.int64))
        if res.x is None:
            return None
        x = np.round(res.x).astype(int)
        copies: dict[int, int] = {}
        for h in holds:
            while h:
                low = h & -h
                c = low.bit_length() - 1
                copies[c] = copies.get(c, 0) + 1
                h ^= low
        sends: list[tuple[int, int, int]] = []
        gained = [0] * p
        crossing = [0] * nodes  # per node, the chunks that enter it from other nodes this round
        for v, ks in sorted(into.items()):
            taken = 0
            # the links from other nodes first: theirs are the chunks only they can bring
            for k in sorted(ks, key=lambda k: (node[links[cand[k]][0]] == node[v],
                                               useful(links[cand[k]][0], v).bit_count(), k)):
                u = links[cand[k]][0]
                across = node[u] != node[v]
                for _ in range(int(x[k])):
                    avail = useful(u, v) & ~taken & (~crossing[node[v]] if across else -1)
                    if not avail:
                        break
                    c = min(_bits(avail), key=lambda c: (sum(b for w, b in feeders[v] if holds[w] >> c & 1),
                                                         copies.get(c, 0), c))
                    taken |= 1 << c
                    if across:
                        crossing[node[v]] |= 1 << c
                    sends.append((c, u, v))
            gained[v] = taken
        if not sends:
            return None
        for v in range(p):
            holds[v] |= gained[v]
        steps.append(Step(1, [Send(c, u, v) for c, u, v in sorted(sends)]))


def _useful(holds: list[int], lack: list[int], fresh: list[int], node: list[int], u: int, v: int) -> int:
    """The chunks u may give v: v lacks them, and from another node, v's node lacks them (`fresh`)."""
    return holds[u] & (fresh[v] if node[u] != node[v] else lack[v])


def _bits(x: int) -> list[int]:
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out
