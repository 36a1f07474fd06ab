"""The entry bound: chunks must enter a node through its NICs, and the last one must still be forwarded.

For a node S (a set of ranks): D chunks that no rank of S starts with are needed by some rank of S.
Every round at most `cap` chunks cross into S (the bandwidth of the links into S, a switch group whose
sources are all outside S and destinations all inside counting once for all its links), so some chunk
first enters S in round ceil(D / cap) or later, at an entry rank (a destination of those links). A rank
s of S that needs every one of the D chunks receives that chunk no sooner than `hops` rounds later, the
distance to s from the nearest entry rank (one hop per step, and a step has at least one round).
Rounds >= ceil(D / cap) + hops. ndv2 x 4 Allgather: 24 chunks through one NIC (1 per round) into GPU 1,
from which GPUs 4, 6 and 7 are 2 hops away: 26 rounds, where the receive and cut bounds give 24.

With the entries' distances (the ramp): a chunk s needs that first enters S at rank v in round t reaches s in
round t + dist(v, s) at the earliest, so in R rounds the D_s chunks s needs from outside all enter S in rounds
t <= R - dist(v, s): in round t only at the entry ranks within R - t hops of s, E_{R-t}, at most cap_{R-t} of
them (the capacity into E_j from outside S, counted as above, made non-decreasing in j: a step of k rounds
ending in round t moves at most k cap_{R-t}). So D_s <= cap_0 + ... + cap_{R-1}, and R is at least the least
such R. It is never weaker than ceil(D / cap) + hops (cap_j = 0 below the nearest entry's hops, at most cap
above). fattree4x4 Gather: the root's own NIC (cap_0 = 1) and its node's four (cap_j = 4 from one hop on)
bring 1 + 4 + 4 + 4 >= 12 in 4 rounds, not 3; the cut and holdings bounds give 3.

The exit ramp is its mirror: the D chunks that only rank s starts with and that some rank outside S needs
must leave S; one that leaves at rank v in round t was at v when the round began, t >= dist(s, v) + 1, so in
round t only the exits within t - 1 hops of s, X_{t-1}, send them, at most cap_{t-1} (the capacity out of
X_j to outside S, non-decreasing: a step of k rounds sends what was held at its start). D <= cap_0 + ... +
cap_{R-1}. fattree4x4 Scatter: 1, 4, 4, 4 again, 4 rounds.

The nodes are those `Topology.compose` builds (its NIC groups are named `nic<i>-...@node<j>`): the
components of the links that no NIC group bounds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, SwitchGroup, Topology


def node_of(topo: Topology) -> list[int] | None:
    """Each rank's node: the components joined by the links no NIC group bounds, numbered by their
    least rank (`Topology.nic_parts`); None on a machine of one node."""
    parts = topo.nic_parts
    return None if parts is None else list(parts)


def entry_bound(topo: Topology, coll: Collective) -> Bound:
    """The entry bound (module docstring), the best over the nodes, in rounds for the collective as
    given; value None when the machine has one node or no node must import anything."""
    if coll.is_combining:  # partial sums may be combined before they enter: fewer than D would
        return Bound("entry", None, "rounds", {}, "combining collective")
    nodes = node_of(topo)
    if nodes is None:
        return Bound("entry", None, "rounds", {}, "one node")
    best: Bound = Bound("entry", None, "rounds", {}, "no node must import a chunk")
    for i in sorted(set(nodes)):
        inside = {r for r in range(topo.ranks) if nodes[r] == i}
        w = node_witness(topo, coll, inside)
        if w is not None:
            w = {"node": i, "chunks": coll.chunk_factor, **w}
        if w is not None and (best.value is None or w["rounds"] > best.value):
            best = Bound("entry", w["rounds"], "rounds", w,
                         "rounds for this chunk count: the node's imports enter at the capacity into it, the last "
                         "one must still reach the farthest rank")
    return best


def node_witness(topo: Topology, coll: Collective, inside: set[int]) -> dict | None:
    """The bound for one node, with everything needed to re-check it; None when it proves nothing."""
    held = {c for r, c in coll.pre if r in inside}
    imports = sorted({c for r, c in coll.post if r in inside} - held)
    exits = _exit_witness(topo, coll, inside)
    if not imports:
        return exits
    found = _entry_witness(topo, coll, inside, imports)
    if found is None or (exits is not None and exits["rounds"] > found["rounds"]):
        return exits
    return found


def _entry_witness(topo: Topology, coll: Collective, inside: set[int], imports: list[int]) -> dict | None:
    crossing = [l for l in topo.links if l.src not in inside and l.dst in inside]
    cap = _capacity(topo, crossing, inside)
    if cap <= 0:
        return None
    entries = sorted({l.dst for l in crossing})
    need = set(imports)
    needers = sorted(r for r in inside if need <= set(coll.post_sets[r]))
    dist = _from(topo, entries)
    hops, farthest = max(((dist.get(s, 0), s) for s in needers), default=(0, -1))
    ramp = -(-len(imports) // cap)
    best: dict[str, Any] = {"inside": sorted(inside), "must_enter": len(imports), "capacity": cap, "entries": entries,
            "farthest": farthest, "hops": hops, "rounds": ramp + hops}
    # the ramp of each rank that needs imports (module docstring): the entries' distances to it
    memo: dict[frozenset[int], int] = {}
    out_of: dict[int, list[int]] = {}
    for l in topo.links:
        out_of.setdefault(l.dst, []).append(l.src)
    for s in sorted(inside):
        d_s = len(need & set(coll.post_sets[s]))
        if not d_s:
            continue
        to_s = _bfs(out_of, s, set(entries))
        caps = _ramp(topo, d_s, crossing, inside, to_s, False, memo)
        if caps is not None and len(caps) > best["rounds"]:
            best = {**best, "farthest": s, "hops": min(to_s.get(v, 10**9) for v in entries), "rounds": len(caps),
                    "must_enter": d_s, "ramp": caps}
    return best


def _exit_witness(topo: Topology, coll: Collective, inside: set[int]) -> dict | None:
    """The exit ramp (module docstring), the best over the node's ranks; None when it proves nothing."""
    outside_needs = {c for r, c in coll.post if r not in inside}
    holders: dict[int, list[int]] = {}
    for r, c in coll.pre:
        holders.setdefault(c, []).append(r)
    only: dict[int, int] = {}  # rank of the node -> chunks only it starts with that a rank outside needs
    for c in outside_needs:
        h = holders.get(c, [])
        if len(h) == 1 and h[0] in inside:
            only[h[0]] = only.get(h[0], 0) + 1
    if not only:
        return None
    crossing = [l for l in topo.links if l.src in inside and l.dst not in inside]
    exits = sorted({l.src for l in crossing})
    out_of: dict[int, list[int]] = {}
    for l in topo.links:
        out_of.setdefault(l.src, []).append(l.dst)
    best: dict[str, Any] | None = None
    memo: dict[frozenset[int], int] = {}
    for s in sorted(only):
        from_s = _bfs(out_of, s, set(exits))
        caps = _ramp(topo, only[s], crossing, inside, from_s, True, memo)
        if caps is not None and (best is None or len(caps) > best["rounds"]):
            best = {"inside": sorted(inside), "direction": "out", "must_leave": only[s], "exits": exits,
                    "source": s, "hops": min(from_s.get(v, 10**9) for v in exits), "rounds": len(caps), "ramp": caps}
    return best


def _ramp(topo: Topology, d: int, crossing: list, inside: set[int], hops: dict[int, int], out: bool,
          memo: dict[frozenset[int], int]) -> list[int] | None:
    """cap_0, cap_1, ... up to the first R with cap_0 + ... + cap_{R-1} >= d: cap_j the capacity across the
    node's boundary at its ranks within j hops (`hops`) of the rank in question, made non-decreasing; None
    when no crossing rank is within reach. `memo`: capacities by rank set (the node's ranks share them)."""
    ends = {l.src if out else l.dst for l in crossing}
    far = max((hops[v] for v in ends if v in hops), default=None)
    if far is None:
        return None  # no crossing rank reaches it: no schedule (the distance bound says so)
    caps: list[int] = []
    while sum(caps) < d:
        j = len(caps)
        if j > far:  # every crossing rank is near: the capacity no longer grows
            if not caps[-1]:
                return None
            k = -(-(d - sum(caps)) // caps[-1])
            return caps + [caps[-1]] * k
        near = frozenset(v for v in ends if hops.get(v, far + 1) <= j)
        if near not in memo:
            mine = [l for l in crossing if (l.src if out else l.dst) in near]
            memo[near] = _capacity(topo, mine, inside, out) if mine else 0
        caps.append(max(caps[-1] if caps else 0, memo[near]))
    return caps


def _bfs(nb: dict[int, list[int]], s: int, targets: set[int]) -> dict[int, int]:
    """Hops from s over the adjacency `nb` (the reversed links: hops to s), stopping once every target is
    reached."""
    dist = {s: 0}
    queue = deque([s])
    left = set(targets) - {s}
    while queue and left:
        x = queue.popleft()
        for y in nb.get(x, []):
            if y not in dist:
                dist[y] = dist[x] + 1
                left.discard(y)
                queue.append(y)
    return dist


def _capacity(topo: Topology, crossing: list, inside: set[int], out: bool = False,
              groups: Sequence[SwitchGroup] | None = None) -> int:
    """Chunks that can cross into `inside` per round (`out`: out of it): the bandwidth of some switch groups
    (sources all outside, destinations all inside; `out`: the other way) that together bound every crossing
    link they cover, plus the bandwidth of the links none of them covers. Any such choice is an upper bound
    (each covered link's chunks count in a chosen group); the groups are chosen greedily, the least bandwidth per link
    bandwidth newly covered first, while that beats counting the links alone. (A NIC's out-group and its
    peer's in-group both cover a link between two nodes: counting both, mi250 x 2 Alltoall gave 8 rounds
    where the in-groups alone give 16.) `groups`: the switch groups to consider, where the caller knows that
    the others do not qualify (the same value, without a scan of every group)."""
    bw = {(l.src, l.dst): l.bandwidth for l in crossing}
    links_of = []
    for g in topo.switches if groups is None else groups:
        far, near = (g.dsts, g.srcs) if out else (g.srcs, g.dsts)
        if set(far) & inside or not set(near) <= inside:
            continue
        srcs = set(g.srcs)
        dsts = set(g.dsts)
        mine = frozenset(k for k in bw if k[0] in srcs and k[1] in dsts)
        if mine:
            links_of.append((g.bandwidth, mine))
    return greedy_cover(bw, links_of)


K = TypeVar("K", bound=Hashable)


def greedy_cover(bw: Mapping[K, int], links_of: Sequence[tuple[int, frozenset[K]]]) -> int:
    """Per round, an upper bound on what the links `bw` (link -> bandwidth) carry in all when the switch groups
    `links_of` ((bandwidth, the links it bounds)) are counted instead of the links they cover: the groups
    chosen greedily, the least bandwidth per link bandwidth newly covered first, while that beats counting the
    links; the uncovered links count their own bandwidth. Any choice is an upper bound."""
    left = set(bw)
    cap = 0
    while True:
        best = None
        for gbw, mine in links_of:
            new = sum(bw[k] for k in mine & left)
            if new > gbw and (best is None or gbw * best[1] < best[0] * new):
                best = (gbw, new, mine)
        if best is None:
            break
        cap += best[0]
        left -= best[2]
    return cap + sum(bw[k] for k in left)


def adjacency(topo: Topology, reverse: bool = False) -> dict[int, list[int]]:
    """Each rank's successors over the links, in link order (`reverse`: its predecessors)."""
    out: dict[int, list[int]] = {}
    for l in topo.links:
        a, b = (l.dst, l.src) if reverse else (l.src, l.dst)
        out.setdefault(a, []).append(b)
    return out


def _from(topo: Topology, sources: list[int], reverse: bool = False,
          out: dict[int, list[int]] | None = None) -> dict[int, int]:
    """Hops from the nearest of `sources` (breadth-first search over the links); `reverse`: hops to the
    nearest of them. `out`: `adjacency(topo, reverse)`, where the caller searches from several sets."""
    if out is None:
        out = adjacency(topo, reverse)
    dist = dict.fromkeys(sources, 0)
    queue = deque(sources)
    while queue:
        x = queue.popleft()
        for y in out.get(x, []):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist
