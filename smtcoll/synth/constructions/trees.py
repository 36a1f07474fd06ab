"""Trees inside a set of ranks (a node): breadth-first in- and out-trees, rotated per address so that
consecutive addresses spread over the links, and the NIC gateways between nodes."""

from __future__ import annotations

from collections.abc import Sequence

from smtcoll.model import Topology
from smtcoll.synth.constructions.common import NotApplicable


def distances(topo: Topology, root: int, inward: bool, inside: set[int]) -> dict[int, int]:
    """Hops from `root` (to it, when `inward`) of the ranks of `inside` it reaches through them."""
    dist = {root: 0}
    frontier = [root]
    while frontier:
        nxt = []
        for u in frontier:
            for v in (topo.in_neighbors(u) if inward else topo.out_neighbors(u)):
                if v in inside and v not in dist:
                    dist[v] = dist[u] + 1
                    nxt.append(v)
        frontier = nxt
    return dist


def bfs_tree(topo: Topology, ranks: Sequence[int], root: int, variant: int, inward: bool) -> dict[int, int]:
    """A shortest-path tree of `ranks` (links inside them only) at `root`: rank -> parent. Out-tree
    (`inward` False): the parent sends to the rank; in-tree: the rank sends to its parent. Among the
    parents at the right distance the (variant + rank)-th is taken, so trees of consecutive variants
    use different links. Links with more lanes come first."""
    inside = set(ranks)
    dist = distances(topo, root, inward, inside)
    if len(dist) < len(inside):
        raise NotApplicable(f"ranks {sorted(inside - set(dist))} cannot reach rank {root} inside their node")
    parent = {}
    for v in sorted(inside - {root}):
        if inward:  # v sends to a rank one step closer to the root
            options = [p for p in topo.out_neighbors(v) if p in dist and dist[p] == dist[v] - 1]
            options.sort(key=lambda p: (-topo.bandwidth(v, p), p))
        else:
            options = [p for p in topo.in_neighbors(v) if p in dist and dist[p] == dist[v] - 1]
            options.sort(key=lambda p: (-topo.bandwidth(p, v), p))
        parent[v] = options[(variant + v) % len(options)]
    return parent


def node_ranks(node: Sequence[int]) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(max(node) + 1)]
    for r, k in enumerate(node):
        out[k].append(r)
    return out


class Gateways:
    """The links between nodes (through their NICs): `pick(i, j, k)` is the k-th (rotating) link from
    node i to node j, as (sender, receiver)."""

    def __init__(self, topo: Topology, node: Sequence[int]) -> None:
        self.pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for l in topo.links:
            a, b = node[l.src], node[l.dst]
            if a != b:
                self.pairs.setdefault((a, b), []).append((l.src, l.dst))
        for v in self.pairs.values():
            v.sort()
        nodes = max(node) + 1
        for i in range(nodes):
            for j in range(nodes):
                if i != j and (i, j) not in self.pairs:
                    raise NotApplicable(f"no link from node {i} to node {j}")
        # one link per sender: the k-th pair starts from the k-th sender (NIC), its receiver rotating
        self.senders = {key: sorted({s for s, _ in v}) for key, v in self.pairs.items()}

    def pick(self, i: int, j: int, k: int) -> tuple[int, int]:
        senders = self.senders[(i, j)]
        s = senders[k % len(senders)]
        receivers = [d for x, d in self.pairs[(i, j)] if x == s]
        return s, receivers[(k // len(senders)) % len(receivers)]

    def width(self, i: int, j: int) -> int:
        return len(self.senders[(i, j)])
