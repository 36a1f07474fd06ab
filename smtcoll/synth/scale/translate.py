"""Schedules from one rank's schedule and its translates, on topologies a group acts on.

A ring, torus or hypercube is the Cayley graph of an abelian group G (Z_n, Z_a x Z_b, Z_2^d): rank x has
a link to x + d for every direction d of a fixed set D. Translation by o maps links to links, so a
schedule for the chunk of rank 0 (a broadcast tree for Allgather, one path per destination for
Alltoall) becomes the schedule of rank o's chunk by adding o to every rank. Link x -> x + d at step t
then carries one chunk per edge of direction d that rank 0's schedule uses at step t, so that schedule
may use each direction at most bandwidth(d) times per step; that is the only coupling, which makes the
search 1/N the size. Nothing here is trusted: the engine checks the whole schedule.

Allgather with one direction per new rank per step reaches the receive bound ceil((N-1)C/|D|) exactly
when every step adds |D| ranks; Alltoall moves each packet along a shortest path, |D| hops per step,
against the chunk-hops bound.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs
import numpy as np

from smtcoll.model import Collective, Schedule, Send, Step, Topology

_SHAPES = {"ring": 1, "torus2d": 2, "torus3d": 3, "fully-connected": 1}


@attrs.frozen
class Group:
    """Z_{dims[0]} x ... on the ranks (mixed radix, the library's numbering) and the link directions."""

    dims: tuple[int, ...]
    coords: np.ndarray = attrs.field(eq=False)  # ranks x len(dims)
    directions: tuple[tuple[int, ...], ...]
    bandwidth: tuple[int, ...]

    @property
    def ranks(self) -> int:
        return len(self.coords)

    def rank(self, coord: Sequence[int]) -> int:
        i = 0
        for c, n in zip(coord, self.dims, strict=True):
            i = i * n + c % n
        return i

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Ranks a + b (arrays of ranks, broadcast)."""
        s = (self.coords[a] + self.coords[b]) % np.array(self.dims)
        out = np.zeros(s.shape[:-1], dtype=np.int64)
        for k, n in enumerate(self.dims):
            out = out * n + s[..., k]
        return out


def group_of(topo: Topology) -> Group | None:
    """The group a built-in ring, torus, hypercube or fully connected topology (or its reversal) is the
    Cayley graph of; None for anything else, or when the links are not exactly the translates."""
    name = topo.name.removesuffix("-reversed")
    m = re.fullmatch(r"(ring|torus2d|torus3d|fully-connected|hypercube):([0-9x]+)", name)
    if not m:
        return None
    params = [int(x) for x in m.group(2).split("x")]
    dims = tuple([2] * params[0]) if m.group(1) == "hypercube" else tuple(params)
    p = int(np.prod(dims))
    if p != topo.ranks:
        return None
    coords = np.array(np.unravel_index(np.arange(p), dims)).T.astype(np.int64)
    zero_out = sorted((l.dst, l.bandwidth) for l in topo.links if l.src == 0)
    directions = tuple(tuple(int(x) for x in coords[v]) for v, _ in zero_out)
    bandwidth = tuple(b for _, b in zero_out)
    want = {(tuple(int(x) for x in d), b) for d, b in zip(directions, bandwidth, strict=True)}
    dims_a = np.array(dims)
    for l in topo.links:  # every link is a translate of one of rank 0's, with its bandwidth
        d = tuple(int(x) for x in (coords[l.dst] - coords[l.src]) % dims_a)
        if (d, l.bandwidth) not in want:
            return None
    if len(topo.links) != p * len(directions) or topo.switches:
        return None
    return Group(dims, coords, directions, bandwidth)


def _direction_ranks(g: Group) -> list[int]:
    return [g.rank(d) for d in g.directions]


def allgather_tree(g: Group, pieces: int) -> list[list[tuple[int, int, int]]]:
    """Per step, the sends (piece, x, direction index) of rank 0's `pieces` chunks: x holds the piece
    and sends it along the direction. Each step fills every direction's bandwidth while it can, with the
    new rank nearest to rank 0 first (the held set grows like a ball, so every direction keeps
    candidates until the wrap-around), each piece in turn."""
    p = g.ranks
    dirs = _direction_ranks(g)
    nbr = g.add(np.arange(p)[:, None], np.array(dirs)[None, :])  # ranks x directions
    dist0 = _hops_from_zero(nbr)
    held = [np.zeros(p, dtype=bool) for _ in range(pieces)]
    for h in held:
        h[0] = True
    steps: list[list[tuple[int, int, int]]] = []
    left = (p - 1) * pieces
    turn = 0
    while left:
        sends: list[tuple[int, int, int]] = []
        claimed: list[set[int]] = [set() for _ in range(pieces)]
        for di in sorted(range(len(dirs)), key=lambda i: (i + turn) % len(dirs)):
            for _ in range(g.bandwidth[di]):
                best = None
                for k in range(pieces):
                    j = (k + turn) % pieces
                    src = np.nonzero(held[j] & ~held[j][nbr[:, di]])[0]
                    if not len(src):
                        continue
                    dst = nbr[src, di]
                    ok = np.array([y not in claimed[j] for y in dst])
                    if not ok.any():
                        continue
                    src, dst = src[ok], dst[ok]
                    i = int(np.lexsort((dst, dist0[dst]))[0])
                    cand = (int(dist0[dst[i]]), k, int(src[i]), int(dst[i]), j)
                    if best is None or cand[:2] < best[:2]:
                        best = cand
                if best is None:
                    break
                _, _, x, y, j = best
                claimed[j].add(y)
                sends.append((j, x, di))
        if not sends:
            raise RuntimeError("translate: no progress (disconnected directions)")
        for j, x, di in sends:
            held[j][nbr[x, di]] = True
        left -= len(sends)
        steps.append(sends)
        turn += 1
    if pieces == 1:
        return _finish_exactly(g, nbr, steps)
    return steps


TAIL_BUDGET = 200_000  # search nodes for the last steps


def _finish_exactly(g: Group, nbr: np.ndarray,
                    steps: list[list[tuple[int, int, int]]]) -> list[list[tuple[int, int, int]]]:
    """When the greedy needs more steps than ceil((N-1)/|D|) (its last steps fill fewer directions than
    there are), search its last two or three steps exhaustively for a fill of every direction."""
    per_step = sum(g.bandwidth)
    target = -(-(g.ranks - 1) // per_step)
    if len(steps) <= target:
        return steps
    for window in (2, 3):
        keep = target - window
        if keep < 0:
            continue
        held = np.zeros(g.ranks, dtype=bool)
        held[0] = True
        for sends in steps[:keep]:
            for _, x, di in sends:
                held[nbr[x, di]] = True
        budget = [TAIL_BUDGET]
        tail = _tail_search(g, nbr, held, window, budget)
        if tail is not None:
            return steps[:keep] + tail
    return steps


def _tail_search(g: Group, nbr: np.ndarray, held: np.ndarray, steps_left: int,
                 budget: list[int]) -> list[list[tuple[int, int, int]]] | None:
    missing = int((~held).sum())
    if missing == 0:
        return []
    per_step = sum(g.bandwidth)
    if steps_left == 0 or missing > steps_left * per_step or budget[0] <= 0:
        return None
    slots = [di for di, b in enumerate(g.bandwidth) for _ in range(b)]
    want = min(per_step, missing - (steps_left - 1) * per_step) if steps_left > 1 else missing
    want = max(want, 1)
    options = []
    for di in slots:
        src = np.nonzero(held & ~held[nbr[:, di]])[0]
        options.append([(int(x), int(nbr[x, di])) for x in src])

    def assign(i: int, chosen: list[tuple[int, int, int]], used: set[int]):
        budget[0] -= 1
        if budget[0] <= 0:
            return None
        if i == len(slots):
            if len(chosen) < want:
                return None
            nxt = held.copy()
            for _, x, di in chosen:
                nxt[nbr[x, di]] = True
            rest = _tail_search(g, nbr, nxt, steps_left - 1, budget)
            return None if rest is None else [list(chosen), *rest]
        # skipping a slot is allowed only while enough slots remain to reach `want`
        for x, y in options[i]:
            if y in used:
                continue
            used.add(y)
            chosen.append((0, x, slots[i]))
            got = assign(i + 1, chosen, used)
            chosen.pop()
            used.discard(y)
            if got is not None:
                return got
        if len(chosen) + (len(slots) - i - 1) >= want:
            return assign(i + 1, chosen, used)
        return None

    return assign(0, [], set())


def _hops_from_zero(nbr: np.ndarray) -> np.ndarray:
    p = len(nbr)
    dist = np.full(p, -1, dtype=np.int64)
    dist[0] = 0
    frontier = np.array([0])
    d = 0
    while len(frontier):
        d += 1
        nxt = np.unique(nbr[frontier].ravel())
        nxt = nxt[dist[nxt] < 0]
        dist[nxt] = d
        frontier = nxt
    return dist


def alltoall_paths(g: Group, pieces: int) -> list[list[tuple[int, int, int]]]:
    """Per step, the hops (packet, x, direction index) of rank 0's packets (one per destination y != 0
    and piece): a packet at x moves along a direction that brings it closer to y, the farthest packets
    first, each direction at most its bandwidth per step."""
    p = g.ranks
    dirs = _direction_ranks(g)
    nbr = g.add(np.arange(p)[:, None], np.array(dirs)[None, :])
    dist0 = _hops_from_zero(nbr)
    # hops from x to y = hops from 0 to y - x: the group is abelian, the graph a Cayley graph
    minus = np.array([g.rank([-int(c) for c in g.coords[x]]) for x in range(p)])
    packets = [(y, k) for y in range(1, p) for k in range(pieces)]
    at = np.zeros(len(packets), dtype=np.int64)
    dest = np.array([y for y, _ in packets])
    steps: list[list[tuple[int, int, int]]] = []
    # a packet half-way round an even cycle may go either way: half of them one way, half the other
    # (decided once, so a packet never turns back), which balances the opposite directions' loads
    opposite = {di: dirs.index(int(minus[d])) for di, d in enumerate(dirs) if int(minus[d]) in dirs}
    start = dist0[g.add(dest[:, None], minus[nbr[at]])] < dist0[dest][:, None]
    banned = np.zeros_like(start)
    seen: dict[tuple[int, int], int] = {}
    for i in range(len(packets)):
        for di, dj in opposite.items():
            if di < dj and start[i, di] and start[i, dj]:
                n = seen.get((di, dj), 0)
                seen[di, dj] = n + 1
                banned[i, dj if n % 2 == 0 else di] = True
    while True:
        remaining = dist0[g.add(dest, minus[at])]
        if not remaining.any():
            break
        after = dist0[g.add(dest[:, None], minus[nbr[at]])]  # packets x directions
        useful = (after < remaining[:, None]) & ~banned
        free = remaining > 0
        sends = []
        # each direction in turn (the one with the fewest candidates first) takes the farthest packet
        # that it brings closer; every direction busy every step is what reaching the bound needs
        todo = [(di, b) for di, b in enumerate(g.bandwidth)]
        while todo:
            counts = [int((useful[:, di] & free).sum()) for di, _ in todo]
            k = min(range(len(todo)), key=lambda i: (counts[i], todo[i][0]))
            di, b = todo.pop(k)
            for _ in range(b):
                cand = np.nonzero(useful[:, di] & free)[0]
                if not len(cand):
                    break
                i = int(cand[np.lexsort((cand, -remaining[cand]))[0]])
                free[i] = False
                sends.append((i, int(at[i]), di))
        if not sends:
            raise RuntimeError("translate: no progress")
        for i, x, di in sends:
            at[i] = nbr[x, di]
        steps.append(sends)
    return steps


def allgather_shape(coll: Collective) -> list[list[int]] | None:
    """Per rank its chunks in order, when every chunk starts at one rank, every rank starts with as
    many, and every rank needs every chunk (Allgather, and the dual of ReduceScatter)."""
    if coll.is_combining or len(coll.post) != coll.ranks * coll.chunks:
        return None
    own = [sorted(s) for s in coll.pre_sets]
    if len({len(o) for o in own}) != 1 or sum(map(len, own)) != coll.chunks:
        return None
    return own


def unicast_pairs(coll: Collective) -> dict[tuple[int, int], list[int]] | None:
    """(source, destination) -> its chunks, when every chunk starts at one rank and is needed by at most
    one other (Alltoall, Gather, Scatter), with at least one such pair; else None."""
    if coll.is_combining:
        return None
    holder: dict[int, int] = {}
    for r, c in coll.pre:
        if c in holder:
            return None
        holder[c] = r
    pairs: dict[tuple[int, int], list[int]] = {}
    needed: set[int] = set()
    for r, c in coll.post:
        if holder.get(c) == r:
            continue
        if c in needed or c not in holder:
            return None
        needed.add(c)
        pairs.setdefault((holder[c], r), []).append(c)
    return pairs or None


def alltoall_shape(coll: Collective) -> dict[tuple[int, int], list[int]] | None:
    """(source, destination) -> its chunks, when every chunk starts at one rank and is needed by one
    other, and every ordered pair of distinct ranks has the same number of chunks."""
    pairs = unicast_pairs(coll)
    if pairs is None or len({c for _, c in coll.post}) != len(coll.post):  # a chunk needed at two ranks
        return None
    p = coll.ranks
    if len(pairs) != p * (p - 1) or len({len(v) for v in pairs.values()}) != 1:
        return None
    return pairs


def _step(sends: list[tuple[int, int, int]]) -> Step:
    # sorted as tuples (chunk, src, dst): the order of Send, without attrs' slow comparisons
    return Step(1, [Send(c, u, v) for c, u, v in sorted(sends)])


def translate_schedule(topo: Topology, coll: Collective) -> tuple[Schedule, str] | None:
    """The translate schedule for an Allgather- or Alltoall-shaped collective on a group topology."""
    g = group_of(topo)
    if g is None:
        return None
    p = g.ranks
    dirs = _direction_ranks(g)
    origins = np.arange(p)
    own = allgather_shape(coll)
    if own is not None:
        pieces = len(own[0])
        plan = allgather_tree(g, pieces)
        steps = []
        for sends in plan:
            out = []
            for j, x, di in sends:
                src = g.add(origins, np.full(p, x))
                dst = g.add(src, np.full(p, dirs[di]))
                out += [(coll.address[own[o][j]], int(s), int(d)) for o, s, d in zip(origins, src, dst, strict=True)]
            steps.append(_step(out))
        return Schedule(topo, coll, steps), "translate (broadcast tree of one rank, translated)"
    pairs = alltoall_shape(coll)
    if pairs is not None:
        pieces = len(next(iter(pairs.values())))
        plan = alltoall_paths(g, pieces)
        packets = [(y, k) for y in range(1, p) for k in range(pieces)]
        steps = []
        for sends in plan:
            out = []
            for i, x, di in sends:
                y, k = packets[i]
                src = g.add(origins, np.full(p, x))
                dst = g.add(src, np.full(p, dirs[di]))
                final = g.add(origins, np.full(p, y))
                out += [(coll.address[pairs[int(o), int(f)][k]], int(s), int(d))
                        for o, s, d, f in zip(origins, src, dst, final, strict=True)]
            steps.append(_step(out))
        return Schedule(topo, coll, steps), "translate (shortest paths of one rank's chunks, translated)"
    return None
