"""Steps: the hops from the nearest initial holder of a chunk to a rank that needs it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from smtcoll.bounds.arrays import Arrays
from smtcoll.bounds.results import Bound
from smtcoll.model import Collective, Topology


def bfs(topo: Topology, sources: Iterable[int]) -> tuple[dict[int, int], dict[int, int]]:
    out_of: dict[int, list[int]] = {r: [] for r in range(topo.ranks)}
    for link in sorted(topo.links, key=lambda l: (l.src, l.dst)):
        out_of[link.src].append(link.dst)
    dist = dict.fromkeys(sources, 0)
    parent: dict[int, int] = {}
    queue = deque(sorted(dist))
    while queue:
        u = queue.popleft()
        for v in out_of[u]:
            if v not in dist:
                dist[v], parent[v] = dist[u] + 1, u
                queue.append(v)
    return dist, parent


def distance_bound(topo: Topology, coll: Collective, arrays: Arrays | None = None) -> Bound:
    """Steps >= the hops from the nearest initial holder of a chunk to a rank that needs it."""
    import numpy as np

    a = arrays or Arrays(topo, coll)
    if not len(a.post):
        return Bound("steps", 0, "steps", {}, "nothing to move")
    d = a.nearest_holder_distance()
    r, c = a.post[:, 0], a.post[:, 1]
    # the largest distance; ties: the smallest chunk, then the smallest rank
    i = int(np.lexsort((r, c, -d))[0])
    dd, cc, rr = int(d[i]), int(c[i]), int(r[i])
    holders = {cc: sorted(h for h, y in coll.pre if y == cc)}
    if dd >= a.unreachable:
        w = {"chunk": cc, "rank": rr, "holders": holders[cc], "distance": None}
        return Bound("steps", None, "steps", w, f"rank {rr} cannot be reached from the holders of chunk {cc}: "
                                                "no schedule exists")
    return Bound("steps", dd, "steps", _distance_witness(topo, holders[cc], cc, rr, dd))


def _distance_witness(topo: Topology, holders: list[int], c: int, r: int, d: int) -> dict[str, Any]:
    _, parent = bfs(topo, holders)
    path = [r]
    while path[-1] not in holders:
        path.append(parent[path[-1]])
    return {"chunk": c, "rank": r, "holders": sorted(holders), "distance": d, "shortest_path": path[::-1]}

