"""Translation-invariant schedules on tori and rings: a small encoding that finds schedules fast.

A torus (or ring) has a group of translations acting regularly on its ranks. For an Allgather-shaped
collective (every chunk starts at one rank, every rank holds the same number of chunks, every rank needs
every chunk), a schedule that commutes with the translations is determined by how the chunks of rank 0
are broadcast: chunk (t(0), j) follows the translate t of the path of (0, j). The load of a link is then
the number of sends of rank 0's chunks over its whole orbit, so the encoding has one broadcast per chunk
of rank 0 and one capacity constraint per link orbit and step, |ranks| times smaller than the full one.

This is a restriction: a found schedule is valid (it is checked like every other), but "unsat" here says
nothing about all schedules, so the strategies only use it to find schedules, never to prune.
"""

from __future__ import annotations

import re

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.encoding import Encoding, Outcome

_NAME = re.compile(r"^(ring|torus2d|torus3d):(\d+(?:x\d+)*)$")


def translations(topo: Topology) -> list[list[int]] | None:
    """perm[t][r] = the rank r moves to under the translation taking rank 0 to rank t, when the
    topology is a built-in ring or torus and every such map is an automorphism (links and bandwidths)."""
    m = _NAME.match(topo.name)
    if not m or topo.switches:
        return None
    dims = [int(x) for x in m.group(2).split("x")]
    if m.group(1) == "ring":
        dims = [topo.ranks]

    def coords(i: int) -> list[int]:
        out = []
        for n in reversed(dims):
            out.append(i % n)
            i //= n
        return out[::-1]

    def index(c: list[int]) -> int:
        i = 0
        for x, n in zip(c, dims):
            i = i * n + x
        return i

    perms = []
    for t in range(topo.ranks):
        ct = coords(t)
        perm = [index([(a + b) % n for a, b, n in zip(coords(r), ct, dims)]) for r in range(topo.ranks)]
        for l in topo.links:
            if topo.bandwidth(perm[l.src], perm[l.dst]) != l.bandwidth:
                return None
        perms.append(perm)
    return perms


def _shape(coll: Collective) -> list[list[int]] | None:
    """own[r] = the chunks rank r starts with, when the collective is Allgather-shaped."""
    if coll.is_combining:
        return None
    own: list[list[int]] = [[] for _ in range(coll.ranks)]
    for r, c in coll.pre:
        own[r].append(c)
    if any(len(sorted(c for rr, c in coll.pre if c == x)) != 1 for x in range(coll.chunks)):
        return None
    if len({len(o) for o in own}) != 1 or any(len(p) != coll.chunks for p in coll.post_sets):
        return None
    return own


class TranslationEncoding:
    """The broadcast of rank 0's chunks with per-orbit capacities; decodes into the full schedule."""

    def __init__(self, topo: Topology, coll: Collective, perms: list[list[int]], steps: int, rounds: int) -> None:
        own = _shape(coll)
        assert own is not None
        self.topo, self.coll, self.perms, self.own = topo, coll, perms, own
        # the sub-collective: rank 0's chunks, held by 0, needed everywhere
        k = len(own[0])
        sub = Collective("translation-broadcast", coll.ranks, k, [(0, j) for j in range(k)],
                         [(r, j) for r in range(coll.ranks) for j in range(k)], range(k), chunk_factor=k)
        # orbit of each link: links (perm[t][u], perm[t][v]); capacity of the orbit = bandwidth of any member
        orbit_of: dict[tuple[int, int], int] = {}
        orbits: list[tuple[int, int, int]] = []
        for l in sorted(topo.links, key=lambda l: (l.src, l.dst)):
            if (l.src, l.dst) in orbit_of:
                continue
            for p in perms:
                orbit_of[p[l.src], p[l.dst]] = len(orbits)
            orbits.append((l.src, l.dst, l.bandwidth))
        self.orbit_of = orbit_of
        self.enc = Encoding(topo, sub, steps, rounds, unbounded=True)
        enc = self.enc
        for s in range(1, steps + 1):
            per: dict[int, list] = {}
            for (a, u, v, t), xv in enc.x.items():
                if t == s:
                    per.setdefault(orbit_of[u, v], []).append(xv)
            for o, xs in sorted(per.items()):
                enc._cap(xs, orbits[o][2], enc.extra[s - 1])

    def check(self, rounds: int | None, deadline: float | None) -> Outcome:
        out = self.enc.check(rounds, deadline=deadline)
        if out.verdict != "sat":
            return out
        steps = []
        for step in out.schedule.steps:
            sends = set()
            for s in step.sends:
                for t, p in enumerate(self.perms):
                    sends.add(Send(self.own[t][s.chunk], p[s.src], p[s.dst]))
            steps.append(Step(step.rounds, sorted(sends)))
        return Outcome("sat", Schedule(self.topo, self.coll, steps), out.seconds)


def applicable(topo: Topology, coll: Collective) -> list[list[int]] | None:
    """The translations when the topology has them and the collective is Allgather-shaped."""
    return translations(topo) if _shape(coll) is not None else None
