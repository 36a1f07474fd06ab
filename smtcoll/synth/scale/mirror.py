"""One-to-many unicast collectives (Scatter-shaped) as the time-reversal of their many-to-one mirror.

Where every chunk starts at one rank and must reach at most one other, the chunk's path from its source to
its destination, walked backwards in reverse step order on the reversed topology, is a path of the mirror
collective (pre and post swapped: Scatter becomes Gather). Each step keeps its rounds and a subset of its
sends on the turned-around links (and switch groups), so bandwidth carries over; a chunk's sends on the
path run in increasing step order once reversed, so every send's chunk is held when it is sent.

Why: the engine's greedy plans a step at a time. Into one rank (Gather) it keeps the root's in-links full,
because every chunk that arrives is one the root needs; out of one rank (Scatter) it picks chunks for the
root's out-links without knowing which will block the narrower links later (a 4x4 torus with 2:1 x/y
links: Gather at C8 20 steps, the bound; Scatter 39).
"""

from __future__ import annotations

from collections.abc import Callable

from smtcoll.model import Collective, Schedule, Send, Step, Topology


def _ends(coll: Collective) -> list[tuple[int, int | None]] | None:
    """Per chunk (source, destination other than the source or None); None unless unicast."""
    holders: list[list[int]] = [[] for _ in range(coll.chunks)]
    needers: list[list[int]] = [[] for _ in range(coll.chunks)]
    for r, c in coll.pre:
        holders[c].append(r)
    for r, c in coll.post:
        needers[c].append(r)
    out: list[tuple[int, int | None]] = []
    for c in range(coll.chunks):
        if len(holders[c]) != 1:
            return None
        s = holders[c][0]
        dests = [d for d in needers[c] if d != s]
        if len(dests) > 1:
            return None
        out.append((s, dests[0] if dests else None))
    return out


def scatter_shaped(coll: Collective) -> bool:
    """Unicast and non-combining, from fewer ranks than it delivers to (Scatter; not Gather, not Alltoall)."""
    ends = None if coll.is_combining else _ends(coll)
    if ends is None:
        return False
    sources = {s for s, d in ends if d is not None}
    dests = {d for _, d in ends if d is not None}
    return 0 < len(sources) < len(dests)


def mirror_collective(coll: Collective) -> Collective:
    """Pre and post swapped: each chunk starts at its destination and must reach its source."""
    ends = _ends(coll)
    assert ends is not None
    pre = [(d if d is not None else s, c) for c, (s, d) in enumerate(ends)]
    post = [(s, c) for c, (s, _) in enumerate(ends)]
    return Collective(f"{coll.name}-mirror", coll.ranks, coll.chunks, pre, post, coll.address,
                      chunk_factor=coll.chunk_factor)


def mirrored(topo: Topology, coll: Collective,
             solve: Callable[[Topology, Collective], tuple[Schedule, str]]) -> tuple[Schedule, str] | None:
    """`coll` on `topo` from `solve`'s schedule of the mirror on the reversed topology, or None where the
    collective is not unicast. The caller checks the result (the engine checks every schedule)."""
    ends = None if coll.is_combining else _ends(coll)
    if ends is None:
        return None
    dual, method = solve(topo.reversed(), mirror_collective(coll))
    # the first arrival of each chunk at each rank: the chunk's tree; its path from the mirror's source
    parent: dict[tuple[int, int], tuple[int, int]] = {}
    for i, step in enumerate(dual.steps):
        for x in step.sends:
            parent.setdefault((x.chunk, x.dst), (i, x.src))
    keep: list[list[Send]] = [[] for _ in dual.steps]
    for c, (s, d) in enumerate(ends):
        if d is None:
            continue
        v = s  # the mirror's destination; walk back to d
        while v != d:
            if (c, v) not in parent:
                return None  # the mirror left chunk c short of its destination: nothing to turn around
            i, u = parent[(c, v)]
            keep[i].append(Send(c, v, u))  # u -> v on the reversed topology is v -> u here
            v = u
    n = len(dual.steps)
    steps = [Step(dual.steps[i].rounds, sorted(keep[i], key=lambda x: (x.chunk, x.src, x.dst)))
             for i in reversed(range(n)) if keep[i]]
    return Schedule(topo, coll, steps), f"mirror of {method} (time-reversed, on the reversed topology)"
