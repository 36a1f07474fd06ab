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
import re

from smtcoll.model import Collective, Schedule, Send, Step, Topology

# links x the rounds the bound asks for: nvl36 x 2 (2,664 links, 48 rounds) 0.13 M, 1.5 CPU s; x 3 (4,212 x 72)
# 0.30 M, 3.7 s. Beyond, the engine's other methods answer
WORK_LIMIT = 400_000


def round_deliveries(topo: Topology, coll: Collective, max_steps: int, least_rounds: int, imports: bool = False,
                     plan: list[list[tuple[int, int, int]]] | None = None) -> Schedule | None:
    """The schedule (module docstring), or None: a combining collective, beyond WORK_LIMIT (links x
    `least_rounds`), a round that delivers nothing, or more than `max_steps` rounds (it stops as soon as some
    rank lacks more than its in-links carry in the rounds left). `plan`: per round, the sends (chunk, from, to)
    between nodes (`nic_plan`); the program then chooses only the links inside the nodes."""
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
    nodes = topo.node_count if imports or plan is not None else 1
    node = [r * nodes // p for r in range(p)]
    steps: list[Step] = []
    while True:
        lack = [wants[v] & ~holds[v] for v in range(p)]
        planned = [(c, u, v) for c, u, v in (plan[len(steps)] if plan is not None and len(steps) < len(plan) else [])
                   if holds[u] >> c & 1 and lack[v] >> c & 1]
        arriving = [0] * p
        for c, _, v in planned:
            arriving[v] |= 1 << c
        inside = [0] * nodes  # per node, the chunks some rank of it holds
        for r in range(p):
            inside[node[r]] |= holds[r]
        fresh = [lack[v] & ~inside[node[v]] for v in range(p)]  # what v may take from another node
        useful = functools.partial(_useful, holds, lack, fresh, node)
        if not any(lack):
            return Schedule(topo, coll, steps)
        lack = [x & ~a for x, a in zip(lack, arriving, strict=True)]
        # what the rank furthest behind still lacks over all its in-links' bandwidth: rounds it needs at least
        if len(steps) + max(-(-x.bit_count() // incap[v]) if x else 0 for v, x in enumerate(lack)) > max_steps:
            return None
        cand = [i for i, (u, v, _) in enumerate(links) if useful(u, v) and (plan is None or node[u] == node[v])]
        if not cand and not planned:
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
        x = np.zeros(0, dtype=int)
        if n:
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
        sends: list[tuple[int, int, int]] = list(planned)
        gained = list(arriving)
        crossing = [0] * nodes  # per node, the chunks that enter it from other nodes this round
        for v, ks in sorted(into.items()):
            taken = arriving[v]
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


def nic_plan(topo: Topology, coll: Collective) -> list[list[tuple[int, int, int]]] | None:
    """Allgather across identical nodes whose NICs split each node's ranks: NIC x of node i sends its senders'
    own chunks, each to every other node, to NIC x of node i + d (d = 1 .. n - 1, the same d for every node in
    a slot of a round, so that each NIC takes as many as it sends), its receivers in turn: per round the sends
    (chunk, from, to), each NIC its bandwidth a round. No chunk waits for another: a sender's own chunk is there
    from the start (held-out quad4 x 5: 2 NICs of a pair each, 16 imports a node in 8 rounds, the last spread in
    one: 9, the bound, where the most deliveries per round took 10). None where the nodes' NIC groups (named
    `nicX-out@nodeI`, `nicX-in@nodeI` by composition) do not split every node's ranks, or a link is missing."""
    n = topo.node_count
    if n < 2 or coll.is_combining:
        return None
    size = topo.ranks // n
    out: dict[tuple[int, int], tuple[tuple[int, ...], int]] = {}
    into: dict[tuple[int, int], tuple[int, ...]] = {}
    for g in topo.switches:
        m = re.fullmatch(r"nic(\d+)-(out|in)@node(\d+)", g.name)
        if m is None:
            continue
        key = (int(m.group(3)), int(m.group(1)))
        if m.group(2) == "out":
            out[key] = (g.srcs, g.bandwidth)
        else:
            into[key] = g.dsts
    own: dict[int, list[int]] = {}
    for r, c in coll.pre:
        own.setdefault(r, []).append(c)
    links = {(l.src, l.dst) for l in topo.links}
    sequences: dict[tuple[int, int], list[tuple[int, int, int]]] = {}  # per NIC: (chunk, from, to) in order
    for i in range(n):
        nics = sorted(x for (j, x) in out if j == i)
        senders = sorted(r for x in nics for r in out[(i, x)][0])
        if senders != list(range(i * size, (i + 1) * size)):
            return None  # not a split of the node's ranks
        for x in nics:
            chunks = [(c, r) for r in out[(i, x)][0] for c in sorted(own.get(r, []))]
            seq = []
            for d in range(1, n):
                receivers = into.get(((i + d) % n, x))
                if not receivers:
                    return None
                for k, (c, r) in enumerate(chunks):
                    v = receivers[k % len(receivers)]
                    if (r, v) not in links:
                        return None
                    seq.append((c, r, v))
            sequences[(i, x)] = seq
    plan: list[list[tuple[int, int, int]]] = []
    for (i, x), seq in sequences.items():
        w = out[(i, x)][1]
        for t in range(-(-len(seq) // w)):
            while len(plan) <= t:
                plan.append([])
            plan[t] += seq[t * w:(t + 1) * w]
    return plan


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
