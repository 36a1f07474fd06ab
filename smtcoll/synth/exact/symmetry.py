"""Symmetric schedules: a small encoding that finds schedules fast on symmetric topologies.

Take a group G of topology automorphisms acting freely on the ranks (no element but the identity fixes
a rank): the translations of a torus or ring, or the automorphisms of DGX-1 (a group of 4, found with
networkx). For an Allgather-shaped collective (every chunk starts at one rank, every rank starts with the
same number of chunks, every rank needs every chunk), a schedule that commutes with G is determined by
how the chunks of one representative rank per orbit are broadcast: chunk j of rank g(r) follows the
image under g of the path of chunk j of r. Since G acts freely on links too, the load of a link is the
number of sends of the representatives' chunks over its whole orbit: the encoding has |G| times fewer
variables and one capacity constraint per link orbit and step.

This is a restriction: a found schedule is valid (it is checked like every other), but "unsat" here says
nothing about all schedules, so the strategies only use it to find schedules, never to prune.
"""

from __future__ import annotations

import re
from collections import Counter

from smtcoll.model import Collective, Schedule, Send, Step, Topology
from smtcoll.synth.result import Outcome

_NAME = re.compile(r"^(ring|torus2d|torus3d):(\d+(?:x\d+)*)$")
MAX_AUTOMORPHISMS = 64  # enumerated with networkx before giving up on the whole group


def _is_automorphism(topo: Topology, perm: list[int]) -> bool:
    return all(topo.bandwidth(perm[l.src], perm[l.dst]) == l.bandwidth for l in topo.links)


def translations(topo: Topology) -> list[list[int]] | None:
    """perm[t][r] = the rank r moves to under the translation taking rank 0 to rank t, when the
    topology is a built-in ring or torus."""
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
        if not _is_automorphism(topo, perm):
            return None
        perms.append(perm)
    return perms


def free_group(topo: Topology) -> list[list[int]] | None:
    """A group of automorphisms acting freely on the ranks, with more than one element, or None."""
    perms = translations(topo)
    if perms is not None:
        return perms
    if topo.switches or topo.ranks > 32:
        return None
    from networkx.algorithms.isomorphism import DiGraphMatcher

    g = topo.graph()
    matcher = DiGraphMatcher(g, g, edge_match=lambda a, b: a["bandwidth"] == b["bandwidth"])
    auts: list[tuple[int, ...]] = []
    for d in matcher.isomorphisms_iter():
        auts.append(tuple(d[i] for i in range(topo.ranks)))
        if len(auts) > MAX_AUTOMORPHISMS:
            break
    ident = tuple(range(topo.ranks))

    def free(a: tuple[int, ...]) -> bool:
        return a == ident or all(a[i] != i for i in range(topo.ranks))

    if len(auts) <= MAX_AUTOMORPHISMS and all(free(a) for a in auts):
        group = sorted(auts)
    else:
        # the largest cyclic subgroup acting freely
        group = [ident]
        for a in sorted(auts):
            powers, p = [ident], a
            while p != ident:
                powers.append(p)
                p = tuple(a[i] for i in p)
            if len(powers) > len(group) and all(free(q) for q in powers):
                group = sorted(powers)
    return [list(p) for p in group] if len(group) > 1 else None


def _shape(coll: Collective) -> list[list[int]] | None:
    """own[r] = the chunks rank r starts with, when the collective is Allgather-shaped."""
    if coll.is_combining:
        return None
    own: list[list[int]] = [[] for _ in range(coll.ranks)]
    for r, c in coll.pre:
        own[r].append(c)
    holders = Counter(c for _, c in coll.pre)  # one pass: at 100 ranks Alltoall has 10,000 chunks
    if any(holders[x] != 1 for x in range(coll.chunks)):
        return None
    if len({len(o) for o in own}) != 1 or any(len(p) != coll.chunks for p in coll.post_sets):
        return None
    return own


class SymmetricEncoding:
    """The broadcast of the representatives' chunks with per-orbit capacities; decodes into the full
    schedule by applying every group element."""

    def __init__(self, topo: Topology, coll: Collective, group: list[list[int]], steps: int, rounds: int,
                 phase: str | None = None, deadline: float | None = None) -> None:
        own = _shape(coll)
        assert own is not None
        self.topo, self.coll, self.group, self.own = topo, coll, group, own
        reps = sorted({min(p[r] for p in group) for r in range(coll.ranks)})
        # sub-chunk k = chunk j of representative rep
        self.sub = [(rep, j) for rep in reps for j in range(len(own[rep]))]
        sub = Collective("symmetric-broadcast", coll.ranks, len(self.sub),
                         [(rep, k) for k, (rep, _) in enumerate(self.sub)],
                         [(r, k) for r in range(coll.ranks) for k in range(len(self.sub))], range(len(self.sub)))
        orbit_of: dict[tuple[int, int], int] = {}
        orbits: list[int] = []
        for l in sorted(topo.links, key=lambda l: (l.src, l.dst)):
            if (l.src, l.dst) in orbit_of:
                continue
            for p in group:
                orbit_of[p[l.src], p[l.dst]] = len(orbits)
            orbits.append(l.bandwidth)
        from smtcoll.synth.exact.encoding import Encoding  # z3 only when a solver is needed

        self.enc = Encoding(topo, sub, steps, rounds, unbounded=True, phase=phase, deadline=deadline)
        enc = self.enc
        for s in range(1, steps + 1):
            enc._clock()
            per: dict[int, list] = {}
            for (_, u, v, t), xv in enc.x.items():
                if t == s:
                    per.setdefault(orbit_of[u, v], []).append(xv)
            for o, xs in sorted(per.items()):
                enc._cap(xs, orbits[o], enc.extra[s - 1])

    def check(self, rounds: int | None, deadline: float | None, work: int | None = None) -> Outcome:
        out = self.enc.check(rounds, deadline=deadline, work=work)
        if out.verdict != "sat":
            return out
        # a sat outcome always carries its schedule
        assert out.schedule is not None
        steps = []
        for step in out.schedule.steps:
            sends = set()
            for s in step.sends:
                rep, j = self.sub[s.chunk]
                for p in self.group:
                    sends.add(Send(self.own[p[rep]][j], p[s.src], p[s.dst]))
            steps.append(Step(step.rounds, sorted(sends)))
        return Outcome("sat", Schedule(self.topo, self.coll, steps), out.seconds, work=out.work)


def applicable(topo: Topology, coll: Collective) -> list[list[int]] | None:
    """The group when the topology has one and the collective is Allgather-shaped."""
    return free_group(topo) if _shape(coll) is not None else None
